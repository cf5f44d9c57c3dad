/* Sharded execution of operations (include/strata/shard.h, docs/sharding.md).
 *
 * A plan, computed the same way on every rank, cuts the index range into
 * shards, projects every shard onto every tensor and groups the shards by
 * identical region. Each tensor then takes one of three paths:
 *   WHOLE      every shard's region is the whole tensor: the tasks use the
 *              array's handle (STARPU_REDUX for reduced outputs);
 *   PARTITION  one rank, regions contiguous in memory and pairwise
 *              disjoint: an asynchronous StarPU partition of the handle;
 *   HALO       otherwise: one buffer per (rank, region), gathered from or
 *              scattered (merged, for reductions) into the tensor by the
 *              region codelets, sent between ranks by StarPU-MPI.
 * The same plan feeds the cost model, so it prices exactly what runs. */
#include <stdlib.h>
#include <string.h>

#include <starpu_mpi.h>

#include <strata/starpu.h>

#include "codelets.h"
#include "internal/exchange.h"
#include "internal/runtime.h"
#include "merge.h"
#include "shard.h"
#include "shard_ops.h"

enum path { PATH_WHOLE, PATH_PARTITION, PATH_HALO };

struct tensor_plan {
  enum path path;
  int ngroups;
  strata_zrange *request; /* [ngroups] projected region of each group */
  strata_zrange *region;  /* [ngroups] cells held (clipped under CLIP) */
  int *group;             /* [shards] group of each shard */
};

struct plan {
  int64_t shards;
  int ranks;
  strata_zrange *index; /* [shards] */
  struct tensor_plan t[STRATA_SHARD_MAX_TENSORS];
};

static int rank_of(const struct plan *p, int64_t s) { return (int)(s * p->ranks / p->shards); }

static int64_t cells(const strata_zrange *r) { return strata_zrange_size(r); }

static size_t elem_of(const strata_shard_tensor *t)
{
  return strata_dtype_size((strata_dtype)strata_array_dtype(t->array));
}

static void whole_range(const strata_array *a, strata_zrange *r)
{
  int64_t shape[STRATA_MAX_DIMS], zero[STRATA_MAX_DIMS] = {0};
  strata_array_shape(a, shape);
  strata_zrange_init(r, strata_array_ndim(a), zero, shape);
}

static int same_range(const strata_zrange *a, const strata_zrange *b)
{
  if (a->ndim != b->ndim)
    return 0;
  for (int d = 0; d < a->ndim; d++)
    if (a->start[d] != b->start[d] || a->end[d] != b->end[d])
      return 0;
  return 1;
}

/* ---- checks ------------------------------------------------------------ */

int strata_zproj_stride(const strata_zproj *p, int dim, int64_t *stride)
{
  strata__clear_error();
  if (!p || !stride || dim < 0 || dim >= p->map.in_dims)
    return STRATA_EINVAL;
  for (int k = 0; k < p->map.out_dims; k++)
    stride[k] = p->map.matrix[k][dim];
  return 0;
}

int strata_zproj_sharing(const strata_zproj *p, int dim, int64_t *overlap)
{
  strata__clear_error();
  int64_t stride[STRATA_ZMAX_DIMS];
  if (strata_zproj_stride(p, dim, stride))
    return STRATA_EINVAL;
  int moves = 0, disjoint = 0;
  for (int k = 0; k < p->map.out_dims; k++) {
    int64_t step = stride[k] < 0 ? -stride[k] : stride[k];
    int64_t shared = step == 0 ? p->shape[k] : (p->shape[k] > step ? p->shape[k] - step : 0);
    moves |= step != 0;
    disjoint |= shared == 0;
    if (overlap)
      overlap[k] = shared;
  }
  if (!moves)
    return STRATA_ZSHARE_TOTAL;
  return disjoint ? STRATA_ZSHARE_NONE : STRATA_ZSHARE_PARTIAL;
}

