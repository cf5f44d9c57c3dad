// Element-wise merge kernels on the GPU: the same operator and type rules as
// the CPU kernels in ../cpu/merge.c (integer SUM and PROD wrap around).
#include <cstdint>
#include <cuda_runtime.h>
#include <type_traits>

#include "../merge_kernels.h"
#include "launch.cuh"

namespace
{

using strata_cuda::blocks_for;
using strata_cuda::kThreads;

// Integers wrap around: their sums and products are computed unsigned (a
// signed overflow would be undefined), as the CPU kernels' -fwrapv does.
template <typename U> __device__ U wrap_add(U a, U b)
{
  if constexpr (std::is_integral_v<U>) {
    using W = std::make_unsigned_t<U>;
    return static_cast<U>(static_cast<W>(a) + static_cast<W>(b));
  } else {
    return a + b;
  }
}
template <typename U> __device__ U wrap_mul(U a, U b)
{
  if constexpr (std::is_integral_v<U>) {
    using W = std::make_unsigned_t<U>;
    return static_cast<U>(static_cast<W>(a) * static_cast<W>(b));
  } else {
    return a * b;
  }
}
struct Sum {
  template <typename D, typename S> __device__ D operator()(D a, S b) const
  {
    using U = decltype(a + b);
    return static_cast<D>(wrap_add(static_cast<U>(a), static_cast<U>(b)));
  }
};
struct Prod {
  template <typename T> __device__ T operator()(T a, T b) const
  {
    using U = decltype(a * b);
    return static_cast<T>(wrap_mul(static_cast<U>(a), static_cast<U>(b)));
  }
};
struct Min { // NaN propagates: b != b only for NaN
  template <typename T> __device__ T operator()(T a, T b) const
  {
    return (b < a || b != b) ? b : a;
  }
};
struct Max {
  template <typename T> __device__ T operator()(T a, T b) const
  {
    return (b > a || b != b) ? b : a;
  }
};
struct BitAnd {
  template <typename T> __device__ T operator()(T a, T b) const { return static_cast<T>(a & b); }
};
struct BitOr {
  template <typename T> __device__ T operator()(T a, T b) const { return static_cast<T>(a | b); }
};
struct LogAnd {
  template <typename S> __device__ uint8_t operator()(uint8_t a, S b) const
  {
    return a && b != S(0);
  }
};
struct LogOr {
  template <typename S> __device__ uint8_t operator()(uint8_t a, S b) const
  {
    return a || b != S(0);
  }
};

// Rows of n elements: dst row i merges src rows req[csr[i]] .. req[csr[i+1]-1]
// in that order (one thread per element keeps the writers' order without
// atomics). No lists (csr NULL): dst[i] = op(dst[i], src[i]).
struct Rows {
  int64_t rows;
  const int64_t *csr, *req;
};

template <typename D, typename S, typename Op>
__global__ void merge_kernel(D *dst, const S *src, size_t n, Rows r, Op op)
{
  STRATA_GRID_LOOP(b, r.rows * (int64_t)n)
  {
    if (!r.csr) {
      dst[b] = op(dst[b], src[b]);
      continue;
    }
    int64_t i = b / (int64_t)n, e = b % (int64_t)n;
    D a = dst[b];
    for (int64_t j = r.csr[i]; j < r.csr[i + 1]; j++)
      a = op(a, src[r.req[j] * (int64_t)n + e]);
    dst[b] = a;
  }
}

template <typename T> __global__ void fill_kernel(T *dst, size_t n, T value)
{
  STRATA_GRID_LOOP(i, n) dst[i] = value;
}

template <typename D, typename S, typename Op>
int launch(void *dst, const void *src, size_t n, const Rows &r, Op op, cudaStream_t stream)
{
  STRATA_LAUNCH(blocks_for(r.rows * (int64_t)n), kThreads, stream, merge_kernel<D, S, Op>)
  (static_cast<D *>(dst), static_cast<const S *>(src), n, r, op);
  return (int)cudaGetLastError();
}

template <typename T>
int launch_arith(strata_op op, void *dst, const void *src, size_t n, const Rows &r, cudaStream_t s)
{
  switch (op) {
  case STRATA_SUM: return launch<T, T>(dst, src, n, r, Sum(), s);
  case STRATA_PROD: return launch<T, T>(dst, src, n, r, Prod(), s);
  case STRATA_MIN: return launch<T, T>(dst, src, n, r, Min(), s);
  case STRATA_MAX: return launch<T, T>(dst, src, n, r, Max(), s);
  default: return (int)cudaErrorInvalidValue;
  }
}

// Call fn with a value of the C type of t (bool is stored as uint8_t).
template <typename Fn> int with_type(strata_dtype t, Fn fn)
{
  switch (t) {
  case STRATA_BOOL:
  case STRATA_UINT8: return fn(uint8_t());
  case STRATA_INT8: return fn(int8_t());
  case STRATA_INT32: return fn(int32_t());
  case STRATA_INT64: return fn(int64_t());
  case STRATA_FLOAT32: return fn(float());
  case STRATA_FLOAT64: return fn(double());
  default: return (int)cudaErrorInvalidValue;
  }
}

template <typename T> int launch_fill(void *dst, size_t n, const void *value, cudaStream_t s)
{
  STRATA_LAUNCH(blocks_for(n), kThreads, s, fill_kernel<T>)
  (static_cast<T *>(dst), n, *static_cast<const T *>(value));
  return (int)cudaGetLastError();
}

int merge(strata_op op, strata_dtype src_dtype, void *dst, const void *src, size_t n, const Rows &r,
          cudaStream_t s)
{
  if (n == 0 || r.rows == 0)
    return 0;
  if (op == STRATA_LAND || op == STRATA_LOR)
    return with_type(src_dtype, [&](auto tag) {
      using S = decltype(tag);
      if (op == STRATA_LAND)
        return launch<uint8_t, S>(dst, src, n, r, LogAnd(), s);
      return launch<uint8_t, S>(dst, src, n, r, LogOr(), s);
    });
  if (src_dtype == STRATA_BOOL) // only SUM is allowed: bool counts into int64
    return launch<int64_t, uint8_t>(dst, src, n, r, Sum(), s);
  return with_type(src_dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      if (op == STRATA_BAND)
        return launch<T, T>(dst, src, n, r, BitAnd(), s);
      if (op == STRATA_BOR)
        return launch<T, T>(dst, src, n, r, BitOr(), s);
    }
    return launch_arith<T>(op, dst, src, n, r, s);
  });
}

} // namespace

extern "C" int strata__merge_cuda(strata_op op, strata_dtype src_dtype, void *dst, const void *src,
                                  size_t n, void *stream)
{
  return merge(op, src_dtype, dst, src, 1, Rows{(int64_t)n, nullptr, nullptr},
               static_cast<cudaStream_t>(stream));
}

extern "C" int strata__merge_rows_cuda(strata_op op, strata_dtype src_dtype, void *dst,
                                       const void *src, size_t n, int64_t rows, const int64_t *csr,
                                       const int64_t *req, void *stream)
{
  return merge(op, src_dtype, dst, src, n, Rows{rows, csr, req}, static_cast<cudaStream_t>(stream));
}

extern "C" int strata__merge_fill_identity_cuda(strata_op op, strata_dtype result, void *dst,
                                                size_t n, void *stream)
{
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  unsigned char value[8];
  if (n == 0)
    return 0;
  strata__merge_identity(op, result, value);
  switch (strata_dtype_size(result)) {
  case 1: return launch_fill<uint8_t>(dst, n, value, s);
  case 4: return launch_fill<uint32_t>(dst, n, value, s);
  case 8: return launch_fill<uint64_t>(dst, n, value, s);
  default: return (int)cudaErrorInvalidValue;
  }
}
