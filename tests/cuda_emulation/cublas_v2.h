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

/* cublas{S,D}gemmStridedBatched: `batches` column-major GEMMs whose
 * operands lie stride_a, stride_b and stride_c elements apart. */
#define STRATA_CUBLAS_GEMM_STRIDED_BATCHED(name, cblas_gemm, T)                                    \
  static inline cublasStatus_t name(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,  \
                                    int m, int n, int k, const T *alpha, const T *a, int lda,      \
                                    long long stride_a, const T *b, int ldb, long long stride_b,   \
                                    const T *beta, T *c, int ldc, long long stride_c, int batches) \
  {                                                                                                \
    if (batches < 0 || strata_cublas_bad(h, ta, tb, m, n, k, lda, ldb, ldc))                       \
      return CUBLAS_STATUS_INVALID_VALUE;                                                          \
    for (int i = 0; i < batches; i++)                                                              \
      cblas_gemm(CblasColMajor, strata_cublas_op(ta), strata_cublas_op(tb), m, n, k, *alpha,       \
                 a + i * stride_a, lda, b + i * stride_b, ldb, *beta, c + i * stride_c, ldc);      \
    return CUBLAS_STATUS_SUCCESS;                                                                  \
  }
STRATA_CUBLAS_GEMM_STRIDED_BATCHED(cublasSgemmStridedBatched, cblas_sgemm, float)
STRATA_CUBLAS_GEMM_STRIDED_BATCHED(cublasDgemmStridedBatched, cblas_dgemm, double)

static inline cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *a, int lda,
                                         const float *b, int ldb, const float *beta, float *c,
                                         int ldc)
{
  return cublasSgemmStridedBatched(h, ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0,
                                   1);
}

#endif
