/* Codelet layer: StarPU codelets and their insert functions on StarPU
 * handles. Knows nothing of core/ (arrays, runtime state); returns 0 or a
 * STRATA_E* code. */
#ifndef STRATA_CODELETS_H
#define STRATA_CODELETS_H

#include <mpi.h>
#include <starpu.h>

#include <strata/error.h>
#include <strata/types.h>

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
 * argument and handles, which the insert path gives the task (STARPU_FLOPS: StarPU's
 * GFlop/s statistics). */
struct strata__codelet {
  struct starpu_codelet cl;
  struct starpu_perfmodel model;
  /* From the task's argument and handles (NULL: not known). */
  double (*flops)(const void *arg, const starpu_data_handle_t *handles);
};

/* A CUDA implementation `fn` (asynchronous on the worker's stream) in a
 * codelet initializer, or nothing without CUDA (NULL: CPU only). */
#if STRATA__USE_CUDA
#define STRATA__CUDA_IMPL(fn) .cuda_funcs = {fn}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define STRATA__CUDA_IMPL(fn)
#endif

/* The CPU and CUDA wrappers `op_cpu` and `op_cuda` of an operation on
 * buffers (in R, out W or RW) whose kernels are strata__op_cpu(arg, out,
 * in) and strata__op_cuda(arg, out, in, stream). */
#define STRATA__IN_OUT_CPU(op)                                                                     \
  static void op##_cpu(void *buffers[], void *cl_arg)                                              \
  {                                                                                                \
    strata__##op##_cpu(cl_arg, (void *)STARPU_VECTOR_GET_PTR(buffers[1]),                          \
                       (const void *)STARPU_VECTOR_GET_PTR(buffers[0]));                           \
  }
#if STRATA__USE_CUDA
#define STRATA__IN_OUT_CUDA(op)                                                                    \
  static void op##_cuda(void *buffers[], void *cl_arg)                                             \
  {                                                                                                \
    strata__##op##_cuda(cl_arg, (void *)STARPU_VECTOR_GET_PTR(buffers[1]),                         \
                        (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),                           \
                        starpu_cuda_get_local_stream());                                           \
  }
#else
#define STRATA__IN_OUT_CUDA(op)
#endif
#define STRATA__IN_OUT_WRAPPERS(op) STRATA__IN_OUT_CPU(op) STRATA__IN_OUT_CUDA(op)

/* A history-based performance model: StarPU files its measurements under
 * `symbol`, keyed on `footprint` (NULL: StarPU's, the data sizes). */
#define STRATA__HISTORY_MODEL(symbol_, footprint_)                                                 \
  {                                                                                                \
    .type = STARPU_HISTORY_BASED, .symbol = symbol_, .footprint = footprint_                       \
  }

/* Under SimGrid (scripts/simulate.sh) every task runs for real, so that the
 * host's decisions that read results (counts, masks, bubbles) stay those of
 * a real run, and its measured thread time becomes its simulated duration. */
#ifdef STARPU_SIMGRID
#define STRATA__SIMGRID_FLAGS .flags = STARPU_CODELET_SIMGRID_EXECUTE_AND_INJECT,
#else
#define STRATA__SIMGRID_FLAGS
#endif

/* A codelet initializer: name, trace colour, CPU and CUDA implementations
 * (cuda NULL: CPU only), performance model (NULL: none), then the buffers
 * and anything else of the codelet (.nbuffers, .modes, .can_execute, ...). */
#define STRATA__CODELET_INIT(name_, color_, cpu, cuda, model_, ...)                                \
  {                                                                                                \
    .name = name_, .color = color_, .cpu_funcs = {cpu},                                            \
    STRATA__CUDA_IMPL(cuda) STRATA__SIMGRID_FLAGS.model = model_, __VA_ARGS__                      \
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

/* The priority of the tasks the calling thread submits from now on (0,
 * StarPU's default, unless set); returns the previous one. Tasks whose
 * results leave the rank go first: packs into outboxes, and what they wait
 * for, at StarPU's highest priority; short work downstream of long tasks at
 * STRATA__PRIO_DOWNSTREAM, so that one worker does not run every queued
 * long task before the first results another rank waits for. */
int strata__submit_priority(int priority);
enum { STRATA__PRIO_DOWNSTREAM = 1 };

/* The calling thread's CPU time (ns): what a task cost, whatever else ran
 * on its core. */
int64_t strata__thread_cpu_ns(void);

/* Add the calling thread's CPU time since `start` (strata__thread_cpu_ns())
 * to *account, atomically (tasks on several workers share one); nothing
 * when account is NULL. */
void strata__charge_cpu(int64_t *account, int64_t start);

/* The time (seconds) StarPU's history-based model of `cl` expects for a
 * task of footprint `footprint` on worker `workerid`'s architecture; NAN
 * before the codelet's first task (the history is not loaded) or with too
 * few measurements of that footprint (STARPU_CALIBRATE_MINIMUM). */
double strata__expected_seconds(struct strata__codelet *cl, uint32_t footprint, int workerid);

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
/* Whether a capture is active on the calling thread. */
int strata__capture_active(void);
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

/* How many chunks of consecutive rows a result of `rows` rows, each
 * `row_elems` elements of its handle, is cut into: one per CPU worker when
 * it is 1 MiB or more, the node has no GPU, no sequence is being captured
 * and `out` has a home buffer; else 1. (A planned partition of a buffer
 * that StarPU allocated itself, home node -1, gets chunks of its own:
 * their results would not reach the parent.) */
int strata__row_chunks(starpu_data_handle_t out, int64_t rows, int64_t row_elems);

/* Submits one task per chunk of rows of `out` through `chunk` (rows
 * [lo, hi), written to the chunk's handle), as children of a planned
 * partition of `out` that is unpartitioned and cleaned after them: one
 * task is one core, and one large result would otherwise leave the other
 * cores idle. `nchunks` from strata__row_chunks (STRATA_EINVAL outside
 * 1..64). */
int strata__rows_submit(starpu_data_handle_t out, int64_t rows, int64_t row_elems, int nchunks,
                        int (*chunk)(void *ctx, int64_t lo, int64_t hi, starpu_data_handle_t part),
                        void *ctx);

/* Clean the partition plan of `parent` into `n` `children` once the tasks
 * and the unpartition submitted on it are done, without waiting (the
 * children array is copied). StarPU 1.3 keeps 48 bytes for good per handle
 * a request has waited on, and children cleaned before their unpartition
 * has run always have one: about 50 bytes per used child and call, which
 * this saves (docs/reliability.md). Every plan of Strata is cleaned here. */
void strata__partition_clean_submit(starpu_data_handle_t parent, unsigned n,
                                    starpu_data_handle_t *children);

/* starpu_data_unregister() of a handle whose plans may still be waiting
 * for strata__partition_clean_submit: it waits for them first (StarPU
 * refuses to unregister a handle that has plans). */
void strata__unregister(starpu_data_handle_t handle);

/* An empty codelet with a variable number of buffers: synchronisation
 * points, and the reference task of the overhead benchmark. */
extern struct strata__codelet strata__noop_cl;

/* Perf-model footprint of tasks whose cost is determined by their argument
 * structure (shapes, types, function): a hash of its bytes. */
uint32_t strata__arg_footprint(struct starpu_task *task);

/* `n` to within 1/128 of itself (its 7 leading bits, rounded to the
 * nearest) for a footprint: the pieces of an exchange with random indices
 * differ by a few items from call to call, so exact sizes never repeat for
 * them (no history, no modeled duration), while their costs differ by less
 * than this. */
uint64_t strata__rounded_size(uint64_t n);

#endif
