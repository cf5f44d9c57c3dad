// The network runner on the GPU: the same layers and scratch layout as the
// CPU runner (../cpu/cnn.c), conv3d as im2col + cuBLAS SGEMM over slabs.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "launch.cuh"

#include "../cnn_kernels.h"

namespace
{

using strata_cuda::blocks_for;
using strata_cuda::kThreads;

// Column (z, y, x) of row (c, kz, ky, kx) for output planes [z0, z0 + nz).
__global__ void im2col_kernel(const float *in, int cin, int64_t n, int k, int d, int64_t z0,
                              int64_t nz, float *col)
{
  int64_t plane = n * n, ncols = nz * plane, pad = (int64_t)d * (k - 1) / 2;
  STRATA_GRID_LOOP(e, (int64_t)cin * k * k * k * ncols)
  {
    int64_t row = e / ncols, colx = e % ncols;
    int kx = (int)(row % k), ky = (int)(row / k % k), kz = (int)(row / (k * k) % k);
    int64_t c = row / ((int64_t)k * k * k);
    int64_t z = z0 + colx / plane + kz * d - pad, y = colx / n % n + ky * d - pad,
            x = colx % n + kx * d - pad;
    col[e] = (z >= 0 && z < n && y >= 0 && y < n && x >= 0 && x < n)
                 ? in[((c * n + z) * n + y) * n + x]
                 : 0.0f;
  }
}

__global__ void bias_kernel(float *out, int cout, int64_t vol, const float *bias)
{
  STRATA_GRID_LOOP(i, cout * vol) out[i] += bias[i / vol];
}

__global__ void pointwise_kernel(int kind, float param, const float *in, int64_t count, float *out)
{
  STRATA_GRID_LOOP(i, count)
  {
    float v = in[i];
    switch (kind) {
    case STRATA__LAYER_RELU: out[i] = v > 0.0f ? v : 0.0f; break;
    case STRATA__LAYER_LEAKY_RELU: out[i] = v > 0.0f ? v : param * v; break;
    case STRATA__LAYER_SIGMOID: out[i] = 1.0f / (1.0f + expf(-v)); break;
    default: out[i] = logf(v > param ? v : param); break;
    }
  }
}

__global__ void maxpool_kernel(const float *in, int channels, int64_t n, float *out)
{
  int64_t m = n / 2;
  STRATA_GRID_LOOP(o, channels * m * m * m)
  {
    int64_t x = o % m, y = o / m % m, z = o / (m * m) % m, c = o / (m * m * m);
    float best = -INFINITY;
    for (int dz = 0; dz < 2; dz++)
      for (int dy = 0; dy < 2; dy++)
        for (int dx = 0; dx < 2; dx++) {
          float v = in[((c * n + 2 * z + dz) * n + 2 * y + dy) * n + 2 * x + dx];
          best = v > best || v != v ? v : best;
        }
    out[o] = best;
  }
}

__global__ void upsample_kernel(const float *in, int channels, int64_t n, float *out)
{
  int64_t m = 2 * n;
  STRATA_GRID_LOOP(o, channels * m * m * m)
  {
    int64_t x = o % m, y = o / m % m, z = o / (m * m) % m, c = o / (m * m * m);
    out[o] = in[((c * n + z / 2) * n + y / 2) * n + x / 2];
  }
}

int conv3d(const float *in, int cin, int64_t n, const float *w, const float *bias, int cout, int k,
           int d, float *out, float *col, size_t col_floats, cublasHandle_t h, cudaStream_t s)
{
  const float one = 1.0f, zero = 0.0f;
  int64_t vol = n * n * n, plane = n * n, rows = (int64_t)cin * k * k * k;
  int64_t planes = k == 1 ? n : strata__conv3d_slab_planes(rows, n, col_floats);
  for (int64_t z0 = 0; z0 < n; z0 += planes) {
    int64_t nz = z0 + planes > n ? n - z0 : planes;
    const float *b = in + z0 * plane; // k == 1: the input is the im2col matrix
    int ldb = (int)vol;
    if (k > 1) {
      STRATA_LAUNCH(blocks_for(rows * nz * plane), kThreads, s, im2col_kernel)
      (in, cin, n, k, d, z0, nz, col);
      b = col;
      ldb = (int)(nz * plane);
    }
    // Row-major out[cout, cols] = w[cout, rows] b[rows, cols], as column-major
    // out^T = b^T w^T.
    cublasStatus_t st = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)(nz * plane), cout, (int)rows,
                                    &one, b, ldb, w, (int)rows, &zero, out + z0 * plane, (int)vol);
    if (st != CUBLAS_STATUS_SUCCESS)
      return (int)st;
  }
  if (bias)
    STRATA_LAUNCH(blocks_for(cout * vol), kThreads, s, bias_kernel)(out, cout, vol, bias);
  return (int)cudaGetLastError();
}

} // namespace

extern "C" int strata__cnn_forward_cuda(const struct strata__network *net, const float *weights,
                                        const float *in, int64_t n, float *out, float *scratch,
                                        void *cublas, void *stream)
{
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  cublasHandle_t h = static_cast<cublasHandle_t>(cublas);
  int64_t offsets[STRATA__CNN_MAX_LAYERS], col_offset;
  size_t col_floats;
  if (net->nlayers > STRATA__CNN_MAX_LAYERS)
    return (int)cudaErrorInvalidValue;
  strata__cnn_layout(net, n, offsets, &col_offset, &col_floats);
  float *col = scratch + col_offset;
  for (int l = 0; l < net->nlayers; l++) {
    const struct strata__layer *L = &net->layers[l];
    float *dst = l == net->nlayers - 1 ? out : scratch + offsets[l];
    const float *src[2];
    int64_t sn[2];
    for (int i = 0; i < L->ninputs; i++) {
      int p = L->inputs[i];
      src[i] = p == STRATA__NETWORK_INPUT ? in : scratch + offsets[p];
      sn[i] = p == STRATA__NETWORK_INPUT ? n : n >> net->layers[p].level;
    }
    int cin = strata__layer_in_channels(net, l);
    int64_t count = cin * sn[0] * sn[0] * sn[0];
    int ret = 0;
    switch (L->kind) {
    case STRATA__LAYER_CONV3D:
      ret = conv3d(src[0], cin, sn[0], weights + L->weight_offset,
                   L->bias_offset >= 0 ? weights + L->bias_offset : nullptr, L->channels, L->kernel,
                   L->dilation, dst, col, col_floats, h, s);
      break;
    case STRATA__LAYER_MAXPOOL:
      STRATA_LAUNCH(blocks_for(count / 8), kThreads, s, maxpool_kernel)(src[0], cin, sn[0], dst);
      break;
    case STRATA__LAYER_UPSAMPLE:
      STRATA_LAUNCH(blocks_for(count * 8), kThreads, s, upsample_kernel)(src[0], cin, sn[0], dst);
      break;
    case STRATA__LAYER_CONCAT: {
      size_t second = (size_t)(L->channels - cin) * sn[1] * sn[1] * sn[1];
      cudaMemcpyAsync(dst, src[0], (size_t)count * sizeof(float), cudaMemcpyDeviceToDevice, s);
      cudaMemcpyAsync(dst + count, src[1], second * sizeof(float), cudaMemcpyDeviceToDevice, s);
      break;
    }
    default:
      STRATA_LAUNCH(blocks_for(count), kThreads, s, pointwise_kernel)
      (L->kind, L->param, src[0], count, dst);
      break;
    }
    if (ret == 0)
      ret = (int)cudaGetLastError();
    if (ret)
      return ret;
  }
  return 0;
}
