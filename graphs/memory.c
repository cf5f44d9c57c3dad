/* Memory modes of graph nodes: OCANNL's refinement lattice as sets of
 * concrete choices, the user's refinements, and the decisions of
 * strata_graph_compile() (defaults, fused groups). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"

/* Nodes of at most this many bytes default to Local, larger to On_device. */
#define LOCAL_MAX_BYTES 16384

static int sharing_mask(strata_sharing s, unsigned per_stream, unsigned shared, unsigned *mask)
{
  switch (s) {
  case STRATA_SHARING_UNSET: *mask = per_stream | shared; return 0;
  case STRATA_SHARING_PER_STREAM: *mask = per_stream; return 0;
  case STRATA_SHARING_SHARED: *mask = shared; return 0;
  default: return STRATA_EINVAL;
  }
}

static int hosted_mask(strata_memory_mode m, unsigned *mask)
{
  unsigned cod;
  if (sharing_mask(m.sharing, STRATA__MEM_HOST_COD_PS, STRATA__MEM_HOST_COD_SX, &cod))
    return STRATA_EINVAL;
  switch (m.type) {
  case STRATA_MEMTYPE_ANY: *mask = STRATA__MEM_HOST; return 0;
  case STRATA_MEMTYPE_CONSTANT: *mask = STRATA__MEM_HOST_CONST; return 0;
  case STRATA_MEMTYPE_NONCONSTANT: *mask = STRATA__MEM_HOST & ~STRATA__MEM_HOST_CONST; return 0;
  case STRATA_MEMTYPE_CHANGED_ON_DEVICES: *mask = cod; return 0;
  case STRATA_MEMTYPE_VOLATILE: *mask = STRATA__MEM_HOST_VOLATILE; return 0;
  default: return STRATA_EINVAL;
  }
}

int strata__mem_mask(strata_memory_mode m, unsigned *mask)
{
  switch (m.kind) {
  case STRATA_MEM_UNDECIDED: *mask = STRATA__MEM_ANY; return 0;
  case STRATA_MEM_EFFECTIVELY_CONSTANT:
    *mask = STRATA__MEM_VIRTUAL | STRATA__MEM_HOST_CONST;
    return 0;
  case STRATA_MEM_VIRTUAL: *mask = STRATA__MEM_VIRTUAL; return 0;
  case STRATA_MEM_NEVER_VIRTUAL: *mask = STRATA__MEM_ANY & ~STRATA__MEM_VIRTUAL; return 0;
  case STRATA_MEM_LOCAL: *mask = STRATA__MEM_LOCAL; return 0;
  case STRATA_MEM_DEVICE_ONLY: *mask = STRATA__MEM_LOCAL | STRATA__MEM_DEVICE; return 0;
  case STRATA_MEM_ON_DEVICE:
    return sharing_mask(m.sharing, STRATA__MEM_DEVICE_PS, STRATA__MEM_DEVICE_SX, mask);
  case STRATA_MEM_MATERIALIZED: *mask = STRATA__MEM_DEVICE | STRATA__MEM_HOST; return 0;
  case STRATA_MEM_HOSTED: return hosted_mask(m, mask);
  default: return STRATA_EINVAL;
  }
}

/* The named mode of a set of choices: every intersection of named modes is
 * named or empty, so this finds one for any refinement result. */
static strata_memory_mode mode_of_mask(unsigned mask)
{
  for (int k = STRATA_MEM_UNDECIDED; k <= STRATA_MEM_HOSTED; k++)
    for (int t = STRATA_MEMTYPE_ANY; t <= STRATA_MEMTYPE_VOLATILE; t++)
      for (int s = STRATA_SHARING_UNSET; s <= STRATA_SHARING_SHARED; s++) {
        strata_memory_mode m = {(strata_memory_kind)k, (strata_memory_type)t, (strata_sharing)s};
        unsigned mm;
        if (strata__mem_mask(m, &mm) == 0 && mm == mask)
          return m;
      }
  return (strata_memory_mode){STRATA_MEM_UNDECIDED, STRATA_MEMTYPE_ANY, STRATA_SHARING_UNSET};
}

