/* Merge API: checks and type rules over the merge codelet, REDUX
 * accumulation, and the reduction of an array across ranks. */
#include <starpu_mpi.h>

#include "codelets.h"
#include "internal/exchange.h"
#include "internal/runtime.h"
#include "kernels/merge_kernels.h"
#include "merge.h"
#include "view.h"

int strata_merge_result_dtype(strata_op op, strata_dtype in, strata_dtype *out)
{
  strata__clear_error();
  if (!out || (unsigned)op >= STRATA_NOPS || (unsigned)in >= STRATA_NDTYPES)
    return STRATA_EINVAL;
  int r = strata__merge_result_dtype(op, in);
  if (r < 0)
    return STRATA_ETYPE;
  *out = (strata_dtype)r;
  return 0;
}

int strata_merge_identity(strata_op op, strata_dtype in, void *value)
{
  strata__clear_error();
  strata_dtype result;
  int ret = strata_merge_result_dtype(op, in, &result);
  if (ret)
    return ret;
  if (!value)
    return STRATA_EINVAL;
  strata__merge_identity(op, result, value);
  return 0;
}

/* Checks shared by merge and accumulate. */
static int check_pair(const strata_array *dst, const strata_array *src, strata_op op)
{
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!dst || !src || dst == src)
    return STRATA_EINVAL;
  if ((ret = strata__array_writable((strata_array *)dst)) ||
      (ret = strata__array_ready((strata_array *)src)))
    return ret;
  strata_dtype result;
  if ((ret = strata_merge_result_dtype(op, src->dtype, &result)))
    return ret;
  if (dst->dtype != result)
    return STRATA_ETYPE;
  if (dst->nelems != src->nelems)
    return STRATA_EINVAL;
  if (dst->acquired || src->acquired) /* the task would wait for a release on this thread */
    return strata__array_busy();
  return 0;
}

int strata_merge(strata_array *dst, const strata_array *src, strata_op op)
{
  strata__clear_error();
  int ret = check_pair(dst, src, op);
  if (ret)
    return ret;
  return strata__merge_submit(dst->handle, src->handle, op, src->dtype);
}

int strata_accumulate(strata_array *dst, const strata_array *src, strata_op op)
{
  strata__clear_error();
  int ret = check_pair(dst, src, op);
  if (ret)
    return ret;
  if ((ret = strata__array_set_redux(dst, op)))
    return ret;
  return strata__accumulate_submit(dst->handle, src->handle, op, src->dtype);
}

int strata__array_set_redux(strata_array *a, strata_op op)
{
  if (a->redux_op == (int)op)
    return 0;
  /* StarPU reads the reduction methods when the accumulations run, so
   * pending ones must be reduced with the old methods before the switch. */
  if (a->redux_op >= 0) {
    if (strata__acquire(a->handle, STARPU_R) != 0)
      return STRATA_ESTARPU;
    starpu_data_release(a->handle);
  }
  strata__merge_set_redux(a->handle, op, a->dtype);
  a->redux_op = (int)op;
  return 0;
}

int strata_array_fill_identity(strata_array *a, strata_op op)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!a)
    return STRATA_EINVAL;
  strata_dtype result;
  if ((ret = strata_merge_result_dtype(op, a->dtype, &result)))
    return ret;
  if (result != a->dtype)
    return STRATA_ETYPE;
  if (a->acquired)
    return strata__array_busy();
  if ((ret = strata__array_writable(a)))
    return ret;
  return strata__fill_identity_submit(a->handle, op, a->dtype);
}

/* Detached StarPU-MPI transfers of a handle on strata_comm(). */
static int send_handle(starpu_data_handle_t h, int to, int64_t tag)
{
  return strata__transfer(strata_comm(), tag, strata_rank(), to, h);
}

static int recv_handle(starpu_data_handle_t h, int from, int64_t tag)
{
  return strata__transfer(strata_comm(), tag, from, strata_rank(), h);
}

/* Tag `step` of the collective call numbered `seq`. */
static int call_tag(int64_t seq, int64_t step, int64_t *tag)
{
  strata__tags tags;
  int ret = strata__tags_of_call(seq, &tags);
  return ret ? ret : strata__tag(&tags, step, tag);
}

