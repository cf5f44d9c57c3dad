/* Fused elementwise groups: one task runs a generated kernel (graphs/jit.c)
 * over the result (W) and the group's leaves (R). */
#include "codelets.h"

struct fused_args {
  strata__fused_fn fn;
  uint64_t id; /* the kernel's hash, stable across processes */
  int nbuffers;
};

static void fused_cpu(void *buffers[], void *cl_arg)
{
  const struct fused_args *a = cl_arg;
  void *ptr[STARPU_NMAXBUFS];
  for (int k = 0; k < a->nbuffers; k++)
    ptr[k] = (void *)STARPU_VECTOR_GET_PTR(buffers[k]);
  a->fn(ptr);
}

/* Same kernel and data sizes, same cost (the function pointer differs from
 * process to process). */
static uint32_t fused_footprint(struct starpu_task *task)
{
  const struct fused_args *a = task->cl_arg;
  return starpu_hash_crc32c_be((uint32_t)(a->id ^ (a->id >> 32)), starpu_task_data_footprint(task));
}

static struct starpu_perfmodel fused_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "strata_fused", .footprint = fused_footprint};

static struct starpu_codelet fused_cl = {
    .name = "strata_fused",
    .color = 0x08519c,
    .cpu_funcs = {fused_cpu},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &fused_model,
};

int strata__fused_submit(strata__fused_fn fn, uint64_t id, int nleaves,
                         const starpu_data_handle_t *leaves, starpu_data_handle_t out)
{
  if (nleaves < 0 || nleaves + 1 > STARPU_NMAXBUFS)
    return STRATA_EINVAL;
  struct fused_args a = {.fn = fn, .id = id, .nbuffers = nleaves + 1};
  starpu_data_handle_t h[STARPU_NMAXBUFS] = {out};
  enum starpu_data_access_mode m[STARPU_NMAXBUFS] = {STARPU_W};
  for (int k = 0; k < nleaves; k++) {
    h[k + 1] = leaves[k];
    m[k + 1] = STARPU_R;
  }
  return strata__submit_copy_arg(&fused_cl, &a, sizeof a, nleaves + 1, h, m);
}
