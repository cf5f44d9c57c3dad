/* Codelet layer: StarPU codelets and their insert functions on StarPU
 * handles. Knows nothing of core/ (arrays, runtime state); returns 0 or a
 * STRATA_E* code. */
#ifndef STRATA_CODELETS_H
#define STRATA_CODELETS_H

#include <mpi.h>
#include <starpu.h>

#include <strata/error.h>
#include <strata/shard.h>
#include <strata/types.h>

#include "kernels/amr_kernels.h"
#include "kernels/ndarray_kernels.h"
#include "strata_build_config.h"

/* CUDA implementations are registered only when our CUDA kernels were
 * compiled and StarPU itself was built with CUDA. */
#if STRATA_HAVE_CUDA_KERNELS && defined(STARPU_USE_CUDA)
#define STRATA__USE_CUDA 1
#else
#define STRATA__USE_CUDA 0
#endif

/* Every codelet carries a `.color` for traces (ViTE, dag.dot): one hue per
 * subsystem, shades within it. Blues: array operations; purples: merges;
 * oranges: the global indexer; greens: AMR; reds: inference and the model;
 * browns: sharded operations; grey: the empty codelet. */

/* Integer cube root: n with n^3 <= v < (n+1)^3 (extent of a cubic array). */
static inline int64_t strata__cube_root(uint64_t v)
{
  int64_t n = 0;
  while ((uint64_t)((n + 1) * (n + 1) * (n + 1)) <= v)
    n++;
  return n;
}

/* One operation's codelet, declared in one place by STRATA__CODELET: the
 * StarPU codelet, its history-based performance model (symbol = the
 * codelet's name) and, where it is known, the flop count of a task from its
 * argument, which the insert path gives the task (STARPU_FLOPS: StarPU's
 * GFlop/s statistics). */
struct strata__codelet {
  struct starpu_codelet cl;
  struct starpu_perfmodel model;
  double (*flops)(const void *arg); /* NULL: not known */
};

/* A CUDA implementation `fn` (asynchronous on the worker's stream) in a
 * codelet initializer, or nothing without CUDA (NULL: CPU only). */
#if STRATA__USE_CUDA
#define STRATA__CUDA_IMPL(fn) .cuda_funcs = {fn}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define STRATA__CUDA_IMPL(fn)
#endif

/* A history-based performance model: StarPU files its measurements under
 * `symbol`, keyed on `footprint` (NULL: StarPU's, the data sizes). */
#define STRATA__HISTORY_MODEL(symbol_, footprint_)                                                 \
  {                                                                                                \
    .type = STARPU_HISTORY_BASED, .symbol = symbol_, .footprint = footprint_                       \
  }

/* A codelet initializer: name, trace colour, CPU and CUDA implementations
 * (cuda NULL: CPU only), performance model (NULL: none), then the buffers
 * and anything else of the codelet (.nbuffers, .modes, .can_execute, ...). */
#define STRATA__CODELET_INIT(name_, color_, cpu, cuda, model_, ...)                                \
  {                                                                                                \
    .name = name_, .color = color_, .cpu_funcs = {cpu}, STRATA__CUDA_IMPL(cuda).model = model_,    \
    __VA_ARGS__                                                                                    \
  }

/* The codelet `var` named `name` with its own history-based model keyed on
 * `footprint` (NULL: StarPU's, the data sizes) and the flop count `flops`
 * (NULL: unknown); the other arguments as STRATA__CODELET_INIT's. */
#define STRATA__CODELET(var, name_, color_, cpu, cuda, footprint_, flops_, ...)                    \
  static struct strata__codelet var = {                                                            \
      .cl = STRATA__CODELET_INIT(name_, color_, cpu, cuda, &var.model, __VA_ARGS__),               \
      .model = STRATA__HISTORY_MODEL(name_, footprint_),                                           \
      .flops = flops_}

/* A codelet measured in the model of another (`owner`: a STRATA__CODELET
 * of the same work with other modes or buffers). */