static int check_tensor(const strata_shard_op *op, int i)
{
  const strata_shard_tensor *t = &op->tensor[i];
  if (!t->array)
    return strata__fail(STRATA_EINVAL, "sharded op %s: tensor %d has no array", op->name, i);
  for (int j = 0; j < i; j++)
    if (op->tensor[j].array == t->array)
      return strata__fail(STRATA_EINVAL, "sharded op %s: tensors %d and %d are the same array",
                          op->name, j, i);
  if (t->proj.map.in_dims != op->index.ndim || t->proj.map.out_dims != strata_array_ndim(t->array))
    return strata__fail(STRATA_EINVAL,
                        "sharded op %s: tensor %d: projection %d -> %d dims, index %d, array %d",
                        op->name, i, t->proj.map.in_dims, t->proj.map.out_dims, op->index.ndim,
                        strata_array_ndim(t->array));
  for (int k = 0; k < t->proj.map.out_dims; k++)
    if (t->proj.shape[k] < 1)
      return strata__fail(STRATA_EINVAL, "sharded op %s: tensor %d: empty region shape", op->name,
                          i);
  if (t->access < STRATA_SHARD_READ || t->access > STRATA_SHARD_REDUCE || t->policy < 0 ||
      t->policy > STRATA_OOB_PAD)
    return strata__fail(STRATA_EINVAL, "sharded op %s: tensor %d: bad access or policy", op->name,
                        i);
  if (t->access != STRATA_SHARD_READ && t->policy != STRATA_OOB_ERROR &&
      t->policy != STRATA_OOB_CLIP)
    return strata__fail(STRATA_EINVAL,
                        "sharded op %s: tensor %d: outputs take the ERROR or CLIP policy only",
                        op->name, i);
  if (t->access == STRATA_SHARD_REDUCE) {
    strata_dtype dtype = (strata_dtype)strata_array_dtype(t->array), result;
    if (t->op < 0 || t->op >= STRATA_NOPS)
      return strata__fail(STRATA_EINVAL, "sharded op %s: tensor %d: bad operator", op->name, i);
    if (strata_merge_result_dtype(t->op, dtype, &result) || result != dtype)
      return strata__fail(STRATA_ETYPE, "sharded op %s: tensor %d: %s does not keep %s", op->name,
                          i, strata_op_name(t->op), strata_dtype_name(dtype));
  }
  return 0;
}

int strata_shard_op_check(const strata_shard_op *op)
{
  strata__clear_error();
  if (!op || !op->name || !op->cpu || op->ntensors < 1 || op->ntensors > STRATA_SHARD_MAX_TENSORS ||
      op->arg_size > 4096 || (op->arg_size && !op->arg) || !(op->flops_per_point >= 0))
    return strata__fail(STRATA_EINVAL, "sharded op: missing name or kernel, or bad tensor count, "
                                       "argument or flops");
  if (op->index.ndim < 0 || op->index.ndim > STRATA_ZMAX_DIMS)
    return strata__fail(STRATA_EINVAL, "sharded op %s: bad index range", op->name);
  for (int d = 0; d < op->index.ndim; d++)
    if (op->index.start[d] > op->index.end[d])
      return strata__fail(STRATA_EINVAL, "sharded op %s: bad index range", op->name);
  for (int i = 0; i < op->ntensors; i++) {
    int ret = check_tensor(op, i);
    if (ret)
      return ret;
  }
  return 0;
}

static int check_sharding(const strata_shard_op *op, const strata_sharding *s)
{
  if (!s || s->ndim != op->index.ndim)
    return strata__fail(STRATA_EINVAL, "sharding of %s: rank differs from the index space's",
                        op->name);
  for (int d = 0; d < s->ndim; d++) {
    int64_t extent = op->index.end[d] - op->index.start[d];
    if (s->counts[d] < 1 || s->counts[d] > (extent > 1 ? extent : 1))
      return strata__fail(STRATA_EINVAL, "sharding of %s: %lld chunks of a dimension of %lld",
                          op->name, (long long)s->counts[d], (long long)extent);
  }
  return 0;
}

/* ---- the plan ------------------------------------------------------------ */

static void plan_free(struct plan *p)
{
  free(p->index);
  for (int t = 0; t < STRATA_SHARD_MAX_TENSORS; t++) {
    free(p->t[t].request);
    free(p->t[t].region);
    free(p->t[t].group);
  }
  memset(p, 0, sizeof *p);
}

/* Shard s's index range: near-equal chunks per dimension, row-major. */
static void shard_index(const strata_shard_op *op, const strata_sharding *s, int64_t k,
                        strata_zrange *out)
{
  *out = op->index;
  for (int d = s->ndim - 1; d >= 0; d--) {
    int64_t c = s->counts[d], i = k % c, extent = op->index.end[d] - op->index.start[d];
    k /= c;
    int64_t base = extent / c, extra = extent % c;
    int64_t lo = i * base + (i < extra ? i : extra);
    out->start[d] = op->index.start[d] + lo;
    out->end[d] = out->start[d] + base + (i < extra);
  }
}

