/* The operations of deferred compute: names, NumPy's type and shape rules,
 * and the kernel arguments of their tasks. */
#include <math.h>
#include <string.h>

#include "elementwise.h"
#include "fill.h"
#include "graph_impl.h"
#include "matmul.h"
#include "reduce.h"
#include "take.h"
#include "tri.h"
#include "view.h"

static int is_float(strata_dtype t) { return t == STRATA_FLOAT32 || t == STRATA_FLOAT64; }

strata_dtype strata__promote(strata_dtype a, strata_dtype b)
{
  if (a == b || b == STRATA_BOOL)
    return a;
  if (a == STRATA_BOOL)
    return b;
  if (a == STRATA_FLOAT64 || b == STRATA_FLOAT64)
    return STRATA_FLOAT64;
  if (a == STRATA_FLOAT32 || b == STRATA_FLOAT32) {
    strata_dtype other = a == STRATA_FLOAT32 ? b : a;
    return other == STRATA_INT8 || other == STRATA_UINT8 ? STRATA_FLOAT32 : STRATA_FLOAT64;
  }
  if ((a == STRATA_INT8 && b == STRATA_UINT8) || (a == STRATA_UINT8 && b == STRATA_INT8))
    return STRATA_INT32; /* NumPy: int16, which Strata does not have */
  return strata_dtype_size(a) >= strata_dtype_size(b) ? a : b;
}

/* A weak scalar of `kind` meeting an array of type t. */
static strata_dtype promote_scalar(strata_dtype t, strata_dtype kind)
{
  if (kind == STRATA_FLOAT64)
    return is_float(t) ? t : STRATA_FLOAT64;
  if (kind == STRATA_INT64)
    return t == STRATA_BOOL ? STRATA_INT64 : t;
  return t;
}

int64_t strata__meta_nelems(const strata__meta *m)
{
  int64_t n = 1;
  for (int d = 0; d < m->ndim; d++) {
    if (m->shape[d] < 0)
      return -1;
    n *= m->shape[d];
  }
  return n;
}

static void contiguous_strides(const strata__meta *m, int64_t *stride)
{
  int64_t s = 1;
  for (int d = m->ndim - 1; d >= 0; d--) {
    stride[d] = s;
    s *= m->shape[d];
  }
}

/* ---- names ---- */

/* Opcodes named by their function or flag have no name of their own. */
static const char *const opcode_names[STRATA__NOPCODES] = {[STRATA__OP_INPUT] = "input",
                                                           [STRATA__OP_RESHAPE] = "reshape",
                                                           [STRATA__OP_INDEX] = "index",
                                                           [STRATA__OP_CONCAT] = "concat",
                                                           [STRATA__OP_TRANSPOSE] = "transpose",
                                                           [STRATA__OP_BROADCAST] = "broadcast_to",
                                                           [STRATA__OP_MATMUL] = "matmul",
                                                           [STRATA__OP_NONZERO] = "flatnonzero",
                                                           [STRATA__OP_TAKE] = "take"};

const char *strata__op_name(const strata__node *nd)
{
  switch (nd->op) {
  case STRATA__OP_EW: return nd->p.fn == STRATA__FN_COPY ? "astype" : strata_fn_name(nd->p.fn);
  case STRATA__OP_REDUCE: return strata_fn_name(nd->p.fn);
  case STRATA__OP_FILL: return nd->p.flag ? "arange" : "full";
  case STRATA__OP_TRI: return nd->p.flag ? "triu" : "tril";
  default:
    return (unsigned)nd->op < STRATA__NOPCODES && opcode_names[nd->op] ? opcode_names[nd->op]
                                                                       : "invalid";
  }
}

int strata__op_from_name(const char *name, strata__node *nd)
{
  static const struct {
    const char *name;
    int op, fn, flag;
  } special[] = {{"astype", STRATA__OP_EW, STRATA__FN_COPY, 0},
                 {"full", STRATA__OP_FILL, 0, 0},
                 {"arange", STRATA__OP_FILL, 0, 1},
                 {"tril", STRATA__OP_TRI, 0, 0},
                 {"triu", STRATA__OP_TRI, 0, 1}};
  for (size_t i = 0; i < sizeof special / sizeof *special; i++)
    if (strcmp(name, special[i].name) == 0) {
      nd->op = special[i].op;
      nd->p.fn = special[i].fn;
      nd->p.flag = special[i].flag;
      return 0;
    }
  for (int fn = 0; fn < STRATA_NFNS; fn++)
    if (strcmp(name, strata_fn_name(fn)) == 0) {
      nd->op = fn >= STRATA_FN_SUM ? STRATA__OP_REDUCE : STRATA__OP_EW;
      nd->p.fn = fn;
      return 0;
    }
  for (int op = 0; op < STRATA__NOPCODES; op++)
    if (opcode_names[op] && strcmp(name, opcode_names[op]) == 0) {
      nd->op = op;
      return 0;
    }
  return -1;
}

