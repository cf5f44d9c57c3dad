/**
 * @file graph.h
 * @brief Deferred compute: array operations, lazy arrays, recorded graphs,
 * export, JSON and DOT I/O, replay as StarPU tasks.
 *
 * Every operation below creates a new array. Outside recording it runs at
 * once (its task is submitted; reading the result waits for it). Inside
 * strata_deferred_begin() / strata_deferred_end() on a context it only
 * records a node: the result is a *lazy* array whose shape and dtype are
 * known but which has no storage until something needs its values. A lazy
 * array is computed (exactly the part of the recorded graph it needs, once)
 * when the host reads it (strata_array_acquire), when it is an input of an
 * operation run outside recording, by strata_compute(), or when its shape is
 * asked for and depends on data (strata_flatnonzero).
 *
 * Types follow NumPy's promotion rules on Strata's dtypes (see
 * docs/deferred.md): bool < integers < floating point; int8 with uint8 gives
 * int32 (Strata has no int16); integers with float32 give float32 for int8
 * and uint8, float64 for int32 and int64. Scalars are "weak": they take the
 * array's type unless a float scalar meets an integer or bool array
 * (float64). Broadcasting is NumPy's: shapes align on the right, dimensions
 * of extent 1 stretch.
 *
 * Graph operations are local to the calling rank; a context, and an
 * exported graph (which keeps storage between runs), are used by one thread
 * at a time.
 */
#ifndef STRATA_GRAPH_H
#define STRATA_GRAPH_H

#include <stdint.h>
#include <stdio.h>

#include <strata/array.h>
#include <strata/types.h>

