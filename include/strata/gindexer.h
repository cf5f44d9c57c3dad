/** @file gindexer.h
 *  @brief The global indexer: distributed take and put (maia's
 *  GlobalIndexer) over a block distribution, as StarPU task graphs.
 *
 *  A collection of n items is distributed by blocks: rank j owns global
 *  indices [distrib[j], distrib[j+1]). Each rank names the global indices
 *  it wants to read or write (any number, repeats allowed). The protocol
 *  is built once; every exchange then packs rows with a gather codelet,
 *  moves one StarPU-MPI message per pair of ranks and unpacks with a
 *  codelet (CPU and CUDA), ordered by data handles only.
 *
 *  Four kinds of items, as in maia: buffers of `count` values per index
 *  (Take / Put), variable-size items described by a counts array (Take_v /
 *  Put_v), byte blobs, and structured objects through user pack / unpack
 *  callbacks. A multi-list indexer (strata_gmindexer_create()) serves N
 *  index lists per rank at once; the single-list calls are its N = 1 case.
 *
 *  Every call here is collective over the indexer's communicator and
 *  returns the same code on every rank. */
#ifndef STRATA_GINDEXER_H
#define STRATA_GINDEXER_H

#include <mpi.h>
#include <stdint.h>

#include <strata/array.h>
#include <strata/types.h>

