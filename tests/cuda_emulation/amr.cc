// The CUDA AMR kernels compiled for the host, under the emulated runtime.
#include "kernels/cuda/amr.cu"
