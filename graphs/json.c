/* Graph files: JSON (cJSON) with schema "strata-graph" version 1, described
 * in docs/deferred.md, and Graphviz DOT. Reading checks everything: a file
 * is untrusted input. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"

#define SCHEMA  "strata-graph"
#define VERSION 1

/* ---- writing ---- */

static cJSON *int_list(const int64_t *v, int n)
{
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; a && i < n; i++)
    cJSON_AddItemToArray(a, v[i] == STRATA_NONE ? cJSON_CreateNull()
                                                : cJSON_CreateNumber((double)v[i]));
  return a;
}

/* Attributes of a node's operation (the members read back by read_params). */
static void write_params(cJSON *o, const strata__node *nd)
{
  const strata__params *p = &nd->p;
  switch (nd->op) {
  case STRATA__OP_EW:
    if (p->fn == STRATA__FN_COPY)
      cJSON_AddStringToObject(o, "to", strata_dtype_name(p->dtype));
    if (p->scalar_at >= 0) {
      cJSON_AddNumberToObject(o, "scalar", p->scalar);
      cJSON_AddStringToObject(o, "scalar_kind", strata_dtype_name(p->scalar_kind));
      cJSON_AddBoolToObject(o, "scalar_first", p->scalar_at == 0);
    }
    break;
  case STRATA__OP_FILL:
    cJSON_AddStringToObject(o, "to", strata_dtype_name(p->dtype));
    if (p->flag) {
      cJSON_AddNumberToObject(o, "start", p->scalar);
      cJSON_AddNumberToObject(o, "stop", p->stop);
      cJSON_AddNumberToObject(o, "step", p->step);
    } else {
      cJSON_AddNumberToObject(o, "value", p->scalar);
      cJSON_AddItemToObject(o, "dims", int_list(p->list, p->nlist));
    }
    break;
  case STRATA__OP_RESHAPE:
  case STRATA__OP_BROADCAST: cJSON_AddItemToObject(o, "dims", int_list(p->list, p->nlist)); break;
  case STRATA__OP_INDEX: {
    cJSON *items = cJSON_AddArrayToObject(o, "items");
    for (int k = 0; items && k < p->nlist; k++)
      cJSON_AddItemToArray(items, int_list(&p->list[4 * k], 4));
    break;
  }
  case STRATA__OP_TRANSPOSE: cJSON_AddItemToObject(o, "axes", int_list(p->list, p->nlist)); break;
  case STRATA__OP_REDUCE:
    cJSON_AddItemToObject(
        o, "axes", p->flag & STRATA__ALL_AXES ? cJSON_CreateNull() : int_list(p->list, p->nlist));
    cJSON_AddBoolToObject(o, "keepdims", p->flag & STRATA__KEEPDIMS);
    break;
  case STRATA__OP_CONCAT: cJSON_AddNumberToObject(o, "axis", (double)p->axis); break;
  case STRATA__OP_TAKE:
    cJSON_AddNumberToObject(o, "axis", (double)p->axis);
    cJSON_AddStringToObject(o, "mode", p->flag == STRATA_TAKE_CLIP ? "clip" : "wrap");
    break;
  case STRATA__OP_TRI: cJSON_AddNumberToObject(o, "k", (double)p->axis); break;
  default: break;
  }
}

static cJSON *graph_json(const strata_graph *g)
{
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", SCHEMA);
  cJSON_AddNumberToObject(root, "version", VERSION);
  cJSON *inputs = cJSON_AddArrayToObject(root, "inputs");
  for (int k = 0; inputs && k < g->ninputs; k++)
    cJSON_AddItemToArray(inputs, cJSON_CreateNumber(g->inputs[k]));
  cJSON *outputs = cJSON_AddArrayToObject(root, "outputs");
  for (int o = 0; outputs && o < g->noutputs; o++) {
    cJSON *out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "name", g->output_names[o]);
    cJSON_AddNumberToObject(out, "node", g->outputs[o]);
    cJSON_AddItemToArray(outputs, out);
  }
  cJSON *nodes = cJSON_AddArrayToObject(root, "nodes");
  for (int i = 0; nodes && i < g->n; i++) {
    const strata__node *nd = &g->nodes[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", nd->name);
    cJSON_AddStringToObject(o, "op", strata__op_name(nd));
    cJSON *in = cJSON_AddArrayToObject(o, "inputs");
    for (int k = 0; in && k < nd->nin; k++)
      cJSON_AddItemToArray(in, cJSON_CreateNumber(nd->in[k]));
    cJSON_AddStringToObject(o, "dtype", strata_dtype_name(nd->m.dtype));
    cJSON_AddItemToObject(o, "shape", int_list(nd->m.shape, nd->m.ndim));
    write_params(o, nd);
    if (g->mem[i] != STRATA__MEM_ANY) {
      char mode[64];
      cJSON_AddStringToObject(o, "memory_mode", strata__mem_name(g->mem[i], mode, sizeof mode));
    }
    cJSON_AddItemToArray(nodes, o);
  }
  return root;
}

