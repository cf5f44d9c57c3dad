/* Contexts, recording and lazy arrays. Every operation goes through
 * apply(): inference first (errors leave nothing behind), then either a
 * recorded node and a lazy result, or an eager run of that one node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"

static int destroy_live(void *ctx) { return strata_context_destroy(ctx); }

/* Every live context (contexts are created and destroyed by the
 * application's thread, like the arrays they record). */
static strata_context *contexts;

int strata_context_create(strata_context **ctx)
{
  strata__clear_error();
  if (!ctx)
    return STRATA_EINVAL;
  *ctx = calloc(1, sizeof **ctx);
  if (!*ctx)
    return STRATA_ENOMEM;
  strata__live_add(&strata__objects, &(*ctx)->live, "context", *ctx, destroy_live);
  (*ctx)->next = contexts;
  contexts = *ctx;
  return 0;
}

int strata_context_destroy(strata_context *ctx)
{
  if (!ctx)
    return 0;
  int ret = strata_graph_clear(ctx);
  if (ret)
    return ret;
  strata__live_remove(&ctx->live);
  for (strata_context **c = &contexts; *c; c = &(*c)->next)
    if (*c == ctx) {
      *c = ctx->next;
      break;
    }
  free(ctx->nodes);
  free(ctx->values);
  free(ctx);
  return 0;
}

int strata_deferred_begin(strata_context *ctx, int enable)
{
  strata__clear_error();
  if (!ctx || (enable != 0 && enable != 1))
    return STRATA_EINVAL;
  if (ctx->depth == STRATA__MAX_SCOPES)
    return strata__fail(STRATA_ESTATE, "more than %d nested recording scopes", STRATA__MAX_SCOPES);
  ctx->saved[ctx->depth++] = (unsigned char)ctx->recording;
  ctx->recording = enable;
  return 0;
}

int strata_deferred_end(strata_context *ctx)
{
  strata__clear_error();
  if (!ctx)
    return STRATA_EINVAL;
  if (ctx->depth == 0)
    return strata__fail(STRATA_ESTATE, "strata_deferred_end without strata_deferred_begin");
  ctx->recording = ctx->saved[--ctx->depth];
  return 0;
}

int strata_deferred_active(const strata_context *ctx)
{
  return ctx ? ctx->recording : STRATA_EINVAL;
}

int strata_is_deferred(const strata_array *a)
{
  return a ? a->handle == NULL && a->realize != NULL : STRATA_EINVAL;
}

/* ---- lazy computation ---- */

static const strata__meta *meta_of(const strata_context *ctx, int i) { return &ctx->nodes[i].m; }

/* The nodes a realization computes (sink >= 0) as a compiled graph: nodes
 * whose values exist and are read become its inputs, attached ones its
 * outputs, so that the intermediates the application dropped fuse into
 * their readers' kernels and small ones share their readers' task. Runs
 * it; NOT_COMPILED when it cannot be compiled (run node by node then). */
enum { NOT_COMPILED = 1 };