/* Receive a peer's partial into a temporary handle and merge it into `a`;
 * the temporary is unregistered once the merge has run. */
static int merge_from(strata_array *a, strata_op op, int peer, int64_t tag)
{
  starpu_data_handle_t tmp;
  starpu_vector_data_register(&tmp, -1, 0, (uint32_t)a->nelems, strata_dtype_size(a->dtype));
  int ret = recv_handle(tmp, peer, tag);
  if (ret == 0)
    ret = strata__merge_submit(a->handle, tmp, op, a->dtype);
  starpu_data_unregister_submit(tmp);
  return ret;
}

int strata_array_reduce(strata_array *a, strata_op op, int root)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  int rank = strata_rank(), size = strata_size();
  int local = 0;
  strata_dtype result = STRATA_NDTYPES;
  if (!a || root < 0 || root >= size)
    local = STRATA_EINVAL;
  else if ((local = strata_merge_result_dtype(op, a->dtype, &result)) == 0) {
    if (result != a->dtype)
      local = STRATA_ETYPE;
    else if (a->acquired)
      local = strata__array_busy();
  }
  int64_t agreed[4] = {op, root, a ? (int64_t)a->dtype : -1, a ? a->nelems : -1};
  if ((ret = strata__agree(local, agreed, 4)))
    return ret;
  int64_t seq = strata__next_collective();
  if (size == 1 || a->nelems == 0)
    return 0;

  /* Binomial tree on ranks relative to the root: at step k, relative rank
   * r with bit k set sends to r - 2^k and stops; the others receive from
   * r + 2^k when it exists. Tags are unique per collective and step. */
  int rel = (rank - root + size) % size;
  for (int step = 0, mask = 1; mask < size; step++, mask <<= 1) {
    int64_t tag;
    if ((ret = call_tag(seq, step, &tag)))
      return ret;
    if (rel & mask) {
      int to = (rel - mask + root) % size;
      if ((ret = send_handle(a->handle, to, tag)))
        return ret;
      break;
    }
    if (rel + mask < size && (ret = merge_from(a, op, (rel + mask + root) % size, tag)))
      return ret;
  }
  return 0;
}

/* ---- merge of versions ---- */

int strata_merge_tree_pairs(int n, int *src, int *dst)
{
  strata__clear_error();
  if (n < 1 || !src || !dst)
    return STRATA_EINVAL;
  int k = 0;
  for (int m = n; m > 1; m -= m / 2)
    for (int h = m / 2, j = 0; j < h; j++, k++) {
      src[k] = m - h + j;
      dst[k] = m - 2 * h + j;
    }
  return k;
}

/* This rank's part of the checks: every local version of one type and size,
 * the op keeping the type, nothing acquired or with history. */
static int check_versions(strata_array **v, int nlocal, strata_op op, strata_merge_method method,
                          int64_t *dtype, int64_t *nelems)
{
  *dtype = *nelems = -1;
  if (nlocal < 0 || (nlocal > 0 && !v) ||
      (method != STRATA_MERGE_TREE && method != STRATA_MERGE_REDUX))
    return STRATA_EINVAL;
  for (int k = 0; k < nlocal; k++) {
    if (!v[k] || (k > 0 && (v[k]->dtype != v[0]->dtype || v[k]->nelems != v[0]->nelems)))
      return STRATA_EINVAL;
    if (v[k]->acquired)
      return strata__array_busy();
    int ret = strata__array_writable(v[k]);
    if (ret)
      return ret;
  }
  if (nlocal == 0)
    return 0;
  *dtype = v[0]->dtype;
  *nelems = v[0]->nelems;
  strata_dtype result;
  int ret = strata_merge_result_dtype(op, v[0]->dtype, &result);
  return ret ? ret : result != v[0]->dtype ? STRATA_ETYPE : 0;
}

/* Merge src into dst, replicas of the given owner ranks; the owner of src
 * sends it when dst lives elsewhere. */