/* Operands of an elementwise function, scalar included. */
static int ew_operands(int32_t fn)
{
  if (fn == STRATA__FN_COPY || fn <= STRATA_FN_SQRT)
    return 1;
  return fn == STRATA_FN_WHERE ? 3 : 2;
}

int strata__op_arity(const strata__node *nd)
{
  switch (nd->op) {
  case STRATA__OP_INPUT:
  case STRATA__OP_FILL: return 0;
  case STRATA__OP_EW: return ew_operands(nd->p.fn) - (nd->p.scalar_at >= 0);
  case STRATA__OP_CONCAT: return -1;
  case STRATA__OP_MATMUL:
  case STRATA__OP_TAKE: return 2;
  default: return 1;
  }
}

/* ---- inference ---- */

static int normalize_axis(int64_t axis, int ndim, int64_t *out)
{
  *out = 0;
  if (axis < -ndim || axis >= ndim)
    return strata__fail(STRATA_EINVAL, "axis %lld out of range for %d dimensions", (long long)axis,
                        ndim);
  *out = axis < 0 ? axis + ndim : axis;
  return 0;
}

static int broadcast_shapes(const strata__meta *in, int n, strata__meta *out)
{
  out->ndim = 0;
  for (int k = 0; k < n; k++)
    if (in[k].ndim > out->ndim)
      out->ndim = in[k].ndim;
  for (int d = 0; d < out->ndim; d++) {
    int64_t e = 1;
    for (int k = 0; k < n; k++) {
      int dk = d - (out->ndim - in[k].ndim);
      int64_t x = dk >= 0 ? in[k].shape[dk] : 1;
      if (x != 1 && e != 1 && x != e)
        return strata__fail(STRATA_EINVAL, "shapes do not broadcast (extent %lld against %lld)",
                            (long long)x, (long long)e);
      if (x != 1)
        e = x;
    }
    out->shape[d] = e;
  }
  return 0;
}

/* The type the values of an elementwise call are promoted to (a where's
 * condition excluded). */
static strata_dtype common_type(const strata__params *p, const strata__meta *in, int narrays)
{
  int first = p->fn == STRATA_FN_WHERE;
  strata_dtype ct = in[first].dtype;
  for (int k = first + 1; k < narrays; k++)
    ct = strata__promote(ct, in[k].dtype);
  return p->scalar_at >= 0 ? promote_scalar(ct, (strata_dtype)p->scalar_kind) : ct;
}

static int infer_ew(const strata__params *p, const strata__meta *in, int narrays, strata__meta *out)
{
  int fn = p->fn;
  if (fn == STRATA__FN_COPY) {
    if ((unsigned)p->dtype >= STRATA_NDTYPES)
      return strata__fail(STRATA_ETYPE, "astype: invalid dtype %d", p->dtype);
    *out = in[0];
    out->dtype = (strata_dtype)p->dtype;
    return 0;
  }
  if ((unsigned)fn > STRATA_FN_WHERE)
    return strata__fail(STRATA_EINVAL, "invalid elementwise function %d", fn);
  if (p->scalar_at >= 0 && (ew_operands(fn) != 2 || p->scalar_at > 1 ||
                            (p->scalar_kind != STRATA_BOOL && p->scalar_kind != STRATA_INT64 &&
                             p->scalar_kind != STRATA_FLOAT64)))
    return strata__fail(STRATA_EINVAL, "%s: invalid scalar operand", strata_fn_name(fn));
  strata_dtype ct = common_type(p, in, narrays);
  int ret = broadcast_shapes(in, narrays, out);
  if (ret)
    return ret;
  if (ct == STRATA_BOOL && (fn == STRATA_FN_NEG || fn == STRATA_FN_SUB))
    return strata__fail(STRATA_ETYPE, "%s is not defined on bool (use logical operations)",
                        strata_fn_name(fn));
  if (fn >= STRATA_FN_EQ && fn <= STRATA_FN_GE)
    out->dtype = STRATA_BOOL;
  else if (fn == STRATA_FN_DIV)
    out->dtype = is_float(ct) ? ct : STRATA_FLOAT64;
  else if (fn == STRATA_FN_EXP || fn == STRATA_FN_LOG || fn == STRATA_FN_SQRT)
    out->dtype = is_float(ct)                               ? ct
                 : ct == STRATA_INT32 || ct == STRATA_INT64 ? STRATA_FLOAT64
                                                            : STRATA_FLOAT32; /* NumPy: float16 */
  else if (fn == STRATA_FN_POW && ct == STRATA_BOOL)
    out->dtype = STRATA_INT8;
  else
    out->dtype = ct;
  return 0;
}

