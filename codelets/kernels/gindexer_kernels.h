/* Pure kernels of the global indexer's exchanges: row gathers and scatters
 * through an index map (packing and unpacking), block copies for
 * variable-size items, and the owner-side application of
 * put requests listed per owned index (CSR, in writer order). */
#ifndef STRATA_GINDEXER_KERNELS_H
#define STRATA_GINDEXER_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <strata/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* dst row k = src row map[k], for k < n; rows of `row` bytes. */
void strata__gather_rows_cpu(void *dst, const void *src, const int64_t *map, int64_t n, size_t row);

/* dst row map[k] = src row k, for k < n (other dst rows are left alone). */
void strata__scatter_rows_cpu(void *dst, const void *src, const int64_t *map, int64_t n,
                              size_t row);

/* Variable-size items: for k < n, block i = map[k] (k when map is NULL)
 * of src, which starts at item offset displ[i] and ends at displ[i + 1],
 * goes to dst at item offset at[k]; items of `item` bytes. */
void strata__copy_blocks_cpu(void *dst, const void *src, const int64_t *displ, const int64_t *map,
                             const int64_t *at, int64_t n, size_t item);

/* How put requests combine at an owned index. */
enum strata__put_rule { STRATA__PUT_LAST = 0, STRATA__PUT_FIRST, STRATA__PUT_REDUCE };

/* Put requests in arrival order (writer order): request k (inbox row k)
 * writes dist row local[k], k < nin. LAST / FIRST leave the last / first
 * writer's row; REDUCE merges every request's row into it with (op,
 * dtype), in order. Rows hold `count` elements of `dtype`. */
void strata__put_apply_cpu(enum strata__put_rule rule, strata_op op, strata_dtype dtype,
                           int64_t count, void *dist, const void *inbox, const int64_t *local,
                           int64_t nin);

/* CUDA: the gather, and `pick`: dst row i = inbox row req[csr[i] + which]
 * where that request exists (which = -1: the last one); other rows are
 * left alone. The requests listed per owned index (CSR: csr, req, in
 * writer order), so that one thread per row needs no atomics. Device pointers, asynchronous on
 * `stream`; 0 or a CUDA error. */
int strata__gather_rows_cuda(void *dst, const void *src, const int64_t *map, int64_t n, size_t row,
                             void *stream);
int strata__scatter_rows_cuda(void *dst, const void *src, const int64_t *map, int64_t n, size_t row,
                              void *stream);
int strata__copy_blocks_cuda(void *dst, const void *src, const int64_t *displ, const int64_t *map,
                             const int64_t *at, int64_t n, size_t item, void *stream);
int strata__pick_rows_cuda(void *dst, const void *inbox, const int64_t *csr, const int64_t *req,
                           int64_t dn, size_t row, int64_t which, void *stream);

#ifdef __cplusplus
}
#endif
#endif
