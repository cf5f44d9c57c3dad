/* Take along an axis: input (R), indices (R, int32 or int64), result (W). */
#include "codelets.h"

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

static struct starpu_perfmodel take_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "strata_take", .footprint = strata__arg_footprint};

static struct starpu_codelet take_cl = {
    .name = "strata_take",
    .color = 0x2171b5,
    .cpu_funcs = {take_cpu},
    STRATA__CUDA_IMPL(take_cuda).nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_W},
    .model = &take_model,
};

int strata__take_submit(const struct strata__take_args *a, starpu_data_handle_t in,
                        starpu_data_handle_t idx, starpu_data_handle_t out)
{
  starpu_data_handle_t h[3] = {in, idx, out};
  return strata__submit_copy_arg(&take_cl, a, sizeof *a, 3, h, NULL);
}
