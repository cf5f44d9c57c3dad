/* Naive references for the network layers, written from their definitions
 * (direct convolution sums, no im2col, no BLAS), and a small U-Net that uses
 * every layer type. */
#ifndef STRATA_TEST_CNN_REFERENCE_H
#define STRATA_TEST_CNN_REFERENCE_H

#include <math.h>
#include <stdlib.h>

#include "kernels/cnn_kernels.h"

static inline float ref_at(const float *a, int64_t n, int64_t c, int64_t z, int64_t y, int64_t x)
{
  if (z < 0 || z >= n || y < 0 || y >= n || x < 0 || x >= n)
    return 0.0f;
  return a[((c * n + z) * n + y) * n + x];
}

/* Same padding: the tap at kernel index i sits at offset d * i - d * (k - 1) / 2. */
static inline void ref_conv3d(const float *in, int cin, int64_t n, const float *w,
                              const float *bias, int cout, int k, int d, float *out)
{
  int64_t pad = (int64_t)d * (k - 1) / 2;
  for (int o = 0; o < cout; o++)
    for (int64_t z = 0; z < n; z++)
      for (int64_t y = 0; y < n; y++)
        for (int64_t x = 0; x < n; x++) {
          double sum = bias ? bias[o] : 0.0;
          for (int c = 0; c < cin; c++)
            for (int kz = 0; kz < k; kz++)
              for (int ky = 0; ky < k; ky++)
                for (int kx = 0; kx < k; kx++)
                  sum += (double)w[(((o * cin + c) * k + kz) * k + ky) * k + kx] *
                         ref_at(in, n, c, z + kz * d - pad, y + ky * d - pad, x + kx * d - pad);
          out[((o * n + z) * n + y) * n + x] = (float)sum;
        }
}