static int run_compiled(const strata_context *ctx, const int *sink, strata__slot *slot,
                        strata_array **target)
{
  int n = ctx->n, m = 0, nin = 0, nout = 0, ret = 0;
  int *idx = malloc(((size_t)n + 1) * sizeof *idx), *read = calloc((size_t)n + 1, sizeof *read);
  if (!idx || !read) {
    free(idx);
    free(read);
    return STRATA_ENOMEM;
  }
  for (int i = 0; i < n; i++)
    for (int k = 0; sink[i] >= 0 && k < ctx->nodes[i].nin; k++)
      read[ctx->nodes[i].in[k]] = 1;
  for (int i = 0; i < n; i++) {
    idx[i] = sink[i] >= 0 || read[i] ? m++ : -1;
    nin += sink[i] < 0 && read[i];
    nout += sink[i] == STRATA__SINK_ATTACH;
  }
  strata_graph *g = strata__graph_alloc(m, nin, nout);
  int *gsink = malloc(((size_t)m + 1) * sizeof *gsink);
  strata__slot *gslot = calloc((size_t)m + 1, sizeof *gslot);
  strata_array **gtarget = calloc((size_t)m + 1, sizeof *gtarget);
  ret = g && gsink && gslot && gtarget ? 0 : STRATA_ENOMEM;
  for (int i = 0, in = 0, out = 0; !ret && i < n; i++) {
    int k = idx[i];
    if (k < 0)
      continue;
    strata__node *nd = &g->nodes[k];
    char name[32];
    snprintf(name, sizeof name, "n%d", i);
    if (sink[i] < 0) { /* a value that exists */
      *nd = (strata__node){.op = STRATA__OP_INPUT, .m = slot[i].m};
      nd->p.scalar_at = -1;
      g->inputs[in++] = k;
    } else {
      *nd = ctx->nodes[i];
      if ((nd->in = malloc(((size_t)nd->nin + 1) * sizeof *nd->in)))
        for (int j = 0; j < nd->nin; j++)
          nd->in[j] = idx[ctx->nodes[i].in[j]];
    }
    nd->name = strdup(name);
    if ((sink[i] >= 0 && !nd->in) || !nd->name)
      ret = STRATA_ENOMEM;
    else if (sink[i] == STRATA__SINK_ATTACH && !(g->output_names[out] = strdup(name)))
      ret = STRATA_ENOMEM;
    else if (sink[i] == STRATA__SINK_ATTACH)
      g->outputs[out++] = k;
  }
  if (!ret && strata_graph_compile(g) != 0) {
    strata__clear_error();
    ret = NOT_COMPILED;
  }
  for (int i = 0; !ret && i < n; i++) {
    int k = idx[i];
    if (k < 0)
      continue;
    gslot[k] = slot[i];
    gtarget[k] = target[i];
    gsink[k] = sink[i] < 0 || sink[i] == STRATA__SINK_ATTACH ? sink[i]
               : g->mem[k] == STRATA__MEM_VIRTUAL            ? STRATA__SINK_VIRTUAL
                                                             : STRATA__SINK_TEMP;
  }
  if (!ret)
    ret = strata__exec_run(g->nodes, m, gsink, gslot, gtarget, g);
  for (int i = 0; !ret && i < n; i++)
    if (idx[i] >= 0)
      slot[i].m = gslot[idx[i]].m; /* data-dependent shapes are known now */
  strata_graph_destroy(g);
  free(idx);
  free(read);
  free(gsink);
  free(gslot);
  free(gtarget);
  return ret;
}

/* Compute the lazy arrays `want` of ctx (each the result of its node): run
 * the nodes they need whose values are not available, keeping the values
 * of arrays the application holds, dropping the others after use. */
static int realize_set(strata_context *ctx, strata_array *const *want, int nwant)
{
  int n = ctx->n, ret = STRATA_ENOMEM;
  int *sink = calloc((size_t)n + 1, sizeof *sink);
  strata__slot *slot = calloc((size_t)n + 1, sizeof *slot);
  strata_array **target = calloc((size_t)n + 1, sizeof *target);
  if (sink && slot && target) {
    for (int i = 0; i < n; i++)
      sink[i] = -1;
    for (int k = 0; k < nwant; k++)
      sink[want[k]->history_node] = STRATA__SINK_ATTACH;
    for (int i = n - 1; i >= 0; i--) {
      strata_array *v = ctx->values[i];
      if (sink[i] < 0) {
        slot[i].m = *meta_of(ctx, i);
        slot[i].h = v->handle;
        continue;
      }
      if (sink[i] != STRATA__SINK_ATTACH)
        sink[i] = v->user_gone ? STRATA__SINK_TEMP : STRATA__SINK_ATTACH;
      if (sink[i] == STRATA__SINK_ATTACH)
        target[i] = v;
      for (int k = 0; k < ctx->nodes[i].nin; k++) {
        int j = ctx->nodes[i].in[k];
        if (sink[j] < 0 && !ctx->values[j]->handle)
          sink[j] = STRATA__SINK_TEMP; /* refined when j is visited */
      }
    }
    ret = run_compiled(ctx, sink, slot, target);
    if (ret == NOT_COMPILED)
      ret = strata__exec_run(ctx->nodes, n, sink, slot, target, NULL);
    for (int i = 0; ret == 0 && i < n; i++)
      if (sink[i] == STRATA__SINK_ATTACH)
        ctx->nodes[i].m = slot[i].m; /* data-dependent shapes are known now */
  }
  free(sink);
  free(slot);
  free(target);
  return ret;
}

