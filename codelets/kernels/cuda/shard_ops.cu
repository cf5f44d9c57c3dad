// CUDA kernels of the example sharded operations (shard_ops_kernels.h).
#include <cstdint>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "../shard_ops_kernels.h"
#include "launch.cuh"

namespace
{

using strata_cuda::blocks_for;
using strata_cuda::kThreads;

__global__ void broadcast_rows(int64_t rows, int64_t cols, const float *v, float *y)
{
  STRATA_GRID_LOOP(i, rows * cols) { y[i] = v[i % cols]; }
}

__global__ void conv2d(strata__conv2d_shape s, const float *x, const float *kernel, float *y)
{
  STRATA_GRID_LOOP(cell, s.yh * s.yw)
  {
    int64_t i = cell / s.yw, j = cell % s.yw;
    float acc = 0.0f;
    for (int64_t a = 0; a < s.kh; a++) {
      int64_t p = i + a + s.off_h;
      if (p < 0 || p >= s.xh)
        continue;
      for (int64_t b = 0; b < s.kw; b++) {
        int64_t q = j + b + s.off_w;
        if (q >= 0 && q < s.xw)
          acc += kernel[a * s.kw + b] * x[p * s.xw + q];
      }
    }
    y[cell] = acc;
  }
}

__global__ void axial_sum(int64_t outer, int64_t len, int64_t inner, const float *x, float *y)
{
  STRATA_GRID_LOOP(cell, outer * inner)
  {
    int64_t o = cell / inner, i = cell % inner;
    float acc = 0.0f;
    for (int64_t l = 0; l < len; l++)
      acc += x[(o * len + l) * inner + i];
    y[cell] += acc;
  }
}

__global__ void broadcast_add(int64_t rows, int64_t cols, const float *x, const float *v, float *y)
{
  STRATA_GRID_LOOP(i, rows * cols) { y[i] = x[i] + v[i % cols]; }
}

} // namespace

extern "C" int strata__linear_cuda(int64_t rows, int64_t k, int64_t cols, const float *x,
                                   const float *w, const float *bias, float *y, void *cublas,
                                   void *stream)
{
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (rows * cols == 0)
    return 0;
  STRATA_LAUNCH(blocks_for(rows * cols), kThreads, s, broadcast_rows)(rows, cols, bias, y);
  if (cudaError_t e = cudaGetLastError())
    return e;
  if (k == 0)
    return 0;
  // Row-major y = x w is column-major y^T = w^T x^T.
  const float one = 1.0f;
  return cublasSgemm(static_cast<cublasHandle_t>(cublas), CUBLAS_OP_N, CUBLAS_OP_N, (int)cols,
                     (int)rows, (int)k, &one, w, (int)cols, x, (int)k, &one, y, (int)cols);
}

extern "C" int strata__conv2d_cuda(const strata__conv2d_shape *s, const float *x,
                                   const float *kernel, float *y, void *stream)
{
  if (s->yh * s->yw == 0)
    return 0;
  STRATA_LAUNCH(blocks_for(s->yh * s->yw), kThreads, static_cast<cudaStream_t>(stream), conv2d)
  (*s, x, kernel, y);
  return cudaGetLastError();
}

extern "C" int strata__axial_sum_cuda(int64_t outer, int64_t len, int64_t inner, const float *x,
                                      float *y, void *stream)
{
  if (outer * inner == 0)
    return 0;
  STRATA_LAUNCH(blocks_for(outer * inner), kThreads, static_cast<cudaStream_t>(stream), axial_sum)
  (outer, len, inner, x, y);
  return cudaGetLastError();
}

extern "C" int strata__broadcast_add_cuda(int64_t rows, int64_t cols, const float *x,
                                          const float *v, float *y, void *stream)
{
  if (rows * cols == 0)
    return 0;
  STRATA_LAUNCH(blocks_for(rows * cols), kThreads, static_cast<cudaStream_t>(stream), broadcast_add)
  (rows, cols, x, v, y);
  return cudaGetLastError();
}
