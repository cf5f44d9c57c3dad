// Global indexer kernels on the GPU (gindexer_kernels.h): one thread per
// byte of the moved rows; one warp per block of a variable-size item.
#include <cstdint>
#include <cuda_runtime.h>

#include "../gindexer_kernels.h"
#include "launch.cuh"

namespace
{

__global__ void gather_rows(unsigned char *dst, const unsigned char *src, const int64_t *map,
                            int64_t n, int64_t row)
{
  STRATA_GRID_LOOP(b, n * row)
  {
    int64_t k = b / row, off = b % row;
    dst[b] = src[map[k] * row + off];
  }
}

__global__ void scatter_rows(unsigned char *dst, const unsigned char *src, const int64_t *map,
                             int64_t n, int64_t row)
{
  STRATA_GRID_LOOP(b, n * row)
  {
    int64_t k = b / row, off = b % row;
    dst[map[k] * row + off] = src[b];
  }
}

constexpr int kWarp = 32;

__global__ void copy_blocks(unsigned char *dst, const unsigned char *src, const int64_t *displ,
                            const int64_t *map, const int64_t *at, int64_t n, int64_t item)
{
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x / kWarp);
  for (int64_t k = blockIdx.x * (int64_t)(blockDim.x / kWarp) + threadIdx.x / kWarp; k < n;
       k += warps) {
    int64_t i = map ? map[k] : k, bytes = (displ[i + 1] - displ[i]) * item;
    unsigned char *out = dst + at[k] * item;
    const unsigned char *in = src + displ[i] * item;
    for (int64_t b = threadIdx.x % kWarp; b < bytes; b += kWarp)
      out[b] = in[b];
  }
}

__global__ void pick_rows(unsigned char *dst, const unsigned char *inbox, const int64_t *csr,
                          const int64_t *req, int64_t dn, int64_t row, int64_t which)
{
  STRATA_GRID_LOOP(b, dn * row)
  {
    int64_t i = b / row, off = b % row, lo = csr[i], hi = csr[i + 1];
    int64_t j = which < 0 ? hi - 1 : lo + which;
    if (j >= lo && j < hi)
      dst[b] = inbox[req[j] * row + off];
  }
}

} // namespace

extern "C" int strata__gather_rows_cuda(void *dst, const void *src, const int64_t *map, int64_t n,
                                        size_t row, void *stream)
{
  int64_t bytes = n * (int64_t)row;
  if (bytes == 0)
    return 0;
  STRATA_LAUNCH(strata_cuda::blocks_for(bytes), strata_cuda::kThreads,
                static_cast<cudaStream_t>(stream), gather_rows)
  (static_cast<unsigned char *>(dst), static_cast<const unsigned char *>(src), map, n,
   (int64_t)row);
  return cudaGetLastError();
}

extern "C" int strata__pick_rows_cuda(void *dst, const void *inbox, const int64_t *csr,
                                      const int64_t *req, int64_t dn, size_t row, int64_t which,
                                      void *stream)
{
  int64_t bytes = dn * (int64_t)row;
  if (bytes == 0)
    return 0;
  STRATA_LAUNCH(strata_cuda::blocks_for(bytes), strata_cuda::kThreads,
                static_cast<cudaStream_t>(stream), pick_rows)
  (static_cast<unsigned char *>(dst), static_cast<const unsigned char *>(inbox), csr, req, dn,
   (int64_t)row, which);
  return cudaGetLastError();
}

extern "C" int strata__scatter_rows_cuda(void *dst, const void *src, const int64_t *map, int64_t n,
                                         size_t row, void *stream)
{
  int64_t bytes = n * (int64_t)row;
  if (bytes == 0)
    return 0;
  STRATA_LAUNCH(strata_cuda::blocks_for(bytes), strata_cuda::kThreads,
                static_cast<cudaStream_t>(stream), scatter_rows)
  (static_cast<unsigned char *>(dst), static_cast<const unsigned char *>(src), map, n,
   (int64_t)row);
  return cudaGetLastError();
}

extern "C" int strata__copy_blocks_cuda(void *dst, const void *src, const int64_t *displ,
                                        const int64_t *map, const int64_t *at, int64_t n,
                                        size_t item, void *stream)
{
  if (n == 0)
    return 0;
  STRATA_LAUNCH(strata_cuda::blocks_for(n * kWarp), strata_cuda::kThreads,
                static_cast<cudaStream_t>(stream), copy_blocks)
  (static_cast<unsigned char *>(dst), static_cast<const unsigned char *>(src), displ, map, at, n,
   (int64_t)item);
  return cudaGetLastError();
}
