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

/* Type and length drive the cost, not the values. */
static uint32_t fill_footprint(struct starpu_task *task)
{
  struct strata__affine_fill_args a = *(const struct strata__affine_fill_args *)task->cl_arg;
  a.start = 0;
  a.step = 0;
  return starpu_hash_crc32c_be_n(&a, sizeof a, 0);
}

static struct starpu_perfmodel fill_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "strata_fill", .footprint = fill_footprint};

static struct starpu_codelet fill_cl = {
    .name = "strata_fill",
    .color = 0x9ecae1,
    .cpu_funcs = {fill_cpu},
    STRATA__CUDA_IMPL(fill_cuda).nbuffers = 1,
    .modes = {STARPU_W},
    .model = &fill_model,
};

int strata__affine_fill_submit(const struct strata__affine_fill_args *a, starpu_data_handle_t out)
{
  return strata__submit_copy_arg(&fill_cl, a, sizeof *a, 1, &out, NULL);
}