/* Deterministic values in [-1, 1). */
static inline void ref_random(float *a, int64_t count, unsigned seed)
{
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < count; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    a[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
}

/* Largest |a - b| / (1 + |b|). */
static inline double ref_max_error(const float *a, const float *b, int64_t count)
{
  double worst = 0;
  for (int64_t i = 0; i < count; i++) {
    double e = fabs((double)a[i] - b[i]) / (1.0 + fabs((double)b[i]));
    worst = e > worst ? e : worst;
  }
  return worst;
}

/* A layer reading `first` (and `second` when it is >= 0 or the
 * concatenation's -1 input); convolutions are same-padded, stride 1. */
static inline struct strata__layer ref_layer(int kind, int first, int second, int channels,
                                             int kernel, int dilation, int64_t w, int64_t b,
                                             float param)
{
  struct strata__layer L = {.kind = kind,
                            .ninputs = kind == STRATA__LAYER_CONCAT ? 2 : 1,
                            .inputs = {first, second},
                            .channels = channels,
                            .groups = 1,
                            .weight_offset = w,
                            .bias_offset = b,
                            .param = param};
  strata__layer_same(&L, kernel ? kernel : 1, dilation ? dilation : 1);
  return L;
}

/* A small U-Net on 2 input channels, extent n (even):
 *   0 c1 = conv3d(input, 3 ch, k 3)      4 up = upsample(l3)
 *   1 r1 = relu(c1)                       5 cat = concat(r1, up)    (7 ch)
 *   2 p  = maxpool(r1)                    6 c3 = conv3d(cat, 2 ch, k 1, bias)
 *   3 l3 = leaky_relu(conv3d(p, 4, k 3, dilation 2))   (layers 3a, 3b)
 *   8 log of sigmoid(c3) (layers 7, 8) */
enum { UNET_LAYERS = 10 };
static inline struct strata__network ref_unet(struct strata__layer *L, float **weights,
                                              int64_t *nweights)
{
  const struct strata__layer layers[UNET_LAYERS] = {
      ref_layer(STRATA__LAYER_CONV3D, -1, -1, 3, 3, 1, 0, 81, 0),
      ref_layer(STRATA__LAYER_RELU, 0, -1, 3, 0, 0, 0, -1, 0),
      ref_layer(STRATA__LAYER_MAXPOOL, 1, -1, 3, 0, 0, 0, -1, 0),
      ref_layer(STRATA__LAYER_CONV3D, 2, -1, 4, 3, 2, 84, -1, 0),
      ref_layer(STRATA__LAYER_LEAKY_RELU, 3, -1, 4, 0, 0, 0, -1, 0.1f),
      ref_layer(STRATA__LAYER_UPSAMPLE, 4, -1, 4, 0, 0, 0, -1, 0),
      ref_layer(STRATA__LAYER_CONCAT, 1, 5, 7, 0, 0, 0, -1, 0),
      ref_layer(STRATA__LAYER_CONV3D, 6, -1, 2, 1, 1, 408, 422, 0),
      ref_layer(STRATA__LAYER_SIGMOID, 7, -1, 2, 0, 0, 0, -1, 0),
      ref_layer(STRATA__LAYER_LOG, 8, -1, 2, 0, 0, 0, -1, 1e-3f),
  };
  for (int l = 0; l < UNET_LAYERS; l++)
    L[l] = layers[l];
  strata__pool_halving(&L[2]);
  strata__layer_window(&L[5], 1, 1, 2, 0, 0); /* x2 */
  *nweights = 424;                            /* 3*2*27 + 3 bias + 4*3*27 + 2*7 + 2 bias */
  *weights = malloc(424 * sizeof(float));
  ref_random(*weights, 424, 7);
  return (struct strata__network){L, UNET_LAYERS, 2, NULL};
}

/* The same network, layer by layer with the naive references. */
static inline void ref_unet_forward(const float *w, const float *in, int64_t n, float *out)
{
  int64_t v = n * n * n, h = n / 2, hv = h * h * h;
  float *c1 = malloc(3 * v * 4), *p = malloc(3 * hv * 4), *c2 = malloc(4 * hv * 4);
  float *cat = malloc(7 * v * 4), *c3 = malloc(2 * v * 4);
  ref_conv3d(in, 2, n, w, w + 81, 3, 3, 1, c1);
  for (int64_t i = 0; i < 3 * v; i++)
    cat[i] = c1[i] > 0 ? c1[i] : 0; /* r1, also the first part of the concatenation */
  for (int64_t c = 0; c < 3; c++)
    for (int64_t z = 0; z < h; z++)
      for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < h; x++) {
          float m = -INFINITY;
          for (int e = 0; e < 8; e++)
            m = fmaxf(m,
                      ref_at(cat, n, c, 2 * z + (e >> 2), 2 * y + (e >> 1 & 1), 2 * x + (e & 1)));
          p[((c * h + z) * h + y) * h + x] = m;
        }
  ref_conv3d(p, 3, h, w + 84, NULL, 4, 3, 2, c2);
  for (int64_t i = 0; i < 4 * hv; i++)
    c2[i] = c2[i] > 0 ? c2[i] : 0.1f * c2[i];
  for (int64_t c = 0; c < 4; c++)
    for (int64_t z = 0; z < n; z++)
      for (int64_t y = 0; y < n; y++)
        for (int64_t x = 0; x < n; x++)
          cat[3 * v + ((c * n + z) * n + y) * n + x] = ref_at(c2, h, c, z / 2, y / 2, x / 2);
  ref_conv3d(cat, 7, n, w + 408, w + 422, 2, 1, 1, c3);
  for (int64_t i = 0; i < 2 * v; i++)
    out[i] = logf(fmaxf(1.0f / (1.0f + expf(-c3[i])), 1e-3f));
  free(c1), free(p), free(c2), free(cat), free(c3);
}

/* A network with every layer kind that ONNX models bring (strided, grouped
 * and transposed convolutions, group normalisation, affine, tanh, clip,
 * the four binary operators with channel broadcast, average pooling over
 * a padded 3^3 window,
 * trilinear upsampling both ways, a three-way concatenation, softmax), on
 * 2 input channels at extent n (a multiple of 4), and a classifier head
 * (global average pooling, a per-array pointwise convolution, broadcast):
 * 11 output channels. */
