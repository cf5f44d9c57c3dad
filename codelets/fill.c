/* Fills: arange, zeros, ones, full (result W). */
#include "fill.h"

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

STRATA__CODELET(fill_cl, "strata_fill", 0x9ecae1, fill_cpu, fill_cuda, fill_footprint, NULL,
                .nbuffers = 1, .modes = {STARPU_W});

int strata__affine_fill_submit(const struct strata__affine_fill_args *a, starpu_data_handle_t out)
{
  return strata__submit_copy_arg(&fill_cl, a, sizeof *a, 1, &out, NULL);
}