int strata_memory_mode_format(strata_memory_mode m, char *buf, size_t size)
{
  strata__clear_error();
  static const char *const kinds[] = {
      "Undecided", "Effectively_constant", "Virtual", "Never_virtual", "Local", "Device_only",
      "On_device", "Materialized",         "Hosted"};
  static const char *const types[] = {"", "Constant", "Nonconstant", "Changed_on_devices",
                                      "Volatile"};
  static const char *const sharings[] = {"Unset", "Per_stream", "Shared_cross_streams"};
  unsigned mask;
  if ((!buf && size > 0) || strata__mem_mask(m, &mask))
    return STRATA_EINVAL;
  const char *k = kinds[m.kind], *sh = sharings[m.sharing];
  int len;
  if (m.kind == STRATA_MEM_ON_DEVICE)
    len = snprintf(buf, size, "%s(%s)", k, sh);
  else if (m.kind == STRATA_MEM_HOSTED && m.type == STRATA_MEMTYPE_CHANGED_ON_DEVICES)
    len = snprintf(buf, size, "%s(%s(%s))", k, types[m.type], sh);
  else if (m.kind == STRATA_MEM_HOSTED && m.type != STRATA_MEMTYPE_ANY)
    len = snprintf(buf, size, "%s(%s)", k, types[m.type]);
  else
    len = snprintf(buf, size, "%s", k);
  return len;
}

int strata_memory_mode_parse(const char *text, strata_memory_mode *mode)
{
  strata__clear_error();
  if (!text || !mode)
    return STRATA_EINVAL;
  /* every valid mode, formatted: the names are few and format is the spec */
  for (int k = STRATA_MEM_UNDECIDED; k <= STRATA_MEM_HOSTED; k++)
    for (int t = STRATA_MEMTYPE_ANY; t <= STRATA_MEMTYPE_VOLATILE; t++)
      for (int s = STRATA_SHARING_UNSET; s <= STRATA_SHARING_SHARED; s++) {
        strata_memory_mode m = {(strata_memory_kind)k, (strata_memory_type)t, (strata_sharing)s};
        char name[64];
        if (strata_memory_mode_format(m, name, sizeof name) > 0 && strcmp(name, text) == 0) {
          *mode = m;
          return 0;
        }
      }
  return STRATA_EINVAL;
}

const char *strata__mem_name(unsigned mask, char *buf, size_t size)
{
  strata_memory_mode_format(mode_of_mask(mask), buf, size);
  return buf;
}

int strata__graph_find(const strata_graph *g, const char *name)
{
  if (!g || !name)
    return STRATA_EINVAL;
  for (int i = 0; i < g->n; i++)
    if (g->nodes[i].name && strcmp(g->nodes[i].name, name) == 0)
      return i;
  for (int o = 0; o < g->noutputs; o++)
    if (strcmp(g->output_names[o], name) == 0)
      return g->outputs[o];
  return strata__fail(STRATA_EINVAL, "the graph has no node or output named '%s'", name);
}

/* Refine node i's choices with `mask`; `why` explains the constraint. */
static int refine(strata_graph *g, int i, unsigned mask, const char *why)
{
  unsigned now = g->mem[i], next = now & mask;
  if (next) {
    g->mem[i] = (unsigned char)next;
    return 0;
  }
  char a[64], b[64];
  const char *name = g->nodes[i].name;
  if (now == STRATA__MEM_VIRTUAL || mask == STRATA__MEM_VIRTUAL)
    return strata__fail(STRATA_EINVAL, "node '%s' is %s and cannot be %s%s", name,
                        strata__mem_name(now, a, sizeof a), strata__mem_name(mask, b, sizeof b),
                        why);
  return strata__fail(STRATA_EINVAL, "node '%s': memory mode %s is inconsistent with %s%s", name,
                      strata__mem_name(mask, b, sizeof b), strata__mem_name(now, a, sizeof a), why);
}

