/* Fused elementwise groups: one task computes a group's result (W) from its
 * leaves (R). On CPUs it runs the group's generated kernel (graphs/jit.c),
 * or its program when no kernel could be generated; on GPUs its program
 * (kernels/fused_kernels.h). */
#include "fused.h"
#include "kernels/fused_kernels.h"

_Static_assert(STARPU_NMAXBUFS - 1 <= STRATA__FUSED_MAXLEAVES, "a fused task's leaves fit");

struct fused_args {
  strata__fused_fn fn; /* NULL: the program */
  uint64_t id;         /* the group's hash, stable across processes */
  int nbuffers;
  struct strata__fused_program program;
};

static void fused_cpu(void *buffers[], void *cl_arg)
{
  const struct fused_args *a = cl_arg;
  void *ptr[STARPU_NMAXBUFS];
  for (int k = 0; k < a->nbuffers; k++)
    ptr[k] = (void *)STARPU_VECTOR_GET_PTR(buffers[k]);
  if (a->fn)
    a->fn(ptr);
  else
    strata__fused_cpu(&a->program, (const void *const *)ptr + 1, ptr[0]);
}

#if STRATA__USE_CUDA
static void fused_cuda(void *buffers[], void *cl_arg)
{
  const struct fused_args *a = cl_arg;
  const void *leaves[STARPU_NMAXBUFS];
  for (int k = 1; k < a->nbuffers; k++)
    leaves[k - 1] = (const void *)STARPU_VECTOR_GET_PTR(buffers[k]);
  strata__fused_cuda(&a->program, leaves, (void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                     starpu_cuda_get_local_stream());
}
#endif

/* Same group, data sizes and way of running (generated kernel or program,
 * whose costs differ several-fold on CPUs), same cost; the function pointer
 * itself differs from process to process. */
static uint32_t fused_footprint(struct starpu_task *task)
{
  const struct fused_args *a = task->cl_arg;
  uint32_t group = starpu_hash_crc32c_be((uint32_t)(a->id ^ (a->id >> 32)), a->fn != NULL);
  return starpu_hash_crc32c_be(group, starpu_task_data_footprint(task));
}

STRATA__CODELET(fused_cl, "strata_fused", 0x08519c, fused_cpu, fused_cuda, fused_footprint, NULL,
                .nbuffers = STARPU_VARIABLE_NBUFFERS);

int strata__fused_submit(strata__fused_fn fn, uint64_t id,
                         const struct strata__fused_program *program,
                         const starpu_data_handle_t *leaves, starpu_data_handle_t out)
{
  int nleaves = program->nleaves;
  if (nleaves < 0 || nleaves + 1 > STARPU_NMAXBUFS)
    return STRATA_EINVAL;
  struct fused_args a = {.fn = fn, .id = id, .nbuffers = nleaves + 1, .program = *program};
  starpu_data_handle_t h[STARPU_NMAXBUFS] = {out};
  enum starpu_data_access_mode m[STARPU_NMAXBUFS] = {STARPU_W};
  for (int k = 0; k < nleaves; k++) {
    h[k + 1] = leaves[k];
    m[k + 1] = STARPU_R;
  }
  return strata__submit_copy_arg(&fused_cl, &a, sizeof a, nleaves + 1, h, m);
}
