/* Models: the network description (JSON + .npy) validated into layer
 * descriptors and one packed weight buffer registered with StarPU, the
 * application's plug-ins, and the model codelet's invocation. */
#include <cjson/cJSON.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codelets.h"
#include "internal/model.h"
#include "internal/runtime.h"
#include "kernels/cnn_kernels.h"
#include "model.h"
#include "model_impl.h"
#include "strata_build_config.h"

#define MAX_KERNEL 31

struct strata_model {
  char name[64];
  int in_channels, out_channels;
  strata_model_output output;
  char **fields;                              /* in_channels names, or NULL */
  struct strata__model_output_range *outputs; /* the named outputs, in channel order */
  int noutputs;
  /* built-in network (NULL layers for plug-ins) */
  struct strata__layer *layers;
  struct strata__network net;
  char (*labels)[96]; /* per layer, what it was made from ("node 3 '/Conv'"), or NULL */
  int64_t fixed_n;    /* the one input extent the network is made for, or 0 */
  float *weights;
  size_t weights_bytes;
  /* plug-in */
  strata_model_ops ops;
  /* StarPU */
  struct strata__model_call call;
  int64_t cpu_ns; /* CPU time of its CPU tasks so far (call.cpu_ns points here) */
  starpu_data_handle_t weights_handle;
  int64_t scratch_n; /* extent the scratch handle is sized for, -1 if none */
  starpu_data_handle_t scratch;
  strata__live live;
};

static void network_cpu(void *model, const float *weights, const float *in, float *out, int64_t n,
                        void *scratch)
{
  strata__cnn_forward_cpu(&((strata_model *)model)->net, weights, in, n, out, scratch);
}

static double network_flops(void *model, int64_t n)
{
  return strata__cnn_flops(&((strata_model *)model)->net, n);
}

#if STRATA_HAVE_CUDA_KERNELS
static int network_cuda(void *model, const float *weights, const float *in, float *out, int64_t n,
                        void *scratch, void *cublas, void *stream)
{
  return strata__cnn_forward_cuda(&((strata_model *)model)->net, weights, in, n, out, scratch,
                                  cublas, stream);
}
#endif

static void plugin_cpu(void *model, const float *weights, const float *in, float *out, int64_t n,
                       void *scratch)
{
  (void)weights;
  strata_model *m = model;
  m->ops.cpu(m->ops.user, in, out, n, scratch);
}

static int plugin_cuda(void *model, const float *weights, const float *in, float *out, int64_t n,
                       void *scratch, void *cublas, void *stream)
{
  (void)weights;
  (void)cublas;
  strata_model *m = model;
  return m->ops.cuda(m->ops.user, in, out, n, scratch, stream);
}

static void free_model(strata_model *m)
{
  if (!m)
    return;
  strata__live_remove(&m->live);
  if (m->fields)
    for (int c = 0; c < m->in_channels; c++)
      free(m->fields[c]);
  free(m->fields);
  free(m->outputs);
  strata__cnn_plans_destroy(m->net.plans);
  free(m->layers);
  free(m->labels);
  strata__host_free(m->weights, m->weights_bytes);
  free(m);
}

static int destroy_live(void *m) { return strata_model_destroy(m); }

/* Register the weights, prepare the codelet call and track the object. */
static int finish_model(strata_model *m, int64_t nweights)
{
  if (!m->weights) {
    if (strata__host_alloc((void **)&m->weights, sizeof(float)) != 0)
      return STRATA_ENOMEM;
    m->weights_bytes = sizeof(float);
  }
  starpu_vector_data_register(&m->weights_handle, STARPU_MAIN_RAM, (uintptr_t)m->weights,
                              (uint32_t)(nweights > 0 ? nweights : 1), sizeof(float));
  m->call.model = m;
  m->call.cpu_ns = &m->cpu_ns;
  m->call.in_channels = m->in_channels;
  m->call.id = starpu_hash_crc32c_string(m->name, (uint32_t)nweights);
  if (!m->outputs) {
    if (!(m->outputs = calloc(1, sizeof *m->outputs)))
      return STRATA_ENOMEM;
    snprintf(m->outputs[0].name, sizeof m->outputs[0].name, "output");
    m->outputs[0].channels = m->out_channels;
    m->noutputs = 1;
  }
  m->scratch_n = -1;
  strata__live_add(&strata__objects, &m->live, "model", m, destroy_live);
  return 0;
}