/* Python's slice.indices(): first position and count of start:stop:step on
 * an extent. */
static int slice_range(const int64_t *item, int64_t extent, int64_t *first, int64_t *count,
                       int64_t *step)
{
  int64_t s = item[2] == STRATA_NONE ? 1 : item[2];
  if (s == 0)
    return strata__fail(STRATA_EINVAL, "slice step 0");
  int64_t lower = s > 0 ? 0 : -1, upper = s > 0 ? extent : extent - 1;
  int64_t b[2];
  for (int k = 0; k < 2; k++) {
    int64_t v = item[k];
    if (v == STRATA_NONE)
      b[k] = (k == 0) == (s > 0) ? lower : upper;
    else if (v < 0)
      b[k] = v + extent < lower ? lower : v + extent;
    else
      b[k] = v > upper ? upper : v;
  }
  int64_t n = s > 0 ? (b[1] > b[0] ? (b[1] - b[0] + s - 1) / s : 0)
                    : (b[0] > b[1] ? (b[0] - b[1] - s - 1) / -s : 0);
  *first = b[0];
  *count = n;
  *step = s;
  return 0;
}

/* Source offset and strides of an index node (the view it copies). */
static int index_view(const strata__params *p, const strata__meta *in, strata__meta *out,
                      struct strata__view_args *v)
{
  int64_t cs[STRATA_MAX_DIMS];
  contiguous_strides(in, cs);
  if (p->nlist > in->ndim)
    return strata__fail(STRATA_EINVAL, "%d indices for %d dimensions", p->nlist, in->ndim);
  out->dtype = in->dtype;
  out->ndim = 0;
  v->src_offset = 0;
  for (int d = 0; d < in->ndim; d++) {
    const int64_t *item = &p->list[4 * d];
    int64_t first = 0, count = in->shape[d], step = 1;
    if (d < p->nlist && item[3]) {
      int64_t i = item[0] < 0 ? item[0] + in->shape[d] : item[0];
      if (item[0] == STRATA_NONE || i < 0 || i >= in->shape[d])
        return strata__fail(STRATA_ERANGE, "index %lld out of range for extent %lld",
                            (long long)item[0], (long long)in->shape[d]);
      v->src_offset += i * cs[d];
      continue;
    }
    if (d < p->nlist) {
      int ret = slice_range(item, in->shape[d], &first, &count, &step);
      if (ret)
        return ret;
    }
    v->src_offset += first * cs[d];
    v->src_stride[out->ndim] = step * cs[d];
    out->shape[out->ndim++] = count;
  }
  return 0;
}

static int infer_reshape(const strata__params *p, const strata__meta *in, strata__meta *out)
{
  int64_t n = strata__meta_nelems(in), known = 1;
  int unknown = -1;
  if (p->nlist > STRATA_MAX_DIMS)
    return strata__fail(STRATA_EINVAL, "reshape to %d dimensions", p->nlist);
  for (int d = 0; d < p->nlist; d++) {
    if (p->list[d] == -1 && unknown < 0)
      unknown = d;
    else if (p->list[d] < 0)
      return strata__fail(STRATA_EINVAL, "reshape: invalid extent %lld", (long long)p->list[d]);
    else if (p->list[d] > 0 && known > INT64_MAX / p->list[d])
      return strata__fail(STRATA_EINVAL, "reshape: too many elements");
    else
      known *= p->list[d];
  }
  out->dtype = in->dtype;
  out->ndim = p->nlist;
  memcpy(out->shape, p->list, (size_t)p->nlist * sizeof *p->list);
  if (unknown >= 0) {
    if (known == 0 || n % known != 0)
      return strata__fail(STRATA_EINVAL, "reshape: cannot infer the -1 extent of %lld elements",
                          (long long)n);
    out->shape[unknown] = n / known;
    known = n;
  }
  if (known != n)
    return strata__fail(STRATA_EINVAL, "reshape: %lld elements into %lld", (long long)n,
                        (long long)known);
  return 0;
}

