/* Take along an axis: input (R), indices (R, int32 or int64), result (W). */
#include "take.h"

static void take_cpu(void *buffers[], void *cl_arg)
{
  strata__take_cpu(cl_arg, (void *)STARPU_VECTOR_GET_PTR(buffers[2]),
                   (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                   (const void *)STARPU_VECTOR_GET_PTR(buffers[1]));
}

#if STRATA__USE_CUDA
static void take_cuda(void *buffers[], void *cl_arg)
{
  strata__take_cuda(cl_arg, (void *)STARPU_VECTOR_GET_PTR(buffers[2]),
                    (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                    (const void *)STARPU_VECTOR_GET_PTR(buffers[1]),
                    starpu_cuda_get_local_stream());
}
#endif

STRATA__CODELET(take_cl, "strata_take", 0x2171b5, take_cpu, take_cuda, strata__arg_footprint, NULL,
                .nbuffers = 3, .modes = {STARPU_R, STARPU_R, STARPU_W});

int strata__take_submit(const struct strata__take_args *a, starpu_data_handle_t in,
                        starpu_data_handle_t idx, starpu_data_handle_t out)
{
  starpu_data_handle_t h[3] = {in, idx, out};
  return strata__submit_copy_arg(&take_cl, a, sizeof *a, 3, h, NULL);
}
