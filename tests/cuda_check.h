/* Helpers of the CPU-vs-CUDA tests: skip without a GPU, copy to the device. */
#ifndef STRATA_TEST_CUDA_CHECK_H
#define STRATA_TEST_CUDA_CHECK_H

#include <cuda_runtime_api.h>

#include "check.h"

/* Exit 77 (CTest's skip) when there is no CUDA device. */
static inline void check_cuda_device(void)
{
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    puts("no CUDA device: skipped");
    exit(77);
  }
}

/* A device copy of `bytes` host bytes (cudaFree it). */
static inline void *check_device_copy(const void *host, size_t bytes)
{
  void *d = NULL;
  CHECK_EQ(cudaMalloc(&d, bytes), cudaSuccess);
  cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice);
  return d;
}

#endif
