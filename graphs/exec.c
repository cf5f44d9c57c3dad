/* The executor shared by eager calls, lazy computation and graph replay:
 * nodes in order, each inferred, given a place and submitted as tasks.
 * Intermediate values live in handles without a user-visible copy (blocks
 * of the host cache without GPUs), unregistered once their last reader has
 * run. */
#include <stdlib.h>

#include "fused.h"
#include "graph_impl.h"
#include "nonzero.h"

/* flatnonzero's result size: count on the workers, wait, read. */
static int count_nonzero(const strata__meta *in, starpu_data_handle_t h, int64_t *count)
{
  int64_t value = 0;
  starpu_data_handle_t ch;
  starpu_vector_data_register(&ch, STARPU_MAIN_RAM, (uintptr_t)&value, 1, sizeof value);
  int ret = strata__count_nonzero_submit(in->dtype, strata__meta_nelems(in), h, ch);
  starpu_data_unregister(ch); /* waits for the count and brings it home */
  *count = value;
  return ret;
}

int strata__slot_register(strata__slot *s, int scratch)
{
  int64_t n = strata__meta_nelems(&s->m);
  uint32_t count = (uint32_t)(n > 0 ? n : 1);
  size_t elem = strata_dtype_size(s->m.dtype);
  s->mem = NULL;
  if (scratch || starpu_cuda_worker_get_count() > 0) {
    starpu_vector_data_register(&s->h, -1, 0, count, elem);
    return 0;
  }
  if (strata__host_alloc(&s->mem, count * elem))
    return STRATA_ENOMEM;
  starpu_vector_data_register(&s->h, STARPU_MAIN_RAM, (uintptr_t)s->mem, count, elem);
  return 0;
}

void strata__slot_unregister_submit(strata__slot *s)
{
  if (s->mem)
    strata__host_unregister_submit(s->h, s->mem,
                                   starpu_vector_get_nx(s->h) * starpu_vector_get_elemsize(s->h));
  else if (s->h)
    starpu_data_unregister_submit(s->h);
  s->h = NULL;
  s->mem = NULL;
}

/* Storage of node i kept across runs (On_device handle or Hosted array),
 * replaced when the meta changed. */
static int place_kept(strata_graph *g, int i, strata__slot *s)
{
  strata__slot *k = &g->plan.kept[i];
  if (k->h && strata__meta_equal(&k->m, &s->m)) {
    s->h = k->h;
    return 0;
  }
  if (g->plan.hosted[i]) {
    strata_array_destroy(g->plan.hosted[i]);
    g->plan.hosted[i] = NULL;
    k->h = NULL;
  } else {
    strata__slot_unregister_submit(k);
  }
  g->plan.computed[i] = 0;
  k->m = s->m;
  int ret;
  if (g->mem[i] & STRATA__MEM_HOST) {
    if ((ret = strata_array_create(s->m.ndim, s->m.shape, s->m.dtype, &g->plan.hosted[i])))
      return ret;
    k->h = g->plan.hosted[i]->handle;
  } else if ((ret = strata__slot_register(k, g->mem[i] == STRATA__MEM_LOCAL))) {
    return ret;
  }
  s->h = k->h;
  return 0;
}

/* A place for node i's result, per its sink. */
static int place(int sink, strata__slot *s, strata_array **target, strata_graph *g, int i)
{
  int ret;
  switch (sink) {
  case STRATA__SINK_TEMP:
    if ((ret = strata__slot_register(s, 0)))
      return ret;
    s->temp = 1;
    return 0;
  case STRATA__SINK_KEEP: return place_kept(g, i, s);
  case STRATA__SINK_NEW:
    if ((ret = strata_array_create(s->m.ndim, s->m.shape, s->m.dtype, target)))
      return ret;
    break;
  default:
    if ((ret = strata__array_attach(*target, s->m.shape)))
      return ret;
    break;
  }
  s->h = (*target)->handle;
  return 0;
}

/* A sequence being captured (nodes sharing a task through Local nodes):
 * handles its tasks use are dropped only after it is submitted. */
struct sequence {
  int active;
  struct strata__capture capture;
  int nscratch;
  starpu_data_handle_t scratch[STARPU_NMAXBUFS];
  int npending;
  strata__slot **pending;
};

static void drop_temp(strata__slot *s, struct sequence *q)
{
  if (!s->temp)
    return;
  if (q->active) {
    for (int k = 0; k < q->npending; k++)
      if (q->pending[k] == s)
        return;
    q->pending[q->npending++] = s;
    return;
  }
  strata__slot_unregister_submit(s);
  s->temp = 0;
}

/* Submit the captured sequence as one task (Local nodes as scratch
 * buffers), then drop what waited for it. */
static int end_sequence(struct sequence *q, int ret)
{
  if (!q->active)
    return ret;
  strata__capture_end();
  q->active = 0;
  if (ret)
    strata__capture_discard(&q->capture);
  else
    ret = strata__capture_submit(&q->capture, q->nscratch, q->scratch);
  for (int k = 0; k < q->npending; k++)
    drop_temp(q->pending[k], q);
  q->npending = q->nscratch = 0;
  return ret;
}

/* The metas of node i's inputs into in_meta (and their handles into in_h
 * when not NULL), then node i's own meta. */
static int infer_node(const strata__node *nd, strata__slot *slot, int i, strata__meta *in_meta,
                      starpu_data_handle_t *in_h)
{
  for (int k = 0; k < nd->nin; k++) {
    in_meta[k] = slot[nd->in[k]].m;
    if (in_h)
      in_h[k] = slot[nd->in[k]].h;
  }
  return strata__infer(nd, in_meta, &slot[i].m);
}

