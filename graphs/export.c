/* Exported graphs: export from a context's history, queries, validation of
 * graphs read from files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"

static int destroy_live(void *g) { return strata_graph_destroy(g); }

strata_graph *strata__graph_alloc(int n, int ninputs, int noutputs)
{
  strata_graph *g = calloc(1, sizeof *g);
  if (!g)
    return NULL;
  g->nodes = calloc((size_t)n + 1, sizeof *g->nodes);
  g->inputs = calloc((size_t)ninputs + 1, sizeof *g->inputs);
  g->outputs = calloc((size_t)noutputs + 1, sizeof *g->outputs);
  g->output_names = calloc((size_t)noutputs + 1, sizeof *g->output_names);
  g->mem = malloc((size_t)n + 1);
  g->n = n;
  g->ninputs = ninputs;
  g->noutputs = noutputs;
  if (g->mem)
    memset(g->mem, STRATA__MEM_ANY, (size_t)n + 1);
  if (!g->nodes || !g->inputs || !g->outputs || !g->output_names || !g->mem) {
    strata_graph_destroy(g);
    return NULL;
  }
  strata__live_add(&strata__objects, &g->live, "graph", g, destroy_live);
  return g;
}

void strata__node_free(strata__node *nd)
{
  free(nd->in);
  free(nd->name);
  nd->in = NULL;
  nd->name = NULL;
}

int strata_graph_destroy(strata_graph *g)
{
  if (!g)
    return 0;
  strata__live_remove(&g->live);
  strata__plan_free(&g->plan);
  for (int i = 0; g->nodes && i < g->n; i++)
    strata__node_free(&g->nodes[i]);
  for (int o = 0; g->output_names && o < g->noutputs; o++)
    free(g->output_names[o]);
  free(g->nodes);
  free(g->inputs);
  free(g->outputs);
  free(g->output_names);
  free(g->mem);
  free(g);
  return 0;
}

int strata_graph_ninputs(const strata_graph *g) { return g ? g->ninputs : STRATA_EINVAL; }

int strata_graph_noutputs(const strata_graph *g) { return g ? g->noutputs : STRATA_EINVAL; }

int strata_graph_nnodes(const strata_graph *g) { return g ? g->n : STRATA_EINVAL; }

const char *strata_graph_node_name(const strata_graph *g, int i)
{
  strata__clear_error();
  return g && i >= 0 && i < g->n ? g->nodes[i].name : NULL;
}

const char *strata_graph_input_name(const strata_graph *g, int i)
{
  return g && i >= 0 && i < g->ninputs ? g->nodes[g->inputs[i]].name : NULL;
}

const char *strata_graph_output_name(const strata_graph *g, int i)
{
  return g && i >= 0 && i < g->noutputs ? g->output_names[i] : NULL;
}

/* ---- export ---- */

/* Everything export works with, freed in one place. */
struct export_state {
  int nin, nout;
  strata_array *const *inputs, *const *outputs;
  char **in_names, **out_names;
  int *dup;     /* input i repeats an earlier input */
  int *used;    /* input i reaches an output */
  int *bound;   /* per context node: the input bound to it, or -1 */
  int *visited; /* per context node */
  int *stack;
  strata_context *ctx;
};

static char *name_or(const char *const *names, int i, const char *prefix)
{
  char buf[32];
  if (names && names[i])
    return strdup(names[i]);
  snprintf(buf, sizeof buf, "%s%d", prefix, i);
  return strdup(buf);
}

static int input_index(const struct export_state *s, const strata_array *a)
{
  for (int i = 0; i < s->nin; i++)
    if (s->inputs[i] == a && !s->dup[i])
      return i;
  return -1;
}

static int check_names(struct export_state *s)
{
  for (int i = 0; i < s->nin; i++)
    for (int j = 0; j < i; j++) {
      int same_name = strcmp(s->in_names[i], s->in_names[j]) == 0;
      if (s->inputs[i] == s->inputs[j] && !same_name)
        return strata__fail(STRATA_EREBIND, "one array bound to inputs '%s' and '%s'",
                            s->in_names[j], s->in_names[i]);
      if (s->inputs[i] == s->inputs[j])
        s->dup[i] = 1;
      else if (same_name)
        return strata__fail(STRATA_EINVAL, "two arrays named '%s'", s->in_names[i]);
    }
  for (int o = 0; o < s->nout; o++)
    for (int p = 0; p < o; p++)
      if (strcmp(s->out_names[o], s->out_names[p]) == 0)
        return strata__fail(STRATA_EINVAL, "two outputs named '%s'", s->out_names[o]);
  return 0;
}

