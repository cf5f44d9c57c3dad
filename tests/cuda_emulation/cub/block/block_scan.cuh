// The emulation's stand-in for CUB's block-wide scan (see
// ../../cuda_runtime.h): the same interface; after one barrier each thread
// sums the stored inputs of the threads before it. As with CUB, the caller
// must __syncthreads() before it reuses the storage.
#ifndef STRATA_CUDA_EMULATION_BLOCK_SCAN_CUH
#define STRATA_CUDA_EMULATION_BLOCK_SCAN_CUH

#include <cuda_runtime.h>

namespace cub
{

template <typename T, int BlockThreads> class BlockScan
{
public:
  struct TempStorage {
    T item[BlockThreads];
  };

  explicit BlockScan(TempStorage &storage) : storage_(storage) {}

  // output: the sum of the inputs of the threads before this one;
  // aggregate: the sum over the whole block.
  void ExclusiveSum(T input, T &output, T &aggregate)
  {
    storage_.item[threadIdx.x] = input;
    __syncthreads();
    output = T();
    aggregate = T();
    for (unsigned t = 0; t < (unsigned)BlockThreads; t++) {
      if (t == threadIdx.x)
        output = aggregate;
      aggregate += storage_.item[t];
    }
  }

private:
  TempStorage &storage_;
};

} // namespace cub

#endif
