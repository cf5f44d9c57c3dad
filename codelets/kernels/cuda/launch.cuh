// Launch helpers shared by Strata's CUDA kernels.
#ifndef STRATA_CUDA_LAUNCH_CUH
#define STRATA_CUDA_LAUNCH_CUH

#include <cstdint>

namespace strata_cuda
{

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n items (at least 1, at most 65535).
inline unsigned blocks_for(int64_t n)
{
  int64_t b = (n + kThreads - 1) / kThreads;
  return (unsigned)(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

} // namespace strata_cuda

// kernel<<<grid, block, 0, stream>>>(args...) as
// STRATA_LAUNCH(grid, block, stream, kernel)(args...), so that every kernel
// also builds for the host under the tests' emulated runtime
// (tests/cuda_emulation), which runs the grid block by block.
#ifdef STRATA_CUDA_EMULATION
#define STRATA_LAUNCH(grid, block, stream, ...)                                                    \
  ((void)(stream), strata_cuda_emulation::launch(grid, block, __VA_ARGS__))
#else
#define STRATA_LAUNCH(grid, block, stream, ...) __VA_ARGS__<<<grid, block, 0, stream>>>
#endif

// for (i over [0, count)) across the whole grid.
#define STRATA_GRID_LOOP(i, count)                                                                 \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (int64_t)(count);           \
       i += (int64_t)gridDim.x * blockDim.x)

#endif
