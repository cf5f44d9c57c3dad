/* The network runner's convolutions on the CPU through oneDNN: per layer and
 * extent, a direct convolution primitive that picks its own blocked layouts
 * (AVX2/AVX-512 kernels), with the weights reordered once. Activations are
 * plain [channels, n, n, n] between layers, reordered in and out through
 * the scratch area, except between two such convolutions, the second the
 * first's only reader, where they stay blocked. Single-threaded (made and
 * run so), as inside a StarPU worker; several workers run the same prepared
 * primitives at once (user-managed scratchpads). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <dnnl.h>

#include "../cnn_kernels.h"

/* libgomp's, the OpenMP runtime this oneDNN is built on (declared here so
 * that no compiler needs OpenMP support to build Strata). */
void omp_set_num_threads(int threads);
int omp_get_max_threads(void);

/* Floats rounded up to whole 64-byte lines. */
static size_t lines(size_t floats) { return (floats + 15) & ~(size_t)15; }

/* One convolution prepared at one extent. */
struct plan {
  int layer;
  int64_t n;
  dnnl_primitive_t conv, src_in, dst_out; /* reorders may be NULL (plain layout kept) */
  dnnl_memory_desc_t src_plain, dst_plain, src_md, dst_md, bias_md, pad_md;
  dnnl_memory_desc_t weights_md;
  void *weights;                             /* reordered, owned */
  size_t src_floats, dst_floats, pad_floats; /* scratch areas, in floats */
  /* chained with the oneDNN convolution before (in) or after (out): the
   * activation between them stays blocked, reordered neither way */
  int in_blocked, out_blocked;
  struct plan *next;
};

struct strata__cnn_plans {
  pthread_mutex_t lock;
  dnnl_engine_t engine;
  struct plan *head;
};

struct strata__cnn_plans *strata__cnn_plans_create(void)
{
  struct strata__cnn_plans *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  if (dnnl_engine_create(&p->engine, dnnl_cpu, 0) != dnnl_success) {
    free(p);
    return NULL;
  }
  pthread_mutex_init(&p->lock, NULL);
  return p;
}

static void free_plan(struct plan *q)
{
  if (q->conv)
    dnnl_primitive_destroy(q->conv);
  if (q->src_in)
    dnnl_primitive_destroy(q->src_in);
  if (q->dst_out)
    dnnl_primitive_destroy(q->dst_out);
  free(q->weights);
  free(q);
}

void strata__cnn_plans_destroy(struct strata__cnn_plans *p)
{
  if (!p)
    return;
  for (struct plan *q = p->head, *next; q; q = next) {
    next = q->next;
    free_plan(q);
  }
  dnnl_engine_destroy(p->engine);
  pthread_mutex_destroy(&p->lock);
  free(p);
}

static struct plan *find(struct strata__cnn_plans *p, int layer, int64_t n)
{
  pthread_mutex_lock(&p->lock);
  struct plan *q = p->head;
  while (q && (q->layer != layer || q->n != n))
    q = q->next;
  pthread_mutex_unlock(&p->lock);
  return q;
}

static size_t floats_of(const dnnl_memory_desc_t *md)
{
  return (dnnl_memory_desc_get_size(md) + sizeof(float) - 1) / sizeof(float);
}

/* A reorder between two layouts of one tensor, or NULL when they agree. */
static int make_reorder(dnnl_engine_t e, const dnnl_memory_desc_t *from,
                        const dnnl_memory_desc_t *to, dnnl_primitive_t *out)
{
  *out = NULL;
  if (dnnl_memory_desc_equal(from, to))
    return 0;
  dnnl_primitive_desc_t pd;
  if (dnnl_reorder_primitive_desc_create(&pd, from, e, to, e, NULL) != dnnl_success)
    return -1;
  int ret = dnnl_primitive_create(out, pd) == dnnl_success ? 0 : -1;
  dnnl_primitive_desc_destroy(pd);
  return ret;
}

/* Primitives run on an in-order stream of the calling thread, created for
 * one conv3d (or one weight reorder) and waited for once. */
static int run(dnnl_stream_t s, dnnl_primitive_t prim, int nargs, const dnnl_exec_arg_t *args)
{
  return dnnl_primitive_execute(prim, s, nargs, args) == dnnl_success ? 0 : -1;
}

