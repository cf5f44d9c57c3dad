/* Helpers of the CPU-vs-CUDA tests: skip without a GPU, copy to the
 * device, compare a device buffer with host bytes. */
#ifndef STRATA_TEST_CUDA_CHECK_H
#define STRATA_TEST_CUDA_CHECK_H

#include <cuda_runtime_api.h>
#include <string.h>

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

/* A device copy of `bytes` host bytes, or `bytes` uninitialised device
 * bytes when host is NULL (cudaFree it). */
static inline void *check_device_copy(const void *host, size_t bytes)
{
  void *d = NULL;
  CHECK_EQ(cudaMalloc(&d, bytes), cudaSuccess);
  if (host)
    CHECK_EQ(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  return d;
}

/* The device buffer holds exactly the bytes of `want`; frees it. */
static inline void check_device_bytes(void *dev, const void *want, size_t bytes)
{
  void *got = malloc(bytes);
  CHECK(got != NULL);
  CHECK_EQ(cudaMemcpy(got, dev, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  CHECK(memcmp(got, want, bytes) == 0);
  cudaFree(dev);
  free(got);
}

#endif
