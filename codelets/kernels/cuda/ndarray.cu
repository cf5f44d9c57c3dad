// CUDA kernels of the array operations (ndarray_kernels.h): one thread per
// output element (grid-stride), the per-element semantics of
// ndarray_scalar.h, cuBLAS for floating-point products and a CUB block scan
// for flatnonzero.
#include <cstdint>
#include <cub/block/block_scan.cuh>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "../ndarray_kernels.h"
#include "../ndarray_scalar.h"
#include "launch.cuh"

namespace
{

using strata_cuda::blocks_for;
using strata_cuda::kThreads;

int64_t product(const int64_t *shape, int ndim)
{
  int64_t n = 1;
  for (int d = 0; d < ndim; d++)
    n *= shape[d];
  return n;
}

// Offsets of element i (row-major over shape) in `nbuf` strided buffers.
__device__ void offsets_of(int64_t i, int ndim, const int64_t *shape, int nbuf,
                           const int64_t (*stride)[STRATA__ND_MAXDIMS], int64_t *off)
{
  for (int b = 0; b < nbuf; b++)
    off[b] = 0;
  for (int d = ndim - 1; d >= 0; d--) {
    int64_t q = i % shape[d];
    i /= shape[d];
    for (int b = 0; b < nbuf; b++)
      off[b] += q * stride[b][d];
  }
}

struct ew_operands {
  const void *in[STRATA__EW_MAXOPS];
};

__global__ void ew(strata__ew_args a, ew_operands ops, void *out, int64_t n)
{
  int narrays = a.nops - (a.scalar_at >= 0);
  STRATA_GRID_LOOP(i, n)
  {
    int64_t off[STRATA__EW_MAXOPS];
    offsets_of(i, a.ndim, a.shape, narrays, a.stride, off);
    strata__ew_element(&a, ops.in, off, out, i);
  }
}

template <typename T> __global__ void view(strata__view_args a, T *dst, const T *src, int64_t n)
{
  int64_t stride[2][STRATA__ND_MAXDIMS];
  for (int d = 0; d < STRATA__ND_MAXDIMS; d++) {
    stride[0][d] = a.src_stride[d];
    stride[1][d] = a.dst_stride[d];
  }
  STRATA_GRID_LOOP(i, n)
  {
    int64_t off[2];
    offsets_of(i, a.ndim, a.shape, 2, stride, off);
    dst[a.dst_offset + off[1]] = src[a.src_offset + off[0]];
  }
}

__global__ void reduce(strata__reduce_args a, void *out, const void *in, int64_t nkeep,
                       int64_t nred)
{
  STRATA_GRID_LOOP(k, nkeep)
  {
    int64_t koff;
    offsets_of(k, a.nkeep, a.keep_shape, 1, &a.keep_stride, &koff);
    int64_t acc_i = a.fn == STRATA_FN_PROD;
    double acc_d = a.fn == STRATA_FN_PROD;
    int32_t step_i = a.fn == STRATA_FN_SUM    ? STRATA_FN_ADD
                     : a.fn == STRATA_FN_PROD ? STRATA_FN_MUL
                     : a.fn == STRATA_FN_MIN  ? STRATA_FN_MINIMUM
                                              : STRATA_FN_MAXIMUM;
    int32_t step_d = a.fn == STRATA_FN_MEAN ? STRATA_FN_ADD : step_i;
    int first_is_start = a.fn == STRATA_FN_MIN || a.fn == STRATA_FN_MAX;
    for (int64_t r = 0; r < nred; r++) {
      int64_t roff;
      offsets_of(r, a.nred, a.red_shape, 1, &a.red_stride, &roff);
      if (a.exact_int) {
        int64_t v = strata__load_i(in, a.in_dtype, koff + roff);
        acc_i = r == 0 && first_is_start ? v : strata__apply_i(step_i, acc_i, v, 0);
      } else {
        double v = strata__load_d(in, a.in_dtype, koff + roff);
        acc_d = r == 0 && first_is_start ? v : strata__apply_d(step_d, acc_d, v, 0);
      }
    }
    if (a.exact_int)
      strata__store_i(out, a.out_dtype, k, acc_i);
    else
      strata__store_d(out, a.out_dtype, k, a.fn == STRATA_FN_MEAN ? acc_d / (double)nred : acc_d);
  }
}

__global__ void fill(strata__affine_fill_args a, void *out)
{
  STRATA_GRID_LOOP(i, a.n) { strata__store_d(out, a.dtype, i, a.start + (double)i * a.step); }
}

template <typename T> __global__ void tri(strata__tri_args a, T *out, const T *in)
{
  STRATA_GRID_LOOP(e, a.batch * a.rows * a.cols)
  {
    int64_t j = e % a.cols, i = (e / a.cols) % a.rows;
    bool keep = a.upper ? j - i >= a.k : j - i <= a.k;
    out[e] = keep ? in[e] : T(0);
  }
}

__global__ void matmul_int(strata__matmul_args a, void *c, const void *x, const void *y)
{
  STRATA_GRID_LOOP(e, a.batch * a.m * a.n)
  {
    int64_t b = e / (a.m * a.n), i = (e / a.n) % a.m, j = e % a.n;
    int64_t xo = b * a.a_step + i * a.k, yo = b * a.b_step + j, acc = 0;
    for (int64_t l = 0; l < a.k; l++)
      acc = strata__apply_i(STRATA_FN_ADD, acc,
                            strata__apply_i(STRATA_FN_MUL, strata__load_i(x, a.dtype, xo + l),
                                            strata__load_i(y, a.dtype, yo + l * a.n), 0),
                            0);
    strata__store_i(c, a.dtype, e, acc);
  }
}

template <typename T>
__global__ void take(strata__take_args a, T *out, const T *in, const void *idx)
{
  STRATA_GRID_LOOP(e, a.outer * a.nidx * a.inner)
  {
    int64_t i = e % a.inner, j = (e / a.inner) % a.nidx, o = e / (a.inner * a.nidx);
    int64_t v = strata__load_i(idx, a.idx_dtype, j);
    if (a.mode == 0)
      v = (v % a.len + a.len) % a.len;
    else
      v = v < 0 ? 0 : v >= a.len ? a.len - 1 : v;
    out[e] = in[(o * a.len + v) * a.inner + i];
  }
}

__global__ void count_nonzero(int32_t dtype, int64_t n, const void *in, unsigned long long *count)
{
  unsigned long long mine = 0;
  STRATA_GRID_LOOP(i, n) { mine += strata__load_d(in, dtype, i) != 0; }
  if (mine)
    atomicAdd(count, mine);
}

// One block walks the input in chunks of kScan; a block-wide exclusive scan
// gives each nonzero its output position, so the order is kept.
constexpr int kScan = 1024;

// 1024 threads leave 64 registers each: without the bound the launch fails
// (cudaErrorLaunchOutOfResources on sm_90).
__global__ void __launch_bounds__(kScan)
    flatnonzero(int32_t dtype, int64_t n, const void *in, int64_t *out)
{
  using scan_t = cub::BlockScan<int64_t, kScan>;
  __shared__ typename scan_t::TempStorage storage;
  int64_t written = 0;
  for (int64_t base = 0; base < n; base += kScan) {
    int64_t i = base + threadIdx.x;
    int64_t flag = i < n && strata__load_d(in, dtype, i) != 0, pos, total;
    scan_t(storage).ExclusiveSum(flag, pos, total);
    if (flag)
      out[written + pos] = i;
    written += total;
    __syncthreads();
  }
}

} // namespace