static dnnl_stream_t new_stream(dnnl_engine_t e)
{
  dnnl_stream_t s;
  return dnnl_stream_create(&s, e, dnnl_stream_default_flags) == dnnl_success ? s : NULL;
}

/* Wait for a stream's work and destroy it: 0, or -1 for an earlier
 * failure `ret` or a failed wait. */
static int finish_stream(dnnl_stream_t s, int ret)
{
  if (!s)
    return -1;
  if (dnnl_stream_wait(s) != dnnl_success)
    ret = -1;
  dnnl_stream_destroy(s);
  return ret;
}

/* Plain-layout memory over `data` (NULL: none). */
static dnnl_memory_t wrap(dnnl_engine_t e, const dnnl_memory_desc_t *md, const void *data)
{
  dnnl_memory_t m;
  return dnnl_memory_create(&m, md, e, (void *)data) == dnnl_success ? m : NULL;
}

/* The layer's fused activation as an element-wise post-op. */
static int fuse_activation(const struct strata__layer *L, dnnl_primitive_attr_t attr)
{
  dnnl_alg_kind_t alg;
  float alpha = 0, beta = 0;
  switch (L->activation) {
  case 0: return 0;
  case STRATA__LAYER_RELU: alg = dnnl_eltwise_relu; break;
  case STRATA__LAYER_LEAKY_RELU: alg = dnnl_eltwise_relu, alpha = L->act_param; break;
  case STRATA__LAYER_SIGMOID: alg = dnnl_eltwise_logistic; break;
  case STRATA__LAYER_TANH: alg = dnnl_eltwise_tanh; break;
  case STRATA__LAYER_CLIP:
    alg = dnnl_eltwise_clip, alpha = L->act_param, beta = L->act_param2;
    break;
  default: return -1;
  }
  dnnl_post_ops_t ops;
  if (dnnl_post_ops_create(&ops) != dnnl_success)
    return -1;
  int ret = dnnl_post_ops_append_eltwise(ops, 1.0f, alg, alpha, beta) == dnnl_success &&
                    dnnl_primitive_attr_set_post_ops(attr, ops) == dnnl_success
                ? 0
                : -1;
  dnnl_post_ops_destroy(ops);
  return ret;
}

/* The primitive of conv3d layer l at network extent n (layer extents
 * ext), its layouts and weights. */