/* Infer, place and submit node i. */
static int run_node(const strata__node *nd, int sink, strata__slot *slot, int i,
                    strata_array **target, strata_graph *g)
{
  strata__meta *in_meta = malloc(((size_t)nd->nin + 1) * sizeof *in_meta);
  starpu_data_handle_t *in_h = malloc(((size_t)nd->nin + 1) * sizeof *in_h);
  int ret = in_meta && in_h ? 0 : STRATA_ENOMEM;
  if (!ret)
    ret = infer_node(nd, slot, i, in_meta, in_h);
  if (!ret && nd->op == STRATA__OP_NONZERO)
    ret = count_nonzero(&in_meta[0], in_h[0], &slot[i].m.shape[0]);
  if (!ret)
    ret = place(sink, &slot[i], &target[i], g, i);
  if (!ret)
    ret = nd->op == STRATA__OP_NONZERO
              ? strata__flatnonzero_submit(in_meta[0].dtype, strata__meta_nelems(&in_meta[0]),
                                           in_h[0], slot[i].h)
              : strata__submit_node(nd, in_meta, in_h, &slot[i].m, slot[i].h);
  free(in_meta);
  free(in_h);
  return ret;
}

/* A Virtual node: only its meta, for the kernel of its group. */
static int infer_virtual(const strata__node *nd, strata__slot *slot, int i)
{
  strata__meta in_meta[STRATA__EW_MAXOPS];
  if (nd->nin > STRATA__EW_MAXOPS)
    return STRATA_EINVAL;
  return infer_node(nd, slot, i, in_meta, NULL);
}

/* The root of fused group G: one task over the leaves, running the
 * generated kernel, or the group's program where there is none (no C
 * compiler, GPUs). */
static int run_group(strata_graph *g, strata__group *G, int sink, strata__slot *slot,
                     strata_array **target)
{
  int root = G->root, ret = infer_virtual(&g->nodes[root], slot, root);
  if (ret)
    return ret;
  if ((ret = strata__group_kernel(g, G, slot)) ||
      (ret = place(sink, &slot[root], &target[root], g, root)))
    return ret;
  starpu_data_handle_t h[STARPU_NMAXBUFS];
  for (int l = 0; l < G->nleaves; l++)
    h[l] = slot[G->leaves[l]].h;
  return strata__fused_submit(G->kernel ? G->kernel->fn : NULL, G->id, &G->program, h,
                              slot[root].h);
}

int strata__task_inputs(const strata__node *nodes, int i, const strata_graph *g, const int **in)
{
  int gi = g ? g->plan.group_of[i] : -1;
  if (gi >= 0 && g->plan.groups[gi].root == i) {
    *in = g->plan.groups[gi].leaves;
    return g->plan.groups[gi].nleaves;
  }
  *in = nodes[i].in;
  return nodes[i].nin;
}

/* Node i of a sequence: capture from its first node on. */
static void enter_sequence(struct sequence *q)
{
  if (!q->active) {
    strata__capture_begin(&q->capture);
    q->active = 1;
  }
}

/* A Local node of a sequence is a scratch buffer of the sequence's task. */
static void note_scratch(const strata_graph *g, int i, const strata__slot *slot, struct sequence *q)
{
  if (q->active && g->mem[i] == STRATA__MEM_LOCAL && slot[i].h && q->nscratch < STARPU_NMAXBUFS)
    q->scratch[q->nscratch++] = slot[i].h;
}

int strata__exec_run(const strata__node *nodes, int n, const int *sink, strata__slot *slot,
                     strata_array **target, strata_graph *g)
{
  int *readers = calloc((size_t)n + 1, sizeof *readers);
  struct sequence q = {.pending = calloc((size_t)n + 1, sizeof *q.pending)};
  if (!readers || !q.pending) {
    free(readers);
    free(q.pending);
    return STRATA_ENOMEM;
  }
  const int *in;
  for (int i = 0; i < n; i++) {
    if (sink[i] < 0 || sink[i] == STRATA__SINK_VIRTUAL)
      continue;
    for (int k = 0, nin = strata__task_inputs(nodes, i, g, &in); k < nin; k++)
      readers[in[k]]++;
  }
  /* a compiled graph's order keeps each sequence's nodes together */
  const int *order = g ? g->plan.order : NULL, *seq_of = g ? g->plan.seq_of : NULL;
  int ret = 0;
  for (int k = 0; k < n && !ret; k++) {
    int i = order ? order[k] : k;
    if (sink[i] >= 0 && sink[i] != STRATA__SINK_VIRTUAL) {
      int gi = g ? g->plan.group_of[i] : -1;
      if (seq_of && seq_of[i] >= 0)
        enter_sequence(&q);
      if (gi >= 0)
        ret = run_group(g, &g->plan.groups[gi], sink[i], slot, target);
      else
        ret = run_node(&nodes[i], sink[i], slot, i, target, g);
      if (!ret)
        note_scratch(g, i, slot, &q);
      for (int j = 0, nin = strata__task_inputs(nodes, i, g, &in); j < nin; j++)
        if (--readers[in[j]] == 0)
          drop_temp(&slot[in[j]], &q);
      if (readers[i] == 0)
        drop_temp(&slot[i], &q);
    } else if (sink[i] == STRATA__SINK_VIRTUAL) {
      ret = infer_virtual(&nodes[i], slot, i);
    }
    if (ret || k + 1 == n || !seq_of || seq_of[order[k + 1]] != seq_of[i])
      ret = end_sequence(&q, ret);
  }
  for (int i = 0; i < n; i++) {
    if (sink[i] < 0)
      continue;
    drop_temp(&slot[i], &q);
    if (ret && sink[i] == STRATA__SINK_NEW && target[i]) {
      strata_array_destroy(target[i]);
      target[i] = NULL;
    }
  }
  free(readers);
  free(q.pending);
  return ret;
}