static int merge_pair(strata_array *src, strata_array *dst, int src_rank, int dst_rank,
                      strata_op op, int64_t tag)
{
  int me = strata_rank();
  if (src_rank == me && dst_rank == me)
    return strata__merge_submit(dst->handle, src->handle, op, dst->dtype);
  if (src_rank == me)
    return send_handle(src->handle, dst_rank, tag);
  return dst_rank == me ? merge_from(dst, op, src_rank, tag) : 0;
}

/* Replicas (or ranks, for REDUX) 0..n-1 merged along the tree; owner[i]
 * the rank of item i, local[i] its array on that rank (NULL elsewhere). */
static int merge_tree(int n, const int *owner, strata_array **local, strata_op op)
{
  int *src = malloc((size_t)n * sizeof *src), *dst = malloc((size_t)n * sizeof *dst);
  int ret = src && dst ? 0 : STRATA_ENOMEM, npairs = ret ? 0 : strata_merge_tree_pairs(n, src, dst);
  for (int k = 0; k < npairs && !ret; k++) {
    int64_t tag;
    ret = call_tag(strata__next_collective(), 0, &tag);
    if (!ret)
      ret = merge_pair(local[src[k]], local[dst[k]], owner[src[k]], owner[dst[k]], op, tag);
  }
  free(src);
  free(dst);
  return ret;
}

int strata_merge_versions(strata_array **versions, int nlocal, strata_op op,
                          strata_merge_method method)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  int64_t mine[4] = {0, nlocal, -1, -1};
  mine[0] = check_versions(versions, nlocal, op, method, &mine[2], &mine[3]);
  int64_t agreed[2] = {op, method};
  int size = strata_size(), me = strata_rank();
  int64_t *all = malloc((size_t)size * sizeof mine);
  if (!all)
    return STRATA_ENOMEM; /* before any communication: every rank fails alike */
  if (MPI_Allgather(mine, 4, MPI_INT64_T, all, 4, MPI_INT64_T, strata__coll_comm()) !=
      MPI_SUCCESS) {
    free(all);
    return STRATA_EMPI;
  }
  /* the same verdict everywhere: the worst error, then the agreement of the
   * ranks holding replicas on type and size */
  int err = 0, total = 0, first = -1;
  for (int r = 0; r < size; r++) {
    int64_t *a = all + 4 * r;
    if (a[0] < err)
      err = (int)a[0];
    if (a[1] > 0 && first >= 0 && (a[2] != all[4 * first + 2] || a[3] != all[4 * first + 3]))
      err = err ? err : STRATA_EINVAL;
    if (a[1] > 0 && first < 0)
      first = r;
    total += (int)(a[1] > 0 ? a[1] : 0);
  }
  if (!err && total == 0)
    err = STRATA_EINVAL;
  if ((ret = strata__agree(err, agreed, 2))) {
    free(all);
    return ret;
  }
  /* items of the tree: every replica, or one per rank holding replicas
   * (REDUX accumulates the others into its first) */
  int n = 0, *owner = malloc((size_t)total * sizeof *owner);
  strata_array **item = calloc((size_t)total, sizeof *item);
  ret = owner && item ? 0 : STRATA_ENOMEM;
  for (int r = 0; !ret && r < size; r++)
    for (int k = 0; k < all[4 * r + 1] && (k == 0 || method == STRATA_MERGE_TREE); k++) {
      owner[n] = r;
      item[n++] = r == me ? versions[k] : NULL;
    }
  for (int k = 1; !ret && method == STRATA_MERGE_REDUX && k < nlocal; k++)
    ret = strata_accumulate(versions[0], versions[k], op);
  if (!ret)
    ret = merge_tree(n, owner, item, op);
  /* broadcast: replica 0 to the first version of every other rank, then
   * locally to the rest */
  for (int r = 0; !ret && r < size; r++) {
    int64_t tag;
    if ((ret = call_tag(strata__next_collective(), 0, &tag)))
      break;
    if (r == first || all[4 * r + 1] == 0)
      continue;
    if (me == first)
      ret = send_handle(versions[0]->handle, r, tag);
    if (me == r)
      ret = recv_handle(versions[0]->handle, first, tag);
  }
  for (int k = 1; !ret && k < nlocal; k++)
    ret = strata__copy_submit(versions[0]->handle, versions[k]->handle);
  free(owner);
  free(item);
  free(all);
  return ret;
}