static int realize(strata_array *a) { return realize_set(a->history, &a, 1); }

int strata_compute(strata_array *const *arrays, int n)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (n < 0 || (n > 0 && !arrays))
    return STRATA_EINVAL;
  for (int i = 0; i < n; i++)
    if (!arrays[i])
      return STRATA_EINVAL;
  strata_array **group = malloc(((size_t)n + 1) * sizeof *group);
  if (!group)
    return STRATA_ENOMEM;
  /* one pass per context over all its requested arrays */
  for (int i = 0; i < n && !ret; i++) {
    if (!strata_is_deferred(arrays[i]))
      continue;
    int g = 0;
    for (int j = i; j < n; j++)
      if (arrays[j]->history == arrays[i]->history && strata_is_deferred(arrays[j]))
        group[g++] = arrays[j]; /* repeats are harmless */
    ret = realize_set(arrays[i]->history, group, g);
  }
  free(group);
  return ret;
}

/* Before `a` is written: in every context that reads it as an input, the
 * lazy results the application still holds that depend on it. */
static int realize_readers(strata_array *a)
{
  int ret = 0;
  for (strata_context *ctx = contexts; ctx && !ret; ctx = ctx->next) {
    char *depends = calloc((size_t)ctx->n + 1, 1);
    strata_array **want = malloc(((size_t)ctx->n + 1) * sizeof *want);
    if (!depends || !want)
      ret = STRATA_ENOMEM;
    int nwant = 0;
    for (int i = 0; !ret && i < ctx->n; i++) {
      const strata__node *nd = &ctx->nodes[i];
      depends[i] = nd->op == STRATA__OP_INPUT && ctx->values[i] == a;
      for (int k = 0; k < nd->nin && !depends[i]; k++)
        depends[i] = depends[nd->in[k]];
      if (depends[i] && nd->op != STRATA__OP_INPUT && !ctx->values[i]->user_gone &&
          strata_is_deferred(ctx->values[i]))
        want[nwant++] = ctx->values[i];
    }
    if (!ret && nwant)
      ret = realize_set(ctx, want, nwant);
    free(depends);
    free(want);
  }
  return ret;
}

int strata_graph_clear(strata_context *ctx)
{
  strata__clear_error();
  if (!ctx)
    return STRATA_EINVAL;
  if (ctx->n == 0)
    return 0;
  int ret = strata__check_ready();
  if (ret)
    return ret;
  strata_array **held = malloc((size_t)ctx->n * sizeof *held);
  if (!held)
    return STRATA_ENOMEM;
  int nheld = 0;
  for (int i = 0; i < ctx->n; i++)
    if (ctx->nodes[i].op != STRATA__OP_INPUT && !ctx->values[i]->user_gone &&
        strata_is_deferred(ctx->values[i]))
      held[nheld++] = ctx->values[i];
  ret = nheld ? realize_set(ctx, held, nheld) : 0;
  free(held);
  if (ret)
    return ret;
  for (int i = 0; i < ctx->n; i++) {
    strata_array *v = ctx->values[i];
    if (v->history == ctx) {
      v->history = NULL;
      v->realize = NULL;
    }
    if (ctx->nodes[i].op == STRATA__OP_INPUT)
      v->lazy_readers--;
    strata__array_unref(v);
    strata__node_free(&ctx->nodes[i]);
  }
  ctx->n = 0;
  return 0;
}

/* ---- recording ---- */

