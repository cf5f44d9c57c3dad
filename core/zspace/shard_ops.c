/* The example sharded operations: index spaces and projections of a
 * linear layer, a 2-D convolution window, an axial sum and a fixed-view
 * broadcast (docs/sharding.md shows their projections). */
#include <string.h>

#include "codelets.h"
#include "internal/runtime.h"
#include "shard_ops.h"

static int float_arrays(strata_array *const *a, int n, const char *name)
{
  for (int i = 0; i < n; i++) {
    if (!a[i])
      return strata__fail(STRATA_EINVAL, "%s: array %d is NULL", name, i);
    if (strata_array_dtype(a[i]) != STRATA_FLOAT32)
      return strata__fail(STRATA_ETYPE, "%s: array %d is not float32", name, i);
  }
  return 0;
}

/* Tensor slot t: `matrix` (out x in, row-major; NULL: zero), `offset`
 * (NULL: zero) and region `shape` (NULL: ones). */
static void set_tensor(strata_shard_op *op, int t, strata_array *a, strata_shard_access access,
                       const int64_t *matrix, const int64_t *offset, const int64_t *shape)
{
  strata_shard_tensor *tt = &op->tensor[t];
  int out = strata_array_ndim(a);
  int64_t ones[STRATA_ZMAX_DIMS] = {1, 1, 1, 1, 1, 1, 1, 1};
  strata_zaffine map;
  strata_zaffine_init(&map, op->index.ndim, out, matrix, offset);
  strata_zproj_init(&tt->proj, &map, shape ? shape : ones);
  tt->array = a;
  tt->access = access;
  tt->policy = STRATA_OOB_ERROR;
}

static void set_index(strata_shard_op *op, int ndim, const int64_t *extent)
{
  int64_t zero[STRATA_ZMAX_DIMS] = {0};
  strata_zrange_init(&op->index, ndim, zero, extent);
}

static void set_kernels(strata_shard_op *op, const char *name,
                        const struct strata__shard_kernels *k, int ntensors)
{
  op->name = name;
  op->cpu = k->cpu;
  op->cuda = k->cuda;
  op->ntensors = ntensors;
}

int strata_shard_op_linear(strata_array *x, strata_array *w, strata_array *bias, strata_array *y,
                           strata_shard_op *op)
{
  strata__clear_error();
  strata_array *a[4] = {x, w, bias, y};
  int ret = op ? float_arrays(a, 4, "linear") : STRATA_EINVAL;
  if (ret)
    return ret;
  int64_t xs[2], ws[2], bs[1], ys[2];
  if (strata_array_ndim(x) != 2 || strata_array_ndim(w) != 2 || strata_array_ndim(bias) != 1 ||
      strata_array_ndim(y) != 2)
    return strata__fail(STRATA_EINVAL, "linear: x, w, y must be 2-D and bias 1-D");
  strata_array_shape(x, xs);
  strata_array_shape(w, ws);
  strata_array_shape(bias, bs);
  strata_array_shape(y, ys);
  if (xs[1] != ws[0] || ws[1] != bs[0] || ys[0] != xs[0] || ys[1] != ws[1] || xs[1] < 1)
    return strata__fail(STRATA_EINVAL, "linear: shapes do not chain");
  memset(op, 0, sizeof *op);
  set_index(op, 2, ys);
  const int64_t rows[4] = {1, 0, 0, 0}, cols[4] = {0, 0, 0, 1}, col[2] = {0, 1},
                identity[4] = {1, 0, 0, 1};
  set_tensor(op, 0, x, STRATA_SHARD_READ, rows, NULL, (int64_t[]){1, xs[1]});
  set_tensor(op, 1, w, STRATA_SHARD_READ, cols, NULL, (int64_t[]){ws[0], 1});
  set_tensor(op, 2, bias, STRATA_SHARD_READ, col, NULL, NULL);
  set_tensor(op, 3, y, STRATA_SHARD_WRITE, identity, NULL, NULL);
  set_kernels(op, "linear", &strata__linear_kernels, 4);
  op->flops_per_point = 2.0 * (double)xs[1];
  return 0;
}

