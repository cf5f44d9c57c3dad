/* ONNX import: the protobuf decoded by protobuf-c (onnx.proto from
 * libonnx-dev, generated at build time), its graph mapped node by node onto
 * the network runner's layers, and the result built into a model by
 * strata__model_from_network. Every refusal names the node or tensor. */
#ifndef _DEFAULT_SOURCE /* SMPI's compiler wrapper defines it already */
#define _DEFAULT_SOURCE /* strtok_r */
#endif
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/runtime.h"
#include "model_impl.h"
#include "onnx.pb-c.h"

#define MIN_OPSET           11
#define MAX_OPSET           21
#define MAX_FILE_BYTES      ((size_t)1 << 31)
#define MAX_TENSOR_ELEMENTS ((int64_t)1 << 30)
#define MAX_DIMS            8

/* A named tensor of the graph: an activation (a layer's output, or the
 * network input) or a constant (an initializer or a Constant node). */
struct value {
  const char *name;
  int constant;
  int layer;    /* activation: producer layer, or STRATA__NETWORK_INPUT */
  int channels; /* activation */
  int rank;     /* activation: spatial axes, 3 for [N, C, D, H, W] down to 1 for [N, C, W] */
  int ndims;    /* constant */
  int64_t dims[MAX_DIMS];
  int64_t count;
  float *data;   /* constant, malloc'd */
  int consumers; /* nodes and graph outputs that read it */
  /* GroupNorm as PyTorch exports it: an activation reshaped to [N, groups,
   * -1] (groups > 0), and the Shape of an activation (shape = 1), the two
   * views only Reshape and InstanceNormalization read */
  int groups, shape;
  /* a classifier head's values: one per channel and array (global), seen
   * as [N, C] after Flatten, Reshape or Gemm (flat) */
  int global, flat;
  /* an activation padded with zeros by Pad: `padded[0][a]` cells before and
   * `padded[1][a]` after on runner axis a, which only AveragePool reads
   * (PyTorch exports count_include_pad so) */
  int64_t padded[2][3];
};

struct loader {
  const char *path;
  char dir[4096];
  Onnx__ModelProto *model;
  int opset;
  struct value *values;
  int nvalues, cap_values;
  struct strata__layer *layers;
  int nlayers;
  float *weights;
  int64_t nweights, cap_weights;
  int in_channels;
  int64_t fixed_n;             /* the input's extent when the graph fixes it, else 0 */
  const Onnx__NodeProto *node; /* being mapped, for messages */
  int node_index;
  char (*labels)[96]; /* per layer, the node it was made from */
};

/* ---- messages ---- */