static int infer_concat(const strata__params *p, const strata__meta *in, int n, strata__meta *out)
{
  int64_t axis;
  if (in[0].ndim == 0)
    return strata__fail(STRATA_EINVAL, "concat: zero-dimensional arrays");
  int ret = normalize_axis(p->axis, in[0].ndim, &axis);
  if (ret)
    return ret;
  *out = in[0];
  for (int k = 1; k < n; k++) {
    if (in[k].dtype != in[0].dtype)
      return strata__fail(STRATA_ETYPE, "concat: dtypes %s and %s differ (use strata_astype)",
                          strata_dtype_name(in[0].dtype), strata_dtype_name(in[k].dtype));
    if (in[k].ndim != in[0].ndim)
      return strata__fail(STRATA_EINVAL, "concat: %d and %d dimensions", in[0].ndim, in[k].ndim);
    for (int d = 0; d < in[0].ndim; d++)
      if (d != axis && in[k].shape[d] != in[0].shape[d])
        return strata__fail(STRATA_EINVAL, "concat: extents differ on axis %d", d);
    out->shape[axis] += in[k].shape[axis];
  }
  return 0;
}

/* The permutation of a transpose node (reversal when no axes given). */
static int transpose_axes(const strata__params *p, int ndim, int64_t *perm)
{
  if (p->nlist == 0) {
    for (int d = 0; d < ndim; d++)
      perm[d] = ndim - 1 - d;
    return 0;
  }
  if (p->nlist != ndim)
    return strata__fail(STRATA_EINVAL, "transpose: %d axes for %d dimensions", p->nlist, ndim);
  int seen[STRATA_MAX_DIMS] = {0};
  for (int d = 0; d < ndim; d++) {
    int ret = normalize_axis(p->list[d], ndim, &perm[d]);
    if (ret)
      return ret;
    if (seen[perm[d]]++)
      return strata__fail(STRATA_EINVAL, "transpose: repeated axis %lld", (long long)p->list[d]);
  }
  return 0;
}

static int infer_broadcast(const strata__params *p, const strata__meta *in, strata__meta *out)
{
  if (p->nlist > STRATA_MAX_DIMS || p->nlist < in->ndim)
    return strata__fail(STRATA_EINVAL, "broadcast_to: %d dimensions from %d", p->nlist, in->ndim);
  out->dtype = in->dtype;
  out->ndim = p->nlist;
  for (int d = 0; d < p->nlist; d++) {
    int di = d - (p->nlist - in->ndim);
    if (p->list[d] < 0 || (di >= 0 && in->shape[di] != 1 && in->shape[di] != p->list[d]))
      return strata__fail(STRATA_EINVAL, "broadcast_to: extent %lld to %lld",
                          di >= 0 ? (long long)in->shape[di] : 1LL, (long long)p->list[d]);
    out->shape[d] = p->list[d];
  }
  return 0;
}

/* Which axes a reduce node reduces. */
static int reduced_axes(const strata__params *p, int ndim, int *reduced)
{
  memset(reduced, 0, STRATA_MAX_DIMS * sizeof *reduced);
  if (p->flag & STRATA__ALL_AXES) {
    for (int d = 0; d < ndim; d++)
      reduced[d] = 1;
    return 0;
  }
  for (int k = 0; k < p->nlist; k++) {
    int64_t a;
    int ret = normalize_axis(p->list[k], ndim, &a);
    if (ret)
      return ret;
    if (reduced[a]++)
      return strata__fail(STRATA_EINVAL, "reduce: repeated axis %lld", (long long)p->list[k]);
  }
  return 0;
}

