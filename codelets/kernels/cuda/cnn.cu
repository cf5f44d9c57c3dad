// The network runner on the GPU: the same layers and scratch layout as the
// CPU runner (../cpu/cnn.c), conv3d through cuDNN where the build has it
// (else, and where cuDNN declines, im2col + cuBLAS SGEMM over slabs),
// transposed conv3d as one SGEMM and a gather.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <cublas_v2.h>
#include <cuda_runtime.h>

// The emulated runtime of the tests has no cuDNN.
#if defined(STRATA_HAVE_CUDNN) && STRATA_HAVE_CUDNN && !defined(STRATA_CUDA_EMULATION)
#define STRATA_USE_CUDNN 1
#include <cudnn.h>
#else
#define STRATA_USE_CUDNN 0
#endif

#include "launch.cuh"

#include "../cnn_kernels.h"

namespace
{

using strata_cuda::blocks_for;
using strata_cuda::kThreads;

// Column (z, y, x) of row (c, kz, ky, kx) for output planes [z0, z0 + nz)
// of extents m, reading the input of extents n.
__global__ void im2col_kernel(const float *in, int cin, strata__extent n, strata__extent m,
                              strata__layer L, int64_t z0, int64_t nz, float *col)
{
  const int *k = L.kernel, *d = L.dilation, *s = L.stride;
  int64_t plane = m.e[1] * m.e[2], ncols = nz * plane, taps = strata__kernel_volume(&L);
  STRATA_GRID_LOOP(e, (int64_t)cin * taps * ncols)
  {
    int64_t row = e / ncols, colx = e % ncols;
    int kx = (int)(row % k[2]), ky = (int)(row / k[2] % k[1]),
        kz = (int)(row / (k[2] * k[1]) % k[0]);
    int64_t c = row / taps;
    int64_t z = (z0 + colx / plane) * s[0] + kz * d[0] - L.pad[0],
            y = colx / m.e[2] % m.e[1] * s[1] + ky * d[1] - L.pad[1],
            x = colx % m.e[2] * s[2] + kx * d[2] - L.pad[2];
    col[e] = (z >= 0 && z < n.e[0] && y >= 0 && y < n.e[1] && x >= 0 && x < n.e[2])
                 ? in[((c * n.e[0] + z) * n.e[1] + y) * n.e[2] + x]
                 : 0.0f;
  }
}

__global__ void bias_kernel(float *out, int cout, int64_t vol, const float *bias)
{
  STRATA_GRID_LOOP(i, cout * vol) out[i] += bias[i / vol];
}

// Each output cell of a transposed conv3d gathers its taps from col.
__global__ void transposed_gather_kernel(const float *col, strata__extent n, strata__extent m,
                                         strata__layer L, const float *bias, float *out)
{
  const int *k = L.kernel;
  int64_t vol_in = strata__volume(n), vol = strata__volume(m);
  STRATA_GRID_LOOP(e, L.channels * vol)
  {
    int64_t x = e % m.e[2], y = e / m.e[2] % m.e[1], z = e / (m.e[2] * m.e[1]) % m.e[0],
            o = e / vol;
    float sum = bias ? bias[o] : 0.0f;
    for (int kz = 0; kz < k[0]; kz++) {
      int64_t sz = strata__transposed_source(z, kz, &L, 0, n.e[0]);
      for (int ky = 0; sz >= 0 && ky < k[1]; ky++) {
        int64_t sy = strata__transposed_source(y, ky, &L, 1, n.e[1]);
        for (int kx = 0; sy >= 0 && kx < k[2]; kx++) {
          int64_t sx = strata__transposed_source(x, kx, &L, 2, n.e[2]);
          if (sx >= 0)
            sum += col[(((o * k[0] + kz) * k[1] + ky) * k[2] + kx) * vol_in +
                       (sz * n.e[1] + sy) * n.e[2] + sx];
        }
      }
    }
    out[e] = L.activation ? strata__pointwise(L.activation, L.act_param, L.act_param2, sum) : sum;
  }
}

__global__ void pointwise_kernel(int kind, float p, float p2, const float *in, int64_t count,
                                 float *out)
{
  STRATA_GRID_LOOP(i, count) out[i] = strata__pointwise(kind, p, p2, in[i]);
}

__global__ void binary_kernel(int kind, const float *a, int ca, const float *b, int cb,
                              int channels, int64_t vol, float *out)
{
  STRATA_GRID_LOOP(i, channels * vol)
  {
    int64_t c = i / vol, cell = i % vol;
    out[i] =
        strata__binary(kind, a[(ca == 1 ? 0 : c * vol) + cell], b[(cb == 1 ? 0 : c * vol) + cell]);
  }
}

__global__ void softmax_kernel(const float *in, int channels, int64_t vol, float *out)
{
  STRATA_GRID_LOOP(i, vol)
  {
    float top = -INFINITY, sum = 0.0f;
    for (int64_t c = 0; c < channels; c++)
      top = in[c * vol + i] > top ? in[c * vol + i] : top;
    for (int64_t c = 0; c < channels; c++)
      sum += out[c * vol + i] = expf(in[c * vol + i] - top);
    for (int64_t c = 0; c < channels; c++)
      out[c * vol + i] /= sum;
  }
}

// Per-channel affine map; for a norm layer, one block per channel group,
// which first reduces the group's mean and biased variance (double).
__global__ void affine_kernel(strata__layer L, const float *weights, const float *in, int64_t vol,
                              float *out)
{
  __shared__ double sums[2][strata_cuda::kThreads];
  if (L.kind == STRATA__LAYER_AFFINE) {
    STRATA_GRID_LOOP(i, L.channels * vol)
    {
      int64_t c = i / vol;
      out[i] = in[i] * (L.weight_offset >= 0 ? weights[L.weight_offset + c] : 1.0f) +
               (L.bias_offset >= 0 ? weights[L.bias_offset + c] : 0.0f);
    }
    return;
  }
  int64_t group = L.channels / L.groups;
  int64_t g0 = (int64_t)blockIdx.x * group, count = group * vol;
  const float *src = in + g0 * vol;
  double mean, rstd;
  {
    double sum = 0, sq = 0;
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
      sum += src[i];
      sq += (double)src[i] * src[i];
    }
    sums[0][threadIdx.x] = sum;
    sums[1][threadIdx.x] = sq;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) {
        sums[0][threadIdx.x] += sums[0][threadIdx.x + half];
        sums[1][threadIdx.x] += sums[1][threadIdx.x + half];
      }
      __syncthreads();
    }
    mean = sums[0][0] / (double)count;
    double var = sums[1][0] / (double)count - mean * mean;
    rstd = 1.0 / sqrt((var > 0 ? var : 0) + L.param);
  }
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    int64_t c = g0 + i / vol;
    double scale = (L.weight_offset >= 0 ? weights[L.weight_offset + c] : 1.0) * rstd;
    double shift = (L.bias_offset >= 0 ? weights[L.bias_offset + c] : 0.0) - mean * scale;
    out[g0 * vol + i] = (float)(src[i] * scale + shift);
  }
}

