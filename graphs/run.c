/* Replay of exported graphs under their plan: Virtual nodes inside fused
 * kernels, Local nodes as scratch buffers of their readers' task, On_device
 * and Hosted nodes in storage kept across runs, Constant nodes computed
 * once. */
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"

static int is_done_constant(const strata_graph *g, int i)
{
  return g->mem[i] == STRATA__MEM_HOST_CONST && g->plan.computed[i];
}

/* Whether this run computes node i (inside a fused kernel or not). */
static int computes(const strata_graph *g, int i, const int *needed)
{
  return g->nodes[i].op != STRATA__OP_INPUT && needed[i] && !is_done_constant(g, i);
}

/* Where node i's value goes in this run; -1: nothing to compute. */
static int sink_of(const strata_graph *g, int i, const int *needed, const int *is_output)
{
  if (!computes(g, i, needed))
    return -1;
  unsigned mem = g->mem[i];
  if (mem == STRATA__MEM_VIRTUAL)
    return STRATA__SINK_VIRTUAL;
  if (mem == STRATA__MEM_LOCAL) /* a scratch handle kept with its sequence, or of one run */
    return g->plan.seq_of[i] >= 0 ? STRATA__SINK_KEEP : STRATA__SINK_TEMP;
  if (is_output[i] && mem != STRATA__MEM_HOST_CONST)
    return STRATA__SINK_NEW;
  return STRATA__SINK_KEEP;
}

/* Nodes the outputs need, not looking past Constant nodes already known. */
static void mark_needed(const strata_graph *g, int *needed)
{
  for (int o = 0; o < g->noutputs; o++)
    needed[g->outputs[o]] = 1;
  for (int i = g->n - 1; i >= 0; i--)
    if (needed[i] && !is_done_constant(g, i))
      for (int k = 0; k < g->nodes[i].nin; k++)
        needed[g->nodes[i].in[k]] = 1;
}

static void bind_inputs(const strata_graph *g, strata_array *const *inputs, strata__slot *slot)
{
  for (int k = 0; k < g->ninputs; k++) {
    const strata_array *a = inputs[k];
    strata__slot *s = &slot[g->inputs[k]];
    s->h = a->handle;
    s->m.dtype = a->dtype;
    s->m.ndim = a->ndim;
    memcpy(s->m.shape, a->shape, sizeof s->m.shape);
  }
  for (int i = 0; i < g->n; i++)
    if (is_done_constant(g, i))
      slot[i] = g->plan.kept[i];
}

/* Output o: the node's new array, or a copy (inputs, repeated outputs, kept
 * storage). */
static int collect_outputs(const strata_graph *g, const int *owner, const strata__slot *slot,
                           strata_array **target, strata_array **outputs)
{
  for (int o = 0; o < g->noutputs; o++) {
    int k = g->outputs[o];
    if (owner[k] == o) {
      outputs[o] = target[k];
      continue;
    }
    const strata__meta *m = &slot[k].m;
    int ret = strata_array_create(m->ndim, m->shape, m->dtype, &outputs[o]);
    if (!ret)
      ret = strata__submit_copy(m, slot[k].h, outputs[o]->handle);
    if (ret)
      return ret;
  }
  return 0;
}