/* The context of the outputs, and outputs that are neither recorded nor
 * inputs. */
static int find_context(struct export_state *s)
{
  for (int o = 0; o < s->nout; o++) {
    const strata_array *a = s->outputs[o];
    if (input_index(s, a) >= 0)
      continue;
    if (!a->history)
      return strata__fail(STRATA_ENOHISTORY, "output '%s' has no recorded history",
                          s->out_names[o]);
    if (s->ctx && s->ctx != a->history)
      return strata__fail(STRATA_EINVAL, "outputs recorded in different contexts");
    s->ctx = a->history;
  }
  return 0;
}

/* Bind inputs to context nodes, then walk back from every output. */
static int walk(struct export_state *s)
{
  strata_context *ctx = s->ctx;
  for (int i = 0; ctx && i < ctx->n; i++)
    s->bound[i] = -1;
  for (int i = 0; ctx && i < s->nin; i++) {
    if (s->dup[i])
      continue;
    for (int k = 0; k < ctx->n; k++)
      if (ctx->values[k] == s->inputs[i])
        s->bound[k] = i;
  }
  for (int o = 0; o < s->nout; o++) {
    int direct = input_index(s, s->outputs[o]);
    if (direct >= 0) {
      s->used[direct] = 1;
      continue;
    }
    int top = 0;
    s->stack[top++] = (int)s->outputs[o]->history_node;
    while (top > 0) {
      int k = s->stack[--top];
      if (s->visited[k])
        continue;
      s->visited[k] = 1;
      if (s->bound[k] >= 0) {
        s->used[s->bound[k]] = 1;
        continue;
      }
      if (ctx->nodes[k].op == STRATA__OP_INPUT)
        return strata__fail(STRATA_EUNBOUND,
                            "output '%s' depends on an array that is neither a listed input "
                            "nor recorded",
                            s->out_names[o]);
      for (int j = 0; j < ctx->nodes[k].nin; j++)
        s->stack[top++] = ctx->nodes[k].in[j];
    }
  }
  for (int i = 0; i < s->nin; i++)
    if (!s->dup[i] && !s->used[i])
      return strata__fail(STRATA_EUNUSED, "input '%s' is not connected to any output",
                          s->in_names[i]);
  return 0;
}

/* A name made of the operation and position, unique among nodes [0, upto). */
static char *generated_name(const strata_graph *g, int upto, const strata__node *nd, int index)
{
  char buf[64];
  snprintf(buf, sizeof buf, "%s_%d", strata__op_name(nd), index);
  for (int clash = 1; clash;) {
    clash = 0;
    for (int j = 0; j < upto && !clash; j++)
      clash = strcmp(g->nodes[j].name, buf) == 0;
    if (clash && strlen(buf) + 2 < sizeof buf)
      strcat(buf, "_");
  }
  return strdup(buf);
}

static int build(struct export_state *s, strata_graph **out)
{
  strata_context *ctx = s->ctx;
  int nctx = ctx ? ctx->n : 0, nunique = 0, nops = 0;
  int *placeholder = calloc((size_t)s->nin + 1, sizeof *placeholder);
  int *newidx = calloc((size_t)nctx + 1, sizeof *newidx);
  if (!placeholder || !newidx) {
    free(placeholder);
    free(newidx);
    return STRATA_ENOMEM;
  }
  for (int i = 0; i < s->nin; i++)
    if (!s->dup[i])
      placeholder[i] = nunique++;
  for (int k = 0; k < nctx; k++)
    if (s->visited[k] && s->bound[k] < 0)
      newidx[k] = nunique + nops++;
  strata_graph *g = strata__graph_alloc(nunique + nops, nunique, s->nout);
  int ret = g ? 0 : STRATA_ENOMEM;
  for (int i = 0; !ret && i < s->nin; i++) {
    if (s->dup[i])
      continue;
    const strata_array *a = s->inputs[i];
    strata__node *nd = &g->nodes[placeholder[i]];
    nd->op = STRATA__OP_INPUT;
    nd->p.scalar_at = -1;
    nd->m.dtype = a->dtype;
    nd->m.ndim = a->ndim;
    memcpy(nd->m.shape, a->shape, sizeof nd->m.shape);
    g->inputs[placeholder[i]] = placeholder[i];
    if (!(nd->name = strdup(s->in_names[i])))
      ret = STRATA_ENOMEM;
  }
  for (int k = 0; !ret && k < nctx; k++) {
    if (!s->visited[k] || s->bound[k] >= 0)
      continue;
    strata__node *nd = &g->nodes[newidx[k]];
    *nd = ctx->nodes[k];
    nd->in = malloc(((size_t)nd->nin + 1) * sizeof *nd->in);
    nd->name = generated_name(g, newidx[k], nd, newidx[k]);
    if (!nd->in || !nd->name) {
      ret = STRATA_ENOMEM;
      break;
    }
    for (int j = 0; j < nd->nin; j++) {
      int from = ctx->nodes[k].in[j];
      nd->in[j] = s->bound[from] >= 0 ? placeholder[s->bound[from]] : newidx[from];
    }
  }
  for (int o = 0; !ret && o < s->nout; o++) {
    int direct = input_index(s, s->outputs[o]);
    int k = direct >= 0 ? -1 : (int)s->outputs[o]->history_node;
    g->outputs[o] = direct >= 0        ? placeholder[direct]
                    : s->bound[k] >= 0 ? placeholder[s->bound[k]]
                                       : newidx[k];
    if (!(g->output_names[o] = strdup(s->out_names[o])))
      ret = STRATA_ENOMEM;
  }
  free(placeholder);
  free(newidx);
  if (ret)
    strata_graph_destroy(g);
  else
    *out = g;
  return ret;
}

