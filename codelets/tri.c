/* Lower and upper triangles (tril, triu): input (R), result (W). */
#include "tri.h"

static void tri_cpu(void *buffers[], void *cl_arg)
{
  strata__tri_cpu(cl_arg, (void *)STARPU_VECTOR_GET_PTR(buffers[1]),
                  (const void *)STARPU_VECTOR_GET_PTR(buffers[0]));
}

#if STRATA__USE_CUDA
static void tri_cuda(void *buffers[], void *cl_arg)
{
  strata__tri_cuda(cl_arg, (void *)STARPU_VECTOR_GET_PTR(buffers[1]),
                   (const void *)STARPU_VECTOR_GET_PTR(buffers[0]), starpu_cuda_get_local_stream());
}
#endif

STRATA__CODELET(tri_cl, "strata_tri", 0x3182bd, tri_cpu, tri_cuda, strata__arg_footprint, NULL,
                .nbuffers = 2, .modes = {STARPU_R, STARPU_W});

int strata__tri_submit(const struct strata__tri_args *a, starpu_data_handle_t in,
                       starpu_data_handle_t out)
{
  starpu_data_handle_t h[2] = {in, out};
  return strata__submit_copy_arg(&tri_cl, a, sizeof *a, 2, h, NULL);
}
