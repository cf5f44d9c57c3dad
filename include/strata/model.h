/** @file model.h
 *  @brief Inference models on 3-D arrays: a convolutional network runner
 *  (conv3d, ReLU, leaky ReLU, sigmoid, log, max-pool, upsample, channel
 *  concatenation: enough for a small U-Net) loaded from JSON + `.npy`
 *  files, models brought by the application (plug-ins), and extraction of
 *  bubbles from probability maps.
 *
 *  A model maps a float32 array [C, N, N, N] to a float32 array
 *  [K, N, N, N]; each application is one StarPU task, run on a CPU worker
 *  or on a CUDA worker when the model has a CUDA implementation.
 *
 *  Model file (JSON, "format": "strata-model", "version": 1):
 *  @code
 *  { "format": "strata-model", "version": 1, "name": "blob_detector",
 *    "input":  { "channels": 1, "fields": ["density"] },
 *    "output": { "channels": 1, "kind": "probability" },
 *    "layers": [
 *      { "name": "logd", "type": "log", "inputs": ["input"], "floor": 1e-6 },
 *      { "name": "g", "type": "conv3d", "inputs": ["logd"], "out_channels": 2,
 *        "kernel": 7, "dilation": 1, "weights": "g.npy", "bias": "g_bias.npy" },
 *      ... ] }
 *  @endcode
 *  Layer types: conv3d (weights [out, in, k, k, k] and optional bias [out],
 *  float32 `.npy` files relative to the JSON file, PyTorch's Conv3d layout;
 *  same padding, stride 1, any kernel size, optional dilation), relu,
 *  leaky_relu ("slope"), sigmoid, log ("floor": log(max(x, floor))),
 *  maxpool (2x2x2), upsample (nearest, x2), concat (two inputs).
 *  "inputs" name earlier layers or "input" (default: the previous layer);
 *  the last layer is the output, at the input's resolution. */
#ifndef STRATA_MODEL_H
#define STRATA_MODEL_H

#include <stdint.h>

#include <strata/array.h>