// The mean of each channel: one block a channel, double sums.
__global__ void global_mean_kernel(const float *in, int64_t vol, float *out)
{
  __shared__ double sums[strata_cuda::kThreads];
  const float *src = in + blockIdx.x * vol;
  double sum = 0;
  for (int64_t i = threadIdx.x; i < vol; i += blockDim.x)
    sum += src[i];
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    out[blockIdx.x] = (float)(sums[0] / (double)vol);
}

__global__ void broadcast_kernel(const float *in, int channels, int64_t vol, float *out)
{
  STRATA_GRID_LOOP(i, channels * vol) out[i] = in[i / vol];
}

// Pooling over strata__pool_window(): the maximum (NaN wins) or the mean.
__global__ void pool_kernel(const float *in, int channels, strata__extent n, strata__extent m,
                            struct strata__pool_window w, int mean, int count_pads, float *out)
{
  int64_t vol = strata__volume(m);
  STRATA_GRID_LOOP(o, channels * vol)
  {
    int64_t x = o % m.e[2], y = o / m.e[2] % m.e[1], z = o / (m.e[2] * m.e[1]) % m.e[0];
    out[o] = strata__pool_cell(in + o / vol * strata__volume(n), n, w, mean, count_pads, x, y, z);
  }
}

// Nearest (input cell floor(o / scale) per axis) or linear upsampling.
__global__ void upsample_kernel(const float *in, int channels, strata__extent n, strata__extent m,
                                strata__layer L, float *out)
{
  int64_t vol = strata__volume(m);
  const int *s = L.stride;
  STRATA_GRID_LOOP(o, channels * vol)
  {
    int64_t x = o % m.e[2], y = o / m.e[2] % m.e[1], z = o / (m.e[2] * m.e[1]) % m.e[0];
    const float *a = in + o / vol * strata__volume(n);
    out[o] = L.kind == STRATA__LAYER_UPSAMPLE_LINEAR
                 ? strata__upsample_linear_at(a, n, &L, z, y, x)
                 : a[(z / s[0] * n.e[1] + y / s[1]) * n.e[2] + x / s[2]];
  }
}

