/* Inference-array codelets: the evaluation criterion (a leaf's field into
 * its mask) and the marking of an inference array's bubbles into a leaf
 * (its bubble list and, optionally, a marker field). */
#include "infer.h"
#include "kernels/infer_kernels.h"

static void criterion_cpu(void *buffers[], void *cl_arg)
{
  strata__infer_criterion_cpu(cl_arg, (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                              (uint8_t *)STARPU_VECTOR_GET_PTR(buffers[1]));
}

/* Buffers: table (R), list (RW), then the marker field (RW) when given. */
static void mark_cpu(void *buffers[], void *cl_arg)
{
  struct starpu_task *task = starpu_task_get_current();
  strata__infer_mark_cpu(
      cl_arg, (const double *)STARPU_VECTOR_GET_PTR(buffers[0]),
      (double *)STARPU_VECTOR_GET_PTR(buffers[1]),
      STARPU_TASK_GET_NBUFFERS(task) > 2 ? (void *)STARPU_VECTOR_GET_PTR(buffers[2]) : NULL);
}

#if STRATA__USE_CUDA
static void criterion_cuda(void *buffers[], void *cl_arg)
{
  strata__infer_criterion_cuda(cl_arg, (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                               (uint8_t *)STARPU_VECTOR_GET_PTR(buffers[1]),
                               starpu_cuda_get_local_stream());
}

static void mark_cuda(void *buffers[], void *cl_arg)
{
  struct starpu_task *task = starpu_task_get_current();
  strata__infer_mark_cuda(
      cl_arg, (const double *)STARPU_VECTOR_GET_PTR(buffers[0]),
      (double *)STARPU_VECTOR_GET_PTR(buffers[1]),
      STARPU_TASK_GET_NBUFFERS(task) > 2 ? (void *)STARPU_VECTOR_GET_PTR(buffers[2]) : NULL,
      starpu_cuda_get_local_stream());
}
#endif

/* The marking's model keyed on the size of its last buffer (the list, or
 * the marker field) and the number of buffers. */
static uint32_t last_buffer_footprint(struct starpu_task *task)
{
  starpu_data_handle_t h = STARPU_TASK_GET_HANDLE(task, STARPU_TASK_GET_NBUFFERS(task) - 1);
  return starpu_hash_crc32c_be((uint32_t)starpu_vector_get_nx(h),
                               (uint32_t)STARPU_TASK_GET_NBUFFERS(task));
}

/* The criterion's on StarPU's footprint, the sizes of the field and the
 * mask: it reads every cell of the field. */
STRATA__CODELET(criterion_cl, "strata_infer_criterion", 0xe7298a, criterion_cpu, criterion_cuda,
                NULL, NULL, .nbuffers = 2, .modes = {STARPU_R, STARPU_W});

STRATA__CODELET(mark_cl, "strata_infer_mark", 0xce1256, mark_cpu, mark_cuda, last_buffer_footprint,
                NULL, .nbuffers = STARPU_VARIABLE_NBUFFERS);

int strata__infer_criterion_submit(starpu_data_handle_t field, starpu_data_handle_t mask,
                                   const struct strata__infer_criterion *c)
{
  starpu_data_handle_t h[2] = {field, mask};
  return strata__submit_copy_arg(&criterion_cl, c, sizeof *c, 2, h, criterion_cl.cl.modes);
}

int strata__infer_mark_submit(starpu_data_handle_t table, starpu_data_handle_t list,
                              starpu_data_handle_t field, const struct strata__infer_mark *m)
{
  starpu_data_handle_t h[3] = {table, list, field};
  const enum starpu_data_access_mode modes[3] = {STARPU_R, STARPU_RW, STARPU_RW};
  return strata__submit_copy_arg(&mark_cl, m, sizeof *m, field ? 3 : 2, h, modes);
}
