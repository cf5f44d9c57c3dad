/* Elementwise functions with broadcasting: result (W), then the array
 * operands (R), one to three of them. */
#include "elementwise.h"

static int narrays(const struct strata__ew_args *a) { return a->nops - (a->scalar_at >= 0); }

static void ew_cpu(void *buffers[], void *cl_arg)
{
  const struct strata__ew_args *a = cl_arg;
  const void *in[STRATA__EW_MAXOPS] = {NULL, NULL, NULL};
  for (int k = 0; k < narrays(a); k++)
    in[k] = (const void *)STARPU_VECTOR_GET_PTR(buffers[k + 1]);
  strata__ew_cpu(a, (void *)STARPU_VECTOR_GET_PTR(buffers[0]), in);
}

#if STRATA__USE_CUDA
static void ew_cuda(void *buffers[], void *cl_arg)
{
  const struct strata__ew_args *a = cl_arg;
  const void *in[STRATA__EW_MAXOPS] = {NULL, NULL, NULL};
  for (int k = 0; k < narrays(a); k++)
    in[k] = (const void *)STARPU_VECTOR_GET_PTR(buffers[k + 1]);
  strata__ew_cuda(a, (void *)STARPU_VECTOR_GET_PTR(buffers[0]), in, starpu_cuda_get_local_stream());
}
#endif

/* The scalar's value does not change the cost. */
static uint32_t ew_footprint(struct starpu_task *task)
{
  struct strata__ew_args a = *(const struct strata__ew_args *)task->cl_arg;
  a.scalar = 0;
  return starpu_hash_crc32c_be_n(&a, sizeof a, 0);
}

STRATA__CODELET(ew_cl, "strata_elementwise", 0x4292c6, ew_cpu, ew_cuda, ew_footprint, NULL,
                .nbuffers = STARPU_VARIABLE_NBUFFERS);

int strata__ew_submit(const struct strata__ew_args *a, const starpu_data_handle_t *operands,
                      starpu_data_handle_t out)
{
  starpu_data_handle_t h[1 + STRATA__EW_MAXOPS] = {out};
  enum starpu_data_access_mode m[1 + STRATA__EW_MAXOPS] = {STARPU_W, STARPU_R, STARPU_R, STARPU_R};
  int n = narrays(a);
  if (n < 1 || n > STRATA__EW_MAXOPS)
    return STRATA_EINVAL;
  for (int k = 0; k < n; k++)
    h[k + 1] = operands[k];
  return strata__submit_copy_arg(&ew_cl, a, sizeof *a, n + 1, h, m);
}