// A convolution's bias and fused activation, in place on its output.
int finish_conv(const strata__layer &L, const float *bias, float *out, int64_t vol, cudaStream_t s)
{
  if (bias)
    STRATA_LAUNCH(blocks_for(L.channels * vol), kThreads, s, bias_kernel)
  (out, L.channels, vol, bias);
  if (L.activation)
    STRATA_LAUNCH(blocks_for(L.channels * vol), kThreads, s, pointwise_kernel)
  (L.activation, L.act_param, L.act_param2, out, L.channels * vol, out);
  return (int)cudaGetLastError();
}

// conv3d per group: im2col over slabs of output planes and one SGEMM each
// (the input itself is the matrix of a pointwise convolution).
int conv3d(const float *in, int cin, strata__extent n, strata__extent m, const strata__layer &L,
           const float *w, const float *bias, float *out, float *col, size_t col_floats,
           cublasHandle_t h, cudaStream_t s)
{
  const float one = 1.0f, zero = 0.0f;
  int g = L.groups, cin_g = cin / g, cout_g = L.channels / g;
  int64_t vol_in = strata__volume(n), vol = strata__volume(m), plane = m.e[1] * m.e[2];
  int64_t rows = (int64_t)cin_g * strata__kernel_volume(&L);
  bool pointwise = strata__conv3d_is_pointwise(&L);
  int64_t planes = pointwise ? m.e[0] : strata__conv3d_slab_planes(rows, plane, m.e[0], col_floats);
  for (int gi = 0; gi < g; gi++) {
    const float *src = in + gi * cin_g * vol_in, *wg = w + gi * cout_g * rows;
    float *dst = out + gi * cout_g * vol;
    for (int64_t z0 = 0; z0 < m.e[0]; z0 += planes) {
      int64_t nz = z0 + planes > m.e[0] ? m.e[0] - z0 : planes;
      const float *b = src + z0 * plane; // pointwise: the input is the im2col matrix
      int ldb = (int)vol;
      if (!pointwise) {
        STRATA_LAUNCH(blocks_for(rows * nz * plane), kThreads, s, im2col_kernel)
        (src, cin_g, n, m, L, z0, nz, col);
        b = col;
        ldb = (int)(nz * plane);
      }
      // Row-major dst[cout_g, cols] = wg[cout_g, rows] b[rows, cols], as
      // column-major dst^T = b^T wg^T.
      cublasStatus_t st =
          cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)(nz * plane), cout_g, (int)rows, &one, b,
                      ldb, wg, (int)rows, &zero, dst + z0 * plane, (int)vol);
      if (st != CUBLAS_STATUS_SUCCESS)
        return (int)st;
    }
  }
  return finish_conv(L, bias, out, vol, s);
}

#if STRATA_USE_CUDNN
// This thread's cuDNN handle (a StarPU CUDA worker keeps one device), made
// on first use; none when cuDNN cannot start or STRATA_CUDNN=0.
thread_local cudnnHandle_t cudnn_handle = nullptr;
thread_local bool cudnn_tried = false;
std::atomic<long long> cudnn_convolutions{0};

bool env_is(const char *name, const char *value)
{
  const char *env = getenv(name);
  return env && strcmp(env, value) == 0;
}

cudnnHandle_t worker_cudnn(cudaStream_t s)
{
  if (env_is("STRATA_CUDNN", "0"))
    return nullptr;
  if (!cudnn_tried) {
    cudnn_tried = true;
    if (cudnnCreate(&cudnn_handle) != CUDNN_STATUS_SUCCESS)
      cudnn_handle = nullptr;
  }
  if (cudnn_handle && cudnnSetStream(cudnn_handle, s) != CUDNN_STATUS_SUCCESS)
    return nullptr;
  return cudnn_handle;
}

// What a cuDNN convolution depends on: the shapes, the workspace it may use
// and the math (zeroed, then compared bytewise).
struct cudnn_key {
  int cin, cout, groups, tf32, kernel[3], stride[3], pad[3], dilation[3];
  int64_t n[3], m[3];
  size_t ws_bytes;
};