static int copy_fields(strata_model *m, const char *const *names, int n)
{
  if (n == 0)
    return 0;
  if (!(m->fields = calloc((size_t)m->in_channels, sizeof *m->fields)))
    return STRATA_ENOMEM;
  for (int c = 0; c < n; c++)
    if (!(m->fields[c] = strdup(names[c])))
      return STRATA_ENOMEM;
  return 0;
}

int strata_model_create(const strata_model_ops *ops, strata_model **out)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!out)
    return STRATA_EINVAL;
  *out = NULL;
  if (!ops || !ops->cpu || ops->in_channels < 1 || ops->out_channels < 1 ||
      (ops->n_input_fields != 0 && ops->n_input_fields != ops->in_channels) ||
      (ops->n_input_fields && !ops->input_fields) ||
      (ops->output != STRATA_MODEL_PROBABILITY && ops->output != STRATA_MODEL_FIELD))
    return STRATA_EINVAL;
  strata_model *m = calloc(1, sizeof *m);
  if (!m)
    return STRATA_ENOMEM;
  snprintf(m->name, sizeof m->name, "%s", ops->name ? ops->name : "user");
  m->in_channels = ops->in_channels;
  m->out_channels = ops->out_channels;
  m->output = ops->output;
  m->ops = *ops;
  m->call.cpu = plugin_cpu;
  m->call.cuda = ops->cuda ? plugin_cuda : NULL;
  if ((ret = copy_fields(m, ops->input_fields, ops->n_input_fields)) ||
      (ret = finish_model(m, 0))) {
    free_model(m);
    return ret;
  }
  *out = m;
  return 0;
}

/* Each layer kind by the name that JSON descriptions and
 * strata_model_layer_info() use. */
static const char *const layer_names[] = {
    [STRATA__LAYER_CONV3D] = "conv3d",
    [STRATA__LAYER_RELU] = "relu",
    [STRATA__LAYER_LEAKY_RELU] = "leaky_relu",
    [STRATA__LAYER_SIGMOID] = "sigmoid",
    [STRATA__LAYER_LOG] = "log",
    [STRATA__LAYER_MAXPOOL] = "maxpool",
    [STRATA__LAYER_UPSAMPLE] = "upsample",
    [STRATA__LAYER_CONCAT] = "concat",
    [STRATA__LAYER_CONV_TRANSPOSE] = "conv_transpose3d",
    [STRATA__LAYER_TANH] = "tanh",
    [STRATA__LAYER_CLIP] = "clip",
    [STRATA__LAYER_AFFINE] = "affine",
    [STRATA__LAYER_NORM] = "norm",
    [STRATA__LAYER_ADD] = "add",
    [STRATA__LAYER_SUB] = "sub",
    [STRATA__LAYER_MUL] = "mul",
    [STRATA__LAYER_DIV] = "div",
    [STRATA__LAYER_SOFTMAX] = "softmax",
    [STRATA__LAYER_AVGPOOL] = "avgpool",
    [STRATA__LAYER_UPSAMPLE_LINEAR] = "upsample_linear",
    [STRATA__LAYER_GLOBAL_AVGPOOL] = "global_avgpool",
    [STRATA__LAYER_BROADCAST] = "broadcast",
    [STRATA__LAYER_RESHAPE] = "reshape",
};

/* ---- loading a network description ---- */

struct loader {
  const char *path; /* JSON file, for messages */
  char dir[4096];   /* its directory, for the weight files */
  strata_model *m;
  const char *names[STRATA__CNN_MAX_LAYERS];
  float *blobs[STRATA__CNN_MAX_LAYERS][2]; /* weights and bias of conv layers, malloc'd */
  int64_t sizes[STRATA__CNN_MAX_LAYERS][2];
  int levels[STRATA__CNN_MAX_LAYERS]; /* resolution: a layer's extent is n >> level */
};