#ifdef __cplusplus
extern "C" {
#endif
/* The library exports what its public headers declare, and nothing else. */
#pragma GCC visibility push(default)

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

/** @brief Collective: build a multi-list protocol (maia's
 *  GlobalMultiIndexer). This rank names @p n_lists lists of global indices
 *  (n_lists may differ between ranks, 0 included); their exchanges take
 *  and give one array per list. Writers are ordered by rank, then list,
 *  then position. strata_gindexer_create() is the case n_lists = 1.
 *  @param idx n_lists pointers (NULL entries allowed for empty lists).
 *  @param n_idx n_lists sizes (>= 0).
 *  @return as strata_gindexer_create(). */
int strata_gmindexer_create(MPI_Comm comm, const int64_t *distrib, int n_lists,
                            const int64_t *const *idx, const int64_t *n_idx, strata_gindexer **out);

/** @brief Destroy (waits for the exchanges that use it). NULL is accepted.
 *  @return 0. */
int strata_gindexer_destroy(strata_gindexer *gi);

/** @brief Number of global indices this rank owns (dn). */
int64_t strata_gindexer_dist_size(const strata_gindexer *gi);

/** @brief Number of indices this rank named (n_idx; all lists together). */
int64_t strata_gindexer_part_size(const strata_gindexer *gi);

/** @brief Number of index lists on this rank (1 for a single-list indexer). */
int strata_gindexer_list_count(const strata_gindexer *gi);

/** @brief Size of this rank's list @p list, or STRATA_EINVAL. */
int64_t strata_gindexer_list_size(const strata_gindexer *gi, int list);

/** @brief A new uninitialised array for this rank's owned items, dn x
 *  @p count of @p dtype (1-D when count is 1, else [dn, count]).
 *  @return 0, STRATA_EINVAL or STRATA_ENOMEM. */
int strata_gindexer_empty_dist(const strata_gindexer *gi, int64_t count, strata_dtype dtype,
                               strata_array **out);

/** @brief Same for the named items: n_idx x @p count. */
int strata_gindexer_empty_part(const strata_gindexer *gi, int64_t count, strata_dtype dtype,
                               strata_array **out);

/** @brief Same per list: outs[l] gets list l's size x @p count (outs has
 *  strata_gindexer_list_count() entries). On failure no array is left. */
int strata_gmindexer_empty_parts(const strata_gindexer *gi, int64_t count, strata_dtype dtype,
                                 strata_array **outs);

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

/** @brief Collective: Take on a multi-list indexer. outs[l] (NULL or
 *  preallocated, as in strata_gindexer_take()) receives list l's items.
 *  On failure the arrays allocated by the call are destroyed and their
 *  entries reset to NULL. */
int strata_gmindexer_take(strata_gindexer *gi, strata_array *dist, int64_t count,
                          strata_array **outs);

/** @brief strata_gmindexer_take() that returns after submission. */
int strata_gmindexer_take_submit(strata_gindexer *gi, strata_array *dist, int64_t count,
                                 strata_array **outs);

/** @brief Collective: Put on a multi-list indexer; values[l] holds list
 *  l's rows. A rank without lists (or without named indices) still takes
 *  part; an allocated @p dist gets the type the other ranks use. */
int strata_gmindexer_put(strata_gindexer *gi, strata_array *const *values, int64_t count,
                         strata_put_rule rule, strata_op op, strata_array **dist);

/** @brief strata_gmindexer_put() that returns after submission. */
int strata_gmindexer_put_submit(strata_gindexer *gi, strata_array *const *values, int64_t count,
                                strata_put_rule rule, strata_op op, strata_array **dist);

/** @brief Collective: Take_v on variable-size items. The owners describe
 *  their items with @p dist_counts (STRATA_INT64, dn entries, >= 0) and
 *  @p dist_data (sum of the counts elements, any type, the same on every
 *  rank). Every rank gets, per named index, its count in *out_counts
 *  (n_idx entries) and its items, concatenated in request order, in
 *  *out_data. Each output is NULL (allocated: 1-D) or preallocated with the
 *  right size and type. Sizes must be known before the data can move, so
 *  the call waits for the counts even in its _submit form.
 *  @return 0; STRATA_EINVAL (sizes, negative counts, counts not summing to
 *          the data), STRATA_ETYPE (counts not int64, data types differing);
 *          the same code on every rank. */
int strata_gindexer_take_v(strata_gindexer *gi, strata_array *dist_counts, strata_array *dist_data,
                           strata_array **out_counts, strata_array **out_data);

/** @brief strata_gindexer_take_v() that returns once the data movement is
 *  submitted (it waits for the counts phase). */
int strata_gindexer_take_v_submit(strata_gindexer *gi, strata_array *dist_counts,
                                  strata_array *dist_data, strata_array **out_counts,
                                  strata_array **out_data);

/** @brief Collective: Put_v on variable-size items. Each rank writes, per
 *  named index, counts[p] items (STRATA_INT64 counts, n_idx entries; the
 *  items concatenated in @p values). The owners build new arrays
 *  *out_counts (dn entries) and *out_data, starting from the initial state
 *  (@p init_counts, @p init_data: NULL for none, meaning count 0 everywhere).
 *  Without @p extend, the winning writer under @p rule (STRATA_PUT_LAST or
 *  STRATA_PUT_FIRST) gives its whole block and count; unreferenced indices
 *  keep their initial block. With @p extend, every written block is
 *  appended to the initial block in writer order (rank, list, position);
 *  @p rule then has no effect but must still be one of the two (and the
 *  same on every rank). Reductions are refused (STRATA_EINVAL): blocks of
 *  different sizes do not combine. The outputs are always allocated
 *  (their size is only known after the exchange); *out_counts and
 *  *out_data must be NULL.
 *  @return as strata_gindexer_take_v(). */
int strata_gindexer_put_v(strata_gindexer *gi, strata_array *counts, strata_array *values,
                          strata_put_rule rule, int extend, strata_array *init_counts,
                          strata_array *init_data, strata_array **out_counts,
                          strata_array **out_data);

/** @brief strata_gindexer_put_v() that returns once the data movement is
 *  submitted (it waits for the counts phase). */
int strata_gindexer_put_v_submit(strata_gindexer *gi, strata_array *counts, strata_array *values,
                                 strata_put_rule rule, int extend, strata_array *init_counts,
                                 strata_array *init_data, strata_array **out_counts,
                                 strata_array **out_data);

/** @brief Collective: Take_v on a multi-list indexer: out_counts[l] and
 *  out_data[l] per list (each NULL or preallocated). */
int strata_gmindexer_take_v(strata_gindexer *gi, strata_array *dist_counts, strata_array *dist_data,
                            strata_array **out_counts, strata_array **out_data);

/** @brief Collective: Put_v on a multi-list indexer: counts[l] and
 *  values[l] per list. */
int strata_gmindexer_put_v(strata_gindexer *gi, strata_array *const *counts,
                           strata_array *const *values, strata_put_rule rule, int extend,
                           strata_array *init_counts, strata_array *init_data,
                           strata_array **out_counts, strata_array **out_data);

/** A variable-size byte blob (maia's generic objects, in C). */
typedef struct strata_blob {
  void *data;   /**< malloc()'d bytes (NULL when size is 0) */
  int64_t size; /**< byte count */
} strata_blob;

/** @brief Collective: take byte blobs. @p dist has dn blobs; out[p] (n_idx
 *  entries) receives a malloc()'d copy of the blob its owner holds; free
 *  it with free(). @return as strata_gindexer_take_v(); STRATA_ENOMEM. */
int strata_gindexer_take_blobs(strata_gindexer *gi, const strata_blob *dist, strata_blob *out);

/** @brief Collective: put byte blobs (n_idx of them) into the owners'
 *  @p dist (dn blobs, their data from malloc()). A written blob is replaced
 *  by a new malloc()'d one (the old data is freed): the winner's bytes
 *  under @p rule, or with @p extend the old bytes followed by every written
 *  blob in writer order. Unreferenced blobs are left alone. */
int strata_gindexer_put_blobs(strata_gindexer *gi, const strata_blob *values, strata_put_rule rule,
                              int extend, strata_blob *dist);

/** User serialisation of structured items for the object exchanges. */
typedef struct strata_codec {
  /** Write @p item's bytes into @p buf when @p cap is large enough, and
   *  return how many it needs (>= 0; negative: a STRATA_E* error). Called
   *  once with cap 0 to size, then to write. */
  int64_t (*pack)(const void *item, void *buf, int64_t cap, void *user);
  /** Build a new item from @p size bytes; set *item (NULL is a valid
   *  item) and return 0 or a STRATA_E* error. */
  int (*unpack)(const void *buf, int64_t size, void **item, void *user);
  /** Free an item that a put replaces (NULL: items are not freed). */
  void (*release)(void *item, void *user);
  void *user; /**< passed to the callbacks */
} strata_codec;

/** @brief Collective: take structured items. @p dist has dn item pointers,
 *  packed with codec->pack; out[p] (n_idx entries) gets the item built by
 *  codec->unpack from its owner's bytes. Callbacks run on the calling
 *  thread; the bytes move as a Take_v task graph. A callback error on any
 *  rank is returned on every rank (the items made so far are released). */
int strata_gindexer_take_objects(strata_gindexer *gi, void *const *dist, const strata_codec *codec,
                                 void **out);

/** @brief Collective: put structured items (n_idx of them) into the owners'
 *  @p dist (dn pointers): a written slot gets the winner's item under
 *  @p rule (STRATA_PUT_LAST or STRATA_PUT_FIRST), unpacked anew; the old
 *  item goes to codec->release. Unreferenced slots are left alone. */
int strata_gindexer_put_objects(strata_gindexer *gi, void *const *values, strata_put_rule rule,
                                const strata_codec *codec, void **dist);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
