/* CUDA merge kernels against the scalar reference, every (op, dtype) pair,
 * and the CUDA identity fill against the CPU one. Exit 77 without a GPU. */

#include "cuda_check.h"
#include "kernels/merge_kernels.h"
#include "merge_reference.h"

static void apply_cuda(strata_op op, strata_dtype st, void *dst, const void *src, size_t n)
{
  size_t dbytes = n * strata_dtype_size((strata_dtype)ref_result_dtype(op, st));
  size_t sbytes = n * strata_dtype_size(st);
  void *d_dst, *d_src;
  CHECK_EQ(cudaMalloc(&d_dst, dbytes), cudaSuccess);
  CHECK_EQ(cudaMalloc(&d_src, sbytes), cudaSuccess);
  cudaMemcpy(d_dst, dst, dbytes, cudaMemcpyHostToDevice);
  cudaMemcpy(d_src, src, sbytes, cudaMemcpyHostToDevice);
  CHECK_EQ(strata__merge_cuda(op, st, d_dst, d_src, n, NULL), 0);
  CHECK_EQ(cudaMemcpy(dst, d_dst, dbytes, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(d_dst);
  cudaFree(d_src);
}

int main(void)
{
  check_cuda_device();
  CHECK_EQ(ref_check_all_pairs(apply_cuda, 100003), 0);
  for (int op = 0; op < STRATA_NOPS; op++)
    for (int t = 0; t < STRATA_NDTYPES; t++) {
      if (ref_result_dtype((strata_op)op, (strata_dtype)t) != t)
        continue;
      size_t n = 4099, bytes = n * strata_dtype_size((strata_dtype)t);
      unsigned char *want = malloc(bytes), *got = malloc(bytes);
      void *d;
      cudaMalloc(&d, bytes);
      strata__merge_fill_identity_cpu((strata_op)op, (strata_dtype)t, want, n);
      CHECK_EQ(strata__merge_fill_identity_cuda((strata_op)op, (strata_dtype)t, d, n, NULL), 0);
      cudaMemcpy(got, d, bytes, cudaMemcpyDeviceToHost);
      CHECK(memcmp(want, got, bytes) == 0);
      cudaFree(d);
      free(want);
      free(got);
    }
  return check_status();
}
