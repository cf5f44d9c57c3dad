/* The emulation's stand-in for the part of cuBLAS that Strata calls (see
 * cuda_runtime.h): the same column-major GEMMs on host memory, computed by
 * the host's CBLAS (OpenBLAS). */
#ifndef STRATA_CUDA_EMULATION_CUBLAS_V2_H
#define STRATA_CUDA_EMULATION_CUBLAS_V2_H

#include <cblas.h>
#include <stdlib.h>

#include "cuda_runtime.h"

typedef enum {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7
} cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
typedef struct strata_cublas_context {
  cudaStream_t stream;
} * cublasHandle_t;

static inline cublasStatus_t cublasCreate(cublasHandle_t *handle)
{
  *handle = (cublasHandle_t)calloc(1, sizeof **handle);
  return *handle ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

static inline cublasStatus_t cublasDestroy(cublasHandle_t handle)
{
  free(handle);
  return CUBLAS_STATUS_SUCCESS;
}

static inline cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream)
{
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

static inline enum CBLAS_TRANSPOSE strata_cublas_op(cublasOperation_t op)
{
  return op == CUBLAS_OP_T ? CblasTrans : CblasNoTrans;
}

static inline int strata_cublas_at_least_1(int v) { return v > 1 ? v : 1; }

/* cuBLAS's argument checks for a GEMM. */
static inline int strata_cublas_bad(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                    int m, int n, int k, int lda, int ldb, int ldc)
{
  return !h || m < 0 || n < 0 || k < 0 ||
         lda < strata_cublas_at_least_1(ta == CUBLAS_OP_N ? m : k) ||
         ldb < strata_cublas_at_least_1(tb == CUBLAS_OP_N ? k : n) ||
         ldc < strata_cublas_at_least_1(m);
}

static inline cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *a, int lda,
                                         const float *b, int ldb, const float *beta, float *c,
                                         int ldc)
{
  if (strata_cublas_bad(h, ta, tb, m, n, k, lda, ldb, ldc))
    return CUBLAS_STATUS_INVALID_VALUE;
  cblas_sgemm(CblasColMajor, strata_cublas_op(ta), strata_cublas_op(tb), m, n, k, *alpha, a, lda, b,
              ldb, *beta, c, ldc);
  return CUBLAS_STATUS_SUCCESS;
}

static inline cublasStatus_t
cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                          int n, int k, const float *alpha, const float *a, int lda,
                          long long stride_a, const float *b, int ldb, long long stride_b,
                          const float *beta, float *c, int ldc, long long stride_c, int batches)
{
  for (int i = 0; i < batches; i++) {
    cublasStatus_t st = cublasSgemm(h, ta, tb, m, n, k, alpha, a + i * stride_a, lda,
                                    b + i * stride_b, ldb, beta, c + i * stride_c, ldc);
    if (st != CUBLAS_STATUS_SUCCESS)
      return st;
  }
  return CUBLAS_STATUS_SUCCESS;
}

static inline cublasStatus_t
cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                          int n, int k, const double *alpha, const double *a, int lda,
                          long long stride_a, const double *b, int ldb, long long stride_b,
                          const double *beta, double *c, int ldc, long long stride_c, int batches)
{
  if (strata_cublas_bad(h, ta, tb, m, n, k, lda, ldb, ldc))
    return CUBLAS_STATUS_INVALID_VALUE;
  for (int i = 0; i < batches; i++)
    cblas_dgemm(CblasColMajor, strata_cublas_op(ta), strata_cublas_op(tb), m, n, k, *alpha,
                a + i * stride_a, lda, b + i * stride_b, ldb, *beta, c + i * stride_c, ldc);
  return CUBLAS_STATUS_SUCCESS;
}

#endif