enum { ZOO_LAYERS = 23 };
static inline struct strata__network ref_zoo(struct strata__layer *L, float **weights,
                                             int64_t *nweights)
{
  /* weight offsets, in layer order */
  const int64_t c0 = 0, c0b = 216, n1 = 220, n1b = 224, c3 = 228, t5 = 444, t5b = 540, t6 = 543,
                t6b = 759, c10 = 761, c10b = 763, a16 = 764, a16b = 767, g20 = 770, g20b = 778,
                total = 780;
  L[0] = ref_layer(STRATA__LAYER_CONV3D, -1, -1, 4, 3, 1, c0, c0b, 0);
  strata__layer_window(&L[0], 3, 1, 2, 1, 1);
  L[1] = ref_layer(STRATA__LAYER_NORM, 0, -1, 4, 1, 1, n1, n1b, 1e-5f);
  L[1].groups = 2;
  L[2] = ref_layer(STRATA__LAYER_TANH, 1, -1, 4, 1, 1, -1, -1, 0);
  L[3] = ref_layer(STRATA__LAYER_CONV3D, 2, -1, 4, 3, 1, c3, -1, 0);
  L[3].groups = 2;
  L[3].activation = STRATA__LAYER_LEAKY_RELU; /* fused activations */
  L[3].act_param = 0.1f;
  L[4] = ref_layer(STRATA__LAYER_AVGPOOL, 3, -1, 4, 3, 1, -1, -1, 0);
  strata__layer_window(&L[4], 3, 1, 2, 1, 1); /* over the padded border, pads not counted */
  L[5] = ref_layer(STRATA__LAYER_CONV_TRANSPOSE, 4, -1, 3, 2, 1, t5, t5b, 0);
  strata__layer_window(&L[5], 2, 1, 2, 0, 0);
  L[5].activation = STRATA__LAYER_TANH;
  L[6] = ref_layer(STRATA__LAYER_CONV_TRANSPOSE, 2, -1, 2, 3, 1, t6, t6b, 0);
  strata__layer_window(&L[6], 3, 1, 2, 1, 0); /* pads 1, output padding 1 */
  L[7] = ref_layer(STRATA__LAYER_UPSAMPLE_LINEAR, 5, -1, 3, 1, 1, -1, -1, 0);
  L[8] = ref_layer(STRATA__LAYER_UPSAMPLE_LINEAR, 2, -1, 4, 1, 1, -1, -1, 1);
  strata__layer_window(&L[7], 1, 1, 2, 0, 0); /* x2 */
  strata__layer_window(&L[8], 1, 1, 2, 0, 0);
  L[9] = ref_layer(STRATA__LAYER_CLIP, 7, -1, 3, 1, 1, -1, -1, -0.5f);
  L[9].param2 = 0.75f;
  L[10] = ref_layer(STRATA__LAYER_CONV3D, -1, -1, 1, 1, 1, c10, c10b, 0);
  L[11] = ref_layer(STRATA__LAYER_CLIP, 10, -1, 1, 1, 1, -1, -1, 0.5f);
  L[11].param2 = 2.0f;
  L[12] = ref_layer(STRATA__LAYER_DIV, 8, 11, 4, 1, 1, -1, -1, 0);
  L[13] = ref_layer(STRATA__LAYER_MUL, 9, 11, 3, 1, 1, -1, -1, 0);
  L[14] = ref_layer(STRATA__LAYER_SUB, 13, 7, 3, 1, 1, -1, -1, 0);
  L[15] = ref_layer(STRATA__LAYER_ADD, 6, 10, 2, 1, 1, -1, -1, 0);
  L[16] = ref_layer(STRATA__LAYER_AFFINE, 14, -1, 3, 1, 1, a16, a16b, 0);
  L[17] = ref_layer(STRATA__LAYER_CONCAT, 12, 16, 9, 1, 1, -1, -1, 0);
  L[17].ninputs = 3;
  L[17].inputs[2] = 15;
  L[18] = ref_layer(STRATA__LAYER_SOFTMAX, 17, -1, 9, 1, 1, -1, -1, 0);
  L[19] = ref_layer(STRATA__LAYER_GLOBAL_AVGPOOL, 2, -1, 4, 1, 1, -1, -1, 0);
  L[20] = ref_layer(STRATA__LAYER_CONV3D, 19, -1, 2, 1, 1, g20, g20b, 0);
  L[20].activation = STRATA__LAYER_RELU;
  L[21] = ref_layer(STRATA__LAYER_BROADCAST, 20, -1, 2, 1, 1, -1, -1, 0);
  L[22] = ref_layer(STRATA__LAYER_CONCAT, 18, 21, 11, 1, 1, -1, -1, 0);
  for (int i = 12; i <= 15; i++)
    L[i].ninputs = 2;
  *nweights = total;
  *weights = malloc((size_t)total * sizeof(float));
  ref_random(*weights, total, 13);
  return (struct strata__network){L, ZOO_LAYERS, 2, NULL};
}

