/* The merge codelet: dst = dst op src on vectors, in RW or REDUX mode, and
 * the identity fill, with CPU and CUDA implementations and a history-based
 * performance model keyed on (op, dtype, n). */
#include "merge.h"
#include "kernels/merge_kernels.h"

/* Task arguments point into this table: no allocation per task. For the
 * identity fill, `dtype` is the element type of the destination. */
struct merge_args {
  strata_op op;
  strata_dtype dtype;
};
static struct merge_args merge_args_table[STRATA_NOPS][STRATA_NDTYPES];

static void merge_cpu(void *buffers[], void *cl_arg)
{
  const struct merge_args *a = cl_arg;
  strata__merge_cpu(a->op, a->dtype, (void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                    (const void *)STARPU_VECTOR_GET_PTR(buffers[1]),
                    STARPU_VECTOR_GET_NX(buffers[0]));
}

static void fill_identity_cpu(void *buffers[], void *cl_arg)
{
  const struct merge_args *a = cl_arg;
  strata__merge_fill_identity_cpu(a->op, a->dtype, (void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                                  STARPU_VECTOR_GET_NX(buffers[0]));
}

#if STRATA__USE_CUDA
static void merge_cuda(void *buffers[], void *cl_arg)
{
  const struct merge_args *a = cl_arg;
  strata__merge_cuda(a->op, a->dtype, (void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                     (const void *)STARPU_VECTOR_GET_PTR(buffers[1]),
                     STARPU_VECTOR_GET_NX(buffers[0]), starpu_cuda_get_local_stream());
}

static void fill_identity_cuda(void *buffers[], void *cl_arg)
{
  const struct merge_args *a = cl_arg;
  strata__merge_fill_identity_cuda(a->op, a->dtype, (void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                                   STARPU_VECTOR_GET_NX(buffers[0]),
                                   starpu_cuda_get_local_stream());
}
#endif

/* Hash h extended with the length of the task's first buffer. */
static uint32_t with_length(uint32_t h, struct starpu_task *task)
{
  uint64_t n = starpu_vector_get_nx(STARPU_TASK_GET_HANDLE(task, 0));
  h = starpu_hash_crc32c_be((uint32_t)n, h);
  return starpu_hash_crc32c_be((uint32_t)(n >> 32), h);
}

/* Cost depends on the operator, the element type and the length. */
static uint32_t merge_footprint(struct starpu_task *task)
{
  const struct merge_args *a = task->cl_arg;
  uint32_t h = starpu_hash_crc32c_be((uint32_t)a->op, 0);
  return with_length(starpu_hash_crc32c_be((uint32_t)a->dtype, h), task);
}

STRATA__CODELET(merge_cl, "strata_merge", 0x6a51a3, merge_cpu, merge_cuda, merge_footprint, NULL,
                .nbuffers = 2, .modes = {STARPU_RW, STARPU_R});
STRATA__CODELET_SHARING(accumulate_cl, merge_cl, "strata_accumulate", 0x9e9ac8, merge_cpu,
                        merge_cuda, NULL, .nbuffers = 2, .modes = {STARPU_REDUX, STARPU_R});
STRATA__CODELET(fill_identity_cl, "strata_fill_identity", 0xcbc9e2, fill_identity_cpu,
                fill_identity_cuda, merge_footprint, NULL, .nbuffers = 1, .modes = {STARPU_W});

/* Reduction methods of STARPU_REDUX receive no argument in StarPU 1.3 (and
 * the init method is not even run as a task), so each (op, dtype) pair gets
 * its own pair of functions, generated here; pair k is merge_args[k]. */
#define NREDUX (STRATA_NOPS * STRATA_NDTYPES)
_Static_assert(NREDUX == 56, "update REDUX_PAIRS when adding operators or types");
// clang-format off
#define REDUX_PAIRS(X)                                                                             \
  X(0)  X(1)  X(2)  X(3)  X(4)  X(5)  X(6)  X(7)  X(8)  X(9)  X(10) X(11) X(12) X(13)            \
  X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27)            \
  X(28) X(29) X(30) X(31) X(32) X(33) X(34) X(35) X(36) X(37) X(38) X(39) X(40) X(41)            \
  X(42) X(43) X(44) X(45) X(46) X(47) X(48) X(49) X(50) X(51) X(52) X(53) X(54) X(55)
// clang-format on

#define PAIR_ARGS(k) ((void *)&merge_args_table[(k) / STRATA_NDTYPES][(k) % STRATA_NDTYPES])
#if STRATA__USE_CUDA
#define DEFINE_REDUX_CUDA(k)                                                                       \
  static void redux_cuda_##k(void *b[], void *arg)                                                 \
  {                                                                                                \
    (void)arg;                                                                                     \
    merge_cuda(b, PAIR_ARGS(k));                                                                   \
  }                                                                                                \
  static void redux_init_cuda_##k(void *b[], void *arg)                                            \
  {                                                                                                \
    (void)arg;                                                                                     \
    fill_identity_cuda(b, PAIR_ARGS(k));                                                           \
  }
#else
#define DEFINE_REDUX_CUDA(k)
#endif
#define DEFINE_REDUX(k)                                                                            \
  static void redux_cpu_##k(void *b[], void *arg)                                                  \
  {                                                                                                \
    (void)arg;                                                                                     \
    merge_cpu(b, PAIR_ARGS(k));                                                                    \
  }                                                                                                \
  static void redux_init_cpu_##k(void *b[], void *arg)                                             \
  {                                                                                                \
    (void)arg;                                                                                     \
    fill_identity_cpu(b, PAIR_ARGS(k));                                                            \
  }                                                                                                \
  DEFINE_REDUX_CUDA(k)
REDUX_PAIRS(DEFINE_REDUX)

#define REF_REDUX_CPU(k)      redux_cpu_##k,
#define REF_REDUX_INIT_CPU(k) redux_init_cpu_##k,
static const starpu_cpu_func_t redux_cpu_funcs[NREDUX] = {REDUX_PAIRS(REF_REDUX_CPU)};
static const starpu_cpu_func_t redux_init_cpu_funcs[NREDUX] = {REDUX_PAIRS(REF_REDUX_INIT_CPU)};
#if STRATA__USE_CUDA
#define REF_REDUX_CUDA(k)      redux_cuda_##k,
#define REF_REDUX_INIT_CUDA(k) redux_init_cuda_##k,
static const starpu_cuda_func_t redux_cuda_funcs[NREDUX] = {REDUX_PAIRS(REF_REDUX_CUDA)};
static const starpu_cuda_func_t redux_init_cuda_funcs[NREDUX] = {REDUX_PAIRS(REF_REDUX_INIT_CUDA)};
#endif

static struct starpu_codelet redux_cls[NREDUX];
static struct starpu_codelet redux_init_cls[NREDUX];

/* The reduction methods' tasks have no argument (1.3): their (op, dtype) is
 * the position of their codelet in its table. */
static uint32_t redux_footprint(struct starpu_task *task)
{
  uintptr_t cl = (uintptr_t)task->cl, redux = (uintptr_t)redux_cls;
  size_t k = cl >= redux && cl < redux + sizeof redux_cls
                 ? (cl - redux) / sizeof *redux_cls
                 : (cl - (uintptr_t)redux_init_cls) / sizeof *redux_init_cls;
  return with_length(starpu_hash_crc32c_be((uint32_t)k, 0), task);
}
static struct starpu_perfmodel redux_model = STRATA__HISTORY_MODEL("strata_redux", redux_footprint);
static struct starpu_perfmodel redux_init_model =
    STRATA__HISTORY_MODEL("strata_redux_init", redux_footprint);

#if STRATA__USE_CUDA
/* Register a CUDA implementation (asynchronous on the worker's stream). */
static void set_cuda(struct starpu_codelet *cl, starpu_cuda_func_t fn)
{
  cl->cuda_funcs[0] = fn;
  cl->cuda_flags[0] = STARPU_CUDA_ASYNC;
}
#endif

void strata__merge_codelets_init(void)
{
  for (int op = 0; op < STRATA_NOPS; op++)
    for (int t = 0; t < STRATA_NDTYPES; t++) {
      merge_args_table[op][t] = (struct merge_args){(strata_op)op, (strata_dtype)t};
      int k = op * STRATA_NDTYPES + t;
      struct starpu_codelet *redux = &redux_cls[k];
      struct starpu_codelet *init = &redux_init_cls[k];
      starpu_codelet_init(redux);
      redux->name = "strata_redux";
      redux->cpu_funcs[0] = redux_cpu_funcs[k];
      redux->nbuffers = 2;
      redux->modes[0] = STARPU_RW;
#if STRATA_STARPU_REDUX_WITH_ARGS
      redux->modes[0] |= STARPU_COMMUTE; /* StarPU >= 1.4 expects it; 1.3 aborts on it */
#endif
      redux->modes[1] = STARPU_R;
      redux->model = &redux_model;
      starpu_codelet_init(init);
      init->name = "strata_redux_init";
      init->cpu_funcs[0] = redux_init_cpu_funcs[k];
      init->nbuffers = 1;
      init->modes[0] = STARPU_W;
      init->model = &redux_init_model;
#if STRATA__USE_CUDA
      set_cuda(redux, redux_cuda_funcs[k]);
      set_cuda(init, redux_init_cuda_funcs[k]);
#endif
    }
}

int strata__merge_submit(starpu_data_handle_t dst, starpu_data_handle_t src, strata_op op,
                         strata_dtype src_dtype)
{
  starpu_data_handle_t h[2] = {dst, src};
  return strata__submit(&merge_cl, &merge_args_table[op][src_dtype], sizeof(struct merge_args), 2,
                        h, NULL);
}

int strata__accumulate_submit(starpu_data_handle_t dst, starpu_data_handle_t src, strata_op op,
                              strata_dtype src_dtype)
{
  starpu_data_handle_t h[2] = {dst, src};
  return strata__submit(&accumulate_cl, &merge_args_table[op][src_dtype], sizeof(struct merge_args),
                        2, h, NULL);
}

void strata__merge_set_redux(starpu_data_handle_t dst, strata_op op, strata_dtype result)
{
  starpu_data_set_reduction_methods(dst, &redux_cls[op * STRATA_NDTYPES + result],
                                    &redux_init_cls[op * STRATA_NDTYPES + result]);
}

int strata__fill_identity_submit(starpu_data_handle_t dst, strata_op op, strata_dtype result)
{
  return strata__submit(&fill_identity_cl, &merge_args_table[op][result], sizeof(struct merge_args),
                        1, &dst, NULL);
}