/* Row-major offset of a region's first cell and 1 when its cells are one
 * contiguous run (ranges over trailing full dimensions). */
static int contiguous(const strata_zrange *r, const int64_t *shape, int64_t *offset)
{
  int64_t off = 0;
  for (int d = 0; d < r->ndim; d++)
    off = off * shape[d] + r->start[d];
  *offset = off;
  int d = r->ndim - 1;
  while (d > 0 && r->start[d] == 0 && r->end[d] == shape[d])
    d--;
  for (int e = d - 1; e >= 0; e--)
    if (r->end[e] - r->start[e] != 1)
      return 0;
  return 1;
}

struct run {
  int64_t offset, length;
  int group;
};

static int by_offset(const void *a, const void *b)
{
  const struct run *x = a, *y = b;
  return (x->offset > y->offset) - (x->offset < y->offset);
}

/* PARTITION when the groups' regions lie inside the tensor, are contiguous
 * and do not overlap; fills `runs` sorted by offset. */
static int can_partition(const strata_shard_tensor *t, const struct tensor_plan *tp,
                         struct run *runs)
{
  int64_t shape[STRATA_MAX_DIMS];
  strata_array_shape(t->array, shape);
  for (int g = 0; g < tp->ngroups; g++) {
    if (!same_range(&tp->request[g], &tp->region[g]) || cells(&tp->region[g]) == 0 ||
        !contiguous(&tp->region[g], shape, &runs[g].offset))
      return 0;
    runs[g].length = cells(&tp->region[g]);
    runs[g].group = g;
  }
  qsort(runs, (size_t)tp->ngroups, sizeof *runs, by_offset);
  for (int g = 1; g < tp->ngroups; g++)
    if (runs[g - 1].offset + runs[g - 1].length > runs[g].offset)
      return 0;
  return 1;
}

static int plan_tensor(const strata_shard_tensor *t, struct plan *p, struct tensor_plan *tp)
{
  int64_t shape[STRATA_MAX_DIMS];
  strata_array_shape(t->array, shape);
  tp->request = malloc((size_t)p->shards * sizeof *tp->request);
  tp->region = malloc((size_t)p->shards * sizeof *tp->region);
  tp->group = malloc((size_t)p->shards * sizeof *tp->group);
  if (!tp->request || !tp->region || !tp->group)
    return STRATA_ENOMEM;
  tp->ngroups = 0;
  for (int64_t s = 0; s < p->shards; s++) {
    strata_zrange request;
    strata_zproj_apply_range(&t->proj, &p->index[s], &request);
    int g = 0;
    while (g < tp->ngroups && !same_range(&tp->request[g], &request))
      g++;
    if (g == tp->ngroups) {
      int count;
      int ret = strata_zregion_resolve(&request, shape, t->policy, NULL, 0, &count, &tp->region[g]);
      if (ret == STRATA_ERANGE && count == 0 && cells(&request) > 0)
        return strata__fail(STRATA_ERANGE, "a shard's region of a tensor leaves it");
      tp->request[tp->ngroups++] = request;
    }
    tp->group[s] = g;
  }
  strata_zrange whole;
  whole_range(t->array, &whole);
  struct run *runs = malloc((size_t)tp->ngroups * sizeof *runs);
  if (!runs)
    return STRATA_ENOMEM;
  if (tp->ngroups == 1 && same_range(&tp->request[0], &whole))
    tp->path = PATH_WHOLE;
  else if (p->ranks == 1 && t->access != STRATA_SHARD_REDUCE && can_partition(t, tp, runs))
    tp->path = PATH_PARTITION;
  else
    tp->path = PATH_HALO;
  free(runs);
  return 0;
}

static int plan_build(const strata_shard_op *op, const strata_sharding *s, int ranks,
                      struct plan *p)
{
  memset(p, 0, sizeof *p);
  p->shards = 1;
  for (int d = 0; d < s->ndim; d++)
    p->shards *= s->counts[d];
  if (cells(&op->index) == 0)
    p->shards = 0;
  p->ranks = ranks;
  if (!p->shards)
    return 0;
  if (!(p->index = malloc((size_t)p->shards * sizeof *p->index)))
    return STRATA_ENOMEM;
  for (int64_t k = 0; k < p->shards; k++)
    shard_index(op, s, k, &p->index[k]);
  for (int t = 0; t < op->ntensors; t++) {
    int ret = plan_tensor(&op->tensor[t], p, &p->t[t]);
    if (ret) {
      plan_free(p);
      return ret;
    }
  }
  return 0;
}

/* ---- the cost model ---------------------------------------------------- */