char *strata__model_read_file(const char *path, size_t limit, size_t *size)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  long end = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  char *data = end >= 0 && (size_t)end <= limit && fseek(f, 0, SEEK_SET) == 0
                   ? malloc((size_t)end + 1)
                   : NULL;
  if (data && fread(data, 1, (size_t)end, f) != (size_t)end) {
    free(data);
    data = NULL;
  }
  fclose(f);
  if (data) {
    data[end] = '\0';
    *size = (size_t)end;
  }
  return data;
}

static int json_int(const cJSON *obj, const char *key, int fallback, int *value)
{
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!item) {
    *value = fallback;
    return fallback != INT32_MIN;
  }
  /* range first: converting a double outside int's range is undefined */
  if (!cJSON_IsNumber(item) ||
      !(item->valuedouble >= INT32_MIN && item->valuedouble <= INT32_MAX) ||
      item->valuedouble != floor(item->valuedouble))
    return 0;
  *value = (int)item->valuedouble;
  return 1;
}

static int find_layer(const struct loader *ld, int count, const char *name)
{
  if (strcmp(name, "input") == 0)
    return STRATA__NETWORK_INPUT;
  for (int i = 0; i < count; i++)
    if (strcmp(ld->names[i], name) == 0)
      return i;
  return -2;
}

/* Read a float32 .npy next to the JSON file and check its shape. */
static int load_tensor(struct loader *ld, int l, int which, const char *file, int ndim,
                       const int64_t *want)
{
  char path[8192];
  snprintf(path, sizeof path, "%s/%s", ld->dir, file);
  int got_ndim;
  int64_t shape[STRATA_MAX_DIMS];
  int ret = strata__npy_read_f32(path, &got_ndim, shape, &ld->blobs[l][which]);
  if (ret) {
    char inner[512];
    snprintf(inner, sizeof inner, "%s", strata_error_message());
    return strata__fail(ret, "%s: layer '%s': %s", ld->path, ld->names[l], inner);
  }
  int same = got_ndim == ndim;
  int64_t size = 1;
  for (int d = 0; same && d < ndim; d++) {
    same = shape[d] == want[d];
    size *= want[d];
  }
  if (!same)
    return strata__fail(STRATA_EINVAL, "%s: layer '%s': %s has the wrong shape", ld->path,
                        ld->names[l], file);
  /* One NaN weight makes every probability NaN and silently no bubble. */
  for (int64_t i = 0; i < size; i++)
    if (!isfinite(ld->blobs[l][which][i]))
      return strata__fail(STRATA_EINVAL, "%s: layer '%s': %s holds %s at element %lld", ld->path,
                          ld->names[l], file, isnan(ld->blobs[l][which][i]) ? "NaN" : "infinity",
                          (long long)i);
  ld->sizes[l][which] = size;
  return 0;
}