#ifdef __cplusplus
extern "C" {
#endif
/* The library exports what its public headers declare, and nothing else. */
#pragma GCC visibility push(default)

/** A recording context: its recording flag and the history it recorded. */
typedef struct strata_context strata_context;

/** An exported graph: named inputs, operation nodes, named outputs. */
typedef struct strata_graph strata_graph;

/** Create a context (not recording, no history). */
int strata_context_create(strata_context **ctx);

/** Destroy a context: computes the lazy arrays the application still holds
 * (they become ordinary arrays), then releases the history. NULL is a
 * no-op. */
int strata_context_destroy(strata_context *ctx);

/** Enter a recording scope: recording on (`enable` = 1) or off (0) until the
 * matching strata_deferred_end(), which restores the previous state. Scopes
 * nest (at most 64 deep). */
int strata_deferred_begin(strata_context *ctx, int enable);

/** Leave the innermost scope; STRATA_ESTATE without one. */
int strata_deferred_end(strata_context *ctx);

/** 1 when `ctx` records, 0 when not, STRATA_EINVAL for NULL. */
int strata_deferred_active(const strata_context *ctx);

/** 1 when `a` is lazy (recorded, not computed yet), 0 when it has its
 * values (or their computation is submitted), STRATA_EINVAL for NULL. */
int strata_is_deferred(const strata_array *a);

/** Compute the lazy arrays among `arrays` (others are ignored): the needed
 * part of their recorded graphs is submitted as tasks, once. */
int strata_compute(strata_array *const *arrays, int n);

/** Release the recorded history of `ctx`: lazy arrays the application holds
 * are computed first, then every array loses its history (in-place writes
 * become possible again) and intermediate results are freed. Exported graphs
 * are independent copies and stay valid. */
int strata_graph_clear(strata_context *ctx);

/** A scalar operand: an integer, a float or a bool, NumPy's weak scalars. */
typedef struct strata_scalar {
  strata_dtype kind; /**< STRATA_BOOL, STRATA_INT64 or STRATA_FLOAT64 */
  double value;      /**< its value (integers exact up to 2^53) */
} strata_scalar;

/** An integer scalar. */
static inline strata_scalar strata_int(int64_t v)
{
  strata_scalar s = {STRATA_INT64, (double)v};
  return s;
}

/** A floating-point scalar. */
static inline strata_scalar strata_float(double v)
{
  strata_scalar s = {STRATA_FLOAT64, v};
  return s;
}

/** out = fn(a) for a unary function (STRATA_FN_NEG ... STRATA_FN_SQRT).
 * `ctx` may be NULL (never records). */
int strata_unary(strata_context *ctx, strata_fn fn, strata_array *a, strata_array **out);

/** out = fn(a, b) with broadcasting, for a binary function (STRATA_FN_ADD
 * ... STRATA_FN_GE; comparisons give bool). */
int strata_binary(strata_context *ctx, strata_fn fn, strata_array *a, strata_array *b,
                  strata_array **out);

/** out = fn(a, s), or fn(s, a) when `scalar_first`. */
int strata_binary_scalar(strata_context *ctx, strata_fn fn, strata_array *a, strata_scalar s,
                         int scalar_first, strata_array **out);

/** out = cond ? a : b elementwise, with broadcasting of all three. */
int strata_where(strata_context *ctx, strata_array *cond, strata_array *a, strata_array *b,
                 strata_array **out);

/** out = a converted to `dtype` (floats to integers truncate toward zero
 * and saturate, NaN gives 0; to bool: a != 0). */
int strata_astype(strata_context *ctx, strata_array *a, strata_dtype dtype, strata_array **out);

/** 1-D out[i] = start + i * step for i < ceil((stop - start) / step). */
int strata_arange(strata_context *ctx, double start, double stop, double step, strata_dtype dtype,
                  strata_array **out);

/** An array of `shape` filled with `value`. */
int strata_full(strata_context *ctx, int ndim, const int64_t *shape, strata_dtype dtype,
                double value, strata_array **out);

/** strata_full() with 0. */
int strata_zeros(strata_context *ctx, int ndim, const int64_t *shape, strata_dtype dtype,
                 strata_array **out);

/** strata_full() with 1. */
int strata_ones(strata_context *ctx, int ndim, const int64_t *shape, strata_dtype dtype,
                strata_array **out);

/** The same elements in a new shape; one entry may be -1 (inferred). */
int strata_reshape(strata_context *ctx, strata_array *a, int ndim, const int64_t *shape,
                   strata_array **out);

/** "Not given" in a slice (Python's None). */
#define STRATA_NONE INT64_MIN

/** One item of an index: a slice start:stop:step (Python's rules, negative
 * values count from the end, step may be negative, not 0) or, when
 * `is_index`, the single position `start` (the dimension is dropped). */
typedef struct strata_slice {
  int64_t start; /**< first position, or STRATA_NONE */
  int64_t stop;  /**< end (excluded), or STRATA_NONE */
  int64_t step;  /**< step, or STRATA_NONE (1) */
  int is_index;  /**< 1: integer index `start`, dimension dropped */
} strata_slice;

/** The slice start:stop:step (C only: a compound literal). */
#define STRATA_SLICE(start, stop, step) ((strata_slice){(start), (stop), (step), 0})

/** The integer index i (C only). */
#define STRATA_AT(i) ((strata_slice){(i), STRATA_NONE, STRATA_NONE, 1})

/** The whole dimension, ':' (C only). */
#define STRATA_ALL STRATA_SLICE(STRATA_NONE, STRATA_NONE, STRATA_NONE)

/** Index a[items...]: `n` items apply to the first n dimensions (the others
 * are taken whole), like a NumPy tuple of ints and slices. An integer
 * outside [-extent, extent) is STRATA_ERANGE. */
int strata_index(strata_context *ctx, strata_array *a, int n, const strata_slice *items,
                 strata_array **out);

/** Join `n` >= 1 arrays of one dtype along `axis` (negative counts from the
 * end); other extents must agree. */
int strata_concat(strata_context *ctx, int n, strata_array *const *arrays, int axis,
                  strata_array **out);

/** Split `a` along `axis` before each of the `n` increasing positions
 * `at` (clamped to the extent): n + 1 pieces into outs. */
int strata_split(strata_context *ctx, strata_array *a, int n, const int64_t *at, int axis,
                 strata_array **outs);

/** Permute the dimensions: out dimension d is a's axes[d]; `naxes` 0
 * reverses them. */
int strata_transpose(strata_context *ctx, strata_array *a, int naxes, const int *axes,
                     strata_array **out);

/** Broadcast `a` to `shape` (NumPy's broadcast_to, as a copy). */
int strata_broadcast_to(strata_context *ctx, strata_array *a, int ndim, const int64_t *shape,
                        strata_array **out);

/** All axes, for strata_reduce(). */
#define STRATA_ALL_AXES (-1)

/** Reduce `a` over `naxes` axes (STRATA_ALL_AXES: all of them) with fn
 * STRATA_FN_SUM, PROD, MIN, MAX or MEAN; `keepdims` keeps them with extent
 * 1. Sum and product of bool and integers give int64, mean of integers
 * float64. */
int strata_reduce(strata_context *ctx, strata_fn fn, strata_array *a, int naxes, const int *axes,
                  int keepdims, strata_array **out);

/** Matrix product with NumPy's matmul rules for 1-D and 2-D operands, and
 * stacks of matrices whose leading (batch) dimensions are equal or absent
 * on one side. float32/float64 use BLAS (cuBLAS on CUDA workers). */
int strata_matmul(strata_context *ctx, strata_array *a, strata_array *b, strata_array **out);

/** Lower triangle of the last two dimensions: elements with j - i <= k. */
int strata_tril(strata_context *ctx, strata_array *a, int64_t k, strata_array **out);

/** Upper triangle of the last two dimensions: elements with j - i >= k. */
int strata_triu(strata_context *ctx, strata_array *a, int64_t k, strata_array **out);

/** 1-D int64 positions of the nonzero elements of a (flattened). The result's
 * shape depends on the data: asking for it computes the array. */
int strata_flatnonzero(strata_context *ctx, strata_array *a, strata_array **out);

/** Out-of-range indices of strata_take(). */
typedef enum strata_take_mode {
  STRATA_TAKE_WRAP = 0, /**< modulo the extent (-1 is the last element) */
  STRATA_TAKE_CLIP = 1  /**< clamped to [0, extent - 1] */
} strata_take_mode;

/** NumPy's take(a, indices, axis): out shape is a's shape with `axis`
 * replaced by the indices' shape; indices int32 or int64. */
int strata_take(strata_context *ctx, strata_array *a, strata_array *indices, int axis,
                strata_take_mode mode, strata_array **out);

/** Export the recorded graph from `inputs` to `outputs`. Names may be NULL
 * ("input<i>", "output<i>"); other nodes get names made of their operation
 * and position, stable for a given graph. Errors: STRATA_ENOHISTORY (an
 * output was not recorded and is not an input), STRATA_EUNBOUND (an output
 * depends on an array that is neither an input nor recorded),
 * STRATA_EUNUSED (an input reaches no output), STRATA_EREBIND (one array
 * under two input names), STRATA_EINVAL (duplicate names, outputs of
 * different contexts). The graph is a copy: later recording or clearing
 * does not change it. */
int strata_graph_export(int ninputs, strata_array *const *inputs, const char *const *input_names,
                        int noutputs, strata_array *const *outputs, const char *const *output_names,
                        strata_graph **graph);

/** Destroy a graph (NULL is a no-op). */
int strata_graph_destroy(strata_graph *g);

/** Number of inputs, or STRATA_EINVAL. */
int strata_graph_ninputs(const strata_graph *g);

/** Number of outputs, or STRATA_EINVAL. */
int strata_graph_noutputs(const strata_graph *g);

/** Number of nodes (inputs included), or STRATA_EINVAL. */
int strata_graph_nnodes(const strata_graph *g);

/** Name of node i (0 <= i < strata_graph_nnodes(), topological order), or
 * NULL. */
const char *strata_graph_node_name(const strata_graph *g, int i);

/** Name of input i, or NULL. */
const char *strata_graph_input_name(const strata_graph *g, int i);

/** Name of output i, or NULL. */
const char *strata_graph_output_name(const strata_graph *g, int i);

/** Run the graph as StarPU tasks on `inputs` (in the graph's input order;
 * other shapes and dtypes than at recording are allowed when the operations
 * accept them: shapes are inferred again). `outputs` receives new arrays
 * (the caller destroys them). Results equal eager execution. */
int strata_graph_run(strata_graph *g, strata_array *const *inputs, strata_array **outputs);

/** The graph as JSON text (schema "strata-graph" version 1, see
 * docs/deferred.md); *json is malloc'd, free() it. */
int strata_graph_to_json(const strata_graph *g, char **json);

/** Parse a graph from JSON text of `len` bytes; malformed or inconsistent
 * documents are STRATA_EIO with the reason in strata_error_message(). */
int strata_graph_from_json(const char *json, size_t len, strata_graph **graph);

/** strata_graph_to_json() into a file, written atomically
 * (strata_output_begin). */
int strata_graph_save(const strata_graph *g, const char *path);

/** The largest graph file strata_graph_load() reads: 256 MiB, about a
 * million nodes (a node takes about 150 bytes of JSON). */
#define STRATA_GRAPH_MAX_BYTES (256 << 20)

/** strata_graph_from_json() from a file of at most STRATA_GRAPH_MAX_BYTES
 * (a larger one, or an endless one such as /dev/zero, is STRATA_EIO).
 * Loading checks the graph in O(n log n) for n nodes. */
int strata_graph_load(const char *path, strata_graph **graph);

/** The graph in Graphviz DOT (inputs and outputs as ellipses, operations as
 * boxes labelled with name, operation, dtype and shape). */
int strata_graph_write_dot(const strata_graph *g, FILE *out);

/* ---- memory modes, compilation, fusion ---- */

/** Memory mode of a graph node: how its values are stored when the graph
 * runs (OCANNL's lattice; see docs/memory-modes.md). Modes only refine:
 * each is a set of concrete choices, and setting a mode keeps the choices
 * both allow. */
typedef enum strata_memory_kind {
  STRATA_MEM_UNDECIDED = 0,        /**< no decision yet: any of the modes below */
  STRATA_MEM_EFFECTIVELY_CONSTANT, /**< Hosted(Constant) or Virtual */
  STRATA_MEM_VIRTUAL,              /**< no storage: computed inline in its reader's fused kernel */
  STRATA_MEM_NEVER_VIRTUAL,        /**< Local, On_device or Hosted */
  STRATA_MEM_LOCAL,                /**< a scratch buffer inside its readers' task */
  STRATA_MEM_DEVICE_ONLY,          /**< Local or On_device */
  STRATA_MEM_ON_DEVICE,            /**< a handle the application cannot read, kept across runs */
  STRATA_MEM_MATERIALIZED,         /**< On_device or Hosted */
  STRATA_MEM_HOSTED                /**< an array the application can read */
} strata_memory_kind;

/** What changes a Hosted node (OCANNL's memory_type). */
typedef enum strata_memory_type {
  STRATA_MEMTYPE_ANY = 0,            /**< not decided (Strata's extension: plain "Hosted") */
  STRATA_MEMTYPE_CONSTANT,           /**< written once (first run), read-only afterwards */
  STRATA_MEMTYPE_NONCONSTANT,        /**< Changed_on_devices or Volatile */
  STRATA_MEMTYPE_CHANGED_ON_DEVICES, /**< computed by tasks, read by the host */
  STRATA_MEMTYPE_VOLATILE            /**< written by the host, read by tasks (graph inputs) */
} strata_memory_type;

/** Whether workers share one copy of a node (On_device, Changed_on_devices). */
typedef enum strata_sharing {
  STRATA_SHARING_UNSET = 0,  /**< either */
  STRATA_SHARING_PER_STREAM, /**< one version per replica (see strata_merge_versions()) */
  STRATA_SHARING_SHARED      /**< one StarPU handle: the workers of a memory node share its copy */
} strata_sharing;

/** A memory mode: `type` matters for STRATA_MEM_HOSTED only, `sharing` for
 * STRATA_MEM_ON_DEVICE and Hosted Changed_on_devices only. */
typedef struct strata_memory_mode {
  strata_memory_kind kind;
  strata_memory_type type;
  strata_sharing sharing;
} strata_memory_mode;

/** Refine the memory mode of node `node` (a node name or an output name).
 * Contradictions (Virtual on a Never_virtual node, Local on a Hosted one...)
 * are STRATA_EINVAL with the node's name and both modes in
 * strata_error_message(); the mode is then unchanged. An unknown node name
 * is STRATA_EINVAL too. */
int strata_node_set_memory_mode(strata_graph *g, const char *node, strata_memory_mode mode);

/** The current memory mode of a node: what was set, or after
 * strata_graph_compile() the concrete decision. */
int strata_node_memory_mode(const strata_graph *g, const char *node, strata_memory_mode *mode);

/** Write the mode's name ("Virtual", "On_device(Shared_cross_streams)",
 * "Hosted(Changed_on_devices(Unset))"...) into buf (NUL-terminated,
 * truncated to size). Returns the full length, or STRATA_EINVAL. */
int strata_memory_mode_format(strata_memory_mode mode, char *buf, size_t size);

/** The mode named `text`, exactly as strata_memory_mode_format() writes it
 * ("Local", "Hosted(Volatile)"...). STRATA_EINVAL for any other text. */
int strata_memory_mode_parse(const char *text, strata_memory_mode *mode);

/** Decide every node's memory mode and the fused kernels (run does it
 * when needed). Defaults: graph inputs are Hosted(Volatile), outputs
 * Hosted(Changed_on_devices); a node read more than once is never Virtual;
 * an undecided elementwise node read once by an elementwise node becomes
 * Virtual; others become Local when at most 16384 bytes, else On_device;
 * constant nodes (fills and operations on them) Hosted(Constant). A Local
 * node runs in one task with its readers (see strata_graph_ntasks()); when
 * that cannot be (a task outside them between its readers, more than
 * STARPU_NMAXBUFS handles, flatnonzero) it becomes On_device instead. A
 * user mode that cannot hold (Virtual on a matrix product or a graph
 * output, Local in those cases) is STRATA_EINVAL with the reason. */
int strata_graph_compile(strata_graph *g);

/** Kernels one run of the graph launches: one per node that is computed
 * and not Virtual, a fused group counting once, Constant nodes only until
 * their first run (compiles the graph first). A negative error code
 * otherwise. */
int strata_graph_nkernels(strata_graph *g);

/** Tasks one run of the graph submits: kernels() counted again with each
 * Local node's producer and readers as one task (a "strata_sequence"
 * running their kernels in order, the Local node in a STARPU_SCRATCH
 * buffer). Compiles the graph first; a negative error code otherwise. */
int strata_graph_ntasks(strata_graph *g);

/** A Hosted node's array after the last run (a new reference: destroy it).
 * STRATA_EINVAL for other modes, STRATA_ESTATE before the first run. */
int strata_graph_node_value(strata_graph *g, const char *node, strata_array **value);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