static int infer_reduce(const strata__params *p, const strata__meta *in, strata__meta *out)
{
  int reduced[STRATA_MAX_DIMS];
  if (p->fn < STRATA_FN_SUM || p->fn > STRATA_FN_MEAN)
    return strata__fail(STRATA_EINVAL, "invalid reduction %d", p->fn);
  int ret = reduced_axes(p, in->ndim, reduced);
  if (ret)
    return ret;
  out->ndim = 0;
  for (int d = 0; d < in->ndim; d++) {
    if (reduced[d] && in->shape[d] == 0 && (p->fn == STRATA_FN_MIN || p->fn == STRATA_FN_MAX))
      return strata__fail(STRATA_EINVAL, "%s of an empty axis has no identity",
                          strata_fn_name(p->fn));
    if (!reduced[d] || (p->flag & STRATA__KEEPDIMS))
      out->shape[out->ndim++] = reduced[d] ? 1 : in->shape[d];
  }
  if (p->fn == STRATA_FN_MIN || p->fn == STRATA_FN_MAX || is_float(in->dtype))
    out->dtype = in->dtype;
  else
    out->dtype = p->fn == STRATA_FN_MEAN ? STRATA_FLOAT64 : STRATA_INT64;
  return 0;
}

/* Matrix product geometry: batch count, m, k, n and batch steps. */
static int matmul_geometry(const strata__meta *a, const strata__meta *b, strata__meta *out,
                           struct strata__matmul_args *g)
{
  if (a->ndim == 0 || b->ndim == 0)
    return strata__fail(STRATA_EINVAL, "matmul: zero-dimensional operand");
  if (a->dtype != b->dtype)
    return strata__fail(STRATA_ETYPE, "matmul: dtypes %s and %s differ (use strata_astype)",
                        strata_dtype_name(a->dtype), strata_dtype_name(b->dtype));
  int64_t m = a->ndim == 1 ? 1 : a->shape[a->ndim - 2], k = a->shape[a->ndim - 1];
  int64_t kb = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
  int64_t n = b->ndim == 1 ? 1 : b->shape[b->ndim - 1];
  if (k != kb)
    return strata__fail(STRATA_EINVAL, "matmul: inner extents %lld and %lld differ", (long long)k,
                        (long long)kb);
  int abatch = a->ndim > 2 ? a->ndim - 2 : 0, bbatch = b->ndim > 2 ? b->ndim - 2 : 0;
  const strata__meta *lead = abatch >= bbatch ? a : b;
  int nbatch = abatch >= bbatch ? abatch : bbatch;
  if (abatch && bbatch &&
      (abatch != bbatch || memcmp(a->shape, b->shape, (size_t)abatch * sizeof *a->shape) != 0))
    return strata__fail(STRATA_EINVAL, "matmul: batch dimensions must match or be absent");
  out->dtype = a->dtype;
  out->ndim = 0;
  g->batch = 1;
  for (int d = 0; d < nbatch; d++) {
    out->shape[out->ndim++] = lead->shape[d];
    g->batch *= lead->shape[d];
  }
  if (a->ndim > 1)
    out->shape[out->ndim++] = m;
  if (b->ndim > 1)
    out->shape[out->ndim++] = n;
  g->dtype = a->dtype;
  g->m = m;
  g->k = k;
  g->n = n;
  g->a_step = abatch ? m * k : 0;
  g->b_step = bbatch ? k * n : 0;
  return 0;
}

static int infer_take(const strata__params *p, const strata__meta *a, const strata__meta *idx,
                      strata__meta *out)
{
  int64_t axis;
  if (idx->dtype != STRATA_INT32 && idx->dtype != STRATA_INT64)
    return strata__fail(STRATA_ETYPE, "take: indices must be int32 or int64, not %s",
                        strata_dtype_name(idx->dtype));
  if (p->flag != STRATA_TAKE_WRAP && p->flag != STRATA_TAKE_CLIP)
    return strata__fail(STRATA_EINVAL, "take: invalid mode %d", p->flag);
  int ret = normalize_axis(p->axis, a->ndim, &axis);
  if (ret)
    return ret;
  if (a->ndim - 1 + idx->ndim > STRATA_MAX_DIMS)
    return strata__fail(STRATA_EINVAL, "take: more than %d dimensions", STRATA_MAX_DIMS);
  if (a->shape[axis] == 0 && strata__meta_nelems(idx) > 0)
    return strata__fail(STRATA_ERANGE, "take: indices into an empty axis");
  out->dtype = a->dtype;
  out->ndim = 0;
  for (int d = 0; d < a->ndim; d++) {
    if (d != axis) {
      out->shape[out->ndim++] = a->shape[d];
      continue;
    }
    for (int e = 0; e < idx->ndim; e++)
      out->shape[out->ndim++] = idx->shape[e];
  }
  return 0;
}