int strata_graph_to_json(const strata_graph *g, char **json)
{
  strata__clear_error();
  if (!g || !json)
    return STRATA_EINVAL;
  cJSON *root = graph_json(g);
  *json = root ? cJSON_Print(root) : NULL;
  cJSON_Delete(root);
  return *json ? 0 : STRATA_ENOMEM;
}

int strata_graph_save(const strata_graph *g, const char *path)
{
  strata__clear_error();
  char *text;
  if (!path)
    return STRATA_EINVAL;
  int ret = strata_graph_to_json(g, &text);
  if (ret)
    return ret;
  strata_output *out;
  if ((ret = strata_output_begin(path, &out))) {
    free(text);
    return ret;
  }
  FILE *f = strata_output_stream(out);
  if (f) {
    fputs(text, f);
    fputc('\n', f);
  }
  free(text);
  return strata_output_finish(out, f);
}

/* ---- reading ---- */

/* An integer-valued JSON number in [lo, hi]. */
static int get_int(const cJSON *v, int64_t lo, int64_t hi, int64_t *out)
{
  if (!cJSON_IsNumber(v))
    return 0;
  double d = v->valuedouble;
  if (!(d >= (double)lo && d <= (double)hi) || d != floor(d))
    return 0;
  *out = (int64_t)d;
  return 1;
}

static int get_double(const cJSON *o, const char *key, double *out)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v))
    return 0;
  *out = v->valuedouble;
  return 1;
}

/* A list of at most `max` integers (null: STRATA_NONE when allowed). */
static int get_list(const cJSON *a, int max, int nulls, int64_t lo, int64_t hi, int64_t *out,
                    int32_t *n)
{
  if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) > max)
    return 0;
  int k = 0;
  const cJSON *v;
  cJSON_ArrayForEach(v, a)
  {
    if (nulls && cJSON_IsNull(v))
      out[k] = STRATA_NONE;
    else if (!get_int(v, lo, hi, &out[k]))
      return 0;
    k++;
  }
  *n = k;
  return 1;
}

static int get_dtype(const cJSON *o, const char *key, int32_t *out)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  for (int t = 0; cJSON_IsString(v) && t < STRATA_NDTYPES; t++)
    if (strcmp(v->valuestring, strata_dtype_name(t)) == 0) {
      *out = t;
      return 1;
    }
  return 0;
}

#define LIMIT ((int64_t)1 << 53)

static int read_items(const cJSON *items, strata__params *p)
{
  if (!cJSON_IsArray(items) || cJSON_GetArraySize(items) > STRATA_MAX_DIMS)
    return 0;
  int k = 0;
  const cJSON *item;
  cJSON_ArrayForEach(item, items)
  {
    int32_t n;
    int64_t *v = &p->list[4 * k++];
    if (!get_list(item, 4, 1, -LIMIT, LIMIT, v, &n) || n != 4 || (v[3] != 0 && v[3] != 1))
      return 0;
  }
  p->nlist = k;
  return 1;
}