static strata_shard_machine machine_defaults(const strata_shard_machine *m)
{
  strata_shard_machine d = m ? *m : (strata_shard_machine){0};
  if (d.workers <= 0) {
    int n = (int)starpu_worker_get_count();
    d.workers = n > 0 ? n : 1;
  }
  if (d.ranks <= 0) {
    int n = strata_size();
    d.ranks = n > 0 ? n : 1;
  }
  if (!(d.task_seconds > 0))
    d.task_seconds = 2e-5;
  if (!(d.bytes_per_second > 0))
    d.bytes_per_second = 1e10;
  if (!(d.copy_bytes_per_second > 0))
    d.copy_bytes_per_second = 2e9;
  if (!(d.flops_per_second > 0))
    d.flops_per_second = 5e10;
  if (d.max_shards <= 0)
    d.max_shards = 4 * d.workers * d.ranks;
  return d;
}

/* Buffers a (rank, group) pair needs: 1 when some shard of the rank uses
 * the group. Marks into `used` [ranks * ngroups]. */
static void mark_used(const struct plan *p, const struct tensor_plan *tp, char *used)
{
  memset(used, 0, (size_t)p->ranks * (size_t)tp->ngroups);
  for (int64_t s = 0; s < p->shards; s++)
    used[(size_t)rank_of(p, s) * (size_t)tp->ngroups + (size_t)tp->group[s]] = 1;
}

static int estimate(const strata_shard_op *op, const struct plan *p, const strata_shard_machine *m,
                    strata_shard_cost *c)
{
  memset(c, 0, sizeof *c);
  c->shards = p->shards;
  if (!p->shards)
    return 0;
  int64_t copy_tasks = 0;
  for (int64_t s = 0; s < p->shards; s++) {
    int64_t bytes = 0;
    for (int t = 0; t < op->ntensors; t++)
      bytes += cells(&p->t[t].region[p->t[t].group[s]]) * (int64_t)elem_of(&op->tensor[t]);
    double flops = (double)cells(&p->index[s]) * op->flops_per_point;
    if (bytes > c->shard_bytes)
      c->shard_bytes = bytes;
    if (flops > c->shard_flops)
      c->shard_flops = flops;
  }
  for (int t = 0; t < op->ntensors; t++) {
    const struct tensor_plan *tp = &p->t[t];
    char *used = malloc((size_t)p->ranks * (size_t)tp->ngroups);
    if (!used)
      return STRATA_ENOMEM;
    mark_used(p, tp, used);
    size_t elem = elem_of(&op->tensor[t]);
    for (int r = 0; r < p->ranks; r++)
      for (int g = 0; g < tp->ngroups; g++) {
        if (!used[(size_t)r * (size_t)tp->ngroups + (size_t)g])
          continue;
        int64_t bytes = cells(&tp->region[g]) * (int64_t)elem;
        int moved = tp->path == PATH_HALO || (tp->path == PATH_WHOLE && r != 0);
        if (tp->path == PATH_WHOLE && op->tensor[t].access == STRATA_SHARD_REDUCE)
          moved = 1; /* StarPU merges the per-worker partial copies */
        c->copy_bytes += moved ? bytes * (1 + (r != 0)) : 0;
        copy_tasks += moved;
      }
    free(used);
  }
  int64_t slots = (int64_t)m->workers * m->ranks;
  int64_t waves = (p->shards + slots - 1) / slots;
  double shard = m->task_seconds + (double)c->shard_bytes / m->bytes_per_second +
                 c->shard_flops / m->flops_per_second;
  c->seconds = (double)waves * shard + ((double)c->copy_bytes / m->copy_bytes_per_second +
                                        (double)copy_tasks * m->task_seconds) /
                                           m->workers;
  return 0;
}

int strata_shard_estimate(const strata_shard_op *op, const strata_sharding *sharding,
                          const strata_shard_machine *machine, strata_shard_cost *cost)
{
  strata__clear_error();
  int ret = strata_shard_op_check(op);
  if (ret || (ret = check_sharding(op, sharding)))
    return ret;
  if (!cost)
    return STRATA_EINVAL;
  strata_shard_machine m = machine_defaults(machine);
  struct plan p;
  if ((ret = plan_build(op, sharding, m.ranks, &p)))
    return ret;
  ret = estimate(op, &p, &m, cost);
  plan_free(&p);
  return ret;
}

struct search {
  const strata_shard_op *op;
  const strata_shard_machine *m;
  strata_sharding trial, best;
  strata_shard_cost best_cost;
  int found, err;
};