static int grow(strata_context *ctx)
{
  if (ctx->n < ctx->cap)
    return 0;
  int cap = ctx->cap ? 2 * ctx->cap : 64;
  strata__node *nodes = realloc(ctx->nodes, (size_t)cap * sizeof *nodes);
  if (nodes)
    ctx->nodes = nodes;
  strata_array **values = realloc(ctx->values, (size_t)cap * sizeof *values);
  if (values)
    ctx->values = values;
  if (!nodes || !values)
    return STRATA_ENOMEM;
  ctx->cap = cap;
  return 0;
}

/* The node of an array read while recording: its own node when ctx recorded
 * it, else an input node (one per array). */
static int node_of(strata_context *ctx, strata_array *a, int *index)
{
  if (a->history == ctx) {
    *index = (int)a->history_node;
    return 0;
  }
  for (int i = 0; i < ctx->n; i++)
    if (ctx->nodes[i].op == STRATA__OP_INPUT && ctx->values[i] == a) {
      *index = i;
      return 0;
    }
  int ret = grow(ctx);
  if (ret)
    return ret;
  strata__node *nd = &ctx->nodes[ctx->n];
  memset(nd, 0, sizeof *nd);
  nd->op = STRATA__OP_INPUT;
  nd->m.dtype = a->dtype;
  nd->m.ndim = a->ndim;
  memcpy(nd->m.shape, a->shape, sizeof nd->m.shape);
  strata__array_retain(a);
  a->lazy_readers++;
  a->before_write = realize_readers;
  ctx->values[ctx->n] = a;
  *index = ctx->n++;
  return 0;
}

static int record(strata_context *ctx, const strata__node *proto, strata_array *const *ins,
                  const strata__meta *m, strata_array **out)
{
  int *in = malloc(((size_t)proto->nin + 1) * sizeof *in);
  if (!in)
    return STRATA_ENOMEM;
  int ret = 0;
  for (int k = 0; k < proto->nin && !ret; k++)
    ret = node_of(ctx, ins[k], &in[k]);
  if (!ret)
    ret = grow(ctx);
  if (!ret)
    ret = strata__array_new_lazy(m->ndim, m->shape, m->dtype, realize, out);
  if (ret) {
    free(in);
    return ret;
  }
  strata__node *nd = &ctx->nodes[ctx->n];
  *nd = *proto;
  nd->in = in;
  nd->m = *m;
  nd->name = NULL;
  (*out)->history = ctx;
  (*out)->history_node = ctx->n;
  strata__array_retain(*out);
  ctx->values[ctx->n++] = *out;
  return 0;
}

/* Eager run of one node on existing arrays. */
static int run_now(const strata__node *proto, strata_array *const *ins, strata_array **out)
{
  int n = proto->nin + 1, ret = STRATA_ENOMEM;
  strata__node *nodes = calloc((size_t)n, sizeof *nodes);
  strata__slot *slot = calloc((size_t)n, sizeof *slot);
  int *sink = malloc((size_t)n * sizeof *sink), *in = malloc((size_t)n * sizeof *in);
  strata_array **target = calloc((size_t)n, sizeof *target);
  if (nodes && slot && sink && in && target) {
    for (int k = 0; k < proto->nin; k++) {
      sink[k] = -1;
      in[k] = k;
      slot[k].h = ins[k]->handle;
      slot[k].m.dtype = ins[k]->dtype;
      slot[k].m.ndim = ins[k]->ndim;
      memcpy(slot[k].m.shape, ins[k]->shape, sizeof slot[k].m.shape);
    }
    nodes[n - 1] = *proto;
    nodes[n - 1].in = in;
    sink[n - 1] = STRATA__SINK_NEW;
    ret = strata__exec_run(nodes, n, sink, slot, target, NULL);
    *out = target[n - 1];
  }
  free(nodes);
  free(slot);
  free(sink);
  free(in);
  free(target);
  return ret;
}

