/* Fills: arange, zeros, ones, full (result W). */
#include "codelets.h"

static void fill_cpu(void *buffers[], void *cl_arg)
{
  strata__affine_fill_cpu(cl_arg, (void *)STARPU_VECTOR_GET_PTR(buffers[0]));
}

#if STRATA__USE_CUDA
static void fill_cuda(void *buffers[], void *cl_arg)
{
  strata__affine_fill_cuda(cl_arg, (void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                           starpu_cuda_get_local_stream());
}
#endif

static struct starpu_perfmodel fill_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "strata_fill", .footprint = strata__arg_footprint};

static struct starpu_codelet fill_cl = {
    .name = "strata_fill",
    .cpu_funcs = {fill_cpu},
    STRATA__CUDA_IMPL(fill_cuda).nbuffers = 1,
    .modes = {STARPU_W},
    .model = &fill_model,
};

int strata__affine_fill_submit(const struct strata__affine_fill_args *a, starpu_data_handle_t out)
{
  return strata__submit_copy_arg(&fill_cl, a, sizeof *a, 1, &out, NULL);
}
