/* STRATA__HOST_DEVICE: a small inline function of a kernel header that the
 * CPU kernels and the CUDA kernels (nvcc, or the emulated runtime) share. */
#ifndef STRATA_KERNELS_HOST_DEVICE_H
#define STRATA_KERNELS_HOST_DEVICE_H

#ifdef __CUDACC__
#define STRATA__HOST_DEVICE __host__ __device__
#else
#define STRATA__HOST_DEVICE
#endif

#endif