// A convolution's descriptors and the algorithm cuDNN measured fastest
// for it (ok = 0: cuDNN declines it, and the caller uses im2col).
struct cudnn_plan {
  cudnn_key key;
  bool ok;
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  cudnnConvolutionFwdAlgo_t algo;
  size_t memory;
};

// Per thread, as the handle: the plans of the shapes seen last. Choosing
// an algorithm costs far more than a convolution at 64^3 (measured on an
// H200: 9.9 ms a U-Net pass with a choice per call, against 5.9 ms for
// im2col + cuBLAS), so it is made once per shape.
constexpr int kPlans = 64;
thread_local cudnn_plan plans[kPlans];
thread_local int plans_used = 0, plans_next = 0;

void destroy_plan(cudnn_plan &p)
{
  cudnnDestroyTensorDescriptor(p.x), cudnnDestroyTensorDescriptor(p.y);
  cudnnDestroyFilterDescriptor(p.w), cudnnDestroyConvolutionDescriptor(p.conv);
  p = cudnn_plan{};
}

// Descriptors for the key, and cuDNN's measured choice of algorithm on the
// call's own buffers (out is overwritten by the trials, then by the call).
void make_plan(cudnnHandle_t h, cudnn_plan &p, const float *in, const float *w, float *out,
               float *ws)
{
  const cudnn_key &k = p.key;
  int xdims[5] = {1, k.cin, (int)k.n[0], (int)k.n[1], (int)k.n[2]},
      wdims[5] = {k.cout, k.cin / k.groups, k.kernel[0], k.kernel[1], k.kernel[2]}, got[5];
  bool ok = cudnnCreateTensorDescriptor(&p.x) == CUDNN_STATUS_SUCCESS &&
            cudnnCreateTensorDescriptor(&p.y) == CUDNN_STATUS_SUCCESS &&
            cudnnCreateFilterDescriptor(&p.w) == CUDNN_STATUS_SUCCESS &&
            cudnnCreateConvolutionDescriptor(&p.conv) == CUDNN_STATUS_SUCCESS &&
            cudnnSetTensorNdDescriptorEx(p.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 5, xdims) ==
                CUDNN_STATUS_SUCCESS &&
            cudnnSetFilterNdDescriptor(p.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 5, wdims) ==
                CUDNN_STATUS_SUCCESS &&
            cudnnSetConvolutionNdDescriptor(p.conv, 3, k.pad, k.stride, k.dilation,
                                            CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT) == CUDNN_STATUS_SUCCESS &&
            cudnnSetConvolutionGroupCount(p.conv, k.groups) == CUDNN_STATUS_SUCCESS &&
            cudnnSetConvolutionMathType(p.conv, k.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH) ==
                CUDNN_STATUS_SUCCESS &&
            cudnnGetConvolutionNdForwardOutputDim(p.conv, p.x, p.w, 5, got) == CUDNN_STATUS_SUCCESS;
  for (int a = 0; ok && a < 3; a++) // cuDNN pads both sides alike: unequal pads may not fit
    ok = got[2 + a] == k.m[a];
  ok = ok && cudnnSetTensorNdDescriptorEx(p.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 5, got) ==
                 CUDNN_STATUS_SUCCESS;
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int count = 0;
  ok = ok && cudnnFindConvolutionForwardAlgorithmEx(h, p.x, in, p.w, w, p.conv, p.y, out,
                                                    CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf,
                                                    ws, k.ws_bytes) == CUDNN_STATUS_SUCCESS;
  p.ok = false;
  for (int i = 0; ok && i < count && !p.ok; i++) // fastest first
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= k.ws_bytes)
      p.ok = true, p.algo = perf[i].algo, p.memory = perf[i].memory;
}

// The plan for a key: the thread's cached one, or a new one in place of
// the oldest.
const cudnn_plan &find_plan(cudnnHandle_t h, const cudnn_key &key, const float *in, const float *w,
                            float *out, float *ws)
{
  for (int i = 0; i < plans_used; i++)
    if (memcmp(&plans[i].key, &key, sizeof key) == 0)
      return plans[i];
  int slot = plans_used;
  if (plans_used < kPlans) {
    plans_used++;
  } else {
    slot = plans_next, plans_next = (plans_next + 1) % kPlans;
    destroy_plan(plans[slot]);
  }
  plans[slot].key = key;
  make_plan(h, plans[slot], in, w, out, ws);
  return plans[slot];
}