#ifdef __cplusplus
extern "C" {
#endif
/* The library exports what its public headers declare, and nothing else. */
#pragma GCC visibility push(default)

/** A model: a loaded network or an application's plug-in. */
typedef struct strata_model strata_model;

/** What a model's output means. */
typedef enum strata_model_output {
  STRATA_MODEL_PROBABILITY = 0, /**< per-cell probabilities in [0, 1] (bubbles can be extracted) */
  STRATA_MODEL_FIELD = 1        /**< any per-cell field */
} strata_model_output;

/** @brief Load a network from its JSON description (weights next to it),
 *  or, for a path ending in ".onnx", from an ONNX file
 *  (strata_model_load_onnx()).
 *  @return 0; STRATA_EIO (unreadable or malformed files) or STRATA_EINVAL
 *          (inconsistent description: unknown layer, shapes that do not
 *          match, ...), strata_error_message() naming the file and reason;
 *          STRATA_ESTATE before strata_init(). */
int strata_model_load(const char *json_path, strata_model **out);

/** @brief Load a trained network from an ONNX file (opsets 11 to 21).
 *
 *  The graph takes one float tensor [N, C, D, H, W] (N = 1 or symbolic,
 *  C fixed) and gives one or more [N, K_i, D, H, W] tensors at the input's
 *  extent, or [N, K_i] per-array values; Strata applies it to [C, n, n, n]
 *  arrays for any n that its layers map back to n (each layer's extents
 *  are computed from its input's; a graph that fixes D = H = W is checked
 *  at that extent), and concatenates the outputs' channels in the graph's
 *  order (strata_model_outputs() names them). Weights come from the
 *  initializers or from external data files next to the model; float16,
 *  bfloat16 and float64 weights are converted to float32.
 *
 *  Operators: Conv (1-D, 2-D and 3-D; kernel, stride, dilation and
 *  padding per axis; groups), ConvTranspose (1-D to 3-D, per-axis
 *  attributes, output padding; no groups), BatchNormalization (folded into
 *  the convolution it follows, else a per-channel affine map),
 *  InstanceNormalization, GroupNormalization (opsets 18 and 21), GroupNorm
 *  as PyTorch's TorchScript exporter writes it (Reshape to [N, G, -1],
 *  InstanceNormalization, Reshape back, Mul, Add), Add, Sub,
 *  Mul, Div (two activations, one of them possibly single-channel, or an
 *  activation and a scalar or per-channel constant), Concat on channels,
 *  MaxPool and AveragePool (1-D to 3-D windows, per-axis attributes; the
 *  mean with or without the pads), Resize by integer scales per axis
 *  (nearest, or linear with half-pixel or aligned corners), Reshape and
 *  Flatten to constant shapes, Squeeze and Unsqueeze of spatial axes,
 *  ReduceMean over all spatial axes, Relu, LeakyRelu, Sigmoid, Tanh, Softmax
 *  (over channels), Clip, Log, Identity, Dropout, Constant, and classifier
 *  heads (GlobalAveragePool, Flatten, Gemm, MatMul) whose per-array
 *  outputs fill every cell of the output. docs/models.md lists the
 *  limits.
 *
 *  Metadata (optional): "strata.output" = "probability" or "field"
 *  (default: probability when the first output comes out of a Sigmoid,
 *  fused or not, or a Softmax),
 *  "strata.fields" = the comma-separated field names of the channels.
 *
 *  @return 0; STRATA_EIO (unreadable, or not an ONNX protobuf);
 *          STRATA_EINVAL for anything Strata cannot run or that contradicts
 *          itself (an unsupported operator, attribute or dtype, a cycle, a
 *          shape mismatch, tensor data shorter than its dims), with
 *          strata_error_message() naming the node or tensor;
 *          STRATA_ESTATE before strata_init(). */
int strata_model_load_onnx(const char *onnx_path, strata_model **out);

/** @brief Load Strata's default model, the trained blob U-Net
 *  `blob_unet/model.onnx` (it finds the collapsed clumps of `strata infer`'s
 *  field; scripts/train_blob_unet.py), from $STRATA_MODEL_DIR, else the
 *  installed models, else the source tree's `models/`. The analytic blob
 *  detector is `blob_detector/model.json` beside it. Errors as
 *  strata_model_load(). */
int strata_model_load_default(strata_model **out);

/** An application's own model: CPU function (required), CUDA function
 *  (optional), metadata. Strata calls them inside its model codelet. */
typedef struct strata_model_ops {
  const char *name;                /**< model name (copied) */
  int in_channels;                 /**< C of the input [C, N, N, N] */
  int out_channels;                /**< K of the output [K, N, N, N] */
  const char *const *input_fields; /**< names of the fields the channels hold (copied) */
  int n_input_fields;              /**< entries of input_fields (0 or in_channels) */
  strata_model_output output;      /**< meaning of the output */
  /** Scratch bytes needed for extent n (NULL: none). */
  uint64_t (*scratch_bytes)(void *user, int64_t n);
  /** Compute out from in on the CPU (required). */
  void (*cpu)(void *user, const float *in, float *out, int64_t n, void *scratch);
  /** The same on the GPU, asynchronously on the CUDA stream `stream`
   *  (NULL: the model runs on CPU workers only). Returns 0 on success. */
  int (*cuda)(void *user, const float *in, float *out, int64_t n, void *scratch, void *stream);
  void *user; /**< passed to the functions above */
} strata_model_ops;

/** @brief Create a model from an application's functions.
 *  @return 0, or STRATA_EINVAL for missing functions or bad channel counts. */
int strata_model_create(const strata_model_ops *ops, strata_model **out);

/** @brief Destroy a model, after the tasks that use it. NULL is accepted. */
int strata_model_destroy(strata_model *m);

/** @brief The model's name, "" for NULL. */
const char *strata_model_name(const strata_model *m);

/** @brief Input and output channel counts and output kind (any pointer may
 *  be NULL). @return 0 or STRATA_EINVAL. */
int strata_model_describe(const strata_model *m, int *in_channels, int *out_channels,
                          strata_model_output *output);

/** @brief Named output @p i of a model: its name and the channels
 *  [*@p first_channel, *@p first_channel + *@p channels) of the model's
 *  output that hold it (any pointer may be NULL). A JSON model or a plug-in
 *  has one output, "output".
 *  @return 0; STRATA_ERANGE when @p i is not below the number of outputs,
 *          which *@p count (may be NULL) receives in any case; STRATA_EINVAL
 *          for a NULL model. */
int strata_model_outputs(const strata_model *m, int i, int *count, const char **name,
                         int *first_channel, int *channels);

/** One layer of a loaded network, as strata_model_layer_info() gives it. */
typedef struct strata_model_layer {
  const char *type;       /**< "conv3d", "conv_transpose3d", "relu", "norm", "affine", "add", ... */
  const char *activation; /**< a convolution's fused activation ("relu", ...), or NULL */
  int ninputs;            /**< layers it reads */
  int inputs[16];         /**< their indices, -1 for the model's input */
  int channels;           /**< output channels */
  int64_t extent[3];      /**< its output extents (z, y, x) at input extent n: [1, 1, 1] for one
                               value per channel and array (a classifier head) */
  int kernel[3], dilation[3]; /**< per axis (z, y, x), convolutions and pools (else 0) */
  int stride[3]; /**< per axis: convolutions and pools, or the scales of an upsampling (else 0) */
  int groups;    /**< convolutions (else 0) */
  int64_t parameters; /**< weights, biases, scales and shifts */
  double flops;       /**< operations at input extent n (2 per multiply-add) */
  int cuda;           /**< 1 when this build runs it in CUDA too (else CPU workers only) */
} strata_model_layer;

/** @brief Describe layer @p i of a network model at input extent @p n
 *  (its extents and flop count depend on it).
 *  @return 0; STRATA_ERANGE when @p i is not below the number of layers,
 *          which *@p count (may be NULL) receives in any case (0 for a
 *          plug-in); STRATA_EINVAL for a NULL model, or an @p n the model
 *          does not map to itself (strata_error_message() names the layer),
 *          when @p info is not NULL. */
int strata_model_layer_info(const strata_model *m, int i, int64_t n, int *count,
                            strata_model_layer *info);

/** @brief The input extent @p m is made for: the n of [C, n, n, n] that an
 *  ONNX graph fixes (D = H = W, as exports with reshapes to fixed sizes
 *  have), or 0 when the model runs at any n its layers map back to n.
 *  @return 0; STRATA_EINVAL for a NULL argument. */
int strata_model_fixed_extent(const strata_model *m, int64_t *n);

/** @brief Field name of input channel @p c, or NULL when the model does not
 *  name its fields or @p c is out of range. */
const char *strata_model_input_field(const strata_model *m, int c);

/** @brief Submit one task computing @p out = model(@p in). @p in is float32
 *  [C, N, N, N] (or [N, N, N] when C is 1), @p out float32 [K, N, N, N]
 *  (or [N, N, N] when K is 1); N must be an extent the network maps back to N
 *  (a multiple of 2 for each halving, for example).
 *  @return 0; STRATA_ETYPE; STRATA_EINVAL for shapes that do not fit. */
int strata_model_apply(strata_model *m, strata_array *in, strata_array *out);

/** Parameters of bubble extraction. */
typedef struct strata_bubble_params {
  float threshold;   /**< cells with probability > threshold are inside bubbles (default 0.5) */
  int64_t min_cells; /**< components with fewer cells are dropped (default 1) */
  double origin[3];  /**< domain coordinates (x, y, z) of the array's lower corner (default 0) */
  double cell_size;  /**< edge of one cell in domain units (default 1) */
} strata_bubble_params;

/** @brief Fill @p p with the defaults. */
void strata_bubble_params_init(strata_bubble_params *p);

/** Most value channels a bubble carries. */
#define STRATA_BUBBLE_MAX_VALUES 16

/** A bubble: a 26-connected region of cells above the threshold. */
typedef struct strata_bubble {
  double center[3]; /**< probability-weighted centre (x, y, z), domain coordinates */
  double radius;    /**< radius of the sphere of the region's volume, domain units */
  double mass;      /**< sum of the probabilities of its cells */
  double peak;      /**< largest probability */
  int64_t cells;    /**< number of cells */
  /** Stable name: the index of its first cell in scan order (z, y, x) over
   *  its array; for the inference method's bubbles, over the whole grid of
   *  level_infer cells (strata_infer_bubbles()). */
  int64_t id;
  int64_t parts; /**< arrays it spans (1 for one array's bubbles) */
  int nvalues;   /**< value channels of the map (a model's channels after the probability) */
  /** Probability-weighted mean of each value channel over the bubble's
   *  cells, sum(p v) / sum(p): a model's per-bubble regression outputs. */
  double values[STRATA_BUBBLE_MAX_VALUES];
} strata_bubble;

/** Row width of a bubble table array without value channels; each value
 *  channel adds one column. */
#define STRATA_BUBBLE_TABLE_COLUMNS 8

/** @brief Submit one task extracting the bubbles of @p prob (float32
 *  [N, N, N], or [C, N, N, N] with C <= 1 + STRATA_BUBBLE_MAX_VALUES:
 *  channel 0 is the probability, the others value channels) into
 *  @p table, a float64 array [1 + capacity, STRATA_BUBBLE_TABLE_COLUMNS +
 *  C - 1]: row 0 holds the number found, the next rows the first
 *  `capacity` bubbles (x, y, z, radius, mass, peak, cells, first cell,
 *  then the probability-weighted mean of each value channel) in the scan
 *  order (z, y, x) of their first cell.
 *  Read it with strata_bubbles_read(). */
int strata_bubbles_submit(strata_array *prob, const strata_bubble_params *p, strata_array *table);

/** @brief Read a bubble table: waits for its task, returns a malloc'd list
 *  (free() it) of the stored bubbles in *@p list and their number in
 *  *@p n; *@p found (may be NULL) receives how many were found in all. */
int strata_bubbles_read(strata_array *table, strata_bubble **list, int64_t *n, int64_t *found);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