static int parse_layer(struct loader *ld, const cJSON *js, int l)
{
  /* the kinds JSON descriptions may use (concat: of exactly two inputs) */
  static const int kinds[] = {STRATA__LAYER_CONV3D,   STRATA__LAYER_RELU,  STRATA__LAYER_LEAKY_RELU,
                              STRATA__LAYER_SIGMOID,  STRATA__LAYER_LOG,   STRATA__LAYER_MAXPOOL,
                              STRATA__LAYER_UPSAMPLE, STRATA__LAYER_CONCAT};
  struct strata__layer *L = &ld->m->layers[l];
  const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(js, "name"));
  const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(js, "type"));
  if (!cJSON_IsObject(js) || !name || !type)
    return strata__fail(STRATA_EINVAL, "%s: layer %d needs a \"name\" and a \"type\"", ld->path, l);
  if (strcmp(name, "input") == 0 || find_layer(ld, l, name) >= 0)
    return strata__fail(STRATA_EINVAL, "%s: layer name '%s' is reserved or repeated", ld->path,
                        name);
  ld->names[l] = name;
  L->kind = -1;
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
    if (strcmp(type, layer_names[kinds[k]]) == 0) {
      L->kind = kinds[k];
      L->ninputs = kinds[k] == STRATA__LAYER_CONCAT ? 2 : 1;
    }
  if (L->kind < 0)
    return strata__fail(STRATA_EINVAL, "%s: layer '%s': unknown type '%s'", ld->path, name, type);

  const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(js, "inputs");
  if (!inputs && L->ninputs == 1)
    L->inputs[0] = l - 1; /* the previous layer, or the input for the first */
  else if (!cJSON_IsArray(inputs) || cJSON_GetArraySize(inputs) != L->ninputs)
    return strata__fail(STRATA_EINVAL, "%s: layer '%s' needs %d input(s)", ld->path, name,
                        L->ninputs);
  else
    for (int i = 0; i < L->ninputs; i++) {
      const char *src = cJSON_GetStringValue(cJSON_GetArrayItem(inputs, i));
      if (!src || (L->inputs[i] = find_layer(ld, l, src)) < -1)
        return strata__fail(STRATA_EINVAL, "%s: layer '%s': input '%s' is not an earlier layer",
                            ld->path, name, src ? src : "?");
    }
  int level[2], channels[2];
  for (int i = 0; i < L->ninputs; i++) {
    int s = L->inputs[i];
    level[i] = s < 0 ? 0 : ld->levels[s];
    channels[i] = s < 0 ? ld->m->in_channels : ld->m->layers[s].channels;
  }
  ld->levels[l] = level[0];
  L->channels = channels[0];
  L->bias_offset = -1;
  L->groups = 1;
  strata__layer_window(L, 1, 1, 1, 0, 0);
  switch (L->kind) {
  case STRATA__LAYER_CONV3D: {
    const char *w = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(js, "weights"));
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(js, "bias");
    int k, d;
    if (!json_int(js, "out_channels", INT32_MIN, &L->channels) || L->channels < 1 ||
        !json_int(js, "kernel", INT32_MIN, &k) || k < 1 || k > MAX_KERNEL ||
        !json_int(js, "dilation", 1, &d) || d < 1 || d > 16 || !w ||
        (b && !cJSON_IsNull(b) && !cJSON_IsString(b)))
      return strata__fail(STRATA_EINVAL,
                          "%s: layer '%s': conv3d needs out_channels >= 1, kernel 1..%d, "
                          "dilation 1..16, \"weights\" and an optional \"bias\" file",
                          ld->path, name, MAX_KERNEL);
    strata__layer_same(L, k, d);
    int64_t wshape[5] = {L->channels, channels[0], k, k, k};
    int ret = load_tensor(ld, l, 0, w, 5, wshape);
    if (!ret && cJSON_IsString(b))
      ret = load_tensor(ld, l, 1, b->valuestring, 1, wshape);
    return ret;
  }
  case STRATA__LAYER_LEAKY_RELU:
  case STRATA__LAYER_LOG: {
    const char *key = L->kind == STRATA__LAYER_LOG ? "floor" : "slope";
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(js, key);
    L->param = L->kind == STRATA__LAYER_LOG ? 1e-30f : 0.01f;
    if (p && !cJSON_IsNumber(p))
      return strata__fail(STRATA_EINVAL, "%s: layer '%s': \"%s\" must be a number", ld->path, name,
                          key);
    if (p)
      L->param = (float)p->valuedouble;
    if (L->kind == STRATA__LAYER_LOG && !(L->param > 0))
      return strata__fail(STRATA_EINVAL, "%s: layer '%s': \"floor\" must be > 0", ld->path, name);
    return 0;
  }
  case STRATA__LAYER_MAXPOOL:
    strata__pool_halving(L);
    ld->levels[l]++;
    return 0;
  case STRATA__LAYER_UPSAMPLE:
    strata__layer_window(L, 1, 1, 2, 0, 0);
    if (--ld->levels[l] < 0)
      return strata__fail(STRATA_EINVAL, "%s: layer '%s': upsampling above the input resolution",
                          ld->path, name);
    return 0;
  case STRATA__LAYER_CONCAT:
    if (level[0] != level[1])
      return strata__fail(STRATA_EINVAL, "%s: layer '%s': inputs at different resolutions",
                          ld->path, name);
    L->channels = channels[0] + channels[1];
    return 0;
  default: return 0;
  }
}