static int infer_fill(const strata__params *p, strata__meta *out)
{
  if ((unsigned)p->dtype >= STRATA_NDTYPES)
    return strata__fail(STRATA_ETYPE, "invalid dtype %d", p->dtype);
  out->dtype = (strata_dtype)p->dtype;
  if (!p->flag) {
    if (p->nlist < 0 || p->nlist > STRATA_MAX_DIMS)
      return strata__fail(STRATA_EINVAL, "full: %d dimensions", p->nlist);
    out->ndim = p->nlist;
    for (int d = 0; d < p->nlist; d++)
      if ((out->shape[d] = p->list[d]) < 0)
        return strata__fail(STRATA_EINVAL, "full: negative extent");
    return 0;
  }
  double count = ceil((p->stop - p->scalar) / p->step);
  if (p->step == 0 || !isfinite(count))
    return strata__fail(STRATA_EINVAL, "arange: invalid start, stop or step");
  if (count > (double)UINT32_MAX)
    return strata__fail(STRATA_EINVAL, "arange: too many elements");
  out->ndim = 1;
  out->shape[0] = count > 0 ? (int64_t)count : 0;
  return 0;
}

static int infer_op(const strata__node *nd, const strata__meta *in, strata__meta *out);

/* Results must fit a StarPU 1.3 vector (32-bit element count). */
static int check_size(const strata__node *nd, const strata__meta *m)
{
  uint64_t n = 1;
  for (int d = 0; d < m->ndim; d++) {
    if (m->shape[d] < 0)
      return 0;
    if (m->shape[d] > (int64_t)UINT32_MAX || (n *= (uint64_t)m->shape[d]) > UINT32_MAX)
      return strata__fail(STRATA_EINVAL, "%s: more than 2^32 elements", strata__op_name(nd));
  }
  return 0;
}

int strata__infer(const strata__node *nd, const strata__meta *in, strata__meta *out)
{
  int ret = infer_op(nd, in, out);
  return ret ? ret : check_size(nd, out);
}

static int infer_op(const strata__node *nd, const strata__meta *in, strata__meta *out)
{
  const strata__params *p = &nd->p;
  memset(out, 0, sizeof *out);
  int arity = strata__op_arity(nd);
  if ((arity >= 0 && nd->nin != arity) || (arity < 0 && nd->nin < 1))
    return strata__fail(STRATA_EINVAL, "%s: %d inputs", strata__op_name(nd), nd->nin);
  struct strata__view_args v;
  struct strata__matmul_args g;
  int64_t perm[STRATA_MAX_DIMS];
  int ret;
  switch (nd->op) {
  case STRATA__OP_EW: return infer_ew(p, in, nd->nin, out);
  case STRATA__OP_FILL: return infer_fill(p, out);
  case STRATA__OP_RESHAPE: return infer_reshape(p, in, out);
  case STRATA__OP_INDEX: return index_view(p, in, out, &v);
  case STRATA__OP_CONCAT: return infer_concat(p, in, nd->nin, out);
  case STRATA__OP_TRANSPOSE:
    if ((ret = transpose_axes(p, in->ndim, perm)))
      return ret;
    *out = *in;
    for (int d = 0; d < in->ndim; d++)
      out->shape[d] = in->shape[perm[d]];
    return 0;
  case STRATA__OP_BROADCAST: return infer_broadcast(p, in, out);
  case STRATA__OP_REDUCE: return infer_reduce(p, in, out);
  case STRATA__OP_MATMUL: return matmul_geometry(&in[0], &in[1], out, &g);
  case STRATA__OP_TRI:
    if (in->ndim < 2)
      return strata__fail(STRATA_EINVAL, "%s: needs at least 2 dimensions", strata__op_name(nd));
    *out = *in;
    return 0;
  case STRATA__OP_NONZERO:
    out->dtype = STRATA_INT64;
    out->ndim = 1;
    out->shape[0] = -1;
    return 0;
  case STRATA__OP_TAKE: return infer_take(p, &in[0], &in[1], out);
  default: return strata__fail(STRATA_EINVAL, "invalid operation %d", nd->op);
  }
}

