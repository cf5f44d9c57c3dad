/* Global indexer codelets: gather, scatter, block copies, the owner-side
 * put. Insert functions on StarPU handles
 * (codelets/gindexer.c). */
#ifndef STRATA_CODELETS_GINDEXER_H
#define STRATA_CODELETS_GINDEXER_H

#include "codelets.h"

/* Global indexer: dst (W) row k = src (R) row map[k] (map: R, int64
 * vector of dst's row count); rows of `row` bytes. `ascending`: the map's
 * rows ascend (within each peer's piece), so the reads stream; such a
 * gather costs a fraction of one that reads at random, and is modeled
 * apart. */
int strata__gindexer_gather_submit(starpu_data_handle_t src, starpu_data_handle_t map,
                                   starpu_data_handle_t dst, size_t row, int ascending);

/* Global indexer: dst (RW) row map[k] = src (R) row k. */
int strata__gindexer_scatter_submit(starpu_data_handle_t src, starpu_data_handle_t map,
                                    starpu_data_handle_t dst, size_t row);

/* Global indexer, variable-size items: for k < n, block i = map[k] (R,
 * int64; k when map is NULL) of src (R), which spans item offsets
 * displ[i] .. displ[i + 1] (displ: R, int64), goes to dst at item offset
 * at[k] (at: R, int64); items of `item` bytes. dst is W, or RW when
 * `partial` (other tasks fill the rest of it). */
int strata__gindexer_blocks_submit(starpu_data_handle_t src, starpu_data_handle_t displ,
                                   starpu_data_handle_t map, starpu_data_handle_t at,
                                   starpu_data_handle_t dst, int64_t n, size_t item, int partial);

/* Owner-side put: dist (RW) rows from inbox (R), the requests listed both
 * per owned index (csr: R, dn + 1 int64; req: R, int64) and in arrival
 * order (local: R, int64, the owned row of each), under `rule`
 * (kernels/gindexer_kernels.h). */
struct strata__put_apply {
  int rule;
  strata_op op;
  strata_dtype dtype;
  int64_t count;
};
int strata__gindexer_apply_submit(starpu_data_handle_t dist, starpu_data_handle_t inbox,
                                  starpu_data_handle_t csr, starpu_data_handle_t req,
                                  starpu_data_handle_t local, const struct strata__put_apply *a);

#endif