/* Check the header, then each layer; pack the weights. */
static int parse_model(struct loader *ld, const cJSON *root, strata_model **out)
{
  strata_model *m = ld->m;
  const char *format = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "format"));
  int version;
  if (!format || strcmp(format, "strata-model") != 0 ||
      !json_int(root, "version", INT32_MIN, &version) || version != 1)
    return strata__fail(STRATA_EINVAL, "%s: not a strata-model version 1 description", ld->path);
  const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "name"));
  snprintf(m->name, sizeof m->name, "%s", name ? name : "model");
  const cJSON *in = cJSON_GetObjectItemCaseSensitive(root, "input");
  const cJSON *outp = cJSON_GetObjectItemCaseSensitive(root, "output");
  const cJSON *fields = cJSON_GetObjectItemCaseSensitive(in, "fields");
  const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(outp, "kind"));
  if (!cJSON_IsObject(in) || !cJSON_IsObject(outp) ||
      !json_int(in, "channels", INT32_MIN, &m->in_channels) || m->in_channels < 1 ||
      !json_int(outp, "channels", INT32_MIN, &m->out_channels) || m->out_channels < 1)
    return strata__fail(STRATA_EINVAL, "%s: \"input\" and \"output\" need \"channels\" >= 1",
                        ld->path);
  if (kind && strcmp(kind, "probability") != 0 && strcmp(kind, "field") != 0)
    return strata__fail(STRATA_EINVAL, "%s: output kind must be probability or field", ld->path);
  m->output = kind && strcmp(kind, "field") == 0 ? STRATA_MODEL_FIELD : STRATA_MODEL_PROBABILITY;
  if (fields) {
    const char *names[64];
    int n = cJSON_GetArraySize(fields);
    if (!cJSON_IsArray(fields) || n != m->in_channels || n > 64)
      return strata__fail(STRATA_EINVAL, "%s: \"fields\" must name each input channel", ld->path);
    for (int c = 0; c < n; c++)
      if (!(names[c] = cJSON_GetStringValue(cJSON_GetArrayItem(fields, c))))
        return strata__fail(STRATA_EINVAL, "%s: field names must be strings", ld->path);
    int ret = copy_fields(m, names, n);
    if (ret)
      return ret;
  }
  const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
  int nl = cJSON_GetArraySize(layers);
  if (!cJSON_IsArray(layers) || nl < 1 || nl > STRATA__CNN_MAX_LAYERS)
    return strata__fail(STRATA_EINVAL, "%s: \"layers\" must hold 1 to %d layers", ld->path,
                        STRATA__CNN_MAX_LAYERS);
  if (!(m->layers = calloc((size_t)nl, sizeof *m->layers)))
    return STRATA_ENOMEM;
  for (int l = 0; l < nl; l++) {
    int ret = parse_layer(ld, cJSON_GetArrayItem(layers, l), l);
    if (ret)
      return ret;
  }
  const struct strata__layer *last = &m->layers[nl - 1];
  if (ld->levels[nl - 1] != 0 || last->channels != m->out_channels)
    return strata__fail(STRATA_EINVAL,
                        "%s: the last layer gives %d channel(s) at level %d, not %d at level 0",
                        ld->path, last->channels, ld->levels[nl - 1], m->out_channels);
  int64_t total = 0; /* each block aligned as the runner wants */
  for (int l = 0; l < nl; l++)
    for (int which = 0; which < 2; which++)
      if (ld->blobs[l][which])
        total = strata__cnn_align(total) + ld->sizes[l][which];
  float *packed = total > 0 ? calloc((size_t)total, sizeof(float)) : NULL;
  if (total > 0 && !packed)
    return STRATA_ENOMEM;
  int64_t at = 0;
  for (int l = 0; l < nl; l++)
    for (int which = 0; which < 2; which++)
      if (ld->blobs[l][which]) {
        at = strata__cnn_align(at);
        memcpy(packed + at, ld->blobs[l][which], (size_t)ld->sizes[l][which] * sizeof(float));
        *(which ? &m->layers[l].bias_offset : &m->layers[l].weight_offset) = at;
        at += ld->sizes[l][which];
      }
  struct strata__layer *network = m->layers;
  m->layers = NULL; /* handed to the network's model below */
  const struct strata__network_spec spec = {.name = m->name,
                                            .in_channels = m->in_channels,
                                            .output = m->output,
                                            .fields = (const char *const *)m->fields,
                                            .nfields = m->fields ? m->in_channels : 0,
                                            .layers = network,
                                            .nlayers = nl,
                                            .weights = packed,
                                            .nweights = total};
  int ret = strata__model_from_network(&spec, out);
  free(packed);
  return ret;
}

