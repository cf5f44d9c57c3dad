/* Merge API: checks and type rules over the merge codelet, REDUX
 * accumulation, and the reduction of an array across ranks. */
#include <starpu_mpi.h>

#include "codelets.h"
#include "internal.h"
#include "kernels/merge_kernels.h"

int strata_merge_result_dtype(strata_op op, strata_dtype in, strata_dtype *out)
{
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
  if (dst->acquired || src->acquired)
    return STRATA_ESTATE; /* the task would wait for a release on this thread */
  return 0;
}

int strata_merge(strata_array *dst, const strata_array *src, strata_op op)
{
  int ret = check_pair(dst, src, op);
  if (ret)
    return ret;
  return strata__merge_submit(dst->handle, src->handle, op, src->dtype);
}

int strata_accumulate(strata_array *dst, const strata_array *src, strata_op op)
{
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
    if (starpu_data_acquire(a->handle, STARPU_R) != 0)
      return STRATA_ESTARPU;
    starpu_data_release(a->handle);
  }
  strata__merge_set_redux(a->handle, op, a->dtype);
  a->redux_op = (int)op;
  return 0;
}

int strata_array_fill_identity(strata_array *a, strata_op op)
{
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
    return STRATA_ESTATE;
  if ((ret = strata__array_writable(a)))
    return ret;
  return strata__fill_identity_submit(a->handle, op, a->dtype);
}

/* Receive a peer's partial into a temporary handle and merge it into `a`;
 * the temporary is unregistered once the merge has run. */
static int merge_from(strata_array *a, strata_op op, int peer, int64_t tag)
{
  starpu_data_handle_t tmp;
  starpu_vector_data_register(&tmp, -1, 0, (uint32_t)a->nelems, strata_dtype_size(a->dtype));
  int ret = starpu_mpi_irecv_detached(tmp, peer, tag, strata_comm(), NULL, NULL);
  if (ret == 0)
    ret = strata__merge_submit(a->handle, tmp, op, a->dtype);
  else
    ret = STRATA_EMPI;
  starpu_data_unregister_submit(tmp);
  return ret;
}

int strata_array_reduce(strata_array *a, strata_op op, int root)
{
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
      local = STRATA_ESTATE;
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
    int64_t tag = (seq << 6) | step;
    if (rel & mask) {
      int to = (rel - mask + root) % size;
      if (starpu_mpi_isend_detached(a->handle, to, tag, strata_comm(), NULL, NULL) != 0)
        return STRATA_EMPI;
      break;
    }
    if (rel + mask < size && (ret = merge_from(a, op, (rel + mask + root) % size, tag)))
      return ret;
  }
  return 0;
}