static int read_params(const cJSON *o, strata__node *nd)
{
  strata__params *p = &nd->p;
  const cJSON *v;
  int64_t x;
  switch (nd->op) {
  case STRATA__OP_EW:
    if (p->fn == STRATA__FN_COPY && !get_dtype(o, "to", &p->dtype))
      return 0;
    if (!cJSON_GetObjectItemCaseSensitive(o, "scalar"))
      return 1;
    v = cJSON_GetObjectItemCaseSensitive(o, "scalar_first");
    if (!get_double(o, "scalar", &p->scalar) || !get_dtype(o, "scalar_kind", &p->scalar_kind) ||
        !cJSON_IsBool(v))
      return 0;
    p->scalar_at = cJSON_IsTrue(v) ? 0 : 1;
    return 1;
  case STRATA__OP_FILL:
    if (!get_dtype(o, "to", &p->dtype))
      return 0;
    if (p->flag)
      return get_double(o, "start", &p->scalar) && get_double(o, "stop", &p->stop) &&
             get_double(o, "step", &p->step);
    return get_double(o, "value", &p->scalar) &&
           get_list(cJSON_GetObjectItemCaseSensitive(o, "dims"), STRATA_MAX_DIMS, 0, 0, LIMIT,
                    p->list, &p->nlist);
  case STRATA__OP_RESHAPE:
  case STRATA__OP_BROADCAST:
    return get_list(cJSON_GetObjectItemCaseSensitive(o, "dims"), STRATA_MAX_DIMS, 0, -1, LIMIT,
                    p->list, &p->nlist);
  case STRATA__OP_INDEX: return read_items(cJSON_GetObjectItemCaseSensitive(o, "items"), p);
  case STRATA__OP_TRANSPOSE:
    return get_list(cJSON_GetObjectItemCaseSensitive(o, "axes"), STRATA_MAX_DIMS, 0,
                    -STRATA_MAX_DIMS, STRATA_MAX_DIMS, p->list, &p->nlist);
  case STRATA__OP_REDUCE:
    v = cJSON_GetObjectItemCaseSensitive(o, "keepdims");
    if (!cJSON_IsBool(v))
      return 0;
    p->flag = cJSON_IsTrue(v) ? STRATA__KEEPDIMS : 0;
    v = cJSON_GetObjectItemCaseSensitive(o, "axes");
    if (cJSON_IsNull(v)) {
      p->flag |= STRATA__ALL_AXES;
      return 1;
    }
    return get_list(v, STRATA_MAX_DIMS, 0, -STRATA_MAX_DIMS, STRATA_MAX_DIMS, p->list, &p->nlist);
  case STRATA__OP_CONCAT:
  case STRATA__OP_TAKE:
    if (!get_int(cJSON_GetObjectItemCaseSensitive(o, "axis"), -STRATA_MAX_DIMS, STRATA_MAX_DIMS,
                 &p->axis))
      return 0;
    if (nd->op == STRATA__OP_CONCAT)
      return 1;
    v = cJSON_GetObjectItemCaseSensitive(o, "mode");
    if (!cJSON_IsString(v) || (strcmp(v->valuestring, "wrap") && strcmp(v->valuestring, "clip")))
      return 0;
    p->flag = strcmp(v->valuestring, "clip") == 0 ? STRATA_TAKE_CLIP : STRATA_TAKE_WRAP;
    return 1;
  case STRATA__OP_TRI:
    if (!get_int(cJSON_GetObjectItemCaseSensitive(o, "k"), -LIMIT, LIMIT, &x))
      return 0;
    p->axis = x;
    return 1;
  default: return 1;
  }
}

static int read_node(const cJSON *o, int i, strata__node *nd)
{
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
  const cJSON *op = cJSON_GetObjectItemCaseSensitive(o, "op");
  const cJSON *in = cJSON_GetObjectItemCaseSensitive(o, "inputs");
  memset(nd, 0, sizeof *nd);
  nd->p.scalar_at = -1;
  if (!cJSON_IsString(name) || !cJSON_IsString(op) || !cJSON_IsArray(in))
    return strata__fail(STRATA_EIO, "node %d: name, op and inputs are required", i);
  if (!(nd->name = strdup(name->valuestring)))
    return STRATA_ENOMEM;
  if (strata__op_from_name(op->valuestring, nd) != 0)
    return strata__fail(STRATA_EIO, "node '%s': unknown operation", nd->name);
  int nin = cJSON_GetArraySize(in);
  if (!(nd->in = malloc(((size_t)nin + 1) * sizeof *nd->in)))
    return STRATA_ENOMEM;
  const cJSON *v;
  cJSON_ArrayForEach(v, in)
  {
    int64_t j;
    if (!get_int(v, 0, i - 1, &j))
      return strata__fail(STRATA_EIO, "node '%s': inputs must be earlier nodes", nd->name);
    nd->in[nd->nin++] = (int)j;
  }
  int32_t dtype, ndim;
  if (!get_dtype(o, "dtype", &dtype) ||
      !get_list(cJSON_GetObjectItemCaseSensitive(o, "shape"), STRATA_MAX_DIMS, 0, -1, LIMIT,
                nd->m.shape, &ndim))
    return strata__fail(STRATA_EIO, "node '%s': invalid dtype or shape", nd->name);
  nd->m.dtype = (strata_dtype)dtype;
  nd->m.ndim = ndim;
  if (!read_params(o, nd))
    return strata__fail(STRATA_EIO, "node '%s': invalid or missing attributes of %s", nd->name,
                        op->valuestring);
  return 0;
}