extern "C" int strata__ew_cuda(const strata__ew_args *a, void *out, const void *const *in,
                               void *stream)
{
  int64_t n = product(a->shape, a->ndim);
  if (n == 0)
    return 0;
  ew_operands ops = {};
  for (int k = 0; k < a->nops - (a->scalar_at >= 0); k++)
    ops.in[k] = in[k];
  STRATA_LAUNCH(blocks_for(n), kThreads, static_cast<cudaStream_t>(stream), ew)(*a, ops, out, n);
  return cudaGetLastError();
}

template <typename T>
static int launch_view(const strata__view_args *a, void *dst, const void *src, int64_t n,
                       cudaStream_t s)
{
  STRATA_LAUNCH(blocks_for(n), kThreads, s, view<T>)
  (*a, static_cast<T *>(dst), static_cast<const T *>(src), n);
  return cudaGetLastError();
}

extern "C" int strata__view_cuda(const strata__view_args *a, void *dst, const void *src,
                                 void *stream)
{
  int64_t n = product(a->shape, a->ndim);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (n == 0)
    return 0;
  switch (a->elem) {
  case 1: return launch_view<uint8_t>(a, dst, src, n, s);
  case 4: return launch_view<uint32_t>(a, dst, src, n, s);
  default: return launch_view<uint64_t>(a, dst, src, n, s);
  }
}

extern "C" int strata__reduce_cuda(const strata__reduce_args *a, void *out, const void *in,
                                   void *stream)
{
  int64_t nkeep = product(a->keep_shape, a->nkeep), nred = product(a->red_shape, a->nred);
  if (nkeep == 0)
    return 0;
  STRATA_LAUNCH(blocks_for(nkeep), kThreads, static_cast<cudaStream_t>(stream), reduce)
  (*a, out, in, nkeep, nred);
  return cudaGetLastError();
}

