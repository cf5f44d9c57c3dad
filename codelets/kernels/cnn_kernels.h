/* Pure kernels of the convolutional network runner: no StarPU, no Strata
 * runtime. Activations are float32 [channels, z, y, x], row-major: the
 * network input is [C, n, n, n]; a 2-D activation [C, H, W] is [C, 1, H, W]
 * and a 1-D one [C, 1, 1, W]. Each layer's extents follow from its input's
 * at run time (strata__cnn_extents), so one network serves any n it fits.
 * A network is a list of layers in topological order; each layer reads the
 * outputs of earlier layers (or the network input, index -1) and its
 * weights live at offsets in one packed float buffer. */
#ifndef STRATA_CNN_KERNELS_H
#define STRATA_CNN_KERNELS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "host_device.h"

#ifdef __cplusplus
extern "C" {
#endif

enum strata__layer_kind {
  /* conv3d: per axis a kernel, dilation, stride, `pad` zeros before and
   * `pad_end` after; `groups`; optional bias. 1-D and 2-D convolutions are
   * conv3d with kernel 1 on the leading axes. */
  STRATA__LAYER_CONV3D,
  STRATA__LAYER_RELU,       /* max(x, 0) */
  STRATA__LAYER_LEAKY_RELU, /* x > 0 ? x : param * x */
  STRATA__LAYER_SIGMOID,    /* 1 / (1 + exp(-x)) */
  STRATA__LAYER_LOG,        /* log(max(x, param)) */
  STRATA__LAYER_MAXPOOL,    /* window: strata__pool_window(); NaN wins */
  STRATA__LAYER_UPSAMPLE,   /* nearest neighbour, an integer scale per axis (`stride`) */
  STRATA__LAYER_CONCAT,     /* channels of each input in turn (one input: a copy) */
  /* transposed conv3d: per axis n -> (n - 1) stride + dilation (kernel - 1)
   * + 1 - pad - pad_end, `pad` cropped before and `pad_end` after (ONNX's
   * end pad less its output padding) */
  STRATA__LAYER_CONV_TRANSPOSE,
  STRATA__LAYER_TANH,   /* tanh(x) */
  STRATA__LAYER_CLIP,   /* min(max(x, param), param2) */
  STRATA__LAYER_AFFINE, /* x * scale[c] + shift[c] */
  STRATA__LAYER_NORM,   /* normalised over each of `groups` channel groups, then affine */
  STRATA__LAYER_ADD,    /* two inputs, element-wise; one may have 1 channel */
  STRATA__LAYER_SUB,    /* (broadcast over the other's channels) */
  STRATA__LAYER_MUL,
  STRATA__LAYER_DIV,
  STRATA__LAYER_SOFTMAX,         /* over the channels of each cell */
  STRATA__LAYER_AVGPOOL,         /* mean over strata__pool_window(); param 1: pads count */
  STRATA__LAYER_UPSAMPLE_LINEAR, /* (tri)linear, integer scales `stride`: half-pixel centres,
                                    or param = 1: align corners */
  STRATA__LAYER_GLOBAL_AVGPOOL,  /* the mean of each channel: extent 1 */
  STRATA__LAYER_BROADCAST,       /* one value per channel into every cell of the input's n^3 */
  STRATA__LAYER_RESHAPE, /* the same floats seen as [channels, shape]; one shape entry may be -1 */
};

#define STRATA__NETWORK_INPUT (-1)

/* Most layers a network may have (the CUDA runner keeps per-layer offsets
 * on the stack), and most inputs of one layer. */
#define STRATA__CNN_MAX_LAYERS   256
#define STRATA__LAYER_MAX_INPUTS 16

struct strata__layer {
  int kind;
  int ninputs;
  int inputs[STRATA__LAYER_MAX_INPUTS]; /* producer layer indices, or STRATA__NETWORK_INPUT */
  int channels;                         /* output channels */
  /* convolutions and pools, per axis (z, y, x); resampling: scales in stride */
  int kernel[3], dilation[3], stride[3], pad[3], pad_end[3];
  int groups;
  /* reshape: the output's extents (z, y, x); 0 keeps the input's on that
   * axis, one -1 takes what the element count leaves */
  int64_t shape[3];
  /* conv3d: [channels][in_channels / groups][kz][ky][kx]; transposed
   * conv3d: [in_channels][channels][kz][ky][kx]; affine and norm: scale
   * [channels] */
  int64_t weight_offset;
  int64_t bias_offset; /* [channels] bias or shift, or -1 for none */
  float param, param2; /* see the kinds; norm: param = epsilon */
  /* conv3d and transposed conv3d: a one-input element-wise kind (relu,
   * leaky relu, sigmoid, tanh, clip) applied to the output with
   * act_param, act_param2, or 0 for none */
  int activation;
  float act_param, act_param2;
};

/* oneDNN convolution primitives prepared per layer and extent. */
struct strata__cnn_plans;

/* A network: `layers[nlayers - 1]` is the output. Its conv3d layers run
 * through oneDNN where `plans` holds them prepared (strata__cnn_prepare),
 * else as im2col + SGEMM. */
struct strata__network {
  const struct strata__layer *layers;
  int nlayers;
  int in_channels;
  struct strata__cnn_plans *plans; /* NULL: im2col + SGEMM everywhere */
};

/* Spatial extents (z, y, x) of an activation. */
struct strata__extent {
  int64_t e[3];
};

static inline STRATA__HOST_DEVICE int64_t strata__volume(struct strata__extent x)
{
  return x.e[0] * x.e[1] * x.e[2];
}

/* The same kernel, dilation, stride and pads on every axis. */
static inline void strata__layer_window(struct strata__layer *L, int kernel, int dilation,
                                        int stride, int pad, int pad_end)
{
  for (int a = 0; a < 3; a++) {
    L->kernel[a] = kernel, L->dilation[a] = dilation, L->stride[a] = stride;
    L->pad[a] = pad, L->pad_end[a] = pad_end;
  }
}

/* A stride-1 window of kernel k and dilation d that keeps the extent
 * (same padding: d (k - 1) / 2 before, the rest after). */
static inline void strata__layer_same(struct strata__layer *L, int k, int d)
{
  const int span = d * (k - 1);
  strata__layer_window(L, k, d, 1, span / 2, span - span / 2);
}

/* A pooling layer's window per axis: kernel, dilation, stride and pad
 * before (pads are ignored by the maximum, counted by the mean when param
 * is 1). */
struct strata__pool_window {
  int k[3], d[3], s[3], p[3];
};

static inline STRATA__HOST_DEVICE struct strata__pool_window
strata__pool_window(const struct strata__layer *L)
{
  struct strata__pool_window w;
  for (int a = 0; a < 3; a++)
    w.k[a] = L->kernel[a], w.d[a] = L->dilation[a], w.s[a] = L->stride[a], w.p[a] = L->pad[a];
  return w;
}

/* The 2x2x2, stride-2 window of a JSON description's maxpool. */
static inline void strata__pool_halving(struct strata__layer *L)
{
  strata__layer_window(L, 2, 1, 2, 0, 0);
}

/* The larger of a and b, NaN when either is: max pooling's order. */
static inline STRATA__HOST_DEVICE float strata__max_or_nan(float a, float b)
{
  return a > b || a != a ? a : b;
}

/* One output cell of a pooling layer: the maximum (mean == 0) or the
 * mean of the window at output cell (x, y, z) of channel `in` (extents n). */
static inline STRATA__HOST_DEVICE float strata__pool_cell(const float *in, struct strata__extent n,
                                                          struct strata__pool_window w, int mean,
                                                          int count_pads, int64_t x, int64_t y,
                                                          int64_t z)
{
  float best = -INFINITY, sum = 0.0f;
  int count = 0;
  for (int dz = 0; dz < w.k[0]; dz++) {
    const int64_t iz = z * w.s[0] - w.p[0] + dz * w.d[0];
    for (int dy = 0; iz >= 0 && iz < n.e[0] && dy < w.k[1]; dy++) {
      const int64_t iy = y * w.s[1] - w.p[1] + dy * w.d[1];
      for (int dx = 0; iy >= 0 && iy < n.e[1] && dx < w.k[2]; dx++) {
        const int64_t ix = x * w.s[2] - w.p[2] + dx * w.d[2];
        if (ix < 0 || ix >= n.e[2])
          continue;
        const float v = in[(iz * n.e[1] + iy) * n.e[2] + ix];
        best = strata__max_or_nan(v, best);
        sum += v;
        count++;
      }
    }
  }
  if (!mean)
    return best;
  return sum / (float)(count_pads ? w.k[0] * w.k[1] * w.k[2] : count);
}

/* Weight blocks and the scratch's per-layer outputs start on 64-float
 * (256-byte) boundaries: cuDNN's vectorised kernels fault on a filter or
 * tensor that is only 4-byte aligned (seen on an H200). */
#define STRATA__CNN_ALIGN_FLOATS 64
static inline int64_t strata__cnn_align(int64_t floats)
{
  return (floats + STRATA__CNN_ALIGN_FLOATS - 1) / STRATA__CNN_ALIGN_FLOATS *
         STRATA__CNN_ALIGN_FLOATS;
}

/* Taps of a convolution's kernel. */
static inline STRATA__HOST_DEVICE int64_t strata__kernel_volume(const struct strata__layer *L)
{
  return (int64_t)L->kernel[0] * L->kernel[1] * L->kernel[2];
}

/* A conv3d that reads one input cell per output cell (no im2col). */
static inline STRATA__HOST_DEVICE int strata__conv3d_is_pointwise(const struct strata__layer *L)
{
  int one = 1;
  for (int a = 0; a < 3; a++)
    one &= L->kernel[a] == 1 && L->stride[a] == 1 && L->pad[a] == 0 && L->pad_end[a] == 0;
  return one;
}

/* A conv3d the CPU runner computes by direct loops: few channels, stride 1,
 * one group (oneDNN and im2col + SGEMM are slower there). */
static inline int strata__conv3d_is_direct(const struct strata__layer *L, int64_t in_channels)
{
  return L->stride[0] == 1 && L->stride[1] == 1 && L->stride[2] == 1 && L->groups == 1 &&
         in_channels * L->channels <= 4;
}

/* The one-input element-wise layers, per element. */
static inline STRATA__HOST_DEVICE float strata__pointwise(int kind, float p, float p2, float v)
{
  switch (kind) {
  case STRATA__LAYER_RELU: return v > 0.0f ? v : 0.0f;
  case STRATA__LAYER_LEAKY_RELU: return v > 0.0f ? v : p * v;
  case STRATA__LAYER_SIGMOID: return 1.0f / (1.0f + expf(-v));
  case STRATA__LAYER_TANH: return tanhf(v);
  case STRATA__LAYER_CLIP: return v < p ? p : v > p2 ? p2 : v; /* NaN stays NaN */
  default: return logf(v > p ? v : p);                         /* LOG */
  }
}

/* Whether a kind can be fused into the convolution before it. */
static inline int strata__fusable_activation(int kind)
{
  return kind == STRATA__LAYER_RELU || kind == STRATA__LAYER_LEAKY_RELU ||
         kind == STRATA__LAYER_SIGMOID || kind == STRATA__LAYER_TANH || kind == STRATA__LAYER_CLIP;
}

/* The two-input element-wise layers, per element. */
static inline STRATA__HOST_DEVICE float strata__binary(int kind, float a, float b)
{
  switch (kind) {
  case STRATA__LAYER_ADD: return a + b;
  case STRATA__LAYER_SUB: return a - b;
  case STRATA__LAYER_MUL: return a * b;
  default: return a / b; /* DIV */
  }
}

/* Linear upsampling by an integer scale along one axis of extent n:
 * output index o reads i0 and i1 with weight t on i1 (half-pixel centres
 * clamped at 0, or aligned corners). */
static inline STRATA__HOST_DEVICE void strata__linear_tap(int64_t o, int64_t n, int scale,
                                                          int align_corners, int64_t *i0,
                                                          int64_t *i1, float *t)
{
  const int64_t m = n * scale;
  double src = align_corners ? (m > 1 ? (double)o * (double)(n - 1) / (double)(m - 1) : 0.0)
                             : ((double)o + 0.5) / (double)scale - 0.5;
  if (src < 0)
    src = 0;
  *i0 = (int64_t)src;
  *i1 = *i0 + 1 < n ? *i0 + 1 : n - 1;
  *t = (float)(src - (double)*i0);
}

/* Output cell (z, y, x) of layer L's linear upsampling of one channel `a`
 * of extents n. */
static inline STRATA__HOST_DEVICE float strata__upsample_linear_at(const float *a,
                                                                   struct strata__extent n,
                                                                   const struct strata__layer *L,
                                                                   int64_t z, int64_t y, int64_t x)
{
  int64_t z0, z1, y0, y1, x0, x1;
  float tz, ty, tx;
  const int align = L->param != 0;
  strata__linear_tap(z, n.e[0], L->stride[0], align, &z0, &z1, &tz);
  strata__linear_tap(y, n.e[1], L->stride[1], align, &y0, &y1, &ty);
  strata__linear_tap(x, n.e[2], L->stride[2], align, &x0, &x1, &tx);
  const int64_t ny = n.e[1], nx = n.e[2];
  const float *r00 = a + (z0 * ny + y0) * nx, *r01 = a + (z0 * ny + y1) * nx,
              *r10 = a + (z1 * ny + y0) * nx, *r11 = a + (z1 * ny + y1) * nx;
  float v0 =
      (1 - ty) * ((1 - tx) * r00[x0] + tx * r00[x1]) + ty * ((1 - tx) * r01[x0] + tx * r01[x1]);
  float v1 =
      (1 - ty) * ((1 - tx) * r10[x0] + tx * r10[x1]) + ty * ((1 - tx) * r11[x0] + tx * r11[x1]);
  return (1 - tz) * v0 + tz * v1;
}

/* Transposed conv3d along axis `a`: the input index that output index o
 * reads through tap t, (o + pad - t dilation) / stride when that divides
 * and lies in [0, n), else -1. */
static inline STRATA__HOST_DEVICE int64_t strata__transposed_source(int64_t o, int t,
                                                                    const struct strata__layer *L,
                                                                    int a, int64_t n)
{
  int64_t at = o + L->pad[a] - (int64_t)t * L->dilation[a], s = L->stride[a];
  return at >= 0 && at % s == 0 && at / s < n ? at / s : -1;
}

/* Output extents of every layer for a network input of extent n^3, into
 * ext[nlayers]. Returns -1, or the first layer whose extents cannot be:
 * below 1 or above 2^24, an output of over 2^40 floats, inputs that
 * disagree, a reshape that does not keep the element count. */
int strata__cnn_extents(const struct strata__network *net, int64_t n, struct strata__extent *ext);

/* The extents a layer reads: its source's (a layer index, or
 * STRATA__NETWORK_INPUT, n^3). */
static inline STRATA__HOST_DEVICE struct strata__extent
strata__source_extent(const struct strata__extent *ext, int src, int64_t n)
{
  struct strata__extent cube = {{n, n, n}};
  return src == STRATA__NETWORK_INPUT ? cube : ext[src];
}

/* Channels read by layer l (its first input's, or the network's). */
int strata__layer_in_channels(const struct strata__network *net, int l);

/* Floats of scratch space the forward pass needs for an input of extent
 * n^3 (0 at an extent the network does not fit). */
size_t strata__cnn_scratch_floats(const struct strata__network *net, int64_t n);

/* Scratch layout: offsets[l] (floats) of the output of every layer but the
 * last; *col_offset and *col_floats give the im2col area after them. */
void strata__cnn_layout(const struct strata__network *net, int64_t n,
                        const struct strata__extent *ext, int64_t *offsets, int64_t *col_offset,
                        size_t *col_floats);

/* Output planes per im2col slab for a conv3d with `rows` = cin k^3 rows,
 * `planes` output planes of `plane` cells, given `col_floats` floats of
 * im2col space. */
int64_t strata__conv3d_slab_planes(int64_t rows, int64_t plane, int64_t planes, size_t col_floats);

/* Floating-point operations of the forward pass, 2 per multiply-add of the
 * convolutions (for GFLOP/s figures and perf models; 0 at an extent the
 * network does not fit), and of layer l given the extents. */
double strata__cnn_flops(const struct strata__network *net, int64_t n);
double strata__cnn_layer_flops(const struct strata__network *net, int l, int64_t n,
                               const struct strata__extent *ext);

/* oneDNN plans: created empty, filled by strata__cnn_prepare for an extent
 * (before the scratch size is computed; idempotent; returns -1 when some
 * conv3d could not be prepared, which then keeps im2col + SGEMM), freed
 * after the last forward pass. */
struct strata__cnn_plans *strata__cnn_plans_create(void);
void strata__cnn_plans_destroy(struct strata__cnn_plans *plans);
int strata__cnn_prepare(const struct strata__network *net, const float *weights, int64_t n);

/* Scratch floats of conv3d layer l's oneDNN run at network extent n (0
 * when it is not prepared), and the run: 0, or -1 when it is not prepared. */
size_t strata__cnn_onednn_floats(const struct strata__network *net, int l, int64_t n);
int strata__cnn_onednn_conv(const struct strata__network *net, int l, int64_t n, const float *in,
                            const float *bias, float *out, float *scratch);

/* Forward pass on the CPU, at an extent n the network fits
 * (strata__cnn_extents). `in` is [in_channels, n, n, n], `out` receives
 * the last layer's output, `weights` is the packed buffer. */
void strata__cnn_forward_cpu(const struct strata__network *net, const float *weights,
                             const float *in, int64_t n, float *out, float *scratch);

/* One same-padded, stride-1 cubic conv3d on the CPU (im2col + SGEMM;
 * direct loops for convolutions with few channels). `col` holds `col_floats`
 * floats of im2col scratch (at least cin * k^3 * n^2). Bias may be NULL. */
void strata__conv3d_cpu(const float *in, int cin, int64_t n, const float *w, const float *bias,
                        int cout, int k, int dilation, float *out, float *col, size_t col_floats);

/* CUDA forward pass, asynchronous on `stream` with the cuBLAS handle
 * `cublas` (bound to that stream). Convolutions run through cuDNN where the
 * build has it (the calling thread's handle, made on first use; STRATA_CUDNN=0
 * turns it off), else and where cuDNN declines as im2col + cuBLAS. Returns 0
 * or a CUDA/cuBLAS error. */
int strata__cnn_forward_cuda(const struct strata__network *net, const float *weights,
                             const float *in, int64_t n, float *out, float *scratch, void *cublas,
                             void *stream);

/* Convolutions cuDNN has run in this process, or -1 where the build has no
 * cuDNN: tests tell from it that cuDNN ran rather than declined. */
long long strata__cnn_cudnn_convolutions(void);

/* Release the calling thread's cuDNN handle (a CUDA worker's, at shutdown). */
void strata__cnn_cuda_release(void);

#ifdef __cplusplus
}
#endif
#endif
