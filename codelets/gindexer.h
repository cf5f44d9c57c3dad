/* Global indexer codelets: gather, scatter, segment copies, the owner-side
 * put. Insert functions on StarPU handles
 * (codelets/gindexer.c). */
#ifndef STRATA_CODELETS_GINDEXER_H
#define STRATA_CODELETS_GINDEXER_H

#include "codelets.h"

/* Global indexer: dst (W) row k = src (R) row map[k] (map: R, int64
 * vector of dst's row count); rows of `row` bytes. */
int strata__gindexer_gather_submit(starpu_data_handle_t src, starpu_data_handle_t map,
                                   starpu_data_handle_t dst, size_t row);

/* Global indexer: dst (RW) row map[k] = src (R) row k. */
int strata__gindexer_scatter_submit(starpu_data_handle_t src, starpu_data_handle_t map,
                                    starpu_data_handle_t dst, size_t row);

/* Global indexer, variable-size items: copy the segments (R, a vector of
 * int64 triples: source offset, destination offset, length, in items of
 * `item` bytes) from src (R) to dst: W mode, or RW when `partial` (other
 * tasks fill the rest of dst). */
int strata__gindexer_segments_submit(starpu_data_handle_t src, starpu_data_handle_t segments,
                                     starpu_data_handle_t dst, size_t item, int partial);

/* Owner-side put: dist (RW) rows from inbox (R) through the per-index
 * request lists csr (R, dn + 1 int64) and req (R, int64), under `rule`
 * (kernels/gindexer_kernels.h). A reduction also gets a STARPU_SCRATCH
 * vector of dist's size for its CUDA rounds (max_requests of them). */
struct strata__put_apply {
  int rule;
  strata_op op;
  strata_dtype dtype;
  int64_t count, max_requests;
};
int strata__gindexer_apply_submit(starpu_data_handle_t dist, starpu_data_handle_t inbox,
                                  starpu_data_handle_t csr, starpu_data_handle_t req,
                                  const struct strata__put_apply *a);

#endif