int strata_node_set_memory_mode(strata_graph *g, const char *node, strata_memory_mode mode)
{
  strata__clear_error();
  unsigned mask;
  if (strata__mem_mask(mode, &mask))
    return strata__fail(STRATA_EINVAL, "invalid memory mode {%d, %d, %d}", (int)mode.kind,
                        (int)mode.type, (int)mode.sharing);
  int i = strata__graph_find(g, node);
  return i < 0 ? i : refine(g, i, mask, "");
}

int strata_node_memory_mode(const strata_graph *g, const char *node, strata_memory_mode *mode)
{
  strata__clear_error();
  if (!mode)
    return STRATA_EINVAL;
  int i = strata__graph_find(g, node);
  if (i < 0)
    return i;
  *mode = mode_of_mask(g->mem[i]);
  return 0;
}

/* ---- compilation: defaults and fused groups ---- */

struct analysis {
  int *nreads; /* operand slots reading each node */
  int *reader; /* the last reader of each node */
  int *is_output;
  unsigned char *allowed; /* choices a stored node had before its decision */
};

/* The first choice of `prefs` that `mask` allows. */
static unsigned pick(unsigned mask, const unsigned *prefs, int n)
{
  for (int k = 0; k < n; k++)
    if (mask & prefs[k])
      return prefs[k];
  return 0;
}

/* Storage preferences of intermediates: Local first when small (its
 * fallback, when no sequence can hold it, is the rest of the list). */
static const unsigned small_prefs[] = {STRATA__MEM_LOCAL,       STRATA__MEM_DEVICE_SX,
                                       STRATA__MEM_DEVICE_PS,   STRATA__MEM_HOST_COD_SX,
                                       STRATA__MEM_HOST_COD_PS, STRATA__MEM_HOST_VOLATILE,
                                       STRATA__MEM_HOST_CONST};
static const unsigned large_prefs[] = {STRATA__MEM_DEVICE_SX,   STRATA__MEM_DEVICE_PS,
                                       STRATA__MEM_LOCAL,       STRATA__MEM_HOST_COD_SX,
                                       STRATA__MEM_HOST_COD_PS, STRATA__MEM_HOST_VOLATILE,
                                       STRATA__MEM_HOST_CONST};

/* Node i as a storage choice, when it is not Virtual. */
static int decide_stored(strata_graph *g, int i, const struct analysis *an)
{
  static const unsigned host_in[] = {STRATA__MEM_HOST_VOLATILE, STRATA__MEM_HOST_CONST,
                                     STRATA__MEM_HOST_COD_SX, STRATA__MEM_HOST_COD_PS};
  static const unsigned host_out[] = {STRATA__MEM_HOST_COD_SX, STRATA__MEM_HOST_COD_PS,
                                      STRATA__MEM_HOST_VOLATILE, STRATA__MEM_HOST_CONST};
  const strata__node *nd = &g->nodes[i];
  int ret = refine(g, i, STRATA__MEM_ANY & ~STRATA__MEM_VIRTUAL, "");
  if (ret)
    return ret;
  unsigned mask = g->mem[i], choice;
  an->allowed[i] = (unsigned char)mask;
  if (nd->op == STRATA__OP_INPUT) {
    if ((ret = refine(g, i, STRATA__MEM_HOST, ": graph inputs are application arrays")))
      return ret;
    choice = pick(g->mem[i], host_in, 4);
  } else if (an->is_output[i]) {
    if ((ret = refine(g, i, STRATA__MEM_HOST, ": graph outputs are returned as arrays")))
      return ret;
    choice = pick(g->mem[i], host_out, 4);
  } else if (g->plan.constant[i] && (mask & STRATA__MEM_HOST_CONST)) {
    choice = STRATA__MEM_HOST_CONST;
  } else {
    int64_t n = strata__meta_nelems(&nd->m);
    int is_small = n >= 0 && n * (int64_t)strata_dtype_size(nd->m.dtype) <= LOCAL_MAX_BYTES;
    choice = pick(mask, is_small ? small_prefs : large_prefs, 7);
  }
  g->mem[i] = (unsigned char)choice;
  return 0;
}