/* The one way a loaded network becomes a model: its layers (taken over),
 * its packed weights (copied into registered memory) and its outputs. */
int strata__model_from_network(const struct strata__network_spec *spec, strata_model **out)
{
  *out = NULL;
  strata_model *m = calloc(1, sizeof *m);
  if (!m) {
    free(spec->layers);
    return STRATA_ENOMEM;
  }
  snprintf(m->name, sizeof m->name, "%s", spec->name);
  m->in_channels = spec->in_channels;
  m->output = spec->output;
  m->layers = spec->layers;
  const struct strata__layer *last = &spec->layers[spec->nlayers - 1];
  m->out_channels = last->channels;
  m->fixed_n = spec->fixed_n > 0 ? spec->fixed_n : 0;
  int ret = copy_fields(m, spec->fields, spec->nfields);
  if (!ret && spec->labels) {
    if (!(m->labels = malloc((size_t)spec->nlayers * sizeof *m->labels)))
      ret = STRATA_ENOMEM;
    else
      memcpy(m->labels, spec->labels, (size_t)spec->nlayers * sizeof *m->labels);
  }
  if (!ret && spec->noutputs > 0) {
    if (!(m->outputs = malloc((size_t)spec->noutputs * sizeof *m->outputs)))
      ret = STRATA_ENOMEM;
    else {
      memcpy(m->outputs, spec->outputs, (size_t)spec->noutputs * sizeof *m->outputs);
      m->noutputs = spec->noutputs;
    }
  }
  if (!ret && spec->nweights > 0) {
    m->weights_bytes = (size_t)spec->nweights * sizeof(float);
    if (strata__host_alloc((void **)&m->weights, m->weights_bytes) != 0)
      ret = STRATA_ENOMEM;
    else
      memcpy(m->weights, spec->weights, m->weights_bytes);
  }
  m->net = (struct strata__network){m->layers, spec->nlayers, m->in_channels,
                                    strata__cnn_plans_create()};
  m->call.cpu = network_cpu;
  m->call.flops = network_flops;
#if STRATA_HAVE_CUDA_KERNELS
  m->call.cuda = network_cuda;
#endif
  if (ret || (spec->fixed_n > 0 && (ret = strata__model_check_extent(m, spec->fixed_n))) ||
      (ret = finish_model(m, spec->nweights))) {
    free_model(m);
    return ret;
  }
  *out = m;
  return 0;
}

int strata_model_load(const char *json_path, strata_model **out)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!json_path || !out)
    return STRATA_EINVAL;
  *out = NULL;
  size_t len = strlen(json_path);
  if (len > 5 && strcmp(json_path + len - 5, ".onnx") == 0)
    return strata_model_load_onnx(json_path, out);
  size_t size;
  char *text = strata__model_read_file(json_path, (size_t)1 << 24, &size);
  if (!text)
    return strata__fail(STRATA_EIO, "%s: cannot read (missing, or over 16 MiB)", json_path);
  cJSON *root = cJSON_Parse(text);
  struct loader *ld = calloc(1, sizeof *ld);
  strata_model *m = calloc(1, sizeof *m);
  if (!ld || !m)
    ret = STRATA_ENOMEM;
  else if (!root)
    ret = strata__fail(STRATA_EIO, "%s: malformed JSON near offset %td", json_path,
                       cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - text : (ptrdiff_t)0);
  else {
    char copy[sizeof ld->dir];
    snprintf(copy, sizeof copy, "%s", json_path);
    snprintf(ld->dir, sizeof ld->dir, "%s", dirname(copy));
    ld->path = json_path;
    ld->m = m;
    ret = parse_model(ld, root, out);
  }
  if (ld)
    for (int l = 0; l < STRATA__CNN_MAX_LAYERS; l++)
      free(ld->blobs[l][0]), free(ld->blobs[l][1]);
  free(ld);
  cJSON_Delete(root);
  free(text);
  free_model(m); /* the description's holder: layers and fields, never registered */
  return ret;
}