static int fail(struct loader *ld, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct loader *ld, const char *fmt, ...)
{
  char reason[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  if (!ld->node)
    return strata__fail(STRATA_EINVAL, "%s: %s", ld->path, reason);
  const char *name = ld->node->name && *ld->node->name ? ld->node->name : "";
  return strata__fail(STRATA_EINVAL, "%s: node %d '%s' (%s): %s", ld->path, ld->node_index, name,
                      ld->node->op_type ? ld->node->op_type : "?", reason);
}

/* ---- values ---- */

static struct value *find_value(struct loader *ld, const char *name)
{
  for (int i = ld->nvalues - 1; i >= 0; i--)
    if (strcmp(ld->values[i].name, name) == 0)
      return &ld->values[i];
  return NULL;
}

/* Nodes and graph outputs that read `name` (a BatchNormalization folds
 * into its convolution only when it is the one reader), or with `op` the
 * nodes of that operator alone. */
static int readers(const Onnx__GraphProto *g, const char *name, const char *op)
{
  int count = 0;
  for (size_t i = 0; i < g->n_node; i++)
    for (size_t j = 0; j < g->node[i]->n_input; j++)
      count += strcmp(g->node[i]->input[j], name) == 0 &&
               (!op || (g->node[i]->op_type && strcmp(g->node[i]->op_type, op) == 0));
  for (size_t r = 0; !op && r < g->n_output; r++)
    count += g->output[r]->name && strcmp(g->output[r]->name, name) == 0;
  return count;
}

static struct value *new_value(struct loader *ld, const char *name)
{
  if (!name || !*name) {
    fail(ld, "an output without a name");
    return NULL;
  }
  if (find_value(ld, name)) {
    fail(ld, "'%s' is produced twice", name);
    return NULL;
  }
  /* The table never moves (map_graph sizes it for the whole graph): the
   * mappers hold value pointers across the creation of their output. */
  if (ld->nvalues == ld->cap_values) {
    fail(ld, "more values than the graph's initializers, input and nodes");
    return NULL;
  }
  struct value *v = &ld->values[ld->nvalues++];
  memset(v, 0, sizeof *v);
  v->name = name;
  v->consumers = readers(ld->model->graph, name, NULL);
  return v;
}

/* Input i of the node: a defined value, or NULL (absent optional inputs
 * are empty names; `required` makes them an error). */
static int node_input(struct loader *ld, size_t i, int required, struct value **out)
{
  *out = NULL;
  const Onnx__NodeProto *node = ld->node;
  if (i >= node->n_input || !node->input[i][0])
    return required ? fail(ld, "input %zu is missing", i) : 0;
  if (!(*out = find_value(ld, node->input[i])))
    return fail(ld, "reads '%s', which no earlier node produces (a cycle, or an unsorted graph)",
                node->input[i]);
  return 0;
}

static int is_padded(const struct value *v)
{
  int64_t any = 0;
  for (int a = 0; a < 3; a++)
    any |= v->padded[0][a] | v->padded[1][a];
  return any != 0;
}

static int need_activation(struct loader *ld, const struct value *v, const char *what)
{
  if (is_padded(v))
    return fail(ld,
                "%s '%s' is padded by a Pad node: Strata pads inside its convolutions and "
                "average pools only",
                what, v->name);
  if (v->groups || v->shape)
    return fail(ld, "%s '%s' is a grouped view: Strata reads it only in a group normalisation",
                what, v->name);
  return v->constant
             ? fail(ld, "%s '%s' must be computed from the input, not a constant", what, v->name)
             : 0;
}

/* Operators over cells refuse a classifier head's per-array values. */
static int need_cells(struct loader *ld, const struct value *v)
{
  return v->global ? fail(ld, "'%s' holds one value per channel (a global pooling's)", v->name) : 0;
}

static int need_constant(struct loader *ld, const struct value *v, const char *what)
{
  return v->constant ? 0 : fail(ld, "%s '%s' must be a constant (an initializer)", what, v->name);
}

/* A constant's entry read as a size, axis or pad. Constants are kept as
 * floats; an entry that is not whole or lies past +-2^24 (where floats stop
 * counting by one) reads as NOT_WHOLE, which every caller refuses, and is
 * never converted: a float outside int64's range has no conversion in C. */
#define NOT_WHOLE INT64_MIN
static int64_t whole(float v)
{
  return v == floorf(v) && fabsf(v) <= 16777216.0f ? (int64_t)v : NOT_WHOLE;
}

/* ---- attributes ---- */

static const Onnx__AttributeProto *attribute(const Onnx__NodeProto *node, const char *name)
{
  for (size_t a = 0; a < node->n_attribute; a++)
    if (node->attribute[a]->name && strcmp(node->attribute[a]->name, name) == 0)
      return node->attribute[a];
  return NULL;
}

static int64_t attr_int(const Onnx__NodeProto *node, const char *name, int64_t fallback)
{
  const Onnx__AttributeProto *a = attribute(node, name);
  return a && a->has_i ? a->i : fallback;
}

static float attr_float(const Onnx__NodeProto *node, const char *name, float fallback)
{
  const Onnx__AttributeProto *a = attribute(node, name);
  return a && a->has_f ? a->f : fallback;
}

/* A string attribute into buf ("" when absent). */
static const char *attr_string(const Onnx__NodeProto *node, const char *name, char *buf,
                               size_t size)
{
  const Onnx__AttributeProto *a = attribute(node, name);
  size_t n = a && a->has_s ? a->s.len : 0;
  n = n < size - 1 ? n : size - 1;
  if (n)
    memcpy(buf, a->s.data, n);
  buf[n] = '\0';
  return buf;
}

/* An ints attribute with one entry per spatial axis of a rank-`rank`
 * operator (two for pads: the begins, then the ends), into the last `rank`
 * of the runner's axes (z, y, x). The leading axes get `lead`; an absent
 * attribute gives `fallback`. Entries must lie in [lo, 64]. */
static int attr_axes(struct loader *ld, const char *name, int rank, int64_t fallback, int64_t lead,
                     int64_t lo, int64_t *begin, int64_t *end)
{
  const Onnx__AttributeProto *a = attribute(ld->node, name);
  const int pads = strcmp(name, "pads") == 0, first = 3 - rank;
  for (int i = 0; i < 3; i++)
    begin[i] = end[i] = i < first ? lead : fallback;
  if (!a)
    return 0;
  if (a->n_ints != (size_t)(pads ? 2 * rank : rank))
    return fail(ld, "'%s' needs %d entries for a %d-D operator, not %zu", name,
                pads ? 2 * rank : rank, rank, a->n_ints);
  for (size_t i = 0; i < a->n_ints; i++)
    if (a->ints[i] < lo || a->ints[i] > 64)
      return fail(ld, "'%s' = %lld is out of range", name, (long long)a->ints[i]);
  for (int i = 0; i < rank; i++) {
    begin[first + i] = a->ints[i];
    end[first + i] = pads ? a->ints[rank + i] : a->ints[i];
  }
  return 0;
}

/* ---- tensors ---- */

static float half_to_float(uint16_t h)
{
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = h >> 10 & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f)
    bits = sign | 0x7f800000u | man << 13;
  else if (exp)
    bits = sign | (exp + 112) << 23 | man << 13;
  else if (!man)
    bits = sign;
  else { /* subnormal: normalise */
    exp = 113;
    while (!(man & 0x400)) {
      man <<= 1;
      exp--;
    }
    bits = sign | exp << 23 | (man & 0x3ff) << 13;
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static float bfloat_to_float(uint16_t b)
{
  uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* Bytes of one element of an ONNX dtype Strata reads, 0 for the others. */
static size_t dtype_bytes(int32_t type)
{
  switch (type) {
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return 4;
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
  case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return 2;
  case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return 8;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return 4;
  default: return 0;
  }
}

/* Little-endian element i of raw bytes as float. */
static float raw_element(const uint8_t *raw, int32_t type, int64_t i)
{
  switch (type) {
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: {
    float f;
    memcpy(&f, raw + 4 * i, 4);
    return f;
  }
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
  case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: {
    uint16_t h;
    memcpy(&h, raw + 2 * i, 2);
    return type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 ? half_to_float(h) : bfloat_to_float(h);
  }
  case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: {
    double d;
    memcpy(&d, raw + 8 * i, 8);
    return (float)d;
  }
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: {
    int64_t v;
    memcpy(&v, raw + 8 * i, 8);
    return (float)v;
  }
  default: {
    int32_t v;
    memcpy(&v, raw + 4 * i, 4);
    return (float)v;
  }
  }
}

/* The bytes of an external-data tensor: `location` relative to the model's
 * folder (no absolute paths, no ".."), `offset` and `length`. */
static int read_external(struct loader *ld, const Onnx__TensorProto *t, const char *what,
                         size_t want, uint8_t **bytes)
{
  const char *location = NULL;
  long long offset = 0, length = -1;
  for (size_t e = 0; e < t->n_external_data; e++) {
    const Onnx__StringStringEntryProto *kv = t->external_data[e];
    if (!kv->key || !kv->value)
      continue;
    if (strcmp(kv->key, "location") == 0)
      location = kv->value;
    else if (strcmp(kv->key, "offset") == 0)
      offset = atoll(kv->value);
    else if (strcmp(kv->key, "length") == 0)
      length = atoll(kv->value);
  }
  if (!location || !*location || location[0] == '/' || strstr(location, ".."))
    return fail(ld, "%s: external data needs a relative location inside the model's folder", what);
  if (offset < 0 || (length >= 0 && (size_t)length != want))
    return fail(ld, "%s: external data offset %lld, length %lld for %zu bytes", what, offset,
                length, want);
  char path[8192];
  snprintf(path, sizeof path, "%s/%s", ld->dir, location);
  FILE *f = fopen(path, "rb");
  if (!f)
    return fail(ld, "%s: cannot open external data '%s'", what, location);
  *bytes = malloc(want ? want : 1);
  int ok = *bytes && fseek(f, offset, SEEK_SET) == 0 && fread(*bytes, 1, want, f) == want;
  fclose(f);
  if (!ok) {
    free(*bytes);
    *bytes = NULL;
    return fail(ld, "%s: '%s' holds fewer than %zu bytes at offset %lld", what, location, want,
                offset);
  }
  return 0;
}

/* A constant from a TensorProto: dims checked, data converted to float32
 * from raw bytes, typed fields or external data, all finite. */
static int read_tensor(struct loader *ld, const Onnx__TensorProto *t, struct value *v)
{
  const char *what = v->name;
  v->constant = 1;
  v->count = 1;
  if (t->n_dims > MAX_DIMS)
    return fail(ld, "tensor '%s' has %zu dims", what, t->n_dims);
  v->ndims = (int)t->n_dims;
  for (size_t d = 0; d < t->n_dims; d++) {
    if (t->dims[d] < 0 || (t->dims[d] > 0 && v->count > MAX_TENSOR_ELEMENTS / t->dims[d]))
      return fail(ld, "tensor '%s' has dims that are negative or too large", what);
    v->dims[d] = t->dims[d];
    v->count *= t->dims[d];
  }
  int32_t type = t->has_data_type ? t->data_type : 0;
  size_t elem = dtype_bytes(type);
  if (!elem)
    return fail(ld,
                "tensor '%s' has dtype %d; Strata reads float32, float16, bfloat16, "
                "float64, int64 and int32",
                what, (int)type);
  if (!(v->data = malloc((size_t)(v->count ? v->count : 1) * sizeof(float))))
    return strata__fail(STRATA_ENOMEM, "%s: out of memory", ld->path);
  size_t want = (size_t)v->count * elem;
  uint8_t *external = NULL;
  const uint8_t *raw = NULL;
  if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    int ret = read_external(ld, t, what, want, &external);
    if (ret)
      return ret;
    raw = external;
  } else if (t->has_raw_data) {
    if (t->raw_data.len != want)
      return fail(ld, "tensor '%s' holds %zu bytes of data for %lld elements of %zu bytes", what,
                  t->raw_data.len, (long long)v->count, elem);
    raw = t->raw_data.data;
  }
  if (raw)
    for (int64_t i = 0; i < v->count; i++)
      v->data[i] = raw_element(raw, type, i);
  else {
    size_t have = type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT    ? t->n_float_data
                  : type == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE ? t->n_double_data
                  : type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64  ? t->n_int64_data
                                                                  : t->n_int32_data;
    if (have != (size_t)v->count)
      return fail(ld, "tensor '%s' holds %zu values for %lld elements", what, have,
                  (long long)v->count);
    for (int64_t i = 0; i < v->count; i++)
      switch (type) {
      case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: v->data[i] = t->float_data[i]; break;
      case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: v->data[i] = (float)t->double_data[i]; break;
      case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: v->data[i] = (float)t->int64_data[i]; break;
      case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
        v->data[i] = half_to_float((uint16_t)t->int32_data[i]);
        break;
      case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
        v->data[i] = bfloat_to_float((uint16_t)t->int32_data[i]);
        break;
      default: v->data[i] = (float)t->int32_data[i]; break;
      }
  }
  free(external);
  /* One NaN weight makes every probability NaN and silently no bubble. */
  for (int64_t i = 0; i < v->count; i++)
    if (!isfinite(v->data[i]))
      return fail(ld, "tensor '%s' holds %s at element %lld", what,
                  isnan(v->data[i]) ? "NaN" : "infinity", (long long)i);
  return 0;
}

/* ---- layers and weights ---- */

/* A block of `count` weights (zeros where data is NULL), aligned as the
 * runner wants (strata__cnn_align); returns its offset, or -1. */
static int64_t push_weights(struct loader *ld, const float *data, int64_t count)
{
  int64_t at = strata__cnn_align(ld->nweights);
  if (at + count > ld->cap_weights) {
    int64_t cap = ld->cap_weights ? ld->cap_weights : 1024;
    while (cap < at + count)
      cap *= 2;
    float *w = realloc(ld->weights, (size_t)cap * sizeof *w);
    if (!w)
      return -1;
    ld->weights = w;
    ld->cap_weights = cap;
  }
  memset(ld->weights + ld->nweights, 0, (size_t)(at - ld->nweights) * sizeof *ld->weights);
  if (data)
    memcpy(ld->weights + at, data, (size_t)count * sizeof *data);
  else
    memset(ld->weights + at, 0, (size_t)count * sizeof *ld->weights);
  ld->nweights = at + count;
  return at;
}

/* A layer of `kind` with its neutral settings: no weights, unit kernel,
 * stride, dilation and groups. */
static struct strata__layer new_layer(int kind, int ninputs)
{
  struct strata__layer L = {
      .kind = kind, .ninputs = ninputs, .groups = 1, .weight_offset = -1, .bias_offset = -1};
  strata__layer_window(&L, 1, 1, 1, 0, 0);
  return L;
}

/* A new layer of `kind` on `inputs`, at the first input's resolution and
 * channels, its output bound to the node's first output. */
static struct strata__layer *add_layer(struct loader *ld, int kind, struct value **inputs,
                                       int ninputs)
{
  if (ld->nlayers == STRATA__CNN_MAX_LAYERS) {
    fail(ld, "the network has over %d layers", STRATA__CNN_MAX_LAYERS);
    return NULL;
  }
  struct value *out = new_value(ld, ld->node->n_output ? ld->node->output[0] : NULL);
  if (!out)
    return NULL;
  struct strata__layer *L = &ld->layers[ld->nlayers];
  *L = new_layer(kind, ninputs);
  L->channels = inputs[0]->channels;
  for (int i = 0; i < ninputs; i++)
    L->inputs[i] = inputs[i]->layer;
  snprintf(ld->labels[ld->nlayers], sizeof *ld->labels, "node %d '%s'", ld->node_index,
           ld->node->name ? ld->node->name : "");
  out->layer = ld->nlayers++;
  out->rank = inputs[0]->rank;
  out->global = inputs[0]->global;
  out->flat = inputs[0]->flat;
  return L;
}

/* The value a new layer's output is bound to (after add_layer). */
static struct value *last_output(struct loader *ld) { return &ld->values[ld->nvalues - 1]; }

static void set_output_channels(struct loader *ld, const struct strata__layer *L)
{
  last_output(ld)->channels = L->channels;
}

/* The layer that produced x, when it is the last layer and this node its
 * only reader: such a layer can absorb the node (folding, fusion). */
static struct strata__layer *absorbing_layer(struct loader *ld, const struct value *x)
{
  return x->layer >= 0 && x->layer == ld->nlayers - 1 && x->consumers == 1 ? &ld->layers[x->layer]
                                                                           : NULL;
}

/* The node's first output as the activation x itself (no new layer). */
static struct value *alias_output(struct loader *ld, const struct value *x)
{
  struct value *out = new_value(ld, ld->node->output[0]);
  if (out) {
    out->layer = x->layer;
    out->channels = x->channels;
    out->rank = x->rank;
    out->global = x->global;
    out->flat = x->flat;
  }
  return out;
}

/* ---- operators ---- */

/* The extents of activation x when the graph fixes the input's extent
 * (1, else 0); fails, naming the node, where the layers so far do not
 * fit that extent. */
static int fixed_extent(struct loader *ld, const struct value *x, struct strata__extent *e)
{
  if (!ld->fixed_n)
    return 0;
  struct strata__extent ext[STRATA__CNN_MAX_LAYERS];
  const struct strata__network net = {ld->layers, ld->nlayers, ld->in_channels, NULL};
  int bad = ld->nlayers ? strata__cnn_extents(&net, ld->fixed_n, ext) : -1;
  if (bad >= 0)
    return fail(ld, "at the input's extent %lld, layer %d (%s) gets no valid extents",
                (long long)ld->fixed_n, bad, ld->labels[bad]);
  *e = strata__source_extent(ext, x->layer, ld->fixed_n);
  return 1;
}

/* auto_pad padding per axis for strides s and dilated extents D (SAME with
 * a stride above 1 needs the input's extents, which the graph must fix). */
static int auto_pads(struct loader *ld, const struct value *x, const int64_t *s, const int64_t *D,
                     int64_t *begin, int64_t *end)
{
  char mode[32];
  attr_string(ld->node, "auto_pad", mode, sizeof mode);
  if (!*mode || strcmp(mode, "NOTSET") == 0)
    return attr_axes(ld, "pads", x->rank, 0, 0, 0, begin, end);
  const int valid = strcmp(mode, "VALID") == 0, lower = strcmp(mode, "SAME_LOWER") == 0;
  if (!valid && !lower && strcmp(mode, "SAME_UPPER") != 0)
    return fail(ld, "auto_pad '%s' is not an ONNX mode", mode);
  struct strata__extent e;
  int known = 0;
  for (int a = 0; a < 3; a++) {
    int64_t total = valid ? 0 : D[a];
    if (!valid && s[a] > 1) {
      if (!known && (known = fixed_extent(ld, x, &e)) <= 0)
        return known < 0 ? known
                         : fail(ld, "auto_pad %s with stride %lld needs an input of fixed extent",
                                mode, (long long)s[a]);
      total = ((e.e[a] + s[a] - 1) / s[a] - 1) * s[a] + D[a] + 1 - e.e[a];
    }
    total = total > 0 ? total : 0;
    begin[a] = lower ? (total + 1) / 2 : total / 2;
    end[a] = total - begin[a];
  }
  return 0;
}

/* The strides, dilations and pads of a Conv or pool node with kernel k,
 * per runner axis. */
static int window(struct loader *ld, const struct value *x, const int64_t *k, int64_t *s,
                  int64_t *d, int64_t *pb, int64_t *pe)
{
  int64_t D[3], unused[3];
  int ret;
  if ((ret = attr_axes(ld, "strides", x->rank, 1, 1, 1, s, unused)) ||
      (ret = attr_axes(ld, "dilations", x->rank, 1, 1, 1, d, unused)))
    return ret;
  for (int a = 0; a < 3; a++)
    D[a] = d[a] * (k[a] - 1);
  return auto_pads(ld, x, s, D, pb, pe);
}

/* The inputs of Conv and ConvTranspose: an activation, a weight of x's
 * rank + 2 axes (`layout` names them for messages) and an optional bias of
 * one value per output channel, the weight's axis `out_axis`. */
static int conv_inputs(struct loader *ld, const char *layout, int out_axis, struct value **x,
                       struct value **w, struct value **b)
{
  int ret;
  if ((ret = node_input(ld, 0, 1, x)) || (ret = node_input(ld, 1, 1, w)) ||
      (ret = node_input(ld, 2, 0, b)) || (ret = need_activation(ld, *x, "input")) ||
      (ret = need_constant(ld, *w, "weight")) || (*b && (ret = need_constant(ld, *b, "bias"))))
    return ret;
  const int64_t *dims = (*w)->dims;
  int positive = 1;
  for (int i = 2; i < (*w)->ndims; i++)
    positive &= dims[i] >= 1 && dims[i] <= 64;
  if ((*w)->ndims != (*x)->rank + 2 || !positive)
    return fail(ld, "weight '%s' must be %s with kernels of 1 to 64 taps for a %d-D input",
                (*w)->name, layout, (*x)->rank);
  if (*b && (*b)->count != dims[out_axis])
    return fail(ld, "bias '%s' has %lld values for %lld output channels", (*b)->name,
                (long long)(*b)->count, (long long)dims[out_axis]);
  return 0;
}

/* A convolution layer's kernel per runner axis from its weight, checked
 * against kernel_shape. */
static int conv_kernel(struct loader *ld, const struct value *w, int rank, int64_t *k)
{
  int64_t want[3], unused[3];
  int ret = attr_axes(ld, "kernel_shape", rank, 0, 1, 0, want, unused);
  for (int a = 0; a < 3; a++) {
    k[a] = a < 3 - rank ? 1 : w->dims[2 + a - (3 - rank)];
    if (!ret && want[a] && want[a] != k[a])
      return fail(ld, "kernel_shape disagrees with weight '%s'", w->name);
  }
  return ret;
}

/* A convolution layer's weights and bias into the packed buffer. */
static int conv_weights(struct loader *ld, struct strata__layer *L, const struct value *w,
                        const struct value *b)
{
  L->weight_offset = push_weights(ld, w->data, w->count);
  L->bias_offset = b ? push_weights(ld, b->data, b->count) : -1;
  set_output_channels(ld, L);
  return L->weight_offset < 0 || (b && L->bias_offset < 0) ? STRATA_ENOMEM : 0;
}

static int op_conv(struct loader *ld)
{
  struct value *x, *w, *b;
  int ret = conv_inputs(ld, "[out, in / groups, kernel...]", 0, &x, &w, &b);
  if (ret || (w->count > w->dims[0] * w->dims[1] && (ret = need_cells(ld, x))))
    return ret;
  int64_t groups = attr_int(ld->node, "group", 1), k[3], s[3], d[3], pb[3], pe[3];
  if ((ret = conv_kernel(ld, w, x->rank, k)) || (ret = window(ld, x, k, s, d, pb, pe)))
    return ret;
  if (groups < 1 || x->channels % groups || w->dims[0] % groups ||
      w->dims[1] * groups != x->channels)
    return fail(ld, "weight '%s' is [%lld, %lld, ...] with %lld groups, the input has %d channels",
                w->name, (long long)w->dims[0], (long long)w->dims[1], (long long)groups,
                x->channels);
  struct strata__layer *L = add_layer(ld, STRATA__LAYER_CONV3D, &x, 1);
  if (!L)
    return STRATA_EINVAL;
  L->channels = (int)w->dims[0];
  L->groups = (int)groups;
  for (int a = 0; a < 3; a++) {
    L->kernel[a] = (int)k[a], L->dilation[a] = (int)d[a], L->stride[a] = (int)s[a];
    L->pad[a] = (int)pb[a], L->pad_end[a] = (int)pe[a];
  }
  return conv_weights(ld, L, w, b);
}

static int op_conv_transpose(struct loader *ld)
{
  struct value *x, *w, *b;
  int ret = conv_inputs(ld, "[in, out, kernel...]", 1, &x, &w, &b);
  if (ret || (ret = need_cells(ld, x)))
    return ret;
  char mode[32];
  attr_string(ld->node, "auto_pad", mode, sizeof mode);
  if (attr_int(ld->node, "group", 1) != 1 || attribute(ld->node, "output_shape") ||
      (*mode && strcmp(mode, "NOTSET") != 0))
    return fail(ld, "groups, output_shape and auto_pad are not supported on transposed "
                    "convolutions");
  int64_t k[3], s[3], d[3], pb[3], pe[3], op[3], unused[3];
  if ((ret = conv_kernel(ld, w, x->rank, k)) || (ret = window(ld, x, k, s, d, pb, pe)) ||
      (ret = attr_axes(ld, "output_padding", x->rank, 0, 0, 0, op, unused)))
    return ret;
  if (w->dims[0] != x->channels)
    return fail(ld, "weight '%s' expects %lld input channels, the input has %d", w->name,
                (long long)w->dims[0], x->channels);
  for (int a = 0; a < 3; a++)
    if (op[a] >= s[a] && op[a] >= d[a])
      return fail(ld, "output padding %lld is not below the stride or the dilation",
                  (long long)op[a]);
  struct strata__layer *L = add_layer(ld, STRATA__LAYER_CONV_TRANSPOSE, &x, 1);
  if (!L)
    return STRATA_EINVAL;
  L->channels = (int)w->dims[1];
  for (int a = 0; a < 3; a++) {
    L->kernel[a] = (int)k[a], L->dilation[a] = (int)d[a], L->stride[a] = (int)s[a];
    L->pad[a] = (int)pb[a], L->pad_end[a] = (int)(pe[a] - op[a]);
  }
  return conv_weights(ld, L, w, b);
}

/* A per-channel affine layer y = x scale[c] + shift[c] on activation x
 * (scale or shift NULL: 1 or 0). */
static int add_affine(struct loader *ld, struct value *x, const float *scale, const float *shift)
{
  /* After a layer that nothing else reads and that ends in a per-channel
   * scale and shift (a normalisation, an affine map, a convolution without
   * activation: BatchNorm folding, GroupNorm's Mul and Add, a head's bias),
   * composed into it: each output channel's weights (a contiguous block of
   * `block` values) scaled, its shift (or bias, created) mapped. */
  struct strata__layer *prev = absorbing_layer(ld, x);
  int conv = prev && prev->kind == STRATA__LAYER_CONV3D && !prev->activation;
  if (prev && (conv || ((prev->kind == STRATA__LAYER_NORM || prev->kind == STRATA__LAYER_AFFINE) &&
                        prev->weight_offset >= 0 && prev->bias_offset >= 0))) {
    int C = x->channels;
    int64_t block = 1;
    if (conv) { /* weights [C][cin / groups][k^3] */
      int src = prev->inputs[0];
      int cin = src == STRATA__NETWORK_INPUT ? ld->in_channels : ld->layers[src].channels;
      block = (int64_t)cin / prev->groups * strata__kernel_volume(prev);
    }
    if (prev->bias_offset < 0)
      prev->bias_offset = push_weights(ld, NULL, C);
    if (prev->bias_offset < 0)
      return STRATA_ENOMEM;
    for (int c = 0; c < C; c++) {
      float a = scale ? scale[c] : 1.0f, b = shift ? shift[c] : 0.0f;
      for (int64_t i = 0; i < block; i++)
        ld->weights[prev->weight_offset + c * block + i] *= a;
      ld->weights[prev->bias_offset + c] = ld->weights[prev->bias_offset + c] * a + b;
    }
    return alias_output(ld, x) ? 0 : STRATA_EINVAL;
  }
  struct strata__layer *L = add_layer(ld, STRATA__LAYER_AFFINE, &x, 1);
  if (!L)
    return STRATA_EINVAL;
  L->weight_offset = scale ? push_weights(ld, scale, x->channels) : -1;
  L->bias_offset = shift ? push_weights(ld, shift, x->channels) : -1;
  set_output_channels(ld, L);
  return (scale && L->weight_offset < 0) || (shift && L->bias_offset < 0) ? STRATA_ENOMEM : 0;
}

/* The per-channel values of a constant that broadcasts against activation
 * x ([N, C, spatial...] or a head's [N, C]): a scalar, or C values on the
 * channel axis with 1s elsewhere ([C, 1, 1, 1] for 3-D, [C, 1, 1] for 2-D,
 * [C] or [1, C] for a head). Returns 1 (scalar), C, or 0 (neither). */
static int64_t per_channel(const struct value *c, const struct value *x)
{
  if (c->count == 1)
    return 1;
  const int axis = c->ndims - (x->flat ? 1 : x->rank + 1);
  if (c->count != x->channels || axis < 0)
    return 0;
  for (int d = 0; d < c->ndims; d++)
    if (d != axis && c->dims[d] != 1)
      return 0;
  return x->channels;
}

/* Whether `axis` of an ONNX node names activation x's channel axis. */
static int channel_axis(const struct value *x, int64_t axis)
{
  return axis == 1 || axis == (x->flat ? -1 : -(x->rank + 1));
}

static int op_batchnorm(struct loader *ld)
{
  struct value *x, *p[4];
  int ret;
  if ((ret = node_input(ld, 0, 1, &x)) || (ret = need_activation(ld, x, "input")))
    return ret;
  for (int i = 0; i < 4; i++)
    if ((ret = node_input(ld, (size_t)i + 1, 1, &p[i])) ||
        (ret = need_constant(ld, p[i], "parameter")))
      return ret;
    else if (p[i]->count != x->channels)
      return fail(ld, "parameter '%s' has %lld values for %d channels", p[i]->name,
                  (long long)p[i]->count, x->channels);
  if (attr_int(ld->node, "training_mode", 0) || ld->node->n_output > 1)
    return fail(ld, "training mode (running statistics as outputs) is not inference");
  float eps = attr_float(ld->node, "epsilon", 1e-5f);
  int C = x->channels;
  float *scale = malloc(2 * (size_t)C * sizeof *scale), *shift = scale + C;
  if (!scale)
    return STRATA_ENOMEM;
  for (int c = 0; c < C; c++) {
    scale[c] = (float)(p[0]->data[c] / sqrt((double)p[3]->data[c] + eps));
    shift[c] = p[1]->data[c] - p[2]->data[c] * scale[c];
  }
  ret = add_affine(ld, x, scale, shift);
  free(scale);
  return ret;
}

/* A NORM layer on x (its activation, not a grouped view): each of `groups`
 * channel groups normalised, then scaled and shifted per channel; scale
 * and bias hold one value per group (per_group) or per channel. */
static int add_group_norm(struct loader *ld, struct value *x, int groups, const struct value *scale,
                          const struct value *bias, int per_group)
{
  const int want = per_group ? groups : x->channels;
  if (groups < 1 || x->channels % groups)
    return fail(ld, "%d groups do not divide %d channels", groups, x->channels);
  if (scale->count != want || bias->count != want)
    return fail(ld, "scale and bias need %d values each", want);
  float *per = malloc(2 * (size_t)x->channels * sizeof *per);
  if (!per)
    return STRATA_ENOMEM;
  for (int c = 0; c < x->channels; c++) {
    int i = per_group ? c / (x->channels / groups) : c;
    per[c] = scale->data[i];
    per[x->channels + c] = bias->data[i];
  }
  struct value view = *x;
  view.groups = 0; /* the layer reads the activation itself */
  struct value *in = &view;
  struct strata__layer *L = add_layer(ld, STRATA__LAYER_NORM, &in, 1);
  if (L) {
    L->groups = groups;
    L->param = attr_float(ld->node, "epsilon", 1e-5f);
    L->weight_offset = push_weights(ld, per, x->channels);
    L->bias_offset = push_weights(ld, per + x->channels, x->channels);
    set_output_channels(ld, L);
  }
  free(per);
  return !L ? STRATA_EINVAL : L->weight_offset < 0 || L->bias_offset < 0 ? STRATA_ENOMEM : 0;
}

/* A normalisation's input x (an activation over cells, or with
 * `grouped_view` GroupNorm's [N, G, -1] view of one) and its constant
 * scale and bias. */
static int norm_parameters(struct loader *ld, int grouped_view, struct value **x,
                           struct value **scale, struct value **bias)
{
  int ret;
  if ((ret = node_input(ld, 0, 1, x)) || (ret = node_input(ld, 1, 1, scale)) ||
      (ret = node_input(ld, 2, 1, bias)) || (ret = need_constant(ld, *scale, "scale")) ||
      (ret = need_constant(ld, *bias, "bias")))
    return ret;
  if (!(grouped_view && (*x)->groups) && (ret = need_activation(ld, *x, "input")))
    return ret;
  return need_cells(ld, *x);
}

/* InstanceNormalization normalises each channel; on an activation viewed
 * as [N, G, -1] (GroupNorm as PyTorch's TorchScript exporter writes it) it
 * normalises each of the G channel groups, with the group's scale and bias
 * on each of its channels. */
static int op_instancenorm(struct loader *ld)
{
  struct value *x, *scale, *bias;
  int ret = norm_parameters(ld, 1, &x, &scale, &bias);
  if (ret)
    return ret;
  int groups = x->groups ? x->groups : x->channels;
  if (!(ret = add_group_norm(ld, x, groups, scale, bias, 1)))
    last_output(ld)->groups = x->groups; /* still the grouped view */
  return ret;
}

/* GroupNormalization (opset 18: scale and bias per group; 21: per
 * channel), as PyTorch's torch.export-based exporter writes GroupNorm. */
static int op_groupnorm(struct loader *ld)
{
  struct value *x, *scale, *bias;
  int ret = norm_parameters(ld, 0, &x, &scale, &bias);
  if (ret)
    return ret;
  const Onnx__AttributeProto *a = attribute(ld->node, "num_groups");
  if (!a || !a->has_i || a->i < 1 || a->i > x->channels)
    return fail(ld, "'num_groups' is missing or not in 1 to %d", x->channels);
  return add_group_norm(ld, x, (int)a->i, scale, bias, ld->opset < 21);
}

/* Shape of an activation: only a later Reshape back from a grouped view
 * reads it. */
static int op_shape(struct loader *ld)
{
  struct value *x, *out;
  int ret;
  if ((ret = node_input(ld, 0, 1, &x)) || (ret = need_activation(ld, x, "input")))
    return ret;
  if (attr_int(ld->node, "start", 0) != 0 || attribute(ld->node, "end"))
    return fail(ld, "Strata reads the whole Shape of an activation (no start or end)");
  if (!(out = alias_output(ld, x)))
    return STRATA_EINVAL;
  out->shape = 1;
  return 0;
}

/* A general Reshape of activation x to the constant `shape` [1, C, ...]
 * of 2 to 5 entries: the same floats seen as [C, z, y, x], a RESHAPE layer.
 * 0 copies the input's axis, -1 is inferred. Without a fixed input extent
 * the channels must be given (or copied) and a 0 must keep its axis's
 * place in the runner's (z, y, x). */
#define MAX_RESHAPED_CELLS ((int64_t)1 << 40)
static int general_reshape(struct loader *ld, struct value *x, const struct value *shape)
{
  int64_t t[5], inferred = 0;
  const int rank = (int)shape->count - 2;
  if (rank < 0 || rank > 3)
    return fail(ld, "reshape to %lld axes; Strata reshapes to [N, C] up to [N, C, D, H, W]",
                (long long)shape->count);
  for (int i = 0; i < (int)shape->count; i++) {
    t[i] = whole(shape->data[i]);
    inferred += t[i] == -1;
    if (t[i] < -1)
      return fail(ld, "shape entry %d = %g is not a size", i, (double)shape->data[i]);
  }
  if ((t[0] != 0 && t[0] != 1) || inferred > 1)
    return fail(ld,
                "reshape to batch %lld with %lld inferred sizes: Strata keeps a batch of 1 "
                "and infers at most one size",
                (long long)t[0], (long long)inferred);
  struct strata__extent e;
  const int known = fixed_extent(ld, x, &e);
  if (known < 0)
    return known;
  /* input ONNX axis 2 + i is runner axis 3 - rank + i */
  int64_t count = x->channels;
  for (int i = 0; known && i < x->rank; i++)
    count *= e.e[3 - x->rank + i];
  int64_t channels = t[1] == 0 ? x->channels : t[1], spatial[3] = {1, 1, 1}, fixed = 1;
  for (int i = 0; i < rank; i++) {
    int64_t v = t[2 + i];
    if (v == 0) {
      if (1 + i > x->rank || (!known && rank != x->rank))
        return fail(ld, "shape entry %d = 0 copies no axis of the input", 2 + i);
      v = known ? e.e[3 - x->rank + i] : 0; /* 0: the input's extent there at run time */
    }
    spatial[3 - rank + i] = v;
    if (v > 0 && fixed > MAX_RESHAPED_CELLS / v)
      return fail(ld, "reshape to more than 2^40 cells per channel");
    fixed *= v > 0 ? v : 1;
  }
  if (channels == -1) {
    if (!known || count % fixed)
      return fail(ld,
                  known ? "%lld values do not reshape to the shape given"
                        : "inferring the channels of a reshape needs an input of fixed extent",
                  (long long)count);
    channels = count / fixed;
  }
  if (channels < 1 || channels > (1 << 24))
    return fail(ld, "reshape to %lld channels", (long long)channels);
  struct strata__layer *L = add_layer(ld, STRATA__LAYER_RESHAPE, &x, 1);
  if (!L)
    return STRATA_EINVAL;
  L->channels = (int)channels;
  for (int a = 0; a < 3; a++)
    L->shape[a] = spatial[a];
  set_output_channels(ld, L);
  struct value *out = last_output(ld);
  out->rank = rank > 0 ? rank : 3;
  out->global = rank == 0; /* [N, C]: one value per channel, as a classifier head's */
  out->flat = rank == 0;
  struct strata__extent check;
  return fixed_extent(ld, out, &check) < 0 ? STRATA_EINVAL : 0;
}

/* Reshape: GroupNorm's view of an activation as [N, G, -1] (shape constant
 * [0 or 1, G, -1]) and back to the Shape of an activation with its
 * channels; a classifier head's [N, C, 1, 1, 1] as [N, C]; else a general
 * reshape. */
static int op_reshape(struct loader *ld)
{
  struct value *x, *shape, *out;
  int ret, groups = 0;
  if ((ret = node_input(ld, 0, 1, &x)) || (ret = node_input(ld, 1, 1, &shape)))
    return ret;
  if (x->global && !x->constant && shape->constant && shape->count == 2 &&
      (shape->data[1] == -1 || shape->data[1] == x->channels)) {
    if (!(out = alias_output(ld, x)))
      return STRATA_EINVAL;
    out->flat = 1;
    return 0;
  }
  /* GroupNorm's grouping: read by InstanceNormalization nodes alone */
  const Onnx__GraphProto *g = ld->model->graph;
  const char *view = ld->node->output[0];
  int norms = readers(g, view, "InstanceNormalization");
  if (!x->groups && !x->constant && !x->shape && shape->constant && shape->count == 3 &&
      (shape->data[0] == 0 || shape->data[0] == 1) && shape->data[2] == -1 &&
      whole(shape->data[1]) >= 1 && shape->data[1] <= x->channels &&
      x->channels % (int)shape->data[1] == 0 && norms > 0 && norms == readers(g, view, NULL))
    groups = (int)shape->data[1];
  else if (!(x->groups && shape->shape && shape->channels == x->channels)) { /* not back */
    if (!shape->constant || x->constant || x->groups || x->shape)
      return fail(ld, "Strata reshapes an activation to a constant shape, GroupNorm's grouping "
                      "([N, G, -1] and back) or a classifier head's flattening");
    return (ret = need_activation(ld, x, "input")) ? ret : general_reshape(ld, x, shape);
  }
  if (!(out = alias_output(ld, x)))
    return STRATA_EINVAL;
  out->groups = groups;
  return 0;
}

static int op_unary(struct loader *ld, int kind)
{
  struct value *x;
  int ret;
  if ((ret = node_input(ld, 0, 1, &x)) || (ret = need_activation(ld, x, "input")))
    return ret;
  float p = 0, p2 = 0;
  if (kind == STRATA__LAYER_LEAKY_RELU)
    p = attr_float(ld->node, "alpha", 0.01f);
  else if (kind == STRATA__LAYER_LOG)
    p = -INFINITY; /* log(max(x, -inf)) = log(x) */
  else if (kind == STRATA__LAYER_CLIP) {
    p = -INFINITY;
    p2 = INFINITY;
    if (ld->opset < 11) {
      p = attr_float(ld->node, "min", p);
      p2 = attr_float(ld->node, "max", p2);
    }
    for (int i = 1; i <= 2; i++) {
      struct value *bound;
      if ((ret = node_input(ld, (size_t)i, 0, &bound)))
        return ret;
      if (bound && ((ret = need_constant(ld, bound, "bound")) || bound->count != 1))
        return ret ? ret : fail(ld, "bound '%s' must be a scalar", bound->name);
      if (bound)
        *(i == 1 ? &p : &p2) = bound->data[0];
    }
  } else if (kind == STRATA__LAYER_SOFTMAX) {
    int64_t axis = attr_int(ld->node, "axis", ld->opset < 13 ? 1 : -1);
    /* Before opset 13 the axis flattens all that follows it: the channels
     * alone only for a classifier head's values. */
    int channels_only = x->flat || x->global || ld->opset >= 13 ? channel_axis(x, axis) : 0;
    if (!channels_only)
      return fail(ld,
                  "Strata's softmax runs over channels (axis 1, opset 13 or later); this "
                  "one has axis %lld at opset %d",
                  (long long)axis, ld->opset);
  }
  /* An activation that alone reads the convolution just before it runs
   * inside that convolution (oneDNN post-op; no pass over memory). */
  struct strata__layer *conv = absorbing_layer(ld, x);
  if (conv && strata__fusable_activation(kind) && !conv->activation &&
      (conv->kind == STRATA__LAYER_CONV3D || conv->kind == STRATA__LAYER_CONV_TRANSPOSE)) {
    conv->activation = kind;
    conv->act_param = p;
    conv->act_param2 = p2;
    return alias_output(ld, x) ? 0 : STRATA_EINVAL;
  }
  struct strata__layer *L = add_layer(ld, kind, &x, 1);
  if (!L)
    return STRATA_EINVAL;
  L->param = p;
  L->param2 = p2;
  set_output_channels(ld, L);
  return 0;
}

static int op_binary(struct loader *ld, int kind)
{
  struct value *in[2];
  int ret;
  if ((ret = node_input(ld, 0, 1, &in[0])) || (ret = node_input(ld, 1, 1, &in[1])))
    return ret;
  if (in[0]->constant && in[1]->constant)
    return fail(ld, "both operands are constants; export with constant folding");
  if (!in[0]->constant && !in[1]->constant) {
    if ((ret = need_activation(ld, in[0], "operand")) ||
        (ret = need_activation(ld, in[1], "operand")))
      return ret;
    if (in[0]->rank != in[1]->rank || in[0]->global != in[1]->global ||
        (in[0]->channels != in[1]->channels && in[0]->channels != 1 && in[1]->channels != 1))
      return fail(ld,
                  "operands '%s' [%d channels] and '%s' [%d channels] do not broadcast "
                  "(same axes, and equal channels or one of them single)",
                  in[0]->name, in[0]->channels, in[1]->name, in[1]->channels);
    struct strata__layer *L = add_layer(ld, kind, in, 2);
    if (!L)
      return STRATA_EINVAL;
    L->channels = in[0]->channels > in[1]->channels ? in[0]->channels : in[1]->channels;
    set_output_channels(ld, L);
    return 0;
  }
  int first_constant = in[0]->constant;
  struct value *x = in[first_constant], *c = in[!first_constant];
  if ((ret = need_activation(ld, x, "operand")))
    return ret;
  int64_t per = per_channel(c, x);
  if (!per)
    return fail(ld, "constant '%s' must be a scalar or per-channel [%d, 1, 1, 1]", c->name,
                x->channels);
  if (kind == STRATA__LAYER_DIV && first_constant)
    return fail(ld, "a constant divided by an activation is not supported");
  int C = x->channels;
  float *scale = malloc(2 * (size_t)C * sizeof *scale), *shift = scale + C;
  if (!scale)
    return STRATA_ENOMEM;
  for (int ch = 0; ch < C; ch++) {
    float v = c->data[per == 1 ? 0 : ch];
    scale[ch] = kind == STRATA__LAYER_MUL                     ? v
                : kind == STRATA__LAYER_DIV                   ? 1.0f / v
                : kind == STRATA__LAYER_SUB && first_constant ? -1.0f
                                                              : 1.0f;
    shift[ch] = kind == STRATA__LAYER_ADD   ? v
                : kind == STRATA__LAYER_SUB ? (first_constant ? v : -v)
                                            : 0.0f;
  }
  ret = add_affine(ld, x, scale, shift);
  free(scale);
  return ret;
}

static int op_concat(struct loader *ld)
{
  int64_t axis = attr_int(ld->node, "axis", 1);
  if (ld->node->n_input < 1 || ld->node->n_input > STRATA__LAYER_MAX_INPUTS)
    return fail(ld, "%zu inputs; Strata concatenates 1 to %d", ld->node->n_input,
                STRATA__LAYER_MAX_INPUTS);
  struct value *in[STRATA__LAYER_MAX_INPUTS];
  int channels = 0, ret;
  for (size_t i = 0; i < ld->node->n_input; i++) {
    if ((ret = node_input(ld, i, 1, &in[i])) || (ret = need_activation(ld, in[i], "input")))
      return ret;
    if (in[i]->rank != in[0]->rank || in[i]->global != in[0]->global)
      return fail(ld, "inputs '%s' and '%s' have different axes", in[0]->name, in[i]->name);
    if (!channel_axis(in[i], axis))
      return fail(ld, "Strata concatenates channels (axis 1), not axis %lld", (long long)axis);
    channels += in[i]->channels;
  }
  struct strata__layer *L = add_layer(ld, STRATA__LAYER_CONCAT, in, (int)ld->node->n_input);
  if (!L)
    return STRATA_EINVAL;
  L->channels = channels;
  set_output_channels(ld, L);
  return 0;
}

static int op_pool(struct loader *ld, int kind)
{
  struct value *x;
  int64_t k[3], s[3], d[3], pb[3], pe[3], unused[3];
  int ret;
  if ((ret = node_input(ld, 0, 1, &x)))
    return ret;
  /* Zeros a Pad node put around the input count in an average: the pool's
   * own padding, counted. */
  struct value plain = *x;
  memset(plain.padded, 0, sizeof plain.padded);
  const int padded = is_padded(x);
  int64_t zeros[2][3];
  memcpy(zeros, x->padded, sizeof zeros);
  if (kind == STRATA__LAYER_AVGPOOL)
    x = &plain;
  if ((ret = need_activation(ld, x, "input")) || (ret = need_cells(ld, x)) ||
      (ret = attr_axes(ld, "kernel_shape", x->rank, 0, 1, 1, k, unused)) ||
      (ret = window(ld, x, k, s, d, pb, pe)))
    return ret;
  int count_pads = kind == STRATA__LAYER_AVGPOOL && attr_int(ld->node, "count_include_pad", 0);
  int64_t ceil_mode = attr_int(ld->node, "ceil_mode", 0), strided = 0;
  if (padded) {
    int64_t own = 0;
    for (int a = 0; a < 3; a++)
      own |= pb[a] | pe[a];
    if (!count_pads && own)
      return fail(ld, "a Pad node's zeros and uncounted pads of the pool cannot be combined");
    for (int a = 0; a < 3; a++)
      pb[a] += zeros[0][a], pe[a] += zeros[1][a];
    count_pads = 1;
  }
  for (int a = 0; a < 3; a++)
    strided |= s[a] > 1;
  if (ld->node->n_output > 1 || (ceil_mode && strided))
    return fail(ld,
                "ceil_mode %lld with strides above 1, or an indices output: Strata pools "
                "with floor rounding and gives the values only",
                (long long)ceil_mode);
  for (int a = 0; a < 3; a++)
    if (pb[a] > d[a] * (k[a] - 1) || pe[a] > d[a] * (k[a] - 1))
      return fail(ld, "pads %lld + %lld exceed the window's extent %lld", (long long)pb[a],
                  (long long)pe[a], (long long)(d[a] * (k[a] - 1) + 1));
  struct strata__layer *L = add_layer(ld, kind, &x, 1);
  if (!L)
    return STRATA_EINVAL;
  for (int a = 0; a < 3; a++) {
    L->kernel[a] = (int)k[a], L->dilation[a] = (int)d[a], L->stride[a] = (int)s[a];
    L->pad[a] = (int)pb[a], L->pad_end[a] = (int)pe[a];
  }
  L->param = (float)count_pads;
  set_output_channels(ld, L);
  return 0;
}

static int op_maxpool(struct loader *ld) { return op_pool(ld, STRATA__LAYER_MAXPOOL); }

static int op_avgpool(struct loader *ld) { return op_pool(ld, STRATA__LAYER_AVGPOOL); }

/* GlobalAveragePool: the mean of each channel, a classifier head's start. */
static int op_global_avgpool(struct loader *ld)
{
  struct value *x;
  int ret;
  if ((ret = node_input(ld, 0, 1, &x)) || (ret = need_activation(ld, x, "input")) ||
      (ret = need_cells(ld, x)))
    return ret;
  struct strata__layer *L = add_layer(ld, STRATA__LAYER_GLOBAL_AVGPOOL, &x, 1);
  if (!L)
    return STRATA_EINVAL;
  last_output(ld)->global = 1;
  set_output_channels(ld, L);
  return 0;
}

/* The axes of Squeeze, Unsqueeze or ReduceMean, from input 1 from opset
 * `since` on, else from the attribute, each in [0, dims) after adding dims
 * to a negative one (dims of the input, plus the axes named where they are
 * inserted), sorted and distinct. Returns how many (0: none given) or a
 * negative error. */
static int node_axes(struct loader *ld, int since, int dims, int inserted, int64_t axes[MAX_DIMS])
{
  const Onnx__AttributeProto *a = NULL;
  struct value *v = NULL;
  int ret;
  if (ld->opset < since)
    a = attribute(ld->node, "axes");
  else if ((ret = node_input(ld, 1, 0, &v)) || (v && (ret = need_constant(ld, v, "axes"))))
    return ret;
  const int64_t count = v ? v->count : a ? (int64_t)a->n_ints : 0;
  if (count > MAX_DIMS)
    return fail(ld, "more than %d axes", MAX_DIMS);
  const int n = (int)count;
  for (int i = 0; i < n; i++)
    axes[i] = v ? whole(v->data[i]) : a->ints[i];
  dims += inserted ? n : 0;
  for (int i = 0; i < n; i++) {
    if (axes[i] < -dims || axes[i] >= dims)
      return fail(ld, "axis %lld of a %d-D tensor", (long long)axes[i], dims);
    axes[i] += axes[i] < 0 ? dims : 0;
    for (int j = i; j > 0 && axes[j - 1] >= axes[j]; j--) {
      if (axes[j - 1] == axes[j])
        return fail(ld, "axis %lld is named twice", (long long)axes[j]);
      int64_t t = axes[j];
      axes[j] = axes[j - 1], axes[j - 1] = t;
    }
  }
  return n;
}

/* ReduceMean over every spatial axis: GlobalAveragePool, or with
 * keepdims = 0 its values as [N, C] (what torch.export writes for
 * adaptive_avg_pool3d(x, 1)). */
static int op_reduce_mean(struct loader *ld)
{
  struct value *x;
  int64_t axes[MAX_DIMS];
  int ret;
  if ((ret = node_input(ld, 0, 1, &x)) || (ret = need_activation(ld, x, "input")) ||
      (ret = need_cells(ld, x)))
    return ret;
  int n = node_axes(ld, 18, 2 + x->rank, 0, axes);
  if (n < 0)
    return n;
  if (n == 0 && attr_int(ld->node, "noop_with_empty_axes", 0))
    return alias_output(ld, x) ? 0 : STRATA_EINVAL;
  int spatial = n == x->rank;
  for (int i = 0; spatial && i < n; i++)
    spatial = axes[i] == 2 + i;
  if (!spatial)
    return fail(ld, "Strata averages over all the spatial axes together (a global pooling)");
  if ((ret = op_global_avgpool(ld)))
    return ret;
  last_output(ld)->flat = attr_int(ld->node, "keepdims", 1) == 0;
  return 0;
}

/* Squeeze and Unsqueeze of spatial axes: a RESHAPE layer. Each kept axis
 * keeps its extent: copied where it stays on its runner axis (the runner
 * right-aligns spatial axes in (z, y, x)), else the extent the graph fixes.
 * A squeezed axis that is not 1 at run time leaves the layer without valid
 * extents, and the model is refused at that extent. */
static int op_squeeze(struct loader *ld)
{
  const int unsqueeze = strcmp(ld->node->op_type, "Unsqueeze") == 0;
  struct value *x;
  int64_t axes[MAX_DIMS];
  int ret;
  if ((ret = node_input(ld, 0, 1, &x)) || (ret = need_activation(ld, x, "input")))
    return ret;
  const int dims = x->flat ? 2 : 2 + x->rank;
  int n = node_axes(ld, 13, dims, unsqueeze, axes);
  if (n < 0)
    return n;
  if (x->global) { /* per-array values: [N, C] and [N, C, 1, ...] view one another */
    const int from = x->flat ? 0 : x->rank, to = unsqueeze ? from + n : from - n;
    if (n == 0 || axes[0] < 2 || to < 0 || to > 3)
      return fail(ld, "Strata views per-array values as [N, C] up to [N, C, 1, 1, 1]");
    struct value *out = alias_output(ld, x);
    if (!out)
      return STRATA_EINVAL;
    out->flat = to == 0;
    out->rank = to ? to : x->rank;
    return 0;
  }
  const int rank = unsqueeze ? x->rank + n : x->rank - n;
  if (n == 0 || axes[0] < 2 || rank < 1 || rank > 3)
    return fail(ld,
                "Strata %s spatial axes, named, keeping 1 to 3 of them (here %d axes named, "
                "the first %lld, of %d spatial)",
                unsqueeze ? "inserts" : "removes", n, n ? (long long)axes[0] : -1LL, x->rank);
  struct strata__extent e;
  const int known = fixed_extent(ld, x, &e);
  if (known < 0)
    return known;
  struct strata__layer *L = add_layer(ld, STRATA__LAYER_RESHAPE, &x, 1);
  if (!L)
    return STRATA_EINVAL;
  for (int a = 0; a < 3; a++)
    L->shape[a] = 1;
  /* walk the spatial axes of the longer side; `named` marks the ones the
   * node inserts (into the output) or removes (from the input) */
  const int longer = unsqueeze ? rank : x->rank;
  int next_in = 0, next_out = 0, k = 0;
  for (int i = 0; i < longer; i++) {
    int named = k < n && axes[k] == 2 + i;
    k += named;
    if (named && unsqueeze) {
      next_out++; /* an inserted 1 */
      continue;
    }
    const int from = 3 - x->rank + next_in++;
    if (named)
      continue; /* removed: must be 1, which the volume checks */
    const int to = 3 - rank + next_out++;
    if (from == to)
      L->shape[to] = 0;
    else if (known)
      L->shape[to] = e.e[from];
    else
      return fail(ld, "moving spatial axis %d needs an input of fixed extent", 2 + i);
  }
  set_output_channels(ld, L);
  last_output(ld)->rank = rank;
  return known && fixed_extent(ld, last_output(ld), &e) < 0 ? STRATA_EINVAL : 0;
}

/* Flatten at axis 1: a classifier head's [N, C, 1, ...] as [N, C], or any
 * activation as [N, C D H W] (a reshape, which needs the input's extent
 * fixed by the graph). */
static int op_flatten(struct loader *ld)
{
  struct value *x, *out;
  int ret;
  if ((ret = node_input(ld, 0, 1, &x)) || (ret = need_activation(ld, x, "input")))
    return ret;
  if (attr_int(ld->node, "axis", 1) != 1)
    return fail(ld, "Strata flattens at axis 1 only");
  if (!x->global) {
    const float flat[2] = {1, -1};
    const struct value shape = {.name = "flatten",
                                .constant = 1,
                                .ndims = 1,
                                .dims = {2},
                                .count = 2,
                                .data = (float *)flat};
    return general_reshape(ld, x, &shape);
  }
  if (!(out = alias_output(ld, x)))
    return STRATA_EINVAL;
  out->flat = 1;
  return 0;
}

/* Gemm and MatMul on a classifier head's [N, C] with constant weights: a
 * pointwise convolution of the per-array values, weights alpha B (as
 * [K, C]) and bias beta C. */
static int op_dense(struct loader *ld)
{
  int gemm = strcmp(ld->node->op_type, "Gemm") == 0;
  struct value *x, *w, *c = NULL;
  int ret;
  if ((ret = node_input(ld, 0, 1, &x)) || (ret = node_input(ld, 1, 1, &w)) ||
      (gemm && (ret = node_input(ld, 2, 0, &c))) || (ret = need_activation(ld, x, "input")) ||
      (ret = need_constant(ld, w, "weight")) || (c && (ret = need_constant(ld, c, "bias"))))
    return ret;
  int trans = gemm ? (int)attr_int(ld->node, "transB", 0) : 0;
  if (!x->flat || (gemm && attr_int(ld->node, "transA", 0)))
    return fail(ld, "Strata multiplies only a classifier head's [N, C] (after a global pooling "
                    "and Flatten), not transposed");
  if (w->ndims != 2 || w->dims[trans ? 1 : 0] != x->channels)
    return fail(ld, "weight '%s' does not fit %d input channels", w->name, x->channels);
  int64_t K = w->dims[trans ? 0 : 1], C = x->channels;
  if (c && c->count != 1 && c->count != K)
    return fail(ld, "bias '%s' has %lld values for %lld outputs", c->name, (long long)c->count,
                (long long)K);
  float alpha = gemm ? attr_float(ld->node, "alpha", 1.0f) : 1.0f,
        beta = gemm ? attr_float(ld->node, "beta", 1.0f) : 1.0f;
  float *packed = malloc((size_t)(K * C + K) * sizeof *packed);
  if (!packed)
    return STRATA_ENOMEM;
  for (int64_t k = 0; k < K; k++) {
    for (int64_t i = 0; i < C; i++)
      packed[k * C + i] = alpha * w->data[trans ? k * C + i : i * K + k];
    packed[K * C + k] = c ? beta * c->data[c->count == 1 ? 0 : k] : 0.0f;
  }
  struct strata__layer *L = add_layer(ld, STRATA__LAYER_CONV3D, &x, 1);
  if (L) {
    L->channels = (int)K;
    L->weight_offset = push_weights(ld, packed, K * C);
    L->bias_offset = c ? push_weights(ld, packed + K * C, K) : -1;
    set_output_channels(ld, L);
    last_output(ld)->flat = 1;
  }
  free(packed);
  return !L ? STRATA_EINVAL : L->weight_offset < 0 || (c && L->bias_offset < 0) ? STRATA_ENOMEM : 0;
}

static int op_resize(struct loader *ld)
{
  struct value *x, *scales, *sizes;
  int ret;
  if ((ret = node_input(ld, 0, 1, &x)) || (ret = need_activation(ld, x, "input")) ||
      (ret = need_cells(ld, x)) || (ret = node_input(ld, 2, 0, &scales)) ||
      (ret = node_input(ld, 3, 0, &sizes)))
    return ret;
  if (sizes || !scales || attribute(ld->node, "axes"))
    return fail(ld, "Strata resizes by constant scales of every axis, not to sizes");
  if ((ret = need_constant(ld, scales, "scales")))
    return ret;
  int scale[3] = {1, 1, 1}, integral = scales->count == x->rank + 2;
  for (int i = 0; integral && i < scales->count; i++) {
    const float v = scales->data[i];
    integral = i < 2 ? v == 1 : whole(v) >= 1 && v <= 64;
    if (integral && i >= 2)
      scale[3 - x->rank + i - 2] = (int)v;
  }
  if (!integral)
    return fail(ld, "scales must be [1, 1, then an integer from 1 to 64 per spatial axis]");
  char mode[32], coords[32], nearest[32];
  attr_string(ld->node, "mode", mode, sizeof mode);
  attr_string(ld->node, "coordinate_transformation_mode", coords, sizeof coords);
  attr_string(ld->node, "nearest_mode", nearest, sizeof nearest);
  if (!*coords)
    strcpy(coords, "half_pixel");
  if (!*nearest)
    strcpy(nearest, "round_prefer_floor");
  int half = strcmp(coords, "half_pixel") == 0 || strcmp(coords, "pytorch_half_pixel") == 0;
  int kind, align = 0;
  if (!*mode || strcmp(mode, "nearest") == 0) {
    /* For integer scales s these pairs all read input floor(o / s). */
    int floor_like =
        (strcmp(coords, "asymmetric") == 0 &&
         (strcmp(nearest, "floor") == 0 || strcmp(nearest, "round_prefer_floor") == 0)) ||
        (half && strncmp(nearest, "round_prefer_", 13) == 0);
    if (!floor_like)
      return fail(ld, "nearest resizing with %s coordinates and %s rounding is not supported",
                  coords, nearest);
    kind = STRATA__LAYER_UPSAMPLE;
  } else if (strcmp(mode, "linear") == 0) {
    align = strcmp(coords, "align_corners") == 0;
    if (!half && !align)
      return fail(ld, "linear resizing with %s coordinates is not supported", coords);
    kind = STRATA__LAYER_UPSAMPLE_LINEAR;
  } else
    return fail(ld, "resize mode '%s' is not supported (nearest, linear)", mode);
  struct strata__layer *L = add_layer(ld, kind, &x, 1);
  if (!L)
    return STRATA_EINVAL;
  for (int a = 0; a < 3; a++)
    L->stride[a] = scale[a];
  L->param = (float)align;
  set_output_channels(ld, L);
  return 0;
}

/* Identity, Dropout at inference, Constant: values without a layer. */
static int op_alias(struct loader *ld)
{
  struct value *x;
  int ret;
  if (ld->node->n_output > 1 && ld->node->output[1][0])
    return fail(ld, "the dropout mask output is not computed at inference");
  if ((ret = node_input(ld, 0, 1, &x)))
    return ret;
  struct value copy = *x;
  struct value *out = new_value(ld, ld->node->n_output ? ld->node->output[0] : NULL);
  if (!out)
    return STRATA_EINVAL;
  int consumers = out->consumers;
  *out = copy;
  out->name = ld->node->output[0];
  out->consumers = consumers;
  if (copy.constant) { /* each value owns its data */
    if (!(out->data = malloc((size_t)(copy.count ? copy.count : 1) * sizeof(float))))
      return STRATA_ENOMEM;
    memcpy(out->data, copy.data, (size_t)copy.count * sizeof(float));
  }
  return 0;
}

/* Pad: zero pads are nothing; zeros around the spatial axes make a padded
 * view that only an average pool reads (PyTorch pads so before AvgPool
 * with count_include_pad). */
static int op_pad(struct loader *ld)
{
  struct value *x, *pads, *fill = NULL, *out;
  char mode[32];
  int ret;
  if ((ret = node_input(ld, 0, 1, &x)) || (ret = node_input(ld, 1, 1, &pads)) ||
      (ret = node_input(ld, 2, 0, &fill)) || (ret = need_constant(ld, pads, "pads")) ||
      (fill && (ret = need_constant(ld, fill, "constant_value"))))
    return ret;
  if (ld->node->n_input > 3 && ld->node->input[3][0]) /* opset 18's axes */
    return fail(ld, "Strata pads every axis (no 'axes' input)");
  attr_string(ld->node, "mode", mode, sizeof mode);
  int zero = 1;
  for (int64_t i = 0; i < pads->count; i++)
    zero &= pads->data[i] == 0;
  if (zero)
    return op_alias(ld);
  if ((ret = need_activation(ld, x, "input")))
    return ret;
  /* [N, C, spatial...] begins, then ends: none on N and C, none negative */
  const int axes = x->rank + 2;
  int plain = pads->count == 2 * axes && (!*mode || strcmp(mode, "constant") == 0) &&
              (!fill || fill->data[0] == 0);
  for (int i = 0; plain && i < axes; i++)
    plain = i < 2 ? pads->data[i] == 0 && pads->data[axes + i] == 0
                  : whole(pads->data[i]) >= 0 && whole(pads->data[axes + i]) >= 0;
  if (!plain)
    return fail(ld,
                "padding %s: Strata reads only zeros around the spatial axes, before an "
                "average pool",
                *mode ? mode : "constant");
  if (!(out = alias_output(ld, x)))
    return STRATA_EINVAL;
  for (int i = 2; i < axes; i++) {
    out->padded[0][3 - x->rank + i - 2] = (int64_t)pads->data[i];
    out->padded[1][3 - x->rank + i - 2] = (int64_t)pads->data[axes + i];
  }
  return 0;
}

static int op_constant(struct loader *ld)
{
  const Onnx__AttributeProto *a = attribute(ld->node, "value");
  if (!a || !a->t)
    return fail(ld, "only tensor-valued constants ('value') are supported");
  struct value *out = new_value(ld, ld->node->n_output ? ld->node->output[0] : NULL);
  return out ? read_tensor(ld, a->t, out) : STRATA_EINVAL;
}

static int map_node(struct loader *ld)
{
  static const struct {
    const char *op;
    int kind;
  } unary[] = {{"Relu", STRATA__LAYER_RELU},       {"LeakyRelu", STRATA__LAYER_LEAKY_RELU},
               {"Sigmoid", STRATA__LAYER_SIGMOID}, {"Tanh", STRATA__LAYER_TANH},
               {"Log", STRATA__LAYER_LOG},         {"Clip", STRATA__LAYER_CLIP},
               {"Softmax", STRATA__LAYER_SOFTMAX}},
    binary[] = {{"Add", STRATA__LAYER_ADD},
                {"Sub", STRATA__LAYER_SUB},
                {"Mul", STRATA__LAYER_MUL},
                {"Div", STRATA__LAYER_DIV}};
  static const struct {
    const char *op;
    int (*map)(struct loader *ld);
  } others[] = {{"Conv", op_conv},
                {"ConvTranspose", op_conv_transpose},
                {"BatchNormalization", op_batchnorm},
                {"InstanceNormalization", op_instancenorm},
                {"Concat", op_concat},
                {"MaxPool", op_maxpool},
                {"AveragePool", op_avgpool},
                {"Resize", op_resize},
                {"Identity", op_alias},
                {"Dropout", op_alias},
                {"Constant", op_constant},
                {"Pad", op_pad},
                {"Reshape", op_reshape},
                {"Shape", op_shape},
                {"GlobalAveragePool", op_global_avgpool},
                {"ReduceMean", op_reduce_mean},
                {"GroupNormalization", op_groupnorm},
                {"Squeeze", op_squeeze},
                {"Unsqueeze", op_squeeze},
                {"Flatten", op_flatten},
                {"Gemm", op_dense},
                {"MatMul", op_dense}};
  const Onnx__NodeProto *node = ld->node;
  const char *op = node->op_type ? node->op_type : "";
  if (node->domain && *node->domain && strcmp(node->domain, "ai.onnx") != 0)
    return fail(ld, "operator domain '%s' is not ONNX's", node->domain);
  if (node->n_output < 1)
    return fail(ld, "no output");
  for (size_t i = 0; i < sizeof unary / sizeof *unary; i++)
    if (strcmp(op, unary[i].op) == 0)
      return op_unary(ld, unary[i].kind);
  for (size_t i = 0; i < sizeof binary / sizeof *binary; i++)
    if (strcmp(op, binary[i].op) == 0)
      return op_binary(ld, binary[i].kind);
  for (size_t i = 0; i < sizeof others / sizeof *others; i++)
    if (strcmp(op, others[i].op) == 0)
      return others[i].map(ld);
  return fail(ld, "operator '%s' is not supported by Strata's runner", op);
}

/* ---- the graph ---- */

static int check_opset(struct loader *ld)
{
  ld->opset = 0;
  for (size_t i = 0; i < ld->model->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = ld->model->opset_import[i];
    if ((!o->domain || !*o->domain || strcmp(o->domain, "ai.onnx") == 0) && o->has_version)
      ld->opset = (int)o->version;
  }
  if (ld->opset < MIN_OPSET || ld->opset > MAX_OPSET)
    return fail(ld, "ONNX opset %d; Strata reads opsets %d to %d", ld->opset, MIN_OPSET, MAX_OPSET);
  return 0;
}

/* The one graph input that is not an initializer: float [N, C, D, H, W]. */
static int bind_input(struct loader *ld)
{
  const Onnx__GraphProto *g = ld->model->graph;
  const Onnx__ValueInfoProto *input = NULL;
  for (size_t i = 0; i < g->n_input; i++) {
    const struct value *v = g->input[i]->name ? find_value(ld, g->input[i]->name) : NULL;
    if (v && v->constant)
      continue;
    if (input)
      return fail(ld, "the graph has several inputs ('%s', '%s'); Strata feeds one", input->name,
                  g->input[i]->name);
    input = g->input[i];
  }
  if (!input || !input->name)
    return fail(ld, "the graph has no input");
  const Onnx__TypeProto *type = input->type;
  const Onnx__TypeProto__Tensor *tensor =
      type && type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ? type->tensor_type : NULL;
  const Onnx__TensorShapeProto *shape = tensor ? tensor->shape : NULL;
  if (!tensor || tensor->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT || !shape ||
      shape->n_dim != 5)
    return fail(ld, "input '%s' must be a float32 tensor [N, C, D, H, W]", input->name);
  const Onnx__TensorShapeProto__Dimension *n = shape->dim[0], *c = shape->dim[1];
  if (c->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE || c->dim_value < 1 ||
      c->dim_value > 4096 ||
      (n->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && n->dim_value != 1))
    return fail(ld, "input '%s' needs a fixed channel count and a batch of 1", input->name);
  /* D, H, W all fixed: the extent the network is made for (a cube) */
  int64_t fixed[3];
  for (int a = 0; a < 3; a++)
    fixed[a] = shape->dim[2 + a]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE
                   ? shape->dim[2 + a]->dim_value
                   : 0;
  if (fixed[0] && fixed[1] && fixed[2]) {
    if (fixed[0] != fixed[1] || fixed[1] != fixed[2] || fixed[0] < 1 || fixed[0] > 4096)
      return fail(ld, "input '%s' is [N, C, %lld, %lld, %lld]: Strata feeds cubes", input->name,
                  (long long)fixed[0], (long long)fixed[1], (long long)fixed[2]);
    ld->fixed_n = fixed[0];
  }
  struct value *v = new_value(ld, input->name);
  if (!v)
    return STRATA_EINVAL;
  v->layer = STRATA__NETWORK_INPUT;
  v->rank = 3;
  v->channels = ld->in_channels = (int)c->dim_value;
  return 0;
}

static const char *metadata(const Onnx__ModelProto *m, const char *key)
{
  for (size_t i = 0; i < m->n_metadata_props; i++)
    if (m->metadata_props[i]->key && strcmp(m->metadata_props[i]->key, key) == 0)
      return m->metadata_props[i]->value;
  return NULL;
}

/* Model name: the graph's, else (absent, or PyTorch's generic "torch_jit",
 * "main_graph" from PyTorch 2) the file's name without its extension. */
static void model_name(const struct loader *ld, char *name, size_t size)
{
  const char *graph = ld->model->graph->name;
  if (graph && *graph && strncmp(graph, "torch_jit", 9) != 0 && strncmp(graph, "torch-jit", 9) &&
      strcmp(graph, "main_graph") != 0) {
    snprintf(name, size, "%s", graph);
    return;
  }
  const char *base = strrchr(ld->path, '/');
  snprintf(name, size, "%s", base ? base + 1 : ld->path);
  char *dot = strrchr(name, '.');
  if (dot && dot != name)
    *dot = '\0';
}

/* The graph outputs, each [N, K, D, H, W] at the input's resolution, end to
 * end in one last layer (a concatenation unless the only output already is
 * the last layer). */
static int bind_outputs(struct loader *ld, struct strata__model_output_range *ranges, int *noutputs,
                        int *first_layer)
{
  const Onnx__GraphProto *g = ld->model->graph;
  if (g->n_output < 1 || g->n_output > STRATA__LAYER_MAX_INPUTS)
    return fail(ld, "the graph has %zu outputs; Strata gives 1 to %d", g->n_output,
                STRATA__LAYER_MAX_INPUTS);
  struct strata__layer last = new_layer(STRATA__LAYER_CONCAT, (int)g->n_output);
  for (size_t i = 0; i < g->n_output; i++) {
    const char *name = g->output[i]->name ? g->output[i]->name : "";
    const struct value *v = find_value(ld, name);
    if (!v || v->constant || v->groups || v->shape || (!v->global && v->rank != 3))
      return fail(ld, "output '%s' must be computed from the input, [N, K, D, H, W] or [N, K]",
                  name);
    int layer = v->layer;
    if (i == 0)
      *first_layer = layer;
    if (v->global) { /* a classifier head's values, in every cell */
      if (ld->nlayers == STRATA__CNN_MAX_LAYERS)
        return fail(ld, "the network has over %d layers", STRATA__CNN_MAX_LAYERS);
      struct strata__layer *L = &ld->layers[ld->nlayers];
      *L = new_layer(STRATA__LAYER_BROADCAST, 1);
      L->inputs[0] = layer;
      L->channels = v->channels;
      snprintf(ld->labels[ld->nlayers], sizeof *ld->labels, "output '%s' in every cell", name);
      layer = ld->nlayers++;
    }
    snprintf(ranges[i].name, sizeof ranges[i].name, "%s", name);
    ranges[i].first = last.channels;
    ranges[i].channels = v->channels;
    last.inputs[i] = layer;
    last.channels += v->channels;
  }
  *noutputs = (int)g->n_output;
  if (g->n_output == 1 && last.inputs[0] == ld->nlayers - 1 && last.inputs[0] >= 0)
    return 0;
  if (ld->nlayers == STRATA__CNN_MAX_LAYERS)
    return fail(ld, "the network has over %d layers", STRATA__CNN_MAX_LAYERS);
  snprintf(ld->labels[ld->nlayers], sizeof *ld->labels, "the outputs together");
  ld->layers[ld->nlayers++] = last;
  return 0;
}

/* "strata.fields": comma-separated names, one per input channel. */
static int input_fields(struct loader *ld, char *list, const char **names, int *n)
{
  *n = 0;
  if (!list)
    return 0;
  char *save = NULL;
  for (char *f = strtok_r(list, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
    while (*f == ' ')
      f++;
    if (*n == ld->in_channels)
      break;
    names[(*n)++] = f;
  }
  if (*n != ld->in_channels || strtok_r(NULL, ",", &save))
    return fail(ld, "metadata strata.fields must name each of the %d input channels",
                ld->in_channels);
  return 0;
}

static int map_graph(struct loader *ld, strata_model **out)
{
  const Onnx__GraphProto *g = ld->model->graph;
  int ret;
  if (!g)
    return fail(ld, "the model has no graph");
  if ((ret = check_opset(ld)))
    return ret;
  /* One value per initializer, the input, and each node's one output. */
  size_t values = g->n_initializer + g->n_input + g->n_node + 1;
  if (values > INT32_MAX || !(ld->values = calloc(values, sizeof *ld->values)))
    return strata__fail(STRATA_ENOMEM, "%s: out of memory", ld->path);
  ld->cap_values = (int)values;
  for (size_t i = 0; i < g->n_initializer; i++) {
    struct value *v = new_value(ld, g->initializer[i]->name);
    if (!v)
      return STRATA_EINVAL;
    if ((ret = read_tensor(ld, g->initializer[i], v)))
      return ret;
  }
  if ((ret = bind_input(ld)))
    return ret;
  if (!(ld->layers = calloc(STRATA__CNN_MAX_LAYERS, sizeof *ld->layers)) ||
      !(ld->labels = calloc(STRATA__CNN_MAX_LAYERS, sizeof *ld->labels)))
    return STRATA_ENOMEM;
  for (size_t i = 0; i < g->n_node; i++) {
    ld->node = g->node[i];
    ld->node_index = (int)i;
    if ((ret = map_node(ld)))
      return ret;
  }
  ld->node = NULL;
  struct strata__model_output_range ranges[STRATA__LAYER_MAX_INPUTS];
  int noutputs = 0, first = -1;
  if ((ret = bind_outputs(ld, ranges, &noutputs, &first)))
    return ret;
  /* A probability map, unless the metadata says otherwise, when the first
   * output comes out of a sigmoid or a softmax. */
  const char *kind = metadata(ld->model, "strata.output");
  int probability = first >= 0 && (ld->layers[first].kind == STRATA__LAYER_SIGMOID ||
                                   ld->layers[first].kind == STRATA__LAYER_SOFTMAX ||
                                   ld->layers[first].activation == STRATA__LAYER_SIGMOID);
  if (kind && strcmp(kind, "probability") != 0 && strcmp(kind, "field") != 0)
    return fail(ld, "metadata strata.output must be probability or field, not '%s'", kind);
  if (kind)
    probability = strcmp(kind, "probability") == 0;
  const char *listed = metadata(ld->model, "strata.fields");
  char *list = listed ? strdup(listed) : NULL;
  const char *names[4096];
  int nfields;
  if (listed && !list)
    return STRATA_ENOMEM;
  if ((ret = input_fields(ld, list, names, &nfields))) {
    free(list);
    return ret;
  }
  char name[64];
  model_name(ld, name, sizeof name);
  const struct strata__network_spec spec = {.name = name,
                                            .in_channels = ld->in_channels,
                                            .output = probability ? STRATA_MODEL_PROBABILITY
                                                                  : STRATA_MODEL_FIELD,
                                            .fields = names,
                                            .nfields = nfields,
                                            .layers = ld->layers,
                                            .nlayers = ld->nlayers,
                                            .weights = ld->weights,
                                            .nweights = ld->nweights,
                                            .outputs = ranges,
                                            .noutputs = noutputs,
                                            .labels = (const char(*)[96])ld->labels,
                                            .fixed_n = ld->fixed_n};
  ld->layers = NULL; /* taken over */
  ret = strata__model_from_network(&spec, out);
  free(list);
  return ret;
}

int strata_model_load_onnx(const char *onnx_path, strata_model **out)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!onnx_path || !out)
    return STRATA_EINVAL;
  *out = NULL;
  size_t size;
  uint8_t *bytes = (uint8_t *)strata__model_read_file(onnx_path, MAX_FILE_BYTES, &size);
  if (!bytes)
    return strata__fail(STRATA_EIO, "%s: cannot read (missing, or over 2 GiB)", onnx_path);
  struct loader ld = {.path = onnx_path};
  ld.model = onnx__model_proto__unpack(NULL, size, bytes);
  free(bytes);
  if (!ld.model)
    return strata__fail(STRATA_EIO, "%s: not an ONNX model (the protobuf does not decode)",
                        onnx_path);
  char copy[sizeof ld.dir];
  snprintf(copy, sizeof copy, "%s", onnx_path);
  snprintf(ld.dir, sizeof ld.dir, "%s", dirname(copy));
  ret = map_graph(&ld, out);
  for (int i = 0; i < ld.nvalues; i++)
    free(ld.values[i].data);
  free(ld.values);
  free(ld.layers);
  free(ld.labels);
  free(ld.weights);
  onnx__model_proto__free_unpacked(ld.model, NULL);
  return ret;
}