extern "C" int strata__affine_fill_cuda(const strata__affine_fill_args *a, void *out, void *stream)
{
  if (a->n == 0)
    return 0;
  STRATA_LAUNCH(blocks_for(a->n), kThreads, static_cast<cudaStream_t>(stream), fill)(*a, out);
  return cudaGetLastError();
}

extern "C" int strata__tri_cuda(const strata__tri_args *a, void *out, const void *in, void *stream)
{
  int64_t n = a->batch * a->rows * a->cols;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (n == 0)
    return 0;
  switch (a->elem) {
  case 1:
    STRATA_LAUNCH(blocks_for(n), kThreads, s, tri<uint8_t>)
    (*a, static_cast<uint8_t *>(out), static_cast<const uint8_t *>(in));
    break;
  case 4:
    STRATA_LAUNCH(blocks_for(n), kThreads, s, tri<uint32_t>)
    (*a, static_cast<uint32_t *>(out), static_cast<const uint32_t *>(in));
    break;
  default:
    STRATA_LAUNCH(blocks_for(n), kThreads, s, tri<uint64_t>)
    (*a, static_cast<uint64_t *>(out), static_cast<const uint64_t *>(in));
    break;
  }
  return cudaGetLastError();
}

extern "C" int strata__matmul_cuda(const strata__matmul_args *a, void *c, const void *x,
                                   const void *y, void *cublas, void *stream)
{
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  int64_t total = a->batch * a->m * a->n;
  if (total == 0)
    return 0;
  size_t e = strata_dtype_size(static_cast<strata_dtype>(a->dtype));
  bool blas = a->dtype == STRATA_FLOAT32 || a->dtype == STRATA_FLOAT64;
  if (a->k == 0 && blas)
    return cudaMemsetAsync(c, 0, (size_t)total * e, s);
  if (!blas) {
    STRATA_LAUNCH(blocks_for(total), kThreads, s, matmul_int)(*a, c, x, y);
    return cudaGetLastError();
  }
  // Row-major c = x y is column-major c^T = y^T x^T.
  cublasHandle_t h = static_cast<cublasHandle_t>(cublas);
  int m = (int)a->m, k = (int)a->k, n = (int)a->n, batch = (int)a->batch;
  if (a->dtype == STRATA_FLOAT32) {
    const float one = 1.0f, zero = 0.0f;
    return cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one,
                                     static_cast<const float *>(y), n, a->b_step,
                                     static_cast<const float *>(x), k, a->a_step, &zero,
                                     static_cast<float *>(c), n, a->m * a->n, batch);
  }
  const double one = 1.0, zero = 0.0;
  return cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one,
                                   static_cast<const double *>(y), n, a->b_step,
                                   static_cast<const double *>(x), k, a->a_step, &zero,
                                   static_cast<double *>(c), n, a->m * a->n, batch);
}

extern "C" int strata__take_cuda(const strata__take_args *a, void *out, const void *in,
                                 const void *idx, void *stream)
{
  int64_t n = a->outer * a->nidx * a->inner;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (n == 0)
    return 0;
  switch (a->elem) {
  case 1:
    STRATA_LAUNCH(blocks_for(n), kThreads, s, take<uint8_t>)
    (*a, static_cast<uint8_t *>(out), static_cast<const uint8_t *>(in), idx);
    break;
  case 4:
    STRATA_LAUNCH(blocks_for(n), kThreads, s, take<uint32_t>)
    (*a, static_cast<uint32_t *>(out), static_cast<const uint32_t *>(in), idx);
    break;
  default:
    STRATA_LAUNCH(blocks_for(n), kThreads, s, take<uint64_t>)
    (*a, static_cast<uint64_t *>(out), static_cast<const uint64_t *>(in), idx);
    break;
  }
  return cudaGetLastError();
}

extern "C" int strata__count_nonzero_cuda(int32_t dtype, int64_t n, const void *in, int64_t *count,
                                          void *stream)
{
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (cudaError_t e = cudaMemsetAsync(count, 0, sizeof *count, s))
    return e;
  if (n == 0)
    return 0;
  STRATA_LAUNCH(blocks_for(n), kThreads, s, count_nonzero)
  (dtype, n, in, reinterpret_cast<unsigned long long *>(count));
  return cudaGetLastError();
}

extern "C" int strata__flatnonzero_cuda(int32_t dtype, int64_t n, const void *in, int64_t *out,
                                        void *stream)
{
  if (n == 0)
    return 0;
  STRATA_LAUNCH(1, kScan, static_cast<cudaStream_t>(stream), flatnonzero)(dtype, n, in, out);
  return cudaGetLastError();
}