static void search_from(struct search *s, int d, int64_t shards)
{
  if (s->err)
    return;
  if (d == s->trial.ndim) {
    struct plan p;
    strata_shard_cost c;
    if ((s->err = plan_build(s->op, &s->trial, s->m->ranks, &p)))
      return;
    s->err = estimate(s->op, &p, s->m, &c);
    plan_free(&p);
    if (!s->err && (!s->found || c.seconds < s->best_cost.seconds * (1 - 1e-9))) {
      s->best = s->trial;
      s->best_cost = c;
      s->found = 1;
    }
    return;
  }
  int64_t extent = s->op->index.end[d] - s->op->index.start[d];
  for (int64_t c = 1; c <= extent || c == 1; c++) {
    if (shards * c > s->m->max_shards && c > 1)
      break;
    s->trial.counts[d] = c;
    search_from(s, d + 1, shards * c);
  }
}

int strata_shard_choose(const strata_shard_op *op, const strata_shard_machine *machine,
                        strata_sharding *sharding, strata_shard_cost *cost)
{
  strata__clear_error();
  int ret = strata_shard_op_check(op);
  if (ret)
    return ret;
  if (!sharding)
    return STRATA_EINVAL;
  strata_shard_machine m = machine_defaults(machine);
  struct search s = {.op = op, .m = &m};
  s.trial.ndim = op->index.ndim;
  search_from(&s, 0, 1);
  if (s.err)
    return s.err;
  *sharding = s.best;
  if (cost)
    *cost = s.best_cost;
  return 0;
}

/* ---- the launch -------------------------------------------------------- */

struct launch {
  const strata_shard_op *op;
  struct plan p;
  int me, root;
  strata__tags tags;           /* the launch's StarPU-MPI tags */
  int64_t messages;            /* so far: the next one's tag, same everywhere */
  starpu_data_handle_t *temps; /* buffers to unregister at the end */
  int ntemps, cap_temps;
  starpu_data_handle_t *buf[STRATA_SHARD_MAX_TENSORS]; /* [ranks * ngroups] local buffers */
  starpu_data_handle_t *children[STRATA_SHARD_MAX_TENSORS];
  int nchildren[STRATA_SHARD_MAX_TENSORS];
};

static starpu_data_handle_t *slot(struct launch *l, int t, int r, int g)
{
  return &l->buf[t][(size_t)r * (size_t)l->p.t[t].ngroups + (size_t)g];
}

static int temp(struct launch *l, int64_t n, size_t elem, starpu_data_handle_t *h)
{
  if (l->ntemps == l->cap_temps) {
    int cap = l->cap_temps ? 2 * l->cap_temps : 16;
    starpu_data_handle_t *t = realloc(l->temps, (size_t)cap * sizeof *t);
    if (!t)
      return STRATA_ENOMEM;
    l->temps = t;
    l->cap_temps = cap;
  }
  /* A region clipped to nothing still gets a one-element buffer. */
  starpu_vector_data_register(h, -1, 0, (uint32_t)(n > 0 ? n : 1), elem);
  l->temps[l->ntemps++] = *h;
  return 0;
}

static int fill_bytes(strata_dtype dtype, double v, unsigned char *out)
{
  switch (dtype) {
  case STRATA_BOOL:
  case STRATA_UINT8: *out = (uint8_t)v; return 0;
  case STRATA_INT8: *(int8_t *)(void *)out = (int8_t)v; return 0;
  case STRATA_INT32: {
    int32_t x = (int32_t)v;
    memcpy(out, &x, sizeof x);
    return 0;
  }
  case STRATA_INT64: {
    int64_t x = (int64_t)v;
    memcpy(out, &x, sizeof x);
    return 0;
  }
  case STRATA_FLOAT32: {
    float x = (float)v;
    memcpy(out, &x, sizeof x);
    return 0;
  }
  case STRATA_FLOAT64: memcpy(out, &v, sizeof v); return 0;
  default: return STRATA_EINVAL;
  }
}