static struct plan *make_plan(dnnl_engine_t e, const struct strata__network *net, int l,
                              const float *weights, int64_t n, const struct strata__extent *ext)
{
  const struct strata__layer *L = &net->layers[l];
  const struct strata__extent in = strata__source_extent(ext, L->inputs[0], n), out = ext[l];
  int64_t cin = strata__layer_in_channels(net, l), g = L->groups;
  const int *k = L->kernel;
  dnnl_dims_t sdims = {1, cin, in.e[0], in.e[1], in.e[2]},
              ddims = {1, L->channels, out.e[0], out.e[1], out.e[2]}, bdims = {L->channels},
              strides, dil, pl, pr;
  for (int a = 0; a < 3; a++) {
    strides[a] = L->stride[a], dil[a] = L->dilation[a] - 1;
    pl[a] = L->pad[a], pr[a] = L->pad_end[a];
  }
  dnnl_dims_t wdims5 = {L->channels, cin, k[0], k[1], k[2]};
  dnnl_dims_t wdims6 = {g, L->channels / g, cin / g, k[0], k[1], k[2]};
  struct plan *q = calloc(1, sizeof *q);
  if (!q)
    return NULL;
  q->layer = l;
  q->n = n;
  dnnl_memory_desc_t src_any, dst_any, w_any, w_plain;
  int grouped = g > 1,
      ok = dnnl_memory_desc_init_by_tag(&q->src_plain, 5, sdims, dnnl_f32, dnnl_ncdhw) == 0 &&
           dnnl_memory_desc_init_by_tag(&q->dst_plain, 5, ddims, dnnl_f32, dnnl_ncdhw) == 0 &&
           dnnl_memory_desc_init_by_tag(&src_any, 5, sdims, dnnl_f32, dnnl_format_tag_any) == 0 &&
           dnnl_memory_desc_init_by_tag(&dst_any, 5, ddims, dnnl_f32, dnnl_format_tag_any) == 0 &&
           dnnl_memory_desc_init_by_tag(&q->bias_md, 1, bdims, dnnl_f32, dnnl_x) == 0 &&
           dnnl_memory_desc_init_by_tag(&w_plain, grouped ? 6 : 5, grouped ? wdims6 : wdims5,
                                        dnnl_f32, grouped ? dnnl_goidhw : dnnl_oidhw) == 0 &&
           dnnl_memory_desc_init_by_tag(&w_any, grouped ? 6 : 5, grouped ? wdims6 : wdims5,
                                        dnnl_f32, dnnl_format_tag_any) == 0;
  dnnl_convolution_desc_t cd;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_primitive_desc_t pd = NULL;
  ok = ok &&
       dnnl_dilated_convolution_forward_desc_init(
           &cd, dnnl_forward_inference, dnnl_convolution_direct, &src_any, &w_any,
           L->bias_offset >= 0 ? &q->bias_md : NULL, &dst_any, strides, dil, pl, pr) == 0 &&
       dnnl_primitive_attr_create(&attr) == 0 &&
       dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == 0 &&
       fuse_activation(L, attr) == 0 && dnnl_primitive_desc_create(&pd, &cd, attr, e, NULL) == 0 &&
       dnnl_primitive_create(&q->conv, pd) == 0;
  if (ok) {
    q->src_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    q->dst_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    q->weights_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    q->pad_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    q->src_floats =
        dnnl_memory_desc_equal(&q->src_md, &q->src_plain) ? 0 : lines(floats_of(&q->src_md));
    q->dst_floats =
        dnnl_memory_desc_equal(&q->dst_md, &q->dst_plain) ? 0 : lines(floats_of(&q->dst_md));
    q->pad_floats = lines(floats_of(&q->pad_md));
    dnnl_primitive_t w_reorder;
    ok = make_reorder(e, &q->src_plain, &q->src_md, &q->src_in) == 0 &&
         make_reorder(e, &q->dst_md, &q->dst_plain, &q->dst_out) == 0 &&
         (q->weights = malloc(floats_of(&q->weights_md) * sizeof(float) + 64)) &&
         make_reorder(e, &w_plain, &q->weights_md, &w_reorder) == 0;
    if (ok && w_reorder) {
      dnnl_memory_t from = wrap(e, &w_plain, weights + L->weight_offset),
                    to = wrap(e, &q->weights_md, q->weights);
      dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
      dnnl_stream_t st = new_stream(e);
      ok = finish_stream(st, from && to && st ? run(st, w_reorder, 2, args) : -1) == 0;
      dnnl_memory_destroy(from), dnnl_memory_destroy(to);
      dnnl_primitive_destroy(w_reorder);
    } else if (ok)
      memcpy(q->weights, weights + L->weight_offset, dnnl_memory_desc_get_size(&q->weights_md));
  }
  if (attr)
    dnnl_primitive_attr_destroy(attr);
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (!ok) {
    free_plan(q);
    return NULL;
  }
  return q;
}

/* Consecutive oneDNN convolutions at extent n, the second the first's only
 * reader, pass their activation in the blocked layout both use, when it
 * fits the first's slot of the scratch: two reorders fewer. */
static void chain(struct strata__cnn_plans *p, const struct strata__network *net, int64_t n,
                  const struct strata__extent *ext)
{
  for (int l = 0; l < net->nlayers - 1; l++) { /* the last writes the output */
    struct plan *q = find(p, l, n), *r = NULL;
    int readers = 0, reader = -1;
    for (int c = l + 1; q && q->dst_out && c < net->nlayers; c++)
      for (int i = 0; i < net->layers[c].ninputs; i++)
        if (net->layers[c].inputs[i] == l)
          readers++, reader = c;
    if (readers == 1 && net->layers[reader].inputs[0] == l)
      r = find(p, reader, n);
    if (r && r->src_in && dnnl_memory_desc_equal(&q->dst_md, &r->src_md) &&
        floats_of(&q->dst_md) <= (size_t)(net->layers[l].channels * strata__volume(ext[l])))
      q->out_blocked = r->in_blocked = 1;
  }
}