/* The node's optional "memory_mode" (absent: Undecided). */
static int read_memory_mode(const cJSON *o, strata_graph *g, int i)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "memory_mode");
  strata_memory_mode mode;
  unsigned mask;
  if (!v)
    return 0;
  if (!cJSON_IsString(v) || strata_memory_mode_parse(v->valuestring, &mode) ||
      strata__mem_mask(mode, &mask))
    return strata__fail(STRATA_EIO, "node '%s': invalid memory_mode", g->nodes[i].name);
  g->mem[i] = (unsigned char)mask;
  return 0;
}

static int read_graph(const cJSON *root, strata_graph **out)
{
  const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
  const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(root, "nodes");
  const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(root, "inputs");
  const cJSON *outputs = cJSON_GetObjectItemCaseSensitive(root, "outputs");
  int64_t version;
  if (!cJSON_IsString(format) || strcmp(format->valuestring, SCHEMA) != 0)
    return strata__fail(STRATA_EIO, "not a %s document", SCHEMA);
  if (!get_int(cJSON_GetObjectItemCaseSensitive(root, "version"), 0, 1 << 30, &version) ||
      version != VERSION)
    return strata__fail(STRATA_EIO, "unsupported version (this reader knows %d)", VERSION);
  if (!cJSON_IsArray(nodes) || !cJSON_IsArray(inputs) || !cJSON_IsArray(outputs))
    return strata__fail(STRATA_EIO, "nodes, inputs and outputs must be arrays");
  int n = cJSON_GetArraySize(nodes);
  strata_graph *g = strata__graph_alloc(n, cJSON_GetArraySize(inputs), cJSON_GetArraySize(outputs));
  if (!g)
    return STRATA_ENOMEM;
  int ret = 0, k = 0;
  const cJSON *v;
  cJSON_ArrayForEach(v, nodes)
  {
    if ((ret = read_node(v, k, &g->nodes[k])) || (ret = read_memory_mode(v, g, k)))
      break;
    k++;
  }
  k = 0;
  cJSON_ArrayForEach(v, inputs)
  {
    int64_t j = 0;
    if (!ret && !get_int(v, 0, n - 1, &j))
      ret = strata__fail(STRATA_EIO, "inputs must be node indices");
    g->inputs[k++] = ret ? 0 : (int)j;
  }
  k = 0;
  cJSON_ArrayForEach(v, outputs)
  {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(v, "name");
    int64_t j = 0;
    if (!ret && (!cJSON_IsString(name) ||
                 !get_int(cJSON_GetObjectItemCaseSensitive(v, "node"), 0, n - 1, &j)))
      ret = strata__fail(STRATA_EIO, "outputs must have a name and a node index");
    if (!ret && !(g->output_names[k] = strdup(name->valuestring)))
      ret = STRATA_ENOMEM;
    g->outputs[k++] = ret ? 0 : (int)j;
  }
  if (!ret)
    ret = strata__graph_validate(g);
  if (ret)
    strata_graph_destroy(g);
  else
    *out = g;
  return ret;
}

int strata_graph_from_json(const char *json, size_t len, strata_graph **graph)
{
  strata__clear_error();
  if (!json || !graph)
    return STRATA_EINVAL;
  *graph = NULL;
  cJSON *root = cJSON_ParseWithLength(json, len);
  if (!root)
    return strata__fail(STRATA_EIO, "malformed JSON");
  int ret = read_graph(root, graph);
  cJSON_Delete(root);
  return ret;
}

int strata_graph_load(const char *path, strata_graph **graph)
{
  strata__clear_error();
  if (!path || !graph)
    return STRATA_EINVAL;
  *graph = NULL;
  FILE *f = fopen(path, "rb");
  if (!f)
    return strata__fail(STRATA_EIO, "cannot open %s", path);
  char *text = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len > STRATA_GRAPH_MAX_BYTES) {
      free(text);
      fclose(f);
      return strata__fail(STRATA_EIO, "%s is larger than %d MiB, the most a graph file may hold",
                          path, STRATA_GRAPH_MAX_BYTES >> 20);
    }
    if (len == cap) {
      char *more = realloc(text, cap = cap ? 2 * cap : 65536);
      if (!more) {
        free(text);
        fclose(f);
        return STRATA_ENOMEM;
      }
      text = more;
    }
    size_t got = fread(text + len, 1, cap - len, f);
    len += got;
    if (got == 0)
      break;
  }
  int bad = ferror(f);
  fclose(f);
  int ret = bad ? strata__fail(STRATA_EIO, "cannot read %s", path)
                : strata_graph_from_json(text, len, graph);
  free(text);
  return ret;
}