/* Whether node i can join the group of its only reader r: elementwise
 * both, read once, and the group still fits in one task (buffers) and in
 * one program (members). */
static int joins_reader_group(const strata_graph *g, int i, const struct analysis *an)
{
  const strata__node *nd = &g->nodes[i];
  if (nd->op != STRATA__OP_EW || an->nreads[i] != 1 || an->is_output[i])
    return 0;
  int gi = g->plan.group_of[an->reader[i]];
  if (gi < 0)
    return 0;
  const strata__group *G = &g->plan.groups[gi];
  if (G->nmembers >= STRATA__FUSED_MAXMEMBERS)
    return 0;
  int nleaves = G->nleaves - 1; /* i stops being a leaf */
  for (int k = 0; k < nd->nin; k++) {
    int seen = 0;
    for (int l = 0; l < G->nleaves && !seen; l++)
      seen = G->leaves[l] == nd->in[k];
    for (int q = 0; q < k && !seen; q++)
      seen = nd->in[q] == nd->in[k];
    nleaves += !seen;
  }
  return nleaves + 1 <= STARPU_NMAXBUFS;
}

static void add_leaf(strata__group *G, int node)
{
  for (int l = 0; l < G->nleaves; l++)
    if (G->leaves[l] == node)
      return;
  G->leaves[G->nleaves++] = node;
}

static void remove_leaf(strata__group *G, int node)
{
  for (int l = 0; l < G->nleaves; l++)
    if (G->leaves[l] == node) {
      G->leaves[l] = G->leaves[--G->nleaves];
      return;
    }
}

/* Node i enters group gi (as its root when the group is new). */
static int join(strata_graph *g, int gi, int i)
{
  strata__group *G = &g->plan.groups[gi];
  int *m = realloc(G->members, ((size_t)G->nmembers + 1) * sizeof *m);
  if (!m)
    return STRATA_ENOMEM;
  G->members = m;
  /* reverse topological discovery: prepend to keep members in order */
  memmove(m + 1, m, (size_t)G->nmembers * sizeof *m);
  m[0] = i;
  G->nmembers++;
  remove_leaf(G, i);
  for (int k = 0; k < g->nodes[i].nin; k++)
    add_leaf(G, g->nodes[i].in[k]);
  g->plan.group_of[i] = gi;
  return 0;
}

static int analyse(const strata_graph *g, struct analysis *an)
{
  size_t n = (size_t)g->n + 1;
  an->nreads = calloc(n, sizeof(int));
  an->reader = calloc(n, sizeof(int));
  an->is_output = calloc(n, sizeof(int));
  an->allowed = calloc(n, 1);
  if (!an->nreads || !an->reader || !an->is_output || !an->allowed)
    return STRATA_ENOMEM;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nin; k++) {
      an->nreads[g->nodes[i].in[k]]++;
      an->reader[g->nodes[i].in[k]] = i;
    }
  for (int o = 0; o < g->noutputs; o++)
    an->is_output[g->outputs[o]] = 1;
  return 0;
}

static int alloc_plan(strata_graph *g)
{
  strata__plan *p = &g->plan;
  size_t n = (size_t)g->n + 1;
  p->n = g->n;
  p->group_of = malloc(n * sizeof *p->group_of);
  p->groups = calloc(n, sizeof *p->groups);
  p->constant = calloc(n, sizeof *p->constant);
  p->kept = calloc(n, sizeof *p->kept);
  p->hosted = calloc(n, sizeof *p->hosted);
  p->computed = calloc(n, sizeof *p->computed);
  if (!p->group_of || !p->groups || !p->constant || !p->kept || !p->hosted || !p->computed)
    return STRATA_ENOMEM;
  for (int i = 0; i < g->n; i++) {
    const strata__node *nd = &g->nodes[i];
    p->group_of[i] = -1;
    p->constant[i] = nd->op != STRATA__OP_INPUT;
    for (int k = 0; k < nd->nin; k++)
      p->constant[i] &= p->constant[nd->in[k]];
  }
  return 0;
}

