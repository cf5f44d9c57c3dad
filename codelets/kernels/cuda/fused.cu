// Fused groups run as programs on the GPU (fused_kernels.h): one thread per
// result element (grid-stride), the members in registers.
#include <cstdint>
#include <cuda_runtime.h>

#include "../fused_kernels.h"
#include "launch.cuh"

namespace
{

struct fused_leaves {
  const void *ptr[STRATA__FUSED_MAXLEAVES];
};

__global__ void fused(strata__fused_program p, fused_leaves leaves, void *out, int64_t n)
{
  STRATA_GRID_LOOP(i, n)
  strata__fused_element(&p, leaves.ptr, out, i, 0);
}

} // namespace

extern "C" int strata__fused_cuda(const strata__fused_program *p, const void *const *leaves,
                                  void *out, void *stream)
{
  fused_leaves l = {};
  for (int k = 0; k < p->nleaves; k++)
    l.ptr[k] = leaves[k];
  int64_t n = 1;
  for (int d = 0; d < p->ndim; d++)
    n *= p->shape[d];
  if (n == 0)
    return 0;
  STRATA_LAUNCH(strata_cuda::blocks_for(n), strata_cuda::kThreads, (cudaStream_t)stream, fused)
  (*p, l, out, n);
  return (int)cudaGetLastError();
}
