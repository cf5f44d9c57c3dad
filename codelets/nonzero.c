/* flatnonzero in two tasks, because the result's size is data-dependent:
 * count the nonzero elements (input R, one int64 W), then, once the caller
 * has read the count and sized the result, list their positions (input R,
 * int64 positions W). */
#include "nonzero.h"

/* No implicit padding: the perf-model footprint hashes these bytes. */
struct nonzero_args {
  int32_t dtype;
  int32_t pad;
  int64_t n;
};

static void count_cpu(void *buffers[], void *cl_arg)
{
  const struct nonzero_args *a = cl_arg;
  *(int64_t *)STARPU_VECTOR_GET_PTR(buffers[1]) =
      strata__count_nonzero_cpu(a->dtype, a->n, (const void *)STARPU_VECTOR_GET_PTR(buffers[0]));
}

static void list_cpu(void *buffers[], void *cl_arg)
{
  const struct nonzero_args *a = cl_arg;
  strata__flatnonzero_cpu(a->dtype, a->n, (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                          (int64_t *)STARPU_VECTOR_GET_PTR(buffers[1]));
}

#if STRATA__USE_CUDA
static void count_cuda(void *buffers[], void *cl_arg)
{
  const struct nonzero_args *a = cl_arg;
  strata__count_nonzero_cuda(a->dtype, a->n, (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                             (int64_t *)STARPU_VECTOR_GET_PTR(buffers[1]),
                             starpu_cuda_get_local_stream());
}

static void list_cuda(void *buffers[], void *cl_arg)
{
  const struct nonzero_args *a = cl_arg;
  strata__flatnonzero_cuda(a->dtype, a->n, (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                           (int64_t *)STARPU_VECTOR_GET_PTR(buffers[1]),
                           starpu_cuda_get_local_stream());
}
#endif

STRATA__CODELET(count_cl, "strata_count_nonzero", 0x74a9cf, count_cpu, count_cuda,
                strata__arg_footprint, NULL, .nbuffers = 2, .modes = {STARPU_R, STARPU_W});

STRATA__CODELET(list_cl, "strata_flatnonzero", 0x0570b0, list_cpu, list_cuda, strata__arg_footprint,
                NULL, .nbuffers = 2, .modes = {STARPU_R, STARPU_W});

static int submit(struct strata__codelet *cl, strata_dtype dtype, int64_t n,
                  starpu_data_handle_t in, starpu_data_handle_t out)
{
  struct nonzero_args a = {.dtype = dtype, .pad = 0, .n = n};
  starpu_data_handle_t h[2] = {in, out};
  return strata__submit_copy_arg(cl, &a, sizeof a, 2, h, NULL);
}

int strata__count_nonzero_submit(strata_dtype dtype, int64_t n, starpu_data_handle_t in,
                                 starpu_data_handle_t count)
{
  return submit(&count_cl, dtype, n, in, count);
}

int strata__flatnonzero_submit(strata_dtype dtype, int64_t n, starpu_data_handle_t in,
                               starpu_data_handle_t out)
{
  return submit(&list_cl, dtype, n, in, out);
}