/* Decide modes from the last node to the first, so that a node's reader
 * (and its group) is known when the node is considered for Virtual. */
static int decide(strata_graph *g, const struct analysis *an)
{
  strata__plan *p = &g->plan;
  for (int i = g->n - 1; i >= 0; i--) {
    const strata__node *nd = &g->nodes[i];
    int ret;
    if (an->nreads[i] > 1 &&
        (ret = refine(g, i, STRATA__MEM_ANY & ~STRATA__MEM_VIRTUAL, ": it is read more than once")))
      return ret;
    if ((g->mem[i] & STRATA__MEM_VIRTUAL) && joins_reader_group(g, i, an)) {
      g->mem[i] = STRATA__MEM_VIRTUAL;
      if ((ret = join(g, p->group_of[an->reader[i]], i)))
        return ret;
      continue;
    }
    if (g->mem[i] == STRATA__MEM_VIRTUAL)
      return strata__fail(STRATA_EINVAL,
                          "node '%s' cannot be Virtual: only an elementwise node read once by "
                          "an elementwise node, not an output, is computed inline",
                          nd->name);
    if ((ret = decide_stored(g, i, an)))
      return ret;
    if (nd->op == STRATA__OP_EW && (ret = join(g, p->ngroups++, i)))
      return ret;
  }
  /* groups of a lone root run as plain tasks; the others are numbered in
   * topological order (they were found from the last node) */
  strata__group *ordered = calloc((size_t)p->ngroups + 1, sizeof *ordered);
  if (!ordered)
    return STRATA_ENOMEM;
  int kept = 0;
  for (int gi = p->ngroups - 1; gi >= 0; gi--) {
    strata__group *G = &p->groups[gi];
    G->root = G->members[G->nmembers - 1];
    if (G->nmembers < 2) {
      p->group_of[G->root] = -1;
      free(G->members);
      continue;
    }
    for (int m = 0; m < G->nmembers; m++)
      p->group_of[G->members[m]] = kept;
    ordered[kept++] = *G;
  }
  free(p->groups);
  p->groups = ordered;
  p->ngroups = kept;
  return 0;
}

/* ---- sequences: a Local node and its readers in one task ---- */

/* The node whose task computes node i: a Virtual node's group root. */
static int unit_of(const strata_graph *g, int i)
{
  int gi = g->plan.group_of[i];
  return g->mem[i] == STRATA__MEM_VIRTUAL ? g->plan.groups[gi].root : i;
}

static int find(int *parent, int i)
{
  while (parent[i] != i)
    i = parent[i] = parent[parent[i]];
  return i;
}

/* Order the sets of `parent` (each set one task or sequence) so that every
 * set comes after the sets it reads: into order[], each set's nodes
 * together, in increasing index (Kahn's algorithm on the sets, O(n + e)).
 * Returns 0, 1 when the sets depend on each other both ways (one task
 * would wait for itself), or STRATA_ENOMEM. */