/* ---- submission ---- */

int strata__meta_equal(const strata__meta *a, const strata__meta *b)
{
  if (a->dtype != b->dtype || a->ndim != b->ndim)
    return 0;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d])
      return 0;
  return 1;
}

void strata__broadcast_strides(const strata__meta *in, const strata__meta *out, int64_t *stride)
{
  int64_t cs[STRATA_MAX_DIMS];
  contiguous_strides(in, cs);
  for (int d = 0; d < out->ndim; d++) {
    int dk = d - (out->ndim - in->ndim);
    stride[d] = dk < 0 || in->shape[dk] == 1 ? 0 : cs[dk];
  }
}

void strata__ew_geometry(const strata__params *p, const strata__meta *in, int narrays,
                         const strata__meta *out, struct strata__ew_args *a)
{
  memset(a, 0, sizeof *a);
  a->fn = p->fn;
  a->nops = narrays + (p->scalar_at >= 0);
  a->scalar_at = p->scalar_at;
  a->scalar = p->scalar;
  a->ndim = out->ndim;
  a->out_dtype = out->dtype;
  memcpy(a->shape, out->shape, sizeof a->shape);
  strata_dtype ct = p->fn == STRATA__FN_COPY ? in[0].dtype : common_type(p, in, narrays);
  for (int k = 0; k < narrays; k++) {
    a->in_dtype[k] = in[k].dtype;
    strata__broadcast_strides(&in[k], out, a->stride[k]);
  }
  /* int64 arithmetic when no floating point is involved (astype: on the
   * source side) */
  a->exact_int = !is_float(ct) && (p->fn == STRATA__FN_COPY || !is_float(out->dtype));
}

static void view_dims(struct strata__view_args *v, const strata__meta *shape, size_t elem)
{
  v->ndim = shape->ndim;
  v->elem = (int32_t)elem;
  memcpy(v->shape, shape->shape, sizeof v->shape);
}

int strata__submit_copy(const strata__meta *m, starpu_data_handle_t src, starpu_data_handle_t dst)
{
  struct strata__view_args v;
  memset(&v, 0, sizeof v);
  strata__meta flat = {m->dtype, 1, {strata__meta_nelems(m)}};
  view_dims(&v, &flat, strata_dtype_size(m->dtype));
  v.src_stride[0] = v.dst_stride[0] = 1;
  return strata__view_submit(&v, src, dst, 0);
}

static int submit_concat(const strata__params *p, const strata__meta *in, int n,
                         const starpu_data_handle_t *h, const strata__meta *out,
                         starpu_data_handle_t oh)
{
  int64_t axis, cs[STRATA_MAX_DIMS], at = 0;
  normalize_axis(p->axis, out->ndim, &axis);
  contiguous_strides(out, cs);
  for (int k = 0; k < n; k++) {
    struct strata__view_args v;
    memset(&v, 0, sizeof v);
    view_dims(&v, &in[k], strata_dtype_size(out->dtype));
    contiguous_strides(&in[k], v.src_stride);
    memcpy(v.dst_stride, cs, sizeof cs);
    v.dst_offset = at * cs[axis];
    at += in[k].shape[axis];
    int ret = strata__view_submit(&v, h[k], oh, k > 0);
    if (ret)
      return ret;
  }
  return 0;
}

static int submit_reduce(const strata__params *p, const strata__meta *in, starpu_data_handle_t h,
                         const strata__meta *out, starpu_data_handle_t oh)
{
  struct strata__reduce_args a;
  int reduced[STRATA_MAX_DIMS];
  int64_t cs[STRATA_MAX_DIMS];
  memset(&a, 0, sizeof a);
  reduced_axes(p, in->ndim, reduced);
  contiguous_strides(in, cs);
  a.fn = p->fn;
  a.in_dtype = in->dtype;
  a.out_dtype = out->dtype;
  a.exact_int = !is_float(in->dtype) && p->fn != STRATA_FN_MEAN;
  for (int d = 0; d < in->ndim; d++) {
    if (reduced[d]) {
      a.red_shape[a.nred] = in->shape[d];
      a.red_stride[a.nred++] = cs[d];
    } else {
      a.keep_shape[a.nkeep] = in->shape[d];
      a.keep_stride[a.nkeep++] = cs[d];
    }
  }
  return strata__reduce_submit(&a, h, oh);
}

