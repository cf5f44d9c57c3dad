/* Reductions over axes (sum, prod, min, max, mean): input (R), result (W). */
#include "reduce.h"

static void reduce_cpu(void *buffers[], void *cl_arg)
{
  strata__reduce_cpu(cl_arg, (void *)STARPU_VECTOR_GET_PTR(buffers[1]),
                     (const void *)STARPU_VECTOR_GET_PTR(buffers[0]));
}

#if STRATA__USE_CUDA
static void reduce_cuda(void *buffers[], void *cl_arg)
{
  strata__reduce_cuda(cl_arg, (void *)STARPU_VECTOR_GET_PTR(buffers[1]),
                      (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                      starpu_cuda_get_local_stream());
}
#endif

STRATA__CODELET(reduce_cl, "strata_reduce", 0x6baed6, reduce_cpu, reduce_cuda,
                strata__arg_footprint, NULL, .nbuffers = 2, .modes = {STARPU_R, STARPU_W});

int strata__reduce_submit(const struct strata__reduce_args *a, starpu_data_handle_t in,
                          starpu_data_handle_t out)
{
  starpu_data_handle_t h[2] = {in, out};
  return strata__submit_copy_arg(&reduce_cl, a, sizeof *a, 2, h, NULL);
}