/* Record or run `proto` on `ins` into *out. */
static int apply(strata_context *ctx, const strata__node *proto, strata_array *const *ins,
                 strata_array **out)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!out)
    return STRATA_EINVAL;
  *out = NULL;
  if (proto->nin > 0 && !ins)
    return STRATA_EINVAL;
  int recording = ctx && ctx->recording;
  strata__meta *in_meta = malloc(((size_t)proto->nin + 1) * sizeof *in_meta);
  if (!in_meta)
    return STRATA_ENOMEM;
  for (int k = 0; k < proto->nin && !ret; k++) {
    strata_array *a = ins[k];
    if (!a) {
      ret = STRATA_EINVAL;
      break;
    }
    if (a->acquired)
      ret = strata__fail(STRATA_ESTATE, "input %d is acquired on the host", k);
    /* values are needed now outside recording, shapes always */
    else if (!recording || a->history != ctx || a->nelems < 0)
      ret = strata__array_ready(a);
    in_meta[k].dtype = a->dtype;
    in_meta[k].ndim = a->ndim;
    memcpy(in_meta[k].shape, a->shape, sizeof in_meta[k].shape);
  }
  strata__meta m;
  if (!ret)
    ret = strata__infer(proto, in_meta, &m);
  free(in_meta);
  if (ret)
    return ret;
  return recording ? record(ctx, proto, ins, &m, out) : run_now(proto, ins, out);
}

/* ---- the operations ---- */

static strata__node proto_of(int op, int nin)
{
  strata__node nd;
  memset(&nd, 0, sizeof nd);
  nd.op = op;
  nd.nin = nin;
  nd.p.scalar_at = -1;
  return nd;
}

static int set_list(strata__node *nd, int n, const int64_t *values)
{
  if (n < 0 || n > STRATA_MAX_DIMS || (n > 0 && !values))
    return STRATA_EINVAL;
  nd->p.nlist = n;
  if (n > 0)
    memcpy(nd->p.list, values, (size_t)n * sizeof *values);
  return 0;
}

static int set_axes(strata__node *nd, int n, const int *axes)
{
  if (n < 0 || n > STRATA_MAX_DIMS || (n > 0 && !axes))
    return STRATA_EINVAL;
  nd->p.nlist = n;
  for (int k = 0; k < n; k++)
    nd->p.list[k] = axes[k];
  return 0;
}

int strata_unary(strata_context *ctx, strata_fn fn, strata_array *a, strata_array **out)
{
  strata__clear_error();
  if (fn < STRATA_FN_NEG || fn > STRATA_FN_SQRT)
    return strata__fail(STRATA_EINVAL, "%s is not a unary function", strata_fn_name(fn));
  strata__node nd = proto_of(STRATA__OP_EW, 1);
  nd.p.fn = fn;
  return apply(ctx, &nd, &a, out);
}

int strata_binary(strata_context *ctx, strata_fn fn, strata_array *a, strata_array *b,
                  strata_array **out)
{
  strata__clear_error();
  if (fn < STRATA_FN_ADD || fn > STRATA_FN_GE)
    return strata__fail(STRATA_EINVAL, "%s is not a binary function", strata_fn_name(fn));
  strata__node nd = proto_of(STRATA__OP_EW, 2);
  nd.p.fn = fn;
  strata_array *ins[2] = {a, b};
  return apply(ctx, &nd, ins, out);
}

int strata_binary_scalar(strata_context *ctx, strata_fn fn, strata_array *a, strata_scalar s,
                         int scalar_first, strata_array **out)
{
  strata__clear_error();
  if (fn < STRATA_FN_ADD || fn > STRATA_FN_GE)
    return strata__fail(STRATA_EINVAL, "%s is not a binary function", strata_fn_name(fn));
  if (s.kind != STRATA_BOOL && s.kind != STRATA_INT64 && s.kind != STRATA_FLOAT64)
    return strata__fail(STRATA_EINVAL, "scalar kind must be bool, int64 or float64");
  strata__node nd = proto_of(STRATA__OP_EW, 1);
  nd.p.fn = fn;
  nd.p.scalar_at = scalar_first ? 0 : 1;
  nd.p.scalar_kind = s.kind;
  nd.p.scalar = s.value;
  return apply(ctx, &nd, &a, out);
}