int strata_model_load_default(strata_model **out)
{
  strata__clear_error();
  if (!out)
    return STRATA_EINVAL;
  const char *env = getenv("STRATA_MODEL_DIR");
  const char *dirs[] = {env, STRATA_MODELS_INSTALL_DIR, STRATA_MODELS_SOURCE_DIR};
  char path[4096];
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
    if (!dirs[i])
      continue;
    snprintf(path, sizeof path, "%s/blob_unet/model.onnx", dirs[i]);
    FILE *f = fopen(path, "r");
    if (f) {
      fclose(f);
      return strata_model_load(path, out);
    }
  }
  return strata__fail(STRATA_EIO, "blob_unet/model.onnx not found (set STRATA_MODEL_DIR)");
}

int strata_model_destroy(strata_model *m)
{
  if (!m)
    return 0;
  int ret = strata__check_ready();
  if (ret)
    return ret;
  starpu_data_unregister(m->weights_handle); /* waits for the tasks */
  if (m->scratch_n >= 0)
    starpu_data_unregister(m->scratch);
  free_model(m);
  return 0;
}

const char *strata_model_name(const strata_model *m) { return m ? m->name : ""; }

int strata_model_describe(const strata_model *m, int *in_channels, int *out_channels,
                          strata_model_output *output)
{
  strata__clear_error();
  if (!m)
    return STRATA_EINVAL;
  if (in_channels)
    *in_channels = m->in_channels;
  if (out_channels)
    *out_channels = m->out_channels;
  if (output)
    *output = m->output;
  return 0;
}

int strata_model_outputs(const strata_model *m, int i, int *count, const char **name,
                         int *first_channel, int *channels)
{
  strata__clear_error();
  if (!m)
    return STRATA_EINVAL;
  if (count)
    *count = m->noutputs;
  if (i < 0 || i >= m->noutputs)
    return STRATA_ERANGE;
  if (name)
    *name = m->outputs[i].name;
  if (first_channel)
    *first_channel = m->outputs[i].first;
  if (channels)
    *channels = m->outputs[i].channels;
  return 0;
}

int strata_model_layer_info(const strata_model *m, int i, int64_t n, int *count,
                            strata_model_layer *info)
{
  strata__clear_error();
  if (!m || n < 1)
    return STRATA_EINVAL;
  int layers = m->layers ? m->net.nlayers : 0;
  if (count)
    *count = layers;
  if (i < 0 || i >= layers)
    return STRATA_ERANGE;
  if (!info)
    return 0;
  int ret = strata__model_check_extent(m, n);
  if (ret)
    return ret;
  struct strata__extent ext[layers];
  strata__cnn_extents(&m->net, n, ext);
  const struct strata__layer *L = &m->layers[i];
  int conv = L->kind == STRATA__LAYER_CONV3D || L->kind == STRATA__LAYER_CONV_TRANSPOSE;
  int window = conv || L->kind == STRATA__LAYER_MAXPOOL || L->kind == STRATA__LAYER_AVGPOOL;
  int64_t cin = strata__layer_in_channels(&m->net, i);
  *info = (strata_model_layer){.type = layer_names[L->kind],
                               .activation = L->activation ? layer_names[L->activation] : NULL,
                               .ninputs = L->ninputs,
                               .channels = L->channels,
                               .flops = strata__cnn_layer_flops(&m->net, i, n, ext),
                               .cuda = STRATA_HAVE_CUDA_KERNELS};
  for (int j = 0; j < L->ninputs; j++)
    info->inputs[j] = L->inputs[j];
  for (int a = 0; a < 3; a++) {
    info->extent[a] = ext[i].e[a];
    if (window) {
      info->kernel[a] = L->kernel[a];
      info->dilation[a] = L->dilation[a];
    }
    if (window || L->kind == STRATA__LAYER_UPSAMPLE || L->kind == STRATA__LAYER_UPSAMPLE_LINEAR)
      info->stride[a] = L->stride[a];
  }
  if (conv) {
    info->groups = L->groups;
    info->parameters = L->channels * cin / L->groups * strata__kernel_volume(L);
  } else if (L->kind == STRATA__LAYER_AFFINE || L->kind == STRATA__LAYER_NORM)
    info->parameters = L->weight_offset >= 0 ? L->channels : 0;
  if (L->bias_offset >= 0)
    info->parameters += L->channels;
  return 0;
}