/* The region move of group g of tensor t (pieces from the policy). */
static int make_move(const struct launch *l, int t, int g, int merge,
                     struct strata__region_move **out)
{
  const strata_shard_tensor *tt = &l->op->tensor[t];
  const struct tensor_plan *tp = &l->p.t[t];
  int64_t shape[STRATA_MAX_DIMS];
  strata_array_shape(tt->array, shape);
  int count = 0;
  strata_zrange eff;
  strata_zregion_resolve(&tp->request[g], shape, tt->policy, NULL, 0, &count, &eff);
  strata_zpiece *pieces = malloc((size_t)(count ? count : 1) * sizeof *pieces);
  struct strata__region_move *m =
      calloc(1, sizeof *m + (size_t)count * sizeof(struct strata__region_piece));
  int ret = pieces && m ? 0 : STRATA_ENOMEM;
  if (!ret)
    ret = strata_zregion_resolve(&tp->request[g], shape, tt->policy, pieces, count, &count, &eff);
  if (!ret) {
    strata_dtype dtype = (strata_dtype)strata_array_dtype(tt->array);
    m->ndim = eff.ndim;
    m->pad = tt->policy == STRATA_OOB_PAD;
    m->merge = merge;
    m->npieces = count;
    m->elem = elem_of(tt);
    m->op = tt->op;
    m->dtype = dtype;
    fill_bytes(dtype, tt->fill, m->fill);
    for (int d = 0; d < eff.ndim; d++) {
      m->tensor_shape[d] = shape[d];
      m->buffer_shape[d] = eff.end[d] - eff.start[d];
    }
    for (int k = 0; k < count; k++)
      for (int d = 0; d < eff.ndim; d++) {
        m->piece[k].tensor_start[d] = pieces[k].source.start[d];
        m->piece[k].buffer_start[d] = pieces[k].dest[d];
        m->piece[k].extent[d] = pieces[k].source.end[d] - pieces[k].source.start[d];
      }
  }
  free(pieces);
  if (ret)
    free(m);
  else
    *out = m;
  return ret;
}

static int move_submit(struct launch *l, int t, int g, int scatter, starpu_data_handle_t buffer)
{
  struct strata__region_move *m;
  int merge = scatter && l->op->tensor[t].access == STRATA_SHARD_REDUCE;
  int ret = make_move(l, t, g, merge, &m);
  if (ret)
    return ret;
  starpu_data_handle_t h = strata_array_handle(l->op->tensor[t].array);
  ret = scatter ? strata__region_scatter_submit(h, buffer, m)
                : strata__region_gather_submit(h, buffer, m);
  free(m);
  return ret;
}

static int send_or_recv(struct launch *l, int from, int to, starpu_data_handle_t h)
{
  int64_t tag;
  int ret = strata__tag(&l->tags, l->messages++, &tag);
  return ret ? ret : strata__transfer(strata_comm(), tag, from, to, h);
}

static int partition(struct launch *l, int t)
{
  const struct tensor_plan *tp = &l->p.t[t];
  strata_array *a = l->op->tensor[t].array;
  struct run *runs = malloc((size_t)tp->ngroups * sizeof *runs);
  long *lengths = malloc((size_t)(2 * tp->ngroups + 1) * sizeof *lengths);
  int *child_of = malloc((size_t)tp->ngroups * sizeof *child_of);
  l->children[t] = malloc((size_t)(2 * tp->ngroups + 1) * sizeof *l->children[t]);
  int ret = runs && lengths && child_of && l->children[t] ? 0 : STRATA_ENOMEM;
  if (!ret) {
    can_partition(&l->op->tensor[t], tp, runs);
    /* Gaps between the regions become children no task uses. */
    int n = 0;
    int64_t at = 0;
    for (int k = 0; k < tp->ngroups; k++) {
      if (runs[k].offset > at)
        lengths[n++] = (long)(runs[k].offset - at);
      child_of[runs[k].group] = n;
      lengths[n++] = (long)runs[k].length;
      at = runs[k].offset + runs[k].length;
    }
    if (at < strata_array_nelems(a))
      lengths[n++] = (long)(strata_array_nelems(a) - at);
    struct starpu_data_filter f = {.filter_func = starpu_vector_filter_list_long,
                                   .nchildren = (unsigned)n,
                                   .filter_arg_ptr = lengths};
    starpu_data_handle_t parent = strata_array_handle(a);
    starpu_data_partition_plan(parent, &f, l->children[t]);
    starpu_data_partition_submit(parent, (unsigned)n, l->children[t]);
    l->nchildren[t] = n;
    for (int g = 0; g < tp->ngroups; g++)
      *slot(l, t, 0, g) = l->children[t][child_of[g]];
  }
  free(runs);
  free(lengths);
  free(child_of);
  return ret;
}