static int order_sets(const strata_graph *g, int *parent, int *order)
{
  int n = g->n, e = 0;
  for (int i = 0; i < n; i++)
    e += g->nodes[i].nin;
  size_t m = (size_t)n + 1;
  int *rep = malloc(m * sizeof *rep), *indeg = calloc(m, sizeof *indeg);
  int *queue = malloc(m * sizeof *queue), *first = calloc(m + 1, sizeof *first);
  int *members = malloc(m * sizeof *members), *rfirst = calloc(m + 1, sizeof *rfirst);
  int *readers = malloc(((size_t)e + 1) * sizeof *readers);
  int ret = rep && indeg && queue && first && members && rfirst && readers ? 0 : STRATA_ENOMEM;
  for (int i = 0; !ret && i < n; i++) {
    rep[i] = find(parent, i);
    first[rep[i] + 1]++;
    for (int k = 0; k < g->nodes[i].nin; k++)
      rfirst[g->nodes[i].in[k] + 1]++;
  }
  for (int i = 0; !ret && i < n; i++) {
    first[i + 1] += first[i];
    rfirst[i + 1] += rfirst[i];
  }
  for (int i = 0, *fill = queue; !ret && i < n; i++) /* queue as the fill cursor */
    fill[i] = first[i];
  for (int i = 0; !ret && i < n; i++)
    members[queue[rep[i]]++] = i;
  for (int i = 0, *fill = queue; !ret && i < n; i++)
    fill[i] = rfirst[i];
  for (int i = 0; !ret && i < n; i++)
    for (int k = 0; k < g->nodes[i].nin; k++) {
      int j = g->nodes[i].in[k];
      readers[queue[j]++] = i;
      indeg[rep[i]] += rep[j] != rep[i];
    }
  int head = 0, tail = 0, placed = 0;
  for (int i = 0; !ret && i < n; i++)
    if (rep[i] == i && indeg[i] == 0)
      queue[tail++] = i;
  while (!ret && head < tail) {
    int r = queue[head++];
    for (int a = first[r]; a < first[r + 1]; a++) {
      int j = members[a];
      order[placed++] = j;
      for (int b = rfirst[j]; b < rfirst[j + 1]; b++) {
        int ri = rep[readers[b]];
        if (ri != r && --indeg[ri] == 0)
          queue[tail++] = ri;
      }
    }
  }
  if (!ret && placed < n)
    ret = 1;
  free(rep);
  free(indeg);
  free(queue);
  free(first);
  free(members);
  free(rfirst);
  free(readers);
  return ret;
}

/* Handles a set's task touches: each unit's own and its inputs'. */
static int set_buffers(const strata_graph *g, int *parent, int r, int *seen)
{
  int count = 0;
  for (int i = 0; i < g->n; i++)
    seen[i] = 0;
  for (int u = 0; u < g->n; u++) {
    if (find(parent, u) != r || g->mem[u] == STRATA__MEM_VIRTUAL)
      continue;
    const int *in;
    int nin = strata__task_inputs(g->nodes, u, g, &in);
    count += !seen[u];
    seen[u] = 1;
    for (int k = 0; k < nin; k++) {
      count += !seen[in[k]];
      seen[in[k]] = 1;
    }
  }
  return count;
}

/* Why node i cannot share one task with its readers, or NULL; its readers'
 * tasks are merged into its own in `parent`. *ret: order_sets' result. */
static const char *why_not_scratch(const strata_graph *g, int i, int *parent, int *order, int *work,
                                   int *ret)
{
  if (g->nodes[i].op == STRATA__OP_NONZERO) /* inputs are never Local: they are Hosted */
    return "its size is known only after it is computed";
  for (int r = 0; r < g->n; r++)
    for (int k = 0; k < g->nodes[r].nin; k++)
      if (g->nodes[r].in[k] == i) {
        if (g->nodes[r].op == STRATA__OP_NONZERO)
          return "flatnonzero reads it, and waits for its result";
        parent[find(parent, unit_of(g, r))] = find(parent, unit_of(g, i));
      }
  if ((*ret = order_sets(g, parent, order)) != 0)
    return *ret > 0 ? "a task outside its readers lies between them" : "out of memory";
  if (set_buffers(g, parent, find(parent, unit_of(g, i)), work) > STARPU_NMAXBUFS)
    return "its readers' task would use more than STARPU_NMAXBUFS handles";
  return NULL;
}

/* Each Local node runs with its readers as one task (a sequence) where it
 * is a STARPU_SCRATCH buffer. When that is impossible the node becomes
 * On_device (or another choice it allows); a user's Local is an error. */