#define STRATA__CODELET_SHARING(var, owner, name_, color_, cpu, cuda, flops_, ...)                 \
  static struct strata__codelet var = {                                                            \
      .cl = STRATA__CODELET_INIT(name_, color_, cpu, cuda, &owner.model, __VA_ARGS__),             \
      .flops = flops_}

/* Start the codelet layer after starpu_init() (codelet tables, OpenBLAS
 * single-threaded inside workers, cuBLAS on CUDA workers); stop it before
 * StarPU shuts down. */
void strata__codelets_start(void);
void strata__codelets_stop(void);

/* Fill the merge codelet tables (called by strata__codelets_start). */
void strata__merge_codelets_init(void);

/* Most handles of one task on Strata's insert paths: above
 * STARPU_NMAXBUFS, STARPU_VARIABLE_NBUFFERS codelets only (the task gets
 * StarPU's dynamic handle and mode arrays). */
#define STRATA__MAX_BUFFERS 64

/* Strata's task insert path: one task of `cl` on `handles` with the
 * codelet's modes (or `modes` when non-NULL, required for
 * STARPU_VARIABLE_NBUFFERS codelets). `cl_arg` is not copied: it must
 * outlive the task (static tables, long-lived objects). */
int strata__submit(struct strata__codelet *cl, const void *cl_arg, size_t cl_arg_size, int nbuffers,
                   const starpu_data_handle_t *handles, const enum starpu_data_access_mode *modes);

/* Same, with a copy of `arg` (size bytes) that the task owns and frees. */
int strata__submit_copy_arg(struct strata__codelet *cl, const void *arg, size_t size, int nbuffers,
                            const starpu_data_handle_t *handles,
                            const enum starpu_data_access_mode *modes);

/* Same, handing over `arg` (malloc'ed, size bytes): the task frees it,
 * on error too. */
int strata__submit_owned_arg(struct strata__codelet *cl, void *arg, size_t size, int nbuffers,
                             const starpu_data_handle_t *handles,
                             const enum starpu_data_access_mode *modes);

/* Capture: while active (on the calling thread), the three insert
 * functions above record their task instead of submitting it;
 * strata__capture_submit() then submits the recorded tasks as one task
 * calling their implementations in order. The executor of graphs uses it
 * for nodes in the Local memory mode (graphs/). */
struct strata__captured {
  struct strata__codelet *cl;
  void *arg;
  size_t arg_size;
  int owned; /* arg is the capture's to free */
  int nbuffers;
  starpu_data_handle_t handles[STARPU_NMAXBUFS];
  enum starpu_data_access_mode modes[STARPU_NMAXBUFS];
};
struct strata__capture {
  int n, cap;
  struct strata__captured *tasks;
};
void strata__capture_begin(struct strata__capture *c);
void strata__capture_end(void);
/* Called by the insert path: 1 when the task was recorded (arg copied or,
 * with free_arg, taken over), 0 when no capture is active, or an error. */
int strata__capture_task(struct strata__codelet *cl, void *arg, size_t arg_size, int free_arg,
                         int nbuffers, const starpu_data_handle_t *handles,
                         const enum starpu_data_access_mode *modes);
/* Submit what `c` recorded (after strata__capture_end) and empty it:
 * several tasks as one "strata_sequence" task on their distinct handles,
 * where the `scratch` handles are STARPU_SCRATCH buffers; runs on CUDA
 * workers too when every recorded codelet has a CUDA implementation. One
 * task, or tasks using more than STARPU_NMAXBUFS handles together, are
 * submitted as they were. */
int strata__capture_submit(struct strata__capture *c, int nscratch,
                           const starpu_data_handle_t *scratch);
/* Drop what `c` recorded without submitting. */
void strata__capture_discard(struct strata__capture *c);

/* StarPU-MPI version for handles registered with StarPU-MPI: called on
 * every rank of `comm` with the same arguments; the task runs on the owner
 * of the first written handle, StarPU-MPI moves the data. */
int strata__mpi_submit_copy_arg(MPI_Comm comm, struct strata__codelet *cl, const void *arg,
                                size_t size, int nbuffers, const starpu_data_handle_t *handles,
                                const enum starpu_data_access_mode *modes);