/* Buffers of tensor t before the kernels: inputs in place, outputs ready. */
static int prepare(struct launch *l, int t)
{
  const strata_shard_tensor *tt = &l->op->tensor[t];
  const struct tensor_plan *tp = &l->p.t[t];
  int R = l->p.ranks, G = tp->ngroups, ret = 0;
  size_t elem = elem_of(tt);
  char *used = malloc((size_t)R * (size_t)G);
  l->buf[t] = calloc((size_t)R * (size_t)G, sizeof *l->buf[t]);
  if (!used || !l->buf[t]) {
    free(used);
    return STRATA_ENOMEM;
  }
  mark_used(&l->p, tp, used);
  if (tp->path == PATH_PARTITION) {
    free(used);
    return partition(l, t);
  }
  starpu_data_handle_t whole = strata_array_handle(tt->array);
  if (tp->path == PATH_WHOLE && tt->access == STRATA_SHARD_REDUCE && l->me == l->root)
    ret = strata__array_set_redux(tt->array, tt->op);
  for (int g = 0; g < G && !ret; g++) {
    int64_t n = cells(&tp->region[g]);
    int any = 0;
    for (int r = 0; r < R; r++)
      any |= used[(size_t)r * (size_t)G + (size_t)g];
    if (tt->access == STRATA_SHARD_READ) {
      /* The root holds the group's buffer, the ranks that use it get copies. */
      if (!any)
        continue;
      starpu_data_handle_t *at_root = slot(l, t, l->root, g);
      if (l->me == l->root) {
        if (tp->path == PATH_WHOLE)
          *at_root = whole;
        else if (!(ret = temp(l, n, elem, at_root)))
          ret = move_submit(l, t, g, 0, *at_root);
      }
      for (int r = 0; r < R && !ret; r++) {
        if (r == l->root || !used[(size_t)r * (size_t)G + (size_t)g])
          continue;
        starpu_data_handle_t *h = slot(l, t, r, g);
        if (l->me == r)
          ret = temp(l, n, elem, h);
        if (!ret)
          ret = send_or_recv(l, l->root, r, l->me == r ? *h : *at_root);
      }
      continue;
    }
    /* Outputs: a buffer on every rank whose shards write the group. */
    for (int r = 0; r < R && !ret; r++) {
      if (!used[(size_t)r * (size_t)G + (size_t)g] || l->me != r)
        continue;
      starpu_data_handle_t *h = slot(l, t, r, g);
      if (tp->path == PATH_WHOLE && r == l->root)
        *h = whole;
      else if (!(ret = temp(l, n, elem, h)) && tt->access == STRATA_SHARD_REDUCE) {
        strata__merge_set_redux(*h, tt->op, (strata_dtype)strata_array_dtype(tt->array));
        ret = strata__fill_identity_submit(*h, tt->op, (strata_dtype)strata_array_dtype(tt->array));
      }
    }
  }
  free(used);
  return ret;
}

/* Outputs of tensor t after the kernels: buffers back into the tensor. */
static int finish(struct launch *l, int t)
{
  const strata_shard_tensor *tt = &l->op->tensor[t];
  const struct tensor_plan *tp = &l->p.t[t];
  if (tp->path == PATH_PARTITION) {
    if (!l->nchildren[t])
      return 0; /* the partition was never made */
    starpu_data_handle_t parent = strata_array_handle(tt->array);
    starpu_data_unpartition_submit(parent, (unsigned)l->nchildren[t], l->children[t], -1);
    strata__partition_clean_submit(parent, (unsigned)l->nchildren[t], l->children[t]);
    return 0;
  }
  if (tt->access == STRATA_SHARD_READ)
    return 0;
  int R = l->p.ranks, G = tp->ngroups, ret = 0;
  char *used = malloc((size_t)R * (size_t)G);
  if (!used)
    return STRATA_ENOMEM;
  mark_used(&l->p, tp, used);
  for (int r = 0; r < R && !ret; r++)
    for (int g = 0; g < G && !ret; g++) {
      if (!used[(size_t)r * (size_t)G + (size_t)g] || (tp->path == PATH_WHOLE && r == l->root))
        continue;
      starpu_data_handle_t h = *slot(l, t, r, g), incoming = NULL;
      if (r != l->root) {
        if (l->me == l->root)
          ret = temp(l, cells(&tp->region[g]), elem_of(tt), &incoming);
        if (!ret)
          ret = send_or_recv(l, r, l->root, l->me == r ? h : incoming);
        h = incoming;
      }
      if (!ret && l->me == l->root)
        ret = move_submit(l, t, g, 1, h);
    }
  free(used);
  return ret;
}