int strata_shard_op_conv2d(strata_array *x, strata_array *k, strata_array *y,
                           strata_oob_policy policy, strata_shard_op *op)
{
  strata__clear_error();
  strata_array *a[3] = {x, k, y};
  int ret = op ? float_arrays(a, 3, "conv2d") : STRATA_EINVAL;
  if (ret)
    return ret;
  int64_t xs[2], ks[2], ys[2];
  if (strata_array_ndim(x) != 2 || strata_array_ndim(k) != 2 || strata_array_ndim(y) != 2)
    return strata__fail(STRATA_EINVAL, "conv2d: x, k, y must be 2-D");
  strata_array_shape(x, xs);
  strata_array_shape(k, ks);
  strata_array_shape(y, ys);
  if (xs[0] != ys[0] || xs[1] != ys[1] || ks[0] < 1 || ks[1] < 1)
    return strata__fail(STRATA_EINVAL, "conv2d: y must have x's shape and k cells");
  if (policy != STRATA_OOB_PAD && policy != STRATA_OOB_WRAP && policy != STRATA_OOB_CLIP)
    return strata__fail(STRATA_EINVAL, "conv2d: the window policy is PAD, WRAP or CLIP");
  memset(op, 0, sizeof *op);
  set_index(op, 2, ys);
  const int64_t identity[4] = {1, 0, 0, 1}, centre[2] = {-(ks[0] / 2), -(ks[1] / 2)};
  set_tensor(op, 0, x, STRATA_SHARD_READ, identity, centre, ks);
  op->tensor[0].policy = policy;
  set_tensor(op, 1, k, STRATA_SHARD_READ, NULL, NULL, ks);
  set_tensor(op, 2, y, STRATA_SHARD_WRITE, identity, NULL, NULL);
  set_kernels(op, "conv2d", &strata__conv2d_kernels, 3);
  op->flops_per_point = 2.0 * (double)(ks[0] * ks[1]);
  return 0;
}

int strata_shard_op_axial_sum(strata_array *x, int axis, strata_array *y, strata_shard_op *op)
{
  strata__clear_error();
  strata_array *a[2] = {x, y};
  int ret = op ? float_arrays(a, 2, "axial_sum") : STRATA_EINVAL;
  if (ret)
    return ret;
  int n = strata_array_ndim(x);
  if (axis < 0)
    axis += n;
  if (n < 1 || axis < 0 || axis >= n || strata_array_ndim(y) != n - 1)
    return strata__fail(STRATA_EINVAL, "axial_sum: axis %d of a %d-D array, y %d-D", axis, n,
                        strata_array_ndim(y));
  int64_t xs[STRATA_MAX_DIMS], ys[STRATA_MAX_DIMS];
  strata_array_shape(x, xs);
  strata_array_shape(y, ys);
  int64_t identity[STRATA_ZMAX_DIMS * STRATA_ZMAX_DIMS] = {0},
                                      drop[STRATA_ZMAX_DIMS * STRATA_ZMAX_DIMS] = {0};
  for (int d = 0, k = 0; d < n; d++) {
    identity[d * n + d] = 1;
    if (d == axis)
      continue;
    if (ys[k] != xs[d])
      return strata__fail(STRATA_EINVAL, "axial_sum: y's shape is not x's without the axis");
    drop[k * n + d] = 1;
    k++;
  }
  memset(op, 0, sizeof *op);
  set_index(op, n, xs);
  set_tensor(op, 0, x, STRATA_SHARD_READ, identity, NULL, NULL);
  set_tensor(op, 1, y, STRATA_SHARD_REDUCE, drop, NULL, NULL);
  op->tensor[1].op = STRATA_SUM;
  set_kernels(op, "axial_sum", &strata__axial_sum_kernels, 2);
  static const int axes[STRATA_MAX_DIMS] = {0, 1, 2, 3, 4, 5, 6, 7};
  op->arg = &axes[axis];
  op->arg_size = sizeof(int);
  op->flops_per_point = 1.0;
  return 0;
}

int strata_shard_op_broadcast_add(strata_array *x, strata_array *v, strata_array *y,
                                  strata_shard_op *op)
{
  strata__clear_error();
  strata_array *a[3] = {x, v, y};
  int ret = op ? float_arrays(a, 3, "broadcast_add") : STRATA_EINVAL;
  if (ret)
    return ret;
  int64_t xs[2], vs[1], ys[2];
  if (strata_array_ndim(x) != 2 || strata_array_ndim(v) != 1 || strata_array_ndim(y) != 2)
    return strata__fail(STRATA_EINVAL, "broadcast_add: x, y must be 2-D and v 1-D");
  strata_array_shape(x, xs);
  strata_array_shape(v, vs);
  strata_array_shape(y, ys);
  if (xs[0] != ys[0] || xs[1] != ys[1] || vs[0] != xs[1])
    return strata__fail(STRATA_EINVAL, "broadcast_add: shapes differ");
  memset(op, 0, sizeof *op);
  set_index(op, 2, ys);
  const int64_t identity[4] = {1, 0, 0, 1};
  set_tensor(op, 0, x, STRATA_SHARD_READ, identity, NULL, NULL);
  set_tensor(op, 1, v, STRATA_SHARD_READ, NULL, NULL, vs); /* fixed view: zero map */
  set_tensor(op, 2, y, STRATA_SHARD_WRITE, identity, NULL, NULL);
  set_kernels(op, "broadcast_add", &strata__broadcast_add_kernels, 3);
  op->flops_per_point = 1.0;
  return 0;
}