int strata__submit_node(const strata__node *nd, const strata__meta *in_meta,
                        const starpu_data_handle_t *in, const strata__meta *out_meta,
                        starpu_data_handle_t out)
{
  const strata__params *p = &nd->p;
  size_t elem = strata_dtype_size(out_meta->dtype);
  struct strata__view_args v;
  memset(&v, 0, sizeof v);
  strata__meta scratch;
  switch (nd->op) {
  case STRATA__OP_EW: {
    struct strata__ew_args a;
    strata__ew_geometry(p, in_meta, nd->nin, out_meta, &a);
    return strata__ew_submit(&a, in, out);
  }
  case STRATA__OP_FILL: {
    struct strata__affine_fill_args f;
    memset(&f, 0, sizeof f);
    f.dtype = out_meta->dtype;
    f.start = p->scalar;
    f.step = p->flag ? p->step : 0;
    f.n = strata__meta_nelems(out_meta);
    return strata__affine_fill_submit(&f, out);
  }
  case STRATA__OP_RESHAPE: return strata__submit_copy(out_meta, in[0], out);
  case STRATA__OP_INDEX:
    index_view(p, &in_meta[0], &scratch, &v);
    view_dims(&v, out_meta, elem);
    contiguous_strides(out_meta, v.dst_stride);
    return strata__view_submit(&v, in[0], out, 0);
  case STRATA__OP_TRANSPOSE:
  case STRATA__OP_BROADCAST: {
    int64_t cs[STRATA_MAX_DIMS], perm[STRATA_MAX_DIMS];
    contiguous_strides(&in_meta[0], cs);
    view_dims(&v, out_meta, elem);
    contiguous_strides(out_meta, v.dst_stride);
    if (nd->op == STRATA__OP_TRANSPOSE) {
      transpose_axes(p, in_meta[0].ndim, perm);
      for (int d = 0; d < out_meta->ndim; d++)
        v.src_stride[d] = cs[perm[d]];
    } else {
      for (int d = 0; d < out_meta->ndim; d++) {
        int di = d - (out_meta->ndim - in_meta[0].ndim);
        v.src_stride[d] = di < 0 || in_meta[0].shape[di] == 1 ? 0 : cs[di];
      }
    }
    return strata__view_submit(&v, in[0], out, 0);
  }
  case STRATA__OP_CONCAT: return submit_concat(p, in_meta, nd->nin, in, out_meta, out);
  case STRATA__OP_REDUCE: return submit_reduce(p, &in_meta[0], in[0], out_meta, out);
  case STRATA__OP_MATMUL: {
    struct strata__matmul_args g;
    memset(&g, 0, sizeof g);
    matmul_geometry(&in_meta[0], &in_meta[1], &scratch, &g);
    return strata__matmul_submit(&g, in[0], in[1], out);
  }
  case STRATA__OP_TRI: {
    struct strata__tri_args t;
    memset(&t, 0, sizeof t);
    int nd_ = out_meta->ndim;
    t.elem = (int32_t)elem;
    t.upper = p->flag;
    t.k = p->axis;
    t.rows = out_meta->shape[nd_ - 2];
    t.cols = out_meta->shape[nd_ - 1];
    t.batch = t.rows > 0 && t.cols > 0 ? strata__meta_nelems(out_meta) / (t.rows * t.cols) : 0;
    return strata__tri_submit(&t, in[0], out);
  }
  case STRATA__OP_TAKE: {
    struct strata__take_args t;
    int64_t axis;
    memset(&t, 0, sizeof t);
    normalize_axis(p->axis, in_meta[0].ndim, &axis);
    t.elem = (int32_t)elem;
    t.idx_dtype = in_meta[1].dtype;
    t.mode = p->flag;
    t.outer = t.inner = 1;
    for (int d = 0; d < in_meta[0].ndim; d++) {
      if (d < axis)
        t.outer *= in_meta[0].shape[d];
      else if (d > axis)
        t.inner *= in_meta[0].shape[d];
    }
    t.len = in_meta[0].shape[axis];
    t.nidx = strata__meta_nelems(&in_meta[1]);
    return strata__take_submit(&t, in[0], in[1], out);
  }
  default: return strata__fail(STRATA_EINVAL, "%s has no single task", strata__op_name(nd));
  }
}