/* Map a negative errno from StarPU to a STRATA_E* code. */
int strata__from_starpu(int starpu_ret);

/* An empty codelet with a variable number of buffers: synchronisation
 * points, and the reference task of the overhead benchmark. */
extern struct strata__codelet strata__noop_cl;

/* dst = dst op src (vectors; dst of the result type of (op, src_dtype)). */
int strata__merge_submit(starpu_data_handle_t dst, starpu_data_handle_t src, strata_op op,
                         strata_dtype src_dtype);

/* Same in STARPU_REDUX mode on dst; strata__merge_set_redux() must have
 * given dst the reduction methods of (op, dst's type) first. */
int strata__accumulate_submit(starpu_data_handle_t dst, starpu_data_handle_t src, strata_op op,
                              strata_dtype src_dtype);

/* Install the init (identity) and reduction codelets of `op` on a handle of
 * element type `result`. */
void strata__merge_set_redux(starpu_data_handle_t dst, strata_op op, strata_dtype result);

/* dst = identity of op (dst of element type `result`). */
int strata__fill_identity_submit(starpu_data_handle_t dst, strata_op op, strata_dtype result);

/* A model invocation: the codelet calls `cpu` or `cuda` (NULL: CPU only)
 * with `model` and the buffers; the model object outlives its tasks. */
struct strata__model_call {
  void (*cpu)(void *model, const float *weights, const float *in, float *out, int64_t n,
              void *scratch);
  int (*cuda)(void *model, const float *weights, const float *in, float *out, int64_t n,
              void *scratch, void *cublas, void *stream);
  void *model;
  uint32_t id; /* identity of the model in the performance model's footprint */
  int in_channels;
  double flops; /* of the task being submitted (0: unknown), read at its submission */
};

/* One task: out [K, n^3] = model(in [C, n^3]); weights (R) is a float
 * vector, scratch a STARPU_SCRATCH byte vector sized for n. */
int strata__model_submit(const struct strata__model_call *call, starpu_data_handle_t weights,
                         starpu_data_handle_t in, starpu_data_handle_t out,
                         starpu_data_handle_t scratch);

struct strata__bubble_params;
/* One task: bubble table (W, float64 [1 + capacity, fields]) from a
 * probability map (R, float32 n^3); scratch sized for n. */
int strata__bubbles_submit(starpu_data_handle_t prob, starpu_data_handle_t table,
                           starpu_data_handle_t scratch, const struct strata__bubble_params *p);

/* Scratch bytes of bubble extraction for extent n (the larger of the CPU
 * and CUDA needs). */
uint64_t strata__bubbles_scratch_bytes(int64_t n);

/* dst (RW, vector) gets a region copied, restricted or prolonged from src
 * (R, vector) as `x` says (kernels/amr_kernels.h); on `comm` when the
 * handles are registered with StarPU-MPI, else (MPI_COMM_NULL) locally. */
int strata__amr_xfer_submit(MPI_Comm comm, starpu_data_handle_t src, starpu_data_handle_t dst,
                            const struct strata__amr_xfer *x);

/* The transfers between one parent block and its children as one task:
 * child o restricted into the parent (children R, parent RW) or prolonged
 * from it (parent R, children RW) as x[o] says, for o < nchildren (at most
 * 8, all of one kind). On `comm` the task runs where the parent (restriction)
 * or the first child (prolongation) lives. */
int strata__amr_family_submit(MPI_Comm comm, starpu_data_handle_t parent,
                              const starpu_data_handle_t *children,
                              const struct strata__amr_family *f);

/* A leaf's ghost fill as one task (one per region would cost a task per
 * neighbour): the transfers in order, each from task buffer `src` (0: the
 * leaf itself, k >= 1: sources[k - 1]), then linear extrapolation at the
 * domain faces in boundary.faces (none when 0). */