int strata_where(strata_context *ctx, strata_array *cond, strata_array *a, strata_array *b,
                 strata_array **out)
{
  strata__clear_error();
  strata__node nd = proto_of(STRATA__OP_EW, 3);
  nd.p.fn = STRATA_FN_WHERE;
  strata_array *ins[3] = {cond, a, b};
  return apply(ctx, &nd, ins, out);
}

int strata_astype(strata_context *ctx, strata_array *a, strata_dtype dtype, strata_array **out)
{
  strata__clear_error();
  strata__node nd = proto_of(STRATA__OP_EW, 1);
  nd.p.fn = STRATA__FN_COPY;
  nd.p.dtype = dtype;
  return apply(ctx, &nd, &a, out);
}

int strata_arange(strata_context *ctx, double start, double stop, double step, strata_dtype dtype,
                  strata_array **out)
{
  strata__clear_error();
  strata__node nd = proto_of(STRATA__OP_FILL, 0);
  nd.p.flag = 1;
  nd.p.dtype = dtype;
  nd.p.scalar = start;
  nd.p.stop = stop;
  nd.p.step = step;
  return apply(ctx, &nd, NULL, out);
}

int strata_full(strata_context *ctx, int ndim, const int64_t *shape, strata_dtype dtype,
                double value, strata_array **out)
{
  strata__clear_error();
  strata__node nd = proto_of(STRATA__OP_FILL, 0);
  nd.p.dtype = dtype;
  nd.p.scalar = value;
  int ret = set_list(&nd, ndim, shape);
  return ret ? ret : apply(ctx, &nd, NULL, out);
}

int strata_zeros(strata_context *ctx, int ndim, const int64_t *shape, strata_dtype dtype,
                 strata_array **out)
{
  strata__clear_error();
  return strata_full(ctx, ndim, shape, dtype, 0, out);
}

int strata_ones(strata_context *ctx, int ndim, const int64_t *shape, strata_dtype dtype,
                strata_array **out)
{
  strata__clear_error();
  return strata_full(ctx, ndim, shape, dtype, 1, out);
}

/* reshape and broadcast_to: one input and a target shape. */
static int to_shape(strata_context *ctx, int op, strata_array *a, int ndim, const int64_t *shape,
                    strata_array **out)
{
  strata__node nd = proto_of(op, 1);
  int ret = set_list(&nd, ndim, shape);
  return ret ? ret : apply(ctx, &nd, &a, out);
}

int strata_reshape(strata_context *ctx, strata_array *a, int ndim, const int64_t *shape,
                   strata_array **out)
{
  strata__clear_error();
  return to_shape(ctx, STRATA__OP_RESHAPE, a, ndim, shape, out);
}

int strata_index(strata_context *ctx, strata_array *a, int n, const strata_slice *items,
                 strata_array **out)
{
  strata__clear_error();
  if (n < 0 || n > STRATA_MAX_DIMS || (n > 0 && !items))
    return STRATA_EINVAL;
  strata__node nd = proto_of(STRATA__OP_INDEX, 1);
  nd.p.nlist = n;
  for (int k = 0; k < n; k++) {
    int64_t *item = &nd.p.list[4 * k];
    item[0] = items[k].start;
    item[1] = items[k].stop;
    item[2] = items[k].step;
    item[3] = items[k].is_index != 0;
  }
  return apply(ctx, &nd, &a, out);
}

int strata_concat(strata_context *ctx, int n, strata_array *const *arrays, int axis,
                  strata_array **out)
{
  strata__clear_error();
  if (n < 1 || !arrays)
    return STRATA_EINVAL;
  strata__node nd = proto_of(STRATA__OP_CONCAT, n);
  nd.p.axis = axis;
  return apply(ctx, &nd, arrays, out);
}