static void free_state(struct export_state *s)
{
  for (int i = 0; s->in_names && i < s->nin; i++)
    free(s->in_names[i]);
  for (int o = 0; s->out_names && o < s->nout; o++)
    free(s->out_names[o]);
  free(s->in_names);
  free(s->out_names);
  free(s->dup);
  free(s->used);
  free(s->bound);
  free(s->visited);
  free(s->stack);
}

/* The context's nodes, sized once the context is known. */
static int alloc_walk(struct export_state *s)
{
  size_t n = (size_t)(s->ctx ? s->ctx->n : 0) + 1, edges = n;
  for (int k = 0; s->ctx && k < s->ctx->n; k++)
    edges += (size_t)s->ctx->nodes[k].nin;
  s->bound = malloc(n * sizeof *s->bound);
  s->visited = calloc(n, sizeof *s->visited);
  s->stack = malloc(edges * sizeof *s->stack);
  return s->bound && s->visited && s->stack ? 0 : STRATA_ENOMEM;
}

int strata_graph_export(int ninputs, strata_array *const *inputs, const char *const *input_names,
                        int noutputs, strata_array *const *outputs, const char *const *output_names,
                        strata_graph **graph)
{
  strata__clear_error();
  if (!graph || ninputs < 0 || noutputs < 1 || (ninputs > 0 && !inputs) || !outputs)
    return STRATA_EINVAL;
  *graph = NULL;
  for (int i = 0; i < ninputs; i++)
    if (!inputs[i])
      return STRATA_EINVAL;
  for (int o = 0; o < noutputs; o++)
    if (!outputs[o])
      return STRATA_EINVAL;
  struct export_state s = {.nin = ninputs, .nout = noutputs, .inputs = inputs, .outputs = outputs};
  s.in_names = calloc((size_t)ninputs + 1, sizeof *s.in_names);
  s.out_names = calloc((size_t)noutputs + 1, sizeof *s.out_names);
  s.dup = calloc((size_t)ninputs + 1, sizeof *s.dup);
  s.used = calloc((size_t)ninputs + 1, sizeof *s.used);
  int ret = s.in_names && s.out_names && s.dup && s.used ? 0 : STRATA_ENOMEM;
  for (int i = 0; !ret && i < ninputs; i++)
    if (!(s.in_names[i] = name_or(input_names, i, "input")))
      ret = STRATA_ENOMEM;
  for (int o = 0; !ret && o < noutputs; o++)
    if (!(s.out_names[o] = name_or(output_names, o, "output")))
      ret = STRATA_ENOMEM;
  if (!ret)
    ret = check_names(&s);
  if (!ret)
    ret = find_context(&s);
  if (!ret)
    ret = alloc_walk(&s);
  if (!ret)
    ret = walk(&s);
  if (!ret)
    ret = build(&s, graph);
  free_state(&s);
  return ret;
}

/* ---- validation of graphs from outside ---- */

static int valid_meta(const strata__meta *m, int known)
{
  if ((unsigned)m->dtype >= STRATA_NDTYPES || m->ndim < 0 || m->ndim > STRATA_MAX_DIMS)
    return 0;
  for (int d = 0; d < m->ndim; d++)
    if (m->shape[d] < (known ? 0 : -1))
      return 0;
  return 1;
}

static int same_meta(const strata__meta *a, const strata__meta *b)
{
  if (a->dtype != b->dtype || a->ndim != b->ndim)
    return 0;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d] && a->shape[d] >= 0 && b->shape[d] >= 0)
      return 0;
  return 1;
}

