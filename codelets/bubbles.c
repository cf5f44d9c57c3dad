/* The bubble-extraction codelet: probability map (R) -> bubble table (W),
 * with scratch for the component labels. CPU and CUDA. */
#include "bubbles.h"
#include "kernels/bubble_kernels.h"

static void bubbles_cpu(void *buffers[], void *cl_arg)
{
  int64_t n = strata__cube_root(STARPU_VECTOR_GET_NX(buffers[0]));
  strata__bubbles_cpu((const float *)STARPU_VECTOR_GET_PTR(buffers[0]), n, cl_arg,
                      (int32_t *)STARPU_VECTOR_GET_PTR(buffers[2]),
                      (double *)STARPU_VECTOR_GET_PTR(buffers[1]),
                      STARPU_VECTOR_GET_NX(buffers[1]) / STRATA__BUBBLE_FIELDS - 1);
}

#if STRATA__USE_CUDA
static void bubbles_cuda(void *buffers[], void *cl_arg)
{
  int64_t n = strata__cube_root(STARPU_VECTOR_GET_NX(buffers[0]));
  strata__bubbles_cuda(
      (const float *)STARPU_VECTOR_GET_PTR(buffers[0]), n, cl_arg,
      (void *)STARPU_VECTOR_GET_PTR(buffers[2]), (double *)STARPU_VECTOR_GET_PTR(buffers[1]),
      STARPU_VECTOR_GET_NX(buffers[1]) / STRATA__BUBBLE_FIELDS - 1, starpu_cuda_get_local_stream());
}
#endif

static uint32_t bubbles_footprint(struct starpu_task *task)
{
  return starpu_vector_get_nx(STARPU_TASK_GET_HANDLE(task, 0));
}

STRATA__CODELET(bubbles_cl, "strata_bubbles", 0xfc8d59, bubbles_cpu, bubbles_cuda,
                bubbles_footprint, NULL, .nbuffers = 3,
                .modes = {STARPU_R, STARPU_W, STARPU_SCRATCH});

uint64_t strata__bubbles_scratch_bytes(int64_t n)
{
  uint64_t cpu = (uint64_t)(n * n * n) * sizeof(int32_t);
#if STRATA_HAVE_CUDA_KERNELS
  uint64_t cuda = strata__bubbles_cuda_scratch_bytes(n);
  return cuda > cpu ? cuda : cpu;
#else
  return cpu;
#endif
}

int strata__bubbles_submit(starpu_data_handle_t prob, starpu_data_handle_t table,
                           starpu_data_handle_t scratch, const struct strata__bubble_params *p)
{
  starpu_data_handle_t h[3] = {prob, table, scratch};
  return strata__submit_copy_arg(&bubbles_cl, p, sizeof *p, 3, h, NULL);
}