int strata_split(strata_context *ctx, strata_array *a, int n, const int64_t *at, int axis,
                 strata_array **outs)
{
  strata__clear_error();
  if (!a || !outs || n < 0 || (n > 0 && !at) || axis < -a->ndim || axis >= a->ndim)
    return STRATA_EINVAL;
  int d = axis < 0 ? axis + a->ndim : axis;
  if (d >= STRATA_MAX_DIMS)
    return STRATA_EINVAL;
  for (int k = 0; k <= n; k++)
    outs[k] = NULL;
  for (int k = 0; k + 1 < n; k++)
    if (at[k] > at[k + 1])
      return strata__fail(STRATA_EINVAL, "split positions must increase");
  int ret = 0;
  for (int k = 0; k <= n && !ret; k++) {
    strata_slice items[STRATA_MAX_DIMS];
    for (int e = 0; e < d; e++)
      items[e] = STRATA_ALL;
    items[d] =
        STRATA_SLICE(k > 0 ? at[k - 1] : STRATA_NONE, k < n ? at[k] : STRATA_NONE, STRATA_NONE);
    ret = strata_index(ctx, a, d + 1, items, &outs[k]);
  }
  for (int k = 0; ret && k <= n; k++) {
    strata_array_destroy(outs[k]);
    outs[k] = NULL;
  }
  return ret;
}

int strata_transpose(strata_context *ctx, strata_array *a, int naxes, const int *axes,
                     strata_array **out)
{
  strata__clear_error();
  strata__node nd = proto_of(STRATA__OP_TRANSPOSE, 1);
  int ret = set_axes(&nd, naxes, axes);
  return ret ? ret : apply(ctx, &nd, &a, out);
}

int strata_broadcast_to(strata_context *ctx, strata_array *a, int ndim, const int64_t *shape,
                        strata_array **out)
{
  strata__clear_error();
  return to_shape(ctx, STRATA__OP_BROADCAST, a, ndim, shape, out);
}

int strata_reduce(strata_context *ctx, strata_fn fn, strata_array *a, int naxes, const int *axes,
                  int keepdims, strata_array **out)
{
  strata__clear_error();
  if (fn < STRATA_FN_SUM || fn > STRATA_FN_MEAN)
    return strata__fail(STRATA_EINVAL, "%s is not a reduction", strata_fn_name(fn));
  strata__node nd = proto_of(STRATA__OP_REDUCE, 1);
  nd.p.fn = fn;
  nd.p.flag = (keepdims ? STRATA__KEEPDIMS : 0) | (naxes == STRATA_ALL_AXES ? STRATA__ALL_AXES : 0);
  int ret = naxes == STRATA_ALL_AXES ? 0 : set_axes(&nd, naxes, axes);
  return ret ? ret : apply(ctx, &nd, &a, out);
}

int strata_matmul(strata_context *ctx, strata_array *a, strata_array *b, strata_array **out)
{
  strata__clear_error();
  strata__node nd = proto_of(STRATA__OP_MATMUL, 2);
  strata_array *ins[2] = {a, b};
  return apply(ctx, &nd, ins, out);
}

static int tri(strata_context *ctx, strata_array *a, int64_t k, int upper, strata_array **out)
{
  strata__node nd = proto_of(STRATA__OP_TRI, 1);
  nd.p.axis = k;
  nd.p.flag = upper;
  return apply(ctx, &nd, &a, out);
}

int strata_tril(strata_context *ctx, strata_array *a, int64_t k, strata_array **out)
{
  strata__clear_error();
  return tri(ctx, a, k, 0, out);
}

int strata_triu(strata_context *ctx, strata_array *a, int64_t k, strata_array **out)
{
  strata__clear_error();
  return tri(ctx, a, k, 1, out);
}

int strata_flatnonzero(strata_context *ctx, strata_array *a, strata_array **out)
{
  strata__clear_error();
  strata__node nd = proto_of(STRATA__OP_NONZERO, 1);
  return apply(ctx, &nd, &a, out);
}

int strata_take(strata_context *ctx, strata_array *a, strata_array *indices, int axis,
                strata_take_mode mode, strata_array **out)
{
  strata__clear_error();
  strata__node nd = proto_of(STRATA__OP_TAKE, 2);
  nd.p.axis = axis;
  nd.p.flag = mode;
  strata_array *ins[2] = {a, indices};
  return apply(ctx, &nd, ins, out);
}