int strata_graph_run(strata_graph *g, strata_array *const *inputs, strata_array **outputs)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!g || (g->ninputs > 0 && !inputs) || !outputs)
    return STRATA_EINVAL;
  for (int o = 0; o < g->noutputs; o++)
    outputs[o] = NULL;
  for (int i = 0; i < g->ninputs; i++) {
    if (!inputs[i])
      return STRATA_EINVAL;
    if ((ret = strata__array_ready(inputs[i])))
      return ret;
  }
  if ((ret = strata_graph_compile(g)))
    return ret;
  size_t n = (size_t)g->n + 1;
  int *sink = malloc(n * sizeof *sink), *owner = malloc(n * sizeof *owner);
  int *needed = calloc(n, sizeof *needed), *is_output = calloc(n, sizeof *is_output);
  strata__slot *slot = calloc(n, sizeof *slot);
  strata_array **target = calloc(n, sizeof *target);
  ret = sink && owner && needed && is_output && slot && target ? 0 : STRATA_ENOMEM;
  if (!ret) {
    mark_needed(g, needed);
    for (int o = 0; o < g->noutputs; o++)
      is_output[g->outputs[o]] = 1;
    for (int i = 0; i < g->n; i++) {
      sink[i] = sink_of(g, i, needed, is_output);
      owner[i] = -1;
    }
    for (int o = 0; o < g->noutputs; o++)
      if (sink[g->outputs[o]] == STRATA__SINK_NEW && owner[g->outputs[o]] < 0)
        owner[g->outputs[o]] = o;
    bind_inputs(g, inputs, slot);
    ret = strata__exec_run(g->nodes, g->n, sink, slot, target, g);
  }
  if (!ret) {
    for (int i = 0; i < g->n; i++)
      if (sink[i] == STRATA__SINK_KEEP)
        g->plan.computed[i] = 1;
    ret = collect_outputs(g, owner, slot, target, outputs);
  }
  if (ret)
    for (int o = 0; o < g->noutputs; o++) {
      strata_array_destroy(outputs[o]);
      outputs[o] = NULL;
    }
  free(sink);
  free(owner);
  free(needed);
  free(is_output);
  free(slot);
  free(target);
  return ret;
}

int strata_graph_nkernels(strata_graph *g)
{
  strata__clear_error();
  int ret = strata_graph_compile(g);
  if (ret)
    return ret;
  int *needed = calloc((size_t)g->n + 1, sizeof *needed), count = 0;
  if (!needed)
    return STRATA_ENOMEM;
  mark_needed(g, needed);
  for (int i = 0; i < g->n; i++) { /* a fused group (Virtual members, root) counts once */
    int gi = g->plan.group_of[i];
    count += computes(g, i, needed) && (gi < 0 || g->plan.groups[gi].root == i);
  }
  free(needed);
  return count;
}

int strata_graph_ntasks(strata_graph *g)
{
  strata__clear_error();
  int ret = strata_graph_compile(g);
  if (ret)
    return ret;
  size_t n = (size_t)g->n + 1;
  int *needed = calloc(n, sizeof *needed), *seq_seen = calloc(n, sizeof *seq_seen), count = 0;
  if (!needed || !seq_seen) {
    free(needed);
    free(seq_seen);
    return STRATA_ENOMEM;
  }
  mark_needed(g, needed);
  for (int i = 0; i < g->n; i++) {
    int gi = g->plan.group_of[i], q = g->plan.seq_of[i];
    if (!computes(g, i, needed) || (gi >= 0 && g->plan.groups[gi].root != i))
      continue;
    if (q < 0 || !seq_seen[q]++) /* a sequence is one task */
      count++;
  }
  free(needed);
  free(seq_seen);
  return count;
}

int strata_graph_node_value(strata_graph *g, const char *node, strata_array **value)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!value)
    return STRATA_EINVAL;
  *value = NULL;
  int i = strata__graph_find(g, node);
  if (i < 0)
    return i;
  if (!g->plan.compiled || !g->plan.hosted[i]) {
    if (g->plan.compiled && !(g->mem[i] & STRATA__MEM_HOST)) /* one choice once compiled */
      return strata__fail(STRATA_EINVAL, "node '%s' is not Hosted: its values stay in tasks", node);
    return strata__fail(STRATA_ESTATE,
                        "node '%s' has no kept value (graph inputs and outputs "
                        "are the run's arrays; others need a run)",
                        node);
  }
  const strata__slot *k = &g->plan.kept[i];
  ret = strata_array_create(k->m.ndim, k->m.shape, k->m.dtype, value);
  if (!ret && (ret = strata__submit_copy(&k->m, k->h, (*value)->handle))) {
    strata_array_destroy(*value);
    *value = NULL;
  }
  return ret;
}