static int submit_shard(struct launch *l, int64_t s)
{
  const strata_shard_op *op = l->op;
  size_t size = sizeof(struct strata__shard_call) + op->arg_size;
  struct strata__shard_call *call = calloc(1, size);
  if (!call)
    return STRATA_ENOMEM;
  call->cpu = op->cpu;
  call->cuda = op->cuda;
  call->id = starpu_hash_crc32c_string(op->name, 0);
  call->shard.index = l->p.index[s];
  call->shard.ntensors = op->ntensors;
  call->arg_size = op->arg_size;
  if (op->arg_size)
    memcpy(call->arg, op->arg, op->arg_size);
  starpu_data_handle_t h[STRATA_SHARD_MAX_TENSORS];
  enum starpu_data_access_mode modes[STRATA_SHARD_MAX_TENSORS];
  for (int t = 0; t < op->ntensors; t++) {
    const struct tensor_plan *tp = &l->p.t[t];
    int g = tp->group[s];
    call->shard.region[t] = tp->region[g]; /* the whole range on the WHOLE path */
    h[t] = *slot(l, t, tp->path == PATH_PARTITION ? 0 : l->me, g);
    modes[t] = op->tensor[t].access == STRATA_SHARD_READ    ? STARPU_R
               : op->tensor[t].access == STRATA_SHARD_WRITE ? STARPU_W
                                                            : STARPU_REDUX;
  }
  int ret = strata__shard_submit(call, size, h, modes);
  free(call);
  return ret;
}

/* Everything ranks must agree on, folded into one value. */
static int64_t op_digest(const strata_shard_op *op, const strata_sharding *s, int root)
{
  uint32_t h = starpu_hash_crc32c_be_n(&op->index, sizeof op->index, (uint32_t)root);
  h = starpu_hash_crc32c_be_n(s, sizeof *s, h);
  h = starpu_hash_crc32c_be((uint32_t)op->arg_size, h);
  for (int t = 0; t < op->ntensors; t++) {
    const strata_shard_tensor *tt = &op->tensor[t];
    int64_t shape[STRATA_MAX_DIMS] = {0};
    strata_array_shape(tt->array, shape);
    h = starpu_hash_crc32c_be_n(shape, sizeof shape, h);
    h = starpu_hash_crc32c_be_n(&tt->proj, sizeof tt->proj, h);
    int32_t kind[4] = {strata_array_dtype(tt->array), (int)tt->access, (int)tt->op,
                       (int)tt->policy};
    h = starpu_hash_crc32c_be_n(kind, sizeof kind, h);
  }
  return h;
}

int strata_launch_sharded(const strata_shard_op *op, const strata_sharding *sharding, int root)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  int ranks = strata_size();
  strata_sharding chosen = {0};
  int local = strata_shard_op_check(op);
  if (!local && !sharding)
    local = strata_shard_choose(op, NULL, &chosen, NULL);
  if (!local && sharding)
    chosen = *sharding;
  if (!local)
    local = check_sharding(op, &chosen);
  if (!local && (root < 0 || root >= ranks))
    local = strata__fail(STRATA_EINVAL, "sharded launch: root %d of %d ranks", root, ranks);
  for (int t = 0; !local && t < op->ntensors; t++)
    if (strata_array_handle(op->tensor[t].array) == NULL)
      local = STRATA_EINVAL;
  struct launch l = {.op = op, .root = root, .me = strata_rank()};
  if (!local)
    local = plan_build(op, &chosen, ranks, &l.p);
  int64_t agreed[1] = {local ? 0 : op_digest(op, &chosen, root)};
  int64_t seq = strata__next_collective();
  if ((ret = strata__agree(local, agreed, 1))) {
    if (!local)
      plan_free(&l.p);
    return ret;
  }
  if ((ret = strata__tags_of_call(seq, &l.tags))) {
    plan_free(&l.p);
    return ret;
  }
  for (int t = 0; t < op->ntensors && !ret && l.p.shards; t++)
    ret = prepare(&l, t);
  for (int64_t s = 0; s < l.p.shards && !ret; s++)
    if (rank_of(&l.p, s) == l.me)
      ret = submit_shard(&l, s);
  for (int t = 0; t < op->ntensors && l.p.shards; t++) {
    int r = l.buf[t] ? finish(&l, t) : 0;
    ret = ret ? ret : r;
    free(l.buf[t]);
    free(l.children[t]);
  }
  for (int i = 0; i < l.ntemps; i++)
    starpu_data_unregister_submit(l.temps[i]);
  free(l.temps);
  plan_free(&l.p);
  return ret;
}
