/** @file merge.h
 *  @brief Merging arrays with a reduction operator: one merge as a task,
 *  accumulation of many tasks into one array (StarPU REDUX), and reduction
 *  of one array across ranks.
 *
 *  Type rules (as in maia): SUM of bool gives int64; LAND and LOR accept any
 *  type and give bool; PROD, MIN, MAX, BAND, BOR reject bool; BAND and BOR
 *  reject floating types. Identities: SUM 0, PROD 1, MIN +inf or the type's
 *  maximum, MAX -inf or the type's minimum, LAND true, LOR false, BAND all
 *  bits set, BOR 0. Integer SUM and PROD wrap around (two's complement). */
#ifndef STRATA_MERGE_H
#define STRATA_MERGE_H

#include <strata/array.h>
#include <strata/types.h>

#ifdef __cplusplus
extern "C" {
#endif
/* The library exports what its public headers declare, and nothing else. */
#pragma GCC visibility push(default)

/** @brief Type of the result of merging values of type @p in with @p op.
 *  @return 0 and *@p out; STRATA_ETYPE for a forbidden pair; STRATA_EINVAL
 *          for an invalid op, type or NULL @p out. */
int strata_merge_result_dtype(strata_op op, strata_dtype in, strata_dtype *out);

/** @brief Write the identity of @p op in the result type of (@p op, @p in)
 *  into @p value (strata_dtype_size(result) bytes). Errors as
 *  strata_merge_result_dtype(). */
int strata_merge_identity(strata_op op, strata_dtype in, void *value);

/** @brief Submit a task computing dst = dst op src, element by element.
 *  @p dst must have the result type of (@p op, src's type) and as many
 *  elements as @p src. Returns once submitted.
 *  @return 0; STRATA_ETYPE; STRATA_EINVAL (NULL, size mismatch, bad op). */
int strata_merge(strata_array *dst, const strata_array *src, strata_op op);

/** @brief Submit a task accumulating @p src into @p dst with @p op in
 *  StarPU's REDUX mode: many such tasks run concurrently on private copies
 *  initialised with the identity, combined when @p dst is next read.
 *  The result is dst op src_1 op src_2 ..., in an unspecified order. When
 *  @p op differs from the previous accumulation's, the call first waits for
 *  the pending accumulations to be reduced. Same checks as strata_merge(). */
int strata_accumulate(strata_array *dst, const strata_array *src, strata_op op);

/** @brief Fill @p a with the identity of @p op (as a task).
 *  @return 0; STRATA_ETYPE if @p op does not keep @p a's type. */
int strata_array_fill_identity(strata_array *a, strata_op op);

/** @brief Collective over strata_comm(): merge every rank's @p a into the
 *  @p root rank's @p a with @p op, through a binomial tree of merge tasks
 *  and StarPU-MPI transfers. The order of the merges is fixed, so floating
 *  point results are reproducible run to run. Returns after submission;
 *  read the result with strata_array_acquire(). Other ranks' @p a are left
 *  with partial results.
 *
 *  Every rank gets the same return code: STRATA_EINVAL when ranks disagree
 *  on the type, the number of elements, the op or the root, or any rank
 *  passes a bad argument; STRATA_ETYPE when @p op does not keep the type. */
int strata_array_reduce(strata_array *a, strata_op op, int root);

/** How strata_merge_versions() combines versions. */
typedef enum strata_merge_method {
  STRATA_MERGE_TREE = 0, /**< the fixed pairing of strata_merge_tree_pairs(): reproducible */
  STRATA_MERGE_REDUX     /**< StarPU REDUX within each rank (any order), then the tree across
                              ranks */
} strata_merge_method;

/** @brief The merge tree of @p n replicas as (src, dst) pairs, in order:
 *  with h = n / 2, replicas n - h + j merge into n - 2h + j (j < h), then the
 *  same on the first n - h, until one is left (for 4: 2->0, 3->1, 1->0).
 *  @p src and @p dst need room for n - 1 pairs.
 *  @return the number of pairs (n - 1), or STRATA_EINVAL (n < 1, NULL). */
int strata_merge_tree_pairs(int n, int *src, int *dst);

/** @brief Collective over strata_comm(): merge the versions of one value
 *  that data-parallel replicas computed (for example partial gradients),
 *  then give every replica the merged value. Replicas are numbered in rank
 *  order: rank 0's @p nlocal versions first (@p nlocal may be 0 on some
 *  ranks). With STRATA_MERGE_TREE, replica src merges into dst along
 *  strata_merge_tree_pairs(): merge tasks on the data handles, StarPU-MPI
 *  transfers between ranks, so results are the same run to run. Returns
 *  after submission; reading a version waits for its value.
 *
 *  Every rank gets the same return code: STRATA_EINVAL when versions differ
 *  in type or size (on any rank), on a bad method, NULL versions or no
 *  replica at all; STRATA_ETYPE when @p op does not keep the type;
 *  STRATA_ESTATE when a version is acquired; STRATA_EINPLACE when one has
 *  recorded history. */
int strata_merge_versions(strata_array **versions, int nlocal, strata_op op,
                          strata_merge_method method);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