int strata_model_fixed_extent(const strata_model *m, int64_t *n)
{
  strata__clear_error();
  if (!m || !n)
    return STRATA_EINVAL;
  *n = m->fixed_n;
  return 0;
}

const char *strata_model_input_field(const strata_model *m, int c)
{
  return m && m->fields && c >= 0 && c < m->in_channels ? m->fields[c] : NULL;
}

int strata_model_apply(strata_model *m, strata_array *in, strata_array *out)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!m || !in || !out || in == out)
    return STRATA_EINVAL;
  if (in->dtype != STRATA_FLOAT32 || out->dtype != STRATA_FLOAT32)
    return STRATA_ETYPE;
  int64_t n = strata__cube_extent(in, m->in_channels);
  if ((ret =
           strata__model_check_extent(m, strata__cube_extent(out, m->out_channels) == n ? n : -1)))
    return ret;
  if (in->acquired || out->acquired)
    return strata__array_busy();
  if ((ret = strata__array_ready(in)) || (ret = strata__array_writable(out)))
    return ret;
  return strata__model_submit_handles(m, n, in->handle, out->handle);
}

int strata__model_check_extent(const strata_model *m, int64_t n)
{
  if (n < 1)
    return strata__fail(STRATA_EINVAL, "model '%s' maps [%d, N, N, N] to [%d, N, N, N]: N = %lld",
                        m->name, m->in_channels, m->out_channels, (long long)n);
  if (!m->layers)
    return 0;
  struct strata__extent ext[m->net.nlayers];
  const int bad = strata__cnn_extents(&m->net, n, ext), last = m->net.nlayers - 1;
  if (bad < 0 && ext[last].e[0] == n && ext[last].e[1] == n && ext[last].e[2] == n)
    return 0;
  const int l = bad < 0 ? last : bad;
  return strata__fail(STRATA_EINVAL,
                      "model '%s' does not map [%d, N, N, N] to [%d, N, N, N] at N = %lld: "
                      "layer %d (%s%s%s) %s",
                      m->name, m->in_channels, m->out_channels, (long long)n, l,
                      layer_names[m->layers[l].kind], m->labels ? ", " : "",
                      m->labels ? m->labels[l] : "",
                      bad >= 0 ? "gets no valid extents (empty, or inputs that disagree)"
                               : "gives other extents than the input's");
}

double strata__model_cpu_seconds(const strata_model *m)
{
  return (double)__atomic_load_n(&m->cpu_ns, __ATOMIC_RELAXED) * 1e-9;
}

double strata__model_expected(const strata_model *m, int64_t n, int workerid)
{
  return strata__model_expected_seconds(&m->call, n, workerid);
}

int strata__model_submit_handles(strata_model *m, int64_t n, starpu_data_handle_t in,
                                 starpu_data_handle_t out)
{
  if (m->scratch_n != n) {
    if (m->scratch_n >= 0)
      starpu_data_unregister_submit(m->scratch);
    uint64_t bytes = m->ops.scratch_bytes ? m->ops.scratch_bytes(m->ops.user, n) : 0;
    if (m->layers) { /* oneDNN's convolutions at this extent, before their scratch is sized */
      strata__cnn_prepare(&m->net, m->weights, n);
      bytes = strata__cnn_scratch_floats(&m->net, n) * sizeof(float);
    }
    if (bytes > UINT32_MAX)
      return strata__fail(STRATA_EINVAL, "model '%s': scratch for N = %lld exceeds 4 GiB", m->name,
                          (long long)n);
    m->scratch = strata__scratch_register(bytes);
    m->scratch_n = n;
  }
  return strata__model_submit(&m->call, m->weights_handle, in, out, m->scratch);
}