struct strata__amr_ghost_xfer {
  int src;
  struct strata__amr_xfer x;
};
struct strata__amr_ghosts {
  struct strata__amr_boundary boundary;
  int nxfers;
  struct strata__amr_ghost_xfer xfer[];
};
/* The most sources one ghost task reads. */
#define STRATA__AMR_GHOST_SOURCES (STRATA__MAX_BUFFERS - 1)
/* leaf (RW) from sources (R, distinct, not the leaf), locally. */
int strata__amr_ghosts_submit(starpu_data_handle_t leaf, const starpu_data_handle_t *sources,
                              int nsources, const struct strata__amr_ghosts *g);

/* A block (W) set to zero, then, when `fn` is not NULL, its interior set
 * to `fn` evaluated row by row at the cell centres: interior cell (i, j, k)
 * has its centre at origin + (i, j, k) h. CPU only (`fn` is host code). */
struct strata__amr_fill {
  void (*fn)(void *ctx, int field, const double centre[3], double h, int64_t n, double *out);
  void *ctx;
  int field, dim, ghost, is_double;
  int64_t cells; /* interior cells per axis */
  double origin[3], h;
};
int strata__amr_fill_submit(MPI_Comm comm, starpu_data_handle_t block,
                            const struct strata__amr_fill *f);

struct strata__infer_criterion;
struct strata__infer_merge;
struct strata__infer_mark;
/* Evaluation: a leaf's field (R) into its mask (W, uint8 vector). */
int strata__infer_criterion_submit(MPI_Comm comm, starpu_data_handle_t field,
                                   starpu_data_handle_t mask,
                                   const struct strata__infer_criterion *c);
/* A child's mask (R) OR-ed into its parent's (RW). */
int strata__infer_merge_submit(MPI_Comm comm, starpu_data_handle_t child,
                               starpu_data_handle_t parent, const struct strata__infer_merge *m);
/* An array's bubble table (R) into a leaf's list (RW) and marker field
 * (RW; NULL: none), locally. */
int strata__infer_mark_submit(starpu_data_handle_t table, starpu_data_handle_t list,
                              starpu_data_handle_t field, const struct strata__infer_mark *m);

/* One shard of a sharded operation (include/strata/shard.h): the
 * operation's kernels, a footprint key, the shard's descriptor and a copy
 * of the kernel argument (arg_size bytes). */
struct strata__shard_call {
  strata_shard_cpu_fn cpu;
  strata_shard_cuda_fn cuda;
  uint32_t id;
  strata_shard shard;
  size_t arg_size;
  _Alignas(16) unsigned char arg[];
};

/* One shard task on its region buffers (shard.ntensors handles, `modes`
 * per buffer: R, W, RW or REDUX); `size` covers the argument copy. */
int strata__shard_submit(const struct strata__shard_call *call, size_t size,
                         const starpu_data_handle_t *handles,
                         const enum starpu_data_access_mode *modes);

/* A region of a row-major tensor and its buffer, as boxes: every piece
 * moves `extent` cells between tensor_start and buffer_start. A gather
 * first fills the buffer with `fill` when `pad`; a scatter copies, or
 * merges with (op, dtype) when `merge`. */
struct strata__region_piece {
  int64_t tensor_start[8], buffer_start[8], extent[8];
};
struct strata__region_move {
  int ndim, pad, merge, npieces;
  size_t elem;
  strata_op op;
  strata_dtype dtype;
  unsigned char fill[16];
  int64_t tensor_shape[8], buffer_shape[8];
  struct strata__region_piece piece[];
};

/* buffer (W) = region of tensor (R). */
int strata__region_gather_submit(starpu_data_handle_t tensor, starpu_data_handle_t buffer,
                                 const struct strata__region_move *m);

/* region of tensor (RW) = buffer (R), or merged with it. */
int strata__region_scatter_submit(starpu_data_handle_t tensor, starpu_data_handle_t buffer,
                                  const struct strata__region_move *m);

/* The CPU and CUDA (NULL without CUDA) kernels of the example sharded
 * operations built by strata_shard_op_linear() and its siblings. */
struct strata__shard_kernels {
  strata_shard_cpu_fn cpu;
  strata_shard_cuda_fn cuda;
};
extern const struct strata__shard_kernels strata__linear_kernels, strata__conv2d_kernels,
    strata__axial_sum_kernels, strata__broadcast_add_kernels;