// conv3d by cuDNN (NCDHW, float32; FMA math, no TF32, for parity with the
// CPU, unless STRATA_CUDNN_TF32=1), the algorithm its trials found fastest
// within the workspace `ws`; bias and activation by the runner's kernels.
// Returns 0, or -1 where cuDNN declines (pads unequal before and after
// that change the extent, no algorithm) and the caller falls back to im2col.
int conv3d_cudnn(cudnnHandle_t h, bool tf32, const float *in, int cin, strata__extent n,
                 strata__extent m, const strata__layer &L, const float *w, const float *bias,
                 float *out, float *ws, size_t ws_bytes, cudaStream_t s)
{
  // cuDNN's vectorised kernels fault on tensors that are only 4-byte aligned
  if (((uintptr_t)in | (uintptr_t)w | (uintptr_t)out | (uintptr_t)ws) % 16)
    return -1;
  cudnn_key key;
  memset(&key, 0, sizeof key);
  key.cin = cin, key.cout = L.channels, key.groups = L.groups, key.ws_bytes = ws_bytes;
  key.tf32 = tf32;
  for (int a = 0; a < 3; a++) {
    key.kernel[a] = L.kernel[a], key.stride[a] = L.stride[a], key.pad[a] = L.pad[a];
    key.dilation[a] = L.dilation[a], key.n[a] = n.e[a], key.m[a] = m.e[a];
  }
  const cudnn_plan &p = find_plan(h, key, in, w, out, ws);
  const float one = 1.0f, zero = 0.0f;
  if (!p.ok || cudnnConvolutionForward(h, &one, p.x, in, p.w, w, p.conv, p.algo, ws, p.memory,
                                       &zero, p.y, out) != CUDNN_STATUS_SUCCESS)
    return -1;
  cudnn_convolutions.fetch_add(1, std::memory_order_relaxed);
  return finish_conv(L, bias, out, strata__volume(m), s);
}
#endif

// Transposed conv3d: col[(o, tap)][input cell] = sum_i w[i][(o, tap)] in[i]
// by one SGEMM, then the gather.
int conv_transpose(const float *in, int cin, strata__extent n, strata__extent m,
                   const strata__layer &L, const float *w, const float *bias, float *out,
                   float *col, cublasHandle_t h, cudaStream_t s)
{
  const float one = 1.0f, zero = 0.0f;
  int64_t kv = strata__kernel_volume(&L), vol_in = strata__volume(n);
  // Column-major col^T[vol_in, cout kv] = in^T[vol_in, cin] w[cin, cout kv].
  cublasStatus_t st =
      cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, (int)vol_in, (int)(L.channels * kv), cin, &one, in,
                  (int)vol_in, w, (int)(L.channels * kv), &zero, col, (int)vol_in);
  if (st != CUBLAS_STATUS_SUCCESS)
    return (int)st;
  STRATA_LAUNCH(blocks_for(L.channels * strata__volume(m)), kThreads, s, transposed_gather_kernel)
  (col, n, m, L, bias, out);
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
  strata__extent ext[STRATA__CNN_MAX_LAYERS];
  size_t col_floats;
  if (net->nlayers > STRATA__CNN_MAX_LAYERS || strata__cnn_extents(net, n, ext) >= 0)
    return (int)cudaErrorInvalidValue;
  strata__cnn_layout(net, n, ext, offsets, &col_offset, &col_floats);
  float *col = scratch + col_offset;
#if STRATA_USE_CUDNN
  cudnnHandle_t dnn = worker_cudnn(s); // the settings read once a pass
  const bool tf32 = env_is("STRATA_CUDNN_TF32", "1");