/* ---- DOT ---- */

/* A label-safe copy of s into buf: quotes and backslashes escaped. */
static const char *escaped(const char *s, char *buf, size_t size)
{
  size_t k = 0;
  for (; *s && k + 3 < size; s++) {
    if (*s == '"' || *s == '\\')
      buf[k++] = '\\';
    buf[k++] = *s;
  }
  buf[k] = '\0';
  return buf;
}

/* Node i's DOT statement; compiled graphs add the memory mode and dash
 * Virtual nodes. */
static void dot_node(const strata_graph *g, int i, FILE *out)
{
  const strata__node *nd = &g->nodes[i];
  char name[256], mode[64] = "";
  int is_virtual = g->plan.compiled && g->mem[i] == STRATA__MEM_VIRTUAL;
  if (g->plan.compiled) {
    strata_memory_mode m;
    strata_node_memory_mode(g, nd->name, &m);
    strata_memory_mode_format(m, mode, sizeof mode);
  }
  fprintf(out, "  n%d [shape=%s, label=\"%s\\n%s %s[", i,
          nd->op == STRATA__OP_INPUT ? "ellipse, style=filled, fillcolor=\"#cfe2f3\""
          : is_virtual               ? "box, style=dashed"
                                     : "box",
          escaped(nd->name, name, sizeof name), strata__op_name(nd),
          strata_dtype_name(nd->m.dtype));
  for (int d = 0; d < nd->m.ndim; d++)
    fprintf(out, d ? ",%lld" : "%lld", (long long)nd->m.shape[d]);
  fprintf(out, "]%s%s\"];\n", mode[0] ? "\\n" : "", mode);
}

static void dot_group(const strata_graph *g, int gi, FILE *out)
{
  const strata__group *G = &g->plan.groups[gi];
  fprintf(out,
          "  subgraph cluster_fused%d {\n    label=\"fused kernel %d\"; style=rounded; "
          "color=\"#e69138\";\n",
          gi, gi);
  for (int m = 0; m < G->nmembers; m++)
    dot_node(g, G->members[m], out);
  fprintf(out, "  }\n");
}

/* The nodes of sequence q (q < 0: of none), fused groups as clusters. */
static void dot_nodes(const strata_graph *g, int q, FILE *out)
{
  for (int i = 0; i < g->n; i++) {
    int gi = g->plan.compiled ? g->plan.group_of[i] : -1;
    if ((g->plan.compiled ? g->plan.seq_of[i] : -1) != q)
      continue;
    if (gi < 0)
      dot_node(g, i, out);
    else if (g->plan.groups[gi].root == i)
      dot_group(g, gi, out);
  }
}

int strata_graph_write_dot(const strata_graph *g, FILE *out)
{
  strata__clear_error();
  if (!g || !out)
    return STRATA_EINVAL;
  char name[256];
  fprintf(out, "digraph strata {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n");
  /* a compiled graph: one cluster per task that runs several nodes (a
   * sequence through Local nodes), one per generated kernel inside */
  for (int q = 0; g->plan.compiled && q < g->n; q++) {
    if (g->plan.seq_of[q] != q)
      continue;
    fprintf(out,
            "  subgraph cluster_task%d {\n    label=\"one task\"; style=dashed; "
            "color=\"#674ea7\";\n",
            q);
    dot_nodes(g, q, out);
    fprintf(out, "  }\n");
  }
  dot_nodes(g, -1, out);
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nin; k++)
      fprintf(out, "  n%d -> n%d;\n", g->nodes[i].in[k], i);
  for (int o = 0; o < g->noutputs; o++)
    fprintf(out,
            "  out%d [shape=ellipse, style=filled, fillcolor=\"#d9ead3\", label=\"%s\"];\n"
            "  n%d -> out%d;\n",
            o, escaped(g->output_names[o], name, sizeof name), g->outputs[o], o);
  fprintf(out, "}\n");
  return ferror(out) ? STRATA_EIO : 0;
}