int strata__cnn_prepare(const struct strata__network *net, const float *weights, int64_t n)
{
  struct strata__cnn_plans *p = net->plans;
  if (!p)
    return -1;
  struct strata__extent ext[net->nlayers];
  if (strata__cnn_extents(net, n, ext) >= 0)
    return -1;
  /* A primitive fixes its thread count when it is made, from the making
   * thread's OpenMP setting: made for one thread, the worker that runs it.
   * (Made for this thread's default, every convolution ran on as many
   * OpenMP threads as cores beside the StarPU workers: measured, one
   * worker's U-Net took 0.115 s on 2 cores against 0.179 s on one.) The
   * caller's setting is restored. */
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  int ret = 0, made = 0, existed = 0;
  for (int l = 0; l < net->nlayers; l++) {
    if (net->layers[l].kind != STRATA__LAYER_CONV3D ||
        strata__conv3d_is_direct(&net->layers[l], strata__layer_in_channels(net, l)))
      continue;
    if (find(p, l, n)) {
      existed = 1;
      continue;
    }
    struct plan *q = make_plan(p->engine, net, l, weights, n, ext);
    if (!q) {
      ret = -1; /* this layer keeps im2col + SGEMM */
      continue;
    }
    pthread_mutex_lock(&p->lock);
    q->next = p->head;
    p->head = q;
    pthread_mutex_unlock(&p->lock);
    made = 1;
  }
  omp_set_num_threads(threads);
  if (made && !existed) /* the extent's first preparation: no task runs these plans yet */
    chain(p, net, n, ext);
  return ret;
}

size_t strata__cnn_onednn_floats(const struct strata__network *net, int l, int64_t n)
{
  const struct plan *q = net->plans ? find(net->plans, l, n) : NULL;
  return q ? q->src_floats + q->dst_floats + q->pad_floats : 0;
}

int strata__cnn_onednn_conv(const struct strata__network *net, int l, int64_t n, const float *in,
                            const float *bias, float *out, float *scratch)
{
  const struct plan *q = net->plans ? find(net->plans, l, n) : NULL;
  if (!q)
    return -1;
  omp_set_num_threads(1); /* this worker's thread is the parallelism */
  dnnl_engine_t e = net->plans->engine;
  /* scratch: blocked input, blocked output, scratchpad, in whole lines */
  float *src_blocked = scratch, *dst_blocked = src_blocked + q->src_floats,
        *pad = dst_blocked + q->dst_floats;
  const float *src = q->src_in && !q->in_blocked ? src_blocked : in;
  float *dst = q->dst_out && !q->out_blocked ? dst_blocked : out;
  dnnl_memory_t m_in = wrap(e, &q->src_plain, in), m_src = wrap(e, &q->src_md, src),
                m_w = wrap(e, &q->weights_md, q->weights),
                m_b = bias ? wrap(e, &q->bias_md, bias) : NULL, m_dst = wrap(e, &q->dst_md, dst),
                m_out = wrap(e, &q->dst_plain, out), m_pad = wrap(e, &q->pad_md, pad);
  dnnl_stream_t st = new_stream(e);
  int ret = st && m_in && m_src && m_w && (m_b || !bias) && m_dst && m_out && m_pad ? 0 : -1;
  if (!ret && src != in) {
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, m_in}, {DNNL_ARG_TO, m_src}};
    ret = run(st, q->src_in, 2, args);
  }
  if (!ret) {
    dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, m_src},
                               {DNNL_ARG_WEIGHTS, m_w},
                               {DNNL_ARG_DST, m_dst},
                               {DNNL_ARG_SCRATCHPAD, m_pad},
                               {DNNL_ARG_BIAS, m_b}};
    ret = run(st, q->conv, bias ? 5 : 4, args);
  }
  if (!ret && dst != out) {
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, m_dst}, {DNNL_ARG_TO, m_out}};
    ret = run(st, q->dst_out, 2, args);
  }
  ret = finish_stream(st, ret);
  dnnl_memory_t all[] = {m_in, m_src, m_w, m_b, m_dst, m_out, m_pad};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    if (all[i])
      dnnl_memory_destroy(all[i]);
  return ret;
}
