/* A host-only stand-in for the part of the CUDA runtime that Strata's
 * plain grid-stride kernels use, for machines without a GPU: "device"
 * memory is host memory and a launch runs every thread of the grid one
 * after another on the calling thread. Enough to check a kernel's index
 * arithmetic against the CPU kernels; kernels that synchronise threads,
 * share memory or call cuBLAS/cuDNN cannot run under it, and nothing about
 * real devices (streams, timing, memory spaces) is checked. The tests put
 * this directory first on the include path in place of the toolkit's. */
#ifndef STRATA_CUDA_EMULATION_RUNTIME_H
#define STRATA_CUDA_EMULATION_RUNTIME_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2
} cudaError_t;
typedef enum {
  cudaMemcpyHostToHost,
  cudaMemcpyHostToDevice,
  cudaMemcpyDeviceToHost,
  cudaMemcpyDeviceToDevice,
  cudaMemcpyDefault
} cudaMemcpyKind;
typedef struct CUstream_st *cudaStream_t;

/* One emulated device. */
static inline cudaError_t cudaGetDeviceCount(int *count)
{
  *count = 1;
  return cudaSuccess;
}

static inline cudaError_t cudaMalloc(void **p, size_t bytes)
{
  *p = malloc(bytes ? bytes : 1);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

static inline cudaError_t cudaFree(void *p)
{
  free(p);
  return cudaSuccess;
}

static inline cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
  (void)kind;
  memcpy(dst, src, bytes);
  return cudaSuccess;
}

/* Launches run to completion before they return: nothing is pending. */
static inline cudaError_t cudaGetLastError(void) { return cudaSuccess; }

#ifdef __cplusplus
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

/* The running thread's coordinates, as the kernels read them. */
static uint3 blockIdx, threadIdx;
static dim3 gridDim, blockDim;

namespace strata_cuda_emulation
{

template <typename Kernel> struct launcher {
  dim3 grid, block;
  Kernel *kernel;
  template <typename... Args> void operator()(Args... args) const
  {
    gridDim = grid;
    blockDim = block;
    for (unsigned bz = 0; bz < grid.z; bz++)
      for (unsigned by = 0; by < grid.y; by++)
        for (unsigned bx = 0; bx < grid.x; bx++)
          for (unsigned tz = 0; tz < block.z; tz++)
            for (unsigned ty = 0; ty < block.y; ty++)
              for (unsigned tx = 0; tx < block.x; tx++) {
                blockIdx = {bx, by, bz};
                threadIdx = {tx, ty, tz};
                kernel(args...);
              }
  }
};

/* STRATA_LAUNCH(grid, block, stream, kernel)(args...) under emulation. */
template <typename Kernel> launcher<Kernel> launch(dim3 grid, dim3 block, Kernel *kernel)
{
  return {grid, block, kernel};
}

} // namespace strata_cuda_emulation
#endif

#endif