/* Extents that differ by axis, on 2 input channels at extent n (n - 2 a
 * multiple of 3, and even): an anisotropic convolution, a stride-3
 * convolution and its stride-3 transposed convolution back to n, a reshape
 * of the field into a 1-D signal with a strided 1-D convolution and pool,
 * pools and resamplings by axis: 11 output channels. */
enum { SHAPES_LAYERS = 13 };
static inline struct strata__network ref_shapes(struct strata__layer *L, float **weights,
                                                int64_t *nweights)
{
  const int64_t c0 = 0, c0b = 90, c1 = 93, t2 = 309, t2b = 633, c4 = 636, c4b = 666, total = 668;
  L[0] = ref_layer(STRATA__LAYER_CONV3D, -1, -1, 3, 1, 1, c0, c0b, 0);
  L[0].kernel[1] = 3, L[0].kernel[2] = 5; /* k 1x3x5, same padding */
  L[0].pad[1] = L[0].pad_end[1] = 1, L[0].pad[2] = L[0].pad_end[2] = 2;
  L[1] = ref_layer(STRATA__LAYER_CONV3D, -1, -1, 4, 3, 1, c1, -1, 0);
  strata__layer_window(&L[1], 3, 1, 3, 1, 1); /* n -> (n - 1) / 3 + 1 */
  L[1].activation = STRATA__LAYER_RELU;
  L[2] = ref_layer(STRATA__LAYER_CONV_TRANSPOSE, 1, -1, 3, 3, 1, t2, t2b, 0);
  strata__layer_window(&L[2], 3, 1, 3, 1, 0); /* back to n: pads 1, output padding 1 */
  L[3] = ref_layer(STRATA__LAYER_RESHAPE, 0, -1, 3, 1, 1, -1, -1, 0);
  L[3].shape[0] = L[3].shape[1] = 1, L[3].shape[2] = -1; /* [3, 1, 1, n^3] */
  L[4] = ref_layer(STRATA__LAYER_CONV3D, 3, -1, 2, 1, 1, c4, c4b, 0);
  L[4].kernel[2] = 5, L[4].stride[2] = 2, L[4].pad[2] = L[4].pad_end[2] = 2;
  L[5] = ref_layer(STRATA__LAYER_AVGPOOL, 4, -1, 2, 1, 1, -1, -1, 0);
  L[5].kernel[2] = L[5].stride[2] = 3;
  L[6] = ref_layer(STRATA__LAYER_GLOBAL_AVGPOOL, 5, -1, 2, 1, 1, -1, -1, 0);
  L[7] = ref_layer(STRATA__LAYER_BROADCAST, 6, -1, 2, 1, 1, -1, -1, 0);
  L[8] = ref_layer(STRATA__LAYER_MAXPOOL, 2, -1, 3, 1, 1, -1, -1, 0);
  strata__layer_window(&L[8], 2, 1, 2, 0, 0);
  L[8].kernel[1] = L[8].stride[1] = 1; /* halves z and x */
  L[9] = ref_layer(STRATA__LAYER_UPSAMPLE, 8, -1, 3, 1, 1, -1, -1, 0);
  L[10] = ref_layer(STRATA__LAYER_UPSAMPLE_LINEAR, 8, -1, 3, 1, 1, -1, -1, 0);
  for (int l = 9; l <= 10; l++)
    L[l].stride[0] = L[l].stride[2] = 2;
  L[11] = ref_layer(STRATA__LAYER_ADD, 9, 2, 3, 1, 1, -1, -1, 0);
  L[11].ninputs = 2;
  L[12] = ref_layer(STRATA__LAYER_CONCAT, 11, 10, 11, 1, 1, -1, -1, 0);
  L[12].ninputs = 4;
  L[12].inputs[2] = 7, L[12].inputs[3] = 0;
  *nweights = total;
  *weights = malloc((size_t)total * sizeof(float));
  ref_random(*weights, total, 17);
  return (struct strata__network){L, SHAPES_LAYERS, 2, NULL};
}

#endif