/* Global indexer: dst (W) row k = src (R) row map[k] (map: R, int64
 * vector of dst's row count); rows of `row` bytes. */
int strata__gindexer_gather_submit(starpu_data_handle_t src, starpu_data_handle_t map,
                                   starpu_data_handle_t dst, size_t row);

/* Global indexer: dst (RW) row map[k] = src (R) row k. */
int strata__gindexer_scatter_submit(starpu_data_handle_t src, starpu_data_handle_t map,
                                    starpu_data_handle_t dst, size_t row);

/* Global indexer, variable-size items: copy the segments (R, a vector of
 * int64 triples: source offset, destination offset, length, in items of
 * `item` bytes) from src (R) to dst: W mode, or RW when `partial` (other
 * tasks fill the rest of dst). */
int strata__gindexer_segments_submit(starpu_data_handle_t src, starpu_data_handle_t segments,
                                     starpu_data_handle_t dst, size_t item, int partial);

/* Owner-side put: dist (RW) rows from inbox (R) through the per-index
 * request lists csr (R, dn + 1 int64) and req (R, int64), under `rule`
 * (kernels/gindexer_kernels.h). A reduction also gets a STARPU_SCRATCH
 * vector of dist's size for its CUDA rounds (max_requests of them). */
struct strata__put_apply {
  int rule;
  strata_op op;
  strata_dtype dtype;
  int64_t count, max_requests;
};
int strata__gindexer_apply_submit(starpu_data_handle_t dist, starpu_data_handle_t inbox,
                                  starpu_data_handle_t csr, starpu_data_handle_t req,
                                  const struct strata__put_apply *a);

/* Perf-model footprint of tasks whose cost is determined by their argument
 * structure (shapes, types, function): a hash of its bytes. */
uint32_t strata__arg_footprint(struct starpu_task *task);

/* A generated kernel of a fused group: buf[0] the result, then the leaves. */
typedef void (*strata__fused_fn)(void *const *buf);

/* One task computing a fused group's result `out` (W) from its leaves (R,
 * program->nleaves of them, at most STARPU_NMAXBUFS - 1): with the
 * generated kernel `fn` on CPUs (NULL: the program), with the program on
 * GPUs; `id` identifies the group for the perf model. */
struct strata__fused_program;
int strata__fused_submit(strata__fused_fn fn, uint64_t id,
                         const struct strata__fused_program *program,
                         const starpu_data_handle_t *leaves, starpu_data_handle_t out);

/* Array operations of deferred compute (kernels/ndarray_kernels.h): one
 * task each on vector handles, results written whole (W). */
int strata__ew_submit(const struct strata__ew_args *a, const starpu_data_handle_t *operands,
                      starpu_data_handle_t out);
/* A strided copy into dst: W mode, or RW when `partial` (other tasks write
 * the rest of dst: concatenation). */
int strata__view_submit(const struct strata__view_args *a, starpu_data_handle_t src,
                        starpu_data_handle_t dst, int partial);
int strata__reduce_submit(const struct strata__reduce_args *a, starpu_data_handle_t in,
                          starpu_data_handle_t out);
int strata__affine_fill_submit(const struct strata__affine_fill_args *a, starpu_data_handle_t out);
int strata__tri_submit(const struct strata__tri_args *a, starpu_data_handle_t in,
                       starpu_data_handle_t out);
int strata__matmul_submit(const struct strata__matmul_args *a, starpu_data_handle_t x,
                          starpu_data_handle_t y, starpu_data_handle_t out);
int strata__take_submit(const struct strata__take_args *a, starpu_data_handle_t in,
                        starpu_data_handle_t idx, starpu_data_handle_t out);
/* count (one int64) = number of nonzero elements of in (n of dtype). */
int strata__count_nonzero_submit(strata_dtype dtype, int64_t n, starpu_data_handle_t in,
                                 starpu_data_handle_t count);
/* out (int64) = positions of the nonzero elements of in. */
int strata__flatnonzero_submit(strata_dtype dtype, int64_t n, starpu_data_handle_t in,
                               starpu_data_handle_t out);

#endif
