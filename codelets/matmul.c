/* Matrix products (OpenBLAS on CPU, cuBLAS on CUDA): x (R), y (R),
 * result (W). */
#include "matmul.h"

#if STRATA__USE_CUDA
#include <starpu_cublas_v2.h>
#endif

static void matmul_cpu(void *buffers[], void *cl_arg)
{
  strata__matmul_cpu(cl_arg, (void *)STARPU_VECTOR_GET_PTR(buffers[2]),
                     (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                     (const void *)STARPU_VECTOR_GET_PTR(buffers[1]));
}

#if STRATA__USE_CUDA
static void matmul_cuda(void *buffers[], void *cl_arg)
{
  strata__matmul_cuda(cl_arg, (void *)STARPU_VECTOR_GET_PTR(buffers[2]),
                      (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                      (const void *)STARPU_VECTOR_GET_PTR(buffers[1]),
                      starpu_cublas_get_local_handle(), starpu_cuda_get_local_stream());
}
#endif

/* A multiply and an add per term of each product. */
static double matmul_flops(const void *arg, const starpu_data_handle_t *handles)
{
  (void)handles;
  const struct strata__matmul_args *a = arg;
  return 2.0 * (double)a->m * (double)a->k * (double)a->n * (double)a->batch;
}

STRATA__CODELET(matmul_cl, "strata_matmul", 0x084594, matmul_cpu, matmul_cuda,
                strata__arg_footprint, matmul_flops, .nbuffers = 3,
                .modes = {STARPU_R, STARPU_R, STARPU_W});

int strata__matmul_submit(const struct strata__matmul_args *a, starpu_data_handle_t x,
                          starpu_data_handle_t y, starpu_data_handle_t out)
{
  starpu_data_handle_t h[3] = {x, y, out};
  return strata__submit_copy_arg(&matmul_cl, a, sizeof *a, 3, h, NULL);
}
