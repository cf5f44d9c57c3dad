/** @file gindexer.h
 *  @brief The global indexer: distributed take and put (maia's
 *  GlobalIndexer) over a block distribution, as StarPU task graphs.
 *
 *  A collection of n items is distributed by blocks: rank j owns global
 *  indices [distrib[j], distrib[j+1]). Each rank names the global indices
 *  it wants to read or write (any number, repeats allowed). The protocol
 *  is built once; every exchange then packs rows with a gather codelet,
 *  moves one StarPU-MPI message per pair of ranks and unpacks with a
 *  codelet (CPU and CUDA), ordered by data handles only. */
#ifndef STRATA_GINDEXER_H
#define STRATA_GINDEXER_H

#include <mpi.h>
#include <stdint.h>

#include <strata/array.h>
#include <strata/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A global indexer (protocol object). */
typedef struct strata_gindexer strata_gindexer;

/** @brief Collective over @p comm: build the protocol.
 *  @param comm the ranks that share the collection (StarPU-MPI must be
 *         running, as after strata_init()).
 *  @param distrib size + 1 entries, the same on every rank, distrib[0] = 0,
 *         non-decreasing.
 *  @param idx this rank's 0-based global indices (NULL when n_idx is 0).
 *  @param n_idx how many (>= 0).
 *  @param out receives the object.
 *  @return 0; STRATA_ERANGE on every rank when some rank names an index
 *          outside [0, distrib[size]); STRATA_EINVAL on every rank for a bad
 *          or disagreeing distribution; STRATA_ENOMEM; STRATA_ESTATE before
 *          strata_init(). */
int strata_gindexer_create(MPI_Comm comm, const int64_t *distrib, const int64_t *idx, int64_t n_idx,
                           strata_gindexer **out);

/** @brief Destroy (waits for the exchanges that use it). NULL is accepted.
 *  @return 0. */
int strata_gindexer_destroy(strata_gindexer *gi);

/** @brief Number of global indices this rank owns (dn). */
int64_t strata_gindexer_dist_size(const strata_gindexer *gi);

/** @brief Number of indices this rank named (n_idx). */
int64_t strata_gindexer_part_size(const strata_gindexer *gi);

/** @brief A new uninitialised array for this rank's owned items, dn x
 *  @p count of @p dtype (1-D when count is 1, else [dn, count]).
 *  @return 0, STRATA_EINVAL or STRATA_ENOMEM. */
int strata_gindexer_empty_dist(const strata_gindexer *gi, int64_t count, strata_dtype dtype,
                               strata_array **out);

/** @brief Same for the named items: n_idx x @p count. */
int strata_gindexer_empty_part(const strata_gindexer *gi, int64_t count, strata_dtype dtype,
                               strata_array **out);

/** @brief For each owned index (dn entries), how many requests of all
 *  ranks name it. @return 0 or STRATA_EINVAL. */
int strata_gindexer_access_counts(const strata_gindexer *gi, int64_t *counts);

/** How put resolves several writes of one index. */
typedef enum strata_put_rule {
  STRATA_PUT_LAST = 0, /**< the last writer wins: increasing rank, then position (maia) */
  STRATA_PUT_FIRST,    /**< the first writer wins (ParaDiGM) */
  STRATA_PUT_REDUCE    /**< every write is merged with an operator, the initial value included */
} strata_put_rule;

/** @brief Collective: Take. Every rank gets, for each index it named, the
 *  @p count items its owner holds. Waits for the result.
 *  @param gi the protocol.  @param dist this rank's owned items, dn x count
 *         elements (any shape), the same type on every rank.
 *  @param count items per index (>= 1, the same on every rank).
 *  @param out *out: the output, n_idx x count elements of dist's type,
 *         or NULL for a new array (strata_gindexer_empty_part() layout).
 *  @return 0; STRATA_EINVAL (sizes, counts), STRATA_ETYPE (types differ
 *          across ranks or from *out); the same code on every rank. */
int strata_gindexer_take(strata_gindexer *gi, strata_array *dist, int64_t count,
                         strata_array **out);

/** @brief Collective: Put. Each rank writes @p count items per named index
 *  into the owners' arrays under @p rule (@p op for STRATA_PUT_REDUCE, which
 *  must keep the type: strata_merge_result_dtype()). Waits for the result.
 *  @param values n_idx x count elements.
 *  @param dist *dist: the owned items to update (unreferenced indices keep
 *         their value), or NULL for a new array in which unreferenced
 *         indices hold 0, or the identity of @p op for reductions.
 *  @return as strata_gindexer_take(). */
int strata_gindexer_put(strata_gindexer *gi, strata_array *values, int64_t count,
                        strata_put_rule rule, strata_op op, strata_array **dist);

/** @brief strata_gindexer_take() that returns after submission: read *out
 *  with strata_array_acquire() (which waits for it). */
int strata_gindexer_take_submit(strata_gindexer *gi, strata_array *dist, int64_t count,
                                strata_array **out);

/** @brief strata_gindexer_put() that returns after submission. */
int strata_gindexer_put_submit(strata_gindexer *gi, strata_array *values, int64_t count,
                               strata_put_rule rule, strata_op op, strata_array **dist);

#ifdef __cplusplus
}
#endif
#endif
