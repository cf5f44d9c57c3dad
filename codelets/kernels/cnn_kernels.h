/* Pure kernels of the 3-D convolutional network runner: no StarPU, no
 * Strata runtime. Activations are float32 [channels, n, n, n], row-major.
 * A network is a list of layers in topological order; each layer reads the
 * outputs of earlier layers (or the network input, index -1) and its
 * weights live at offsets in one packed float buffer. */
#ifndef STRATA_CNN_KERNELS_H
#define STRATA_CNN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum strata__layer_kind {
  STRATA__LAYER_CONV3D,     /* same padding, stride 1, optional dilation, optional bias */
  STRATA__LAYER_RELU,       /* max(x, 0) */
  STRATA__LAYER_LEAKY_RELU, /* x > 0 ? x : param * x */
  STRATA__LAYER_SIGMOID,    /* 1 / (1 + exp(-x)) */
  STRATA__LAYER_LOG,        /* log(max(x, param)) */
  STRATA__LAYER_MAXPOOL,    /* 2x2x2, stride 2: n -> n / 2 */
  STRATA__LAYER_UPSAMPLE,   /* nearest neighbour x2: n -> 2 n */
  STRATA__LAYER_CONCAT,     /* channels of input 0, then of input 1 */
};

#define STRATA__NETWORK_INPUT (-1)

/* Most layers a network may have (the CUDA runner keeps per-layer offsets
 * on the stack). */
#define STRATA__CNN_MAX_LAYERS 256

struct strata__layer {
  int kind;
  int ninputs;
  int inputs[2];         /* producer layer indices, or STRATA__NETWORK_INPUT */
  int channels;          /* output channels */
  int level;             /* resolution: output extent is n >> level (network input: 0) */
  int kernel, dilation;  /* conv3d */
  int64_t weight_offset; /* conv3d: [channels][in_channels][k][k][k] in the packed buffer */
  int64_t bias_offset;   /* conv3d: [channels], or -1 for no bias */
  float param;           /* leaky ReLU slope; log floor */
};

/* A network: `layers[nlayers - 1]` is the output. */
struct strata__network {
  const struct strata__layer *layers;
  int nlayers;
  int in_channels;
};

/* Channels read by layer l (its first input's, or the network's). */
int strata__layer_in_channels(const struct strata__network *net, int l);

/* Floats of scratch space the forward pass needs for an input of extent n. */
size_t strata__cnn_scratch_floats(const struct strata__network *net, int64_t n);

/* Scratch layout: offsets[l] (floats) of the output of every layer but the
 * last; *col_offset and *col_floats give the im2col area after them. */
void strata__cnn_layout(const struct strata__network *net, int64_t n, int64_t *offsets,
                        int64_t *col_offset, size_t *col_floats);

/* Output planes per im2col slab for a conv3d with `rows` = cin k^3 rows at
 * extent n, given `col_floats` floats of im2col space. */
int64_t strata__conv3d_slab_planes(int64_t rows, int64_t n, size_t col_floats);

/* Multiply-adds of the forward pass (for GFLOP/s figures and perf models). */
double strata__cnn_flops(const struct strata__network *net, int64_t n);

/* Forward pass on the CPU. `in` is [in_channels, n, n, n], `out` receives
 * the last layer's output, `weights` is the packed buffer. */
void strata__cnn_forward_cpu(const struct strata__network *net, const float *weights,
                             const float *in, int64_t n, float *out, float *scratch);

/* One same-padded conv3d on the CPU (im2col + SGEMM; direct loops for 1x1
 * convolutions with few channels). `col` holds `col_floats` floats of
 * im2col scratch (at least cin * k^3 * n^2). Bias may be NULL. */
void strata__conv3d_cpu(const float *in, int cin, int64_t n, const float *w, const float *bias,
                        int cout, int k, int dilation, float *out, float *col, size_t col_floats);

/* CUDA forward pass, asynchronous on `stream` with the cuBLAS handle
 * `cublas` (bound to that stream). Returns 0 or a CUDA/cuBLAS error. */
int strata__cnn_forward_cuda(const struct strata__network *net, const float *weights,
                             const float *in, int64_t n, float *out, float *scratch, void *cublas,
                             void *stream);

#ifdef __cplusplus
}
#endif
#endif