/* `listed`: how often the inputs list names node i. */
static int check_node(const strata_graph *g, int i, int listed, strata__meta *in)
{
  const strata__node *nd = &g->nodes[i];
  if (nd->op == STRATA__OP_INPUT) {
    if (listed != 1 || nd->nin != 0 || !valid_meta(&nd->m, 1))
      return strata__fail(STRATA_EIO, "input node '%s' is malformed or not listed once", nd->name);
    return 0;
  }
  int known = 1;
  for (int k = 0; k < nd->nin; k++) {
    if (nd->in[k] < 0 || nd->in[k] >= i)
      return strata__fail(STRATA_EIO, "node '%s' reads a later or missing node", nd->name);
    in[k] = g->nodes[nd->in[k]].m;
    known &= strata__meta_nelems(&in[k]) >= 0;
  }
  if (!valid_meta(&nd->m, 0))
    return strata__fail(STRATA_EIO, "node '%s' has an invalid dtype or shape", nd->name);
  if (!known) /* after a data-dependent shape: checked when run */
    return 0;
  strata__meta m;
  if (strata__infer(nd, in, &m) || !same_meta(&m, &nd->m)) {
    char why[256];
    snprintf(why, sizeof why, "%s", strata_error_message());
    return strata__fail(STRATA_EIO, "node '%s' (%s): %s", nd->name, strata__op_name(nd),
                        why[0] ? why : "recorded dtype or shape differs from inference");
  }
  return 0;
}

static int compare_names(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A name that `n` names share, NULL if none: sorted, so O(n log n) for the
 * large graphs a file may hold. */
static const char *repeated_name(char *const *names, int n, int *nomem)
{
  const char **sorted = malloc(((size_t)n + 1) * sizeof *sorted);
  const char *twice = NULL;
  *nomem = !sorted;
  if (!sorted)
    return NULL;
  memcpy(sorted, names, (size_t)n * sizeof *sorted);
  qsort(sorted, (size_t)n, sizeof *sorted, compare_names);
  for (int i = 1; i < n && !twice; i++)
    if (strcmp(sorted[i - 1], sorted[i]) == 0)
      twice = sorted[i];
  free(sorted);
  return twice;
}

/* Node names: present, and no two alike. */
static int check_node_names(const strata_graph *g)
{
  char **names = malloc(((size_t)g->n + 1) * sizeof *names);
  if (!names)
    return STRATA_ENOMEM;
  int ret = 0, nomem;
  for (int i = 0; i < g->n && !ret; i++) {
    names[i] = g->nodes[i].name;
    if (!names[i] || !names[i][0])
      ret = strata__fail(STRATA_EIO, "node %d has no name", i);
  }
  const char *twice = ret ? NULL : repeated_name(names, g->n, &nomem);
  if (!ret && nomem)
    ret = STRATA_ENOMEM;
  else if (twice)
    ret = strata__fail(STRATA_EIO, "two nodes named '%s'", twice);
  free(names);
  return ret;
}

int strata__graph_validate(const strata_graph *g)
{
  int *listed = calloc((size_t)g->n + 1, sizeof *listed);
  if (!listed)
    return STRATA_ENOMEM;
  int ret = 0;
  for (int k = 0; k < g->ninputs && !ret; k++)
    if (g->inputs[k] < 0 || g->inputs[k] >= g->n || g->nodes[g->inputs[k]].op != STRATA__OP_INPUT)
      ret = strata__fail(STRATA_EIO, "input %d is not an input node", k);
    else
      listed[g->inputs[k]]++;
  if (!ret)
    ret = check_node_names(g);
  int maxin = 0;
  for (int i = 0; i < g->n; i++)
    if (g->nodes[i].nin > maxin)
      maxin = g->nodes[i].nin;
  strata__meta *in = ret ? NULL : malloc(((size_t)maxin + 1) * sizeof *in);
  if (!ret && !in)
    ret = STRATA_ENOMEM;
  for (int i = 0; i < g->n && !ret; i++) {
    strata__clear_error();
    ret = check_node(g, i, listed[i], in);
  }
  free(in);
  free(listed);
  for (int o = 0; o < g->noutputs && !ret; o++)
    if (g->outputs[o] < 0 || g->outputs[o] >= g->n || !g->output_names[o] || !g->output_names[o][0])
      ret = strata__fail(STRATA_EIO, "output %d is malformed", o);
  int nomem = 0;
  const char *twice = ret ? NULL : repeated_name(g->output_names, g->noutputs, &nomem);
  if (!ret && nomem)
    ret = STRATA_ENOMEM;
  else if (twice)
    ret = strata__fail(STRATA_EIO, "two outputs named '%s'", twice);
  return ret;
}