#endif
  for (int l = 0; l < net->nlayers; l++) {
    const struct strata__layer *L = &net->layers[l];
    float *dst = l == net->nlayers - 1 ? out : scratch + offsets[l];
    const float *src[STRATA__LAYER_MAX_INPUTS];
    int src_c[STRATA__LAYER_MAX_INPUTS];
    for (int i = 0; i < L->ninputs; i++) {
      int p = L->inputs[i];
      src[i] = p == STRATA__NETWORK_INPUT ? in : scratch + offsets[p];
      src_c[i] = p == STRATA__NETWORK_INPUT ? net->in_channels : net->layers[p].channels;
    }
    int cin = src_c[0];
    const strata__extent sn = strata__source_extent(ext, L->inputs[0], n), m = ext[l];
    int64_t vol = strata__volume(sn), count = cin * vol, out_count = cin * strata__volume(m);
    const float *w = weights + L->weight_offset;
    const float *bias = L->bias_offset >= 0 ? weights + L->bias_offset : nullptr;
    int ret = 0;
    switch (L->kind) {
    case STRATA__LAYER_CONV3D:
#if STRATA_USE_CUDNN
      if (dnn && conv3d_cudnn(dnn, tf32, src[0], cin, sn, m, *L, w, bias, dst, col,
                              col_floats * sizeof(float), s) == 0)
        break;
#endif
      ret = conv3d(src[0], cin, sn, m, *L, w, bias, dst, col, col_floats, h, s);
      break;
    case STRATA__LAYER_CONV_TRANSPOSE:
      ret = conv_transpose(src[0], cin, sn, m, *L, w, bias, dst, col, h, s);
      break;
    case STRATA__LAYER_MAXPOOL:
    case STRATA__LAYER_AVGPOOL:
      STRATA_LAUNCH(blocks_for(out_count), kThreads, s, pool_kernel)
      (src[0], cin, sn, m, strata__pool_window(L), L->kind == STRATA__LAYER_AVGPOOL,
       L->kind == STRATA__LAYER_AVGPOOL && L->param != 0, dst);
      break;
    case STRATA__LAYER_UPSAMPLE:
    case STRATA__LAYER_UPSAMPLE_LINEAR:
      STRATA_LAUNCH(blocks_for(out_count), kThreads, s, upsample_kernel)
      (src[0], cin, sn, m, *L, dst);
      break;
    case STRATA__LAYER_CONCAT:
      for (int i = 0; i < L->ninputs; i++) {
        size_t floats = (size_t)(src_c[i] * vol);
        cudaMemcpyAsync(dst, src[i], floats * sizeof(float), cudaMemcpyDeviceToDevice, s);
        dst += floats;
      }
      break;
    case STRATA__LAYER_RESHAPE:
      cudaMemcpyAsync(dst, src[0], (size_t)count * sizeof(float), cudaMemcpyDeviceToDevice, s);
      break;
    case STRATA__LAYER_AFFINE:
    case STRATA__LAYER_NORM:
      STRATA_LAUNCH(L->kind == STRATA__LAYER_NORM ? L->groups : blocks_for(L->channels * vol),
                    kThreads, s, affine_kernel)
      (*L, weights, src[0], vol, dst);
      break;
    case STRATA__LAYER_ADD:
    case STRATA__LAYER_SUB:
    case STRATA__LAYER_MUL:
    case STRATA__LAYER_DIV:
      STRATA_LAUNCH(blocks_for(L->channels * vol), kThreads, s, binary_kernel)
      (L->kind, src[0], cin, src[1], src_c[1], L->channels, vol, dst);
      break;
    case STRATA__LAYER_GLOBAL_AVGPOOL:
      STRATA_LAUNCH(cin, kThreads, s, global_mean_kernel)(src[0], vol, dst);
      break;
    case STRATA__LAYER_BROADCAST:
      STRATA_LAUNCH(blocks_for(out_count), kThreads, s, broadcast_kernel)
      (src[0], cin, strata__volume(m), dst);
      break;
    case STRATA__LAYER_SOFTMAX:
      STRATA_LAUNCH(blocks_for(vol), kThreads, s, softmax_kernel)(src[0], cin, vol, dst);
      break;
    default:
      STRATA_LAUNCH(blocks_for(count), kThreads, s, pointwise_kernel)
      (L->kind, L->param, L->param2, src[0], count, dst);
      break;
    }
    if (ret == 0)
      ret = (int)cudaGetLastError();
    if (ret)
      return ret;
  }
  return 0;
}

extern "C" long long strata__cnn_cudnn_convolutions(void)
{
#if STRATA_USE_CUDNN
  return cudnn_convolutions.load(std::memory_order_relaxed);
#else
  return -1;
#endif
}

extern "C" void strata__cnn_cuda_release(void)
{
#if STRATA_USE_CUDNN
  for (int i = 0; i < plans_used; i++)
    destroy_plan(plans[i]);
  plans_used = plans_next = 0;
  if (cudnn_handle)
    cudnnDestroy(cudnn_handle);
  cudnn_handle = nullptr;
  cudnn_tried = false;
#endif
}
