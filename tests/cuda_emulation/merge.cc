// The CUDA merge kernels compiled for the host, under the emulated runtime.
#include "kernels/cuda/merge.cu"
