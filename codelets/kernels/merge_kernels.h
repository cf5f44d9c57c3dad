/* Pure merge kernels: no StarPU, no Strata runtime. Callers validate the
 * (op, dtype) pair with strata__merge_result_dtype() first. */
#ifndef STRATA_MERGE_KERNELS_H
#define STRATA_MERGE_KERNELS_H

#include <stddef.h>

#include <strata/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU loops over rows at random places (the scatter merge here, the
 * global indexer's row moves) prefetch the row this many iterations ahead:
 * a random row is a cache miss the CPU cannot see coming. 10^6 random rows
 * of 4 floats merged into 16 MB on warm data: 0.58x the time at 32 (16:
 * 0.70x, 64: 0.50x); in bench_gindexer, Put with a sum 0.63x at 32. */
enum { STRATA__SCATTER_AHEAD = 32 };

/* Result type of merging values of type `in` with `op`; -1 when forbidden. */
int strata__merge_result_dtype(strata_op op, strata_dtype in);

/* One identity element of `op` in type `result` written to `value`. */
void strata__merge_identity(strata_op op, strata_dtype result, void *value);

/* dst[i] = dst[i] op src[i]; dst has the result type of (op, src_dtype). */
void strata__merge_cpu(strata_op op, strata_dtype src_dtype, void *dst, const void *src, size_t n);

/* The same over rows of n elements: dst row map[k] merges src row k, for
 * k < nsrc in that order (a row named twice merges both, first one first). */
void strata__merge_scatter_cpu(strata_op op, strata_dtype src_dtype, void *dst, const void *src,
                               size_t n, int64_t nsrc, const int64_t *map);

/* dst[i] = identity of op, dst of type `result`. */
void strata__merge_fill_identity_cpu(strata_op op, strata_dtype result, void *dst, size_t n);

/* CUDA versions, asynchronous on `stream` (a cudaStream_t). Return 0, or a
 * nonzero cudaError_t when the launch failed. */
int strata__merge_cuda(strata_op op, strata_dtype src_dtype, void *dst, const void *src, size_t n,
                       void *stream);
/* CUDA's scatter, listed per dst row: dst row i merges src rows req[j] for
 * csr[i] <= j < csr[i + 1] in that order (one thread per element, no
 * atomics). */
int strata__merge_rows_cuda(strata_op op, strata_dtype src_dtype, void *dst, const void *src,
                            size_t n, int64_t rows, const int64_t *csr, const int64_t *req,
                            void *stream);
int strata__merge_fill_identity_cuda(strata_op op, strata_dtype result, void *dst, size_t n,
                                     void *stream);

#ifdef __cplusplus
}
#endif
#endif