static int plan_sequences(strata_graph *g, const struct analysis *an)
{
  strata__plan *p = &g->plan;
  size_t n = (size_t)g->n + 1;
  int *parent = malloc(n * sizeof *parent), *saved = malloc(n * sizeof *saved);
  int *work = malloc(n * sizeof *work), *units = calloc(n, sizeof *units);
  p->seq_of = malloc(n * sizeof *p->seq_of);
  p->order = malloc(n * sizeof *p->order);
  int ret = parent && saved && work && units && p->seq_of && p->order ? 0 : STRATA_ENOMEM;
  for (int i = 0; !ret && i < g->n; i++) /* a fused group is one task already */
    parent[i] = unit_of(g, i);
  /* readers first: a Local node read by a Local node's readers joins them */
  for (int i = g->n - 1; !ret && i >= 0; i--) {
    if (g->mem[i] != STRATA__MEM_LOCAL)
      continue;
    memcpy(saved, parent, (size_t)g->n * sizeof *parent);
    int status = 0;
    const char *why = why_not_scratch(g, i, parent, p->order, work, &status);
    if (!why)
      continue;
    if (status < 0) {
      ret = status;
      break;
    }
    memcpy(parent, saved, (size_t)g->n * sizeof *parent);
    unsigned choice = pick(an->allowed[i], small_prefs + 1, 6);
    if (choice)
      g->mem[i] = (unsigned char)choice;
    else
      ret = strata__fail(STRATA_EINVAL, "node '%s' cannot be Local: %s", g->nodes[i].name, why);
  }
  if (!ret && (ret = order_sets(g, parent, p->order)) > 0)
    ret = strata__fail(STRATA_EINVAL, "the graph's tasks depend on each other in a cycle");
  for (int i = 0; !ret && i < g->n; i++)
    units[find(parent, i)] += g->mem[i] != STRATA__MEM_VIRTUAL;
  for (int i = 0; !ret && i < g->n; i++)
    p->seq_of[i] = units[find(parent, i)] > 1 ? find(parent, i) : -1;
  free(parent);
  free(saved);
  free(work);
  free(units);
  return ret;
}

int strata_graph_compile(strata_graph *g)
{
  strata__clear_error();
  if (!g)
    return STRATA_EINVAL;
  if (g->plan.compiled)
    return 0;
  unsigned char *saved = malloc((size_t)g->n + 1);
  struct analysis an = {0};
  int ret = saved ? 0 : STRATA_ENOMEM;
  if (!ret) {
    memcpy(saved, g->mem, (size_t)g->n);
    ret = alloc_plan(g);
  }
  if (!ret)
    ret = analyse(g, &an);
  if (!ret)
    ret = decide(g, &an);
  if (!ret)
    ret = plan_sequences(g, &an);
  if (ret) { /* leave the graph as it was */
    if (saved)
      memcpy(g->mem, saved, (size_t)g->n);
    strata__plan_free(&g->plan);
  } else {
    g->plan.compiled = 1;
  }
  free(saved);
  free(an.nreads);
  free(an.reader);
  free(an.is_output);
  free(an.allowed);
  return ret;
}

void strata__plan_free(strata__plan *p)
{
  for (int gi = 0; p->groups && gi < p->ngroups; gi++) {
    free(p->groups[gi].members);
    free(p->groups[gi].kernel_metas);
  }
  /* after strata_finalize() the arrays and handles are gone already */
  for (int i = 0; p->kept && strata__check_ready() == 0 && i < p->n; i++) {
    if (p->hosted[i])
      strata_array_destroy(p->hosted[i]);
    else
      strata__slot_unregister_submit(&p->kept[i]);
  }
  free(p->group_of);
  free(p->groups);
  free(p->constant);
  free(p->seq_of);
  free(p->order);
  free(p->kept);
  free(p->hosted);
  free(p->computed);
  memset(p, 0, sizeof *p);
}
