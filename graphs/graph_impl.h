/* Internals of deferred compute: operation nodes, shape and type inference,
 * task submission, the executor shared by eager calls, lazy computation and
 * graph replay. */
#ifndef STRATA_GRAPH_IMPL_H
#define STRATA_GRAPH_IMPL_H

#include <strata/graph.h>

#include <strata/io.h>

#include "codelets.h"
#include "fused.h"
#include "internal/runtime.h"
#include "kernels/fused_kernels.h"

enum strata__opcode {
  STRATA__OP_INPUT = 0, /* a graph input, or an array read while recording */
  STRATA__OP_EW,        /* elementwise function, where, astype (fn STRATA__FN_COPY) */
  STRATA__OP_FILL,      /* full (flag 0) or arange (flag 1) */
  STRATA__OP_RESHAPE,
  STRATA__OP_INDEX, /* ints and slices (split makes one per piece) */
  STRATA__OP_CONCAT,
  STRATA__OP_TRANSPOSE,
  STRATA__OP_BROADCAST,
  STRATA__OP_REDUCE,
  STRATA__OP_MATMUL,
  STRATA__OP_TRI, /* tril (flag 0) or triu (flag 1) */
  STRATA__OP_NONZERO,
  STRATA__OP_TAKE,
  STRATA__NOPCODES
};

/* REDUCE flags. */
#define STRATA__KEEPDIMS 1
#define STRATA__ALL_AXES 2

/* Parameters of a node; each opcode uses some of them (see ops.c). */
typedef struct strata__params {
  int32_t fn;          /* EW, REDUCE */
  int32_t dtype;       /* EW astype target, FILL */
  int32_t scalar_at;   /* EW: operand position of the scalar, -1: none */
  int32_t scalar_kind; /* EW: STRATA_BOOL, STRATA_INT64 or STRATA_FLOAT64 */
  double scalar;       /* EW scalar, FILL value or arange start */
  double stop, step;   /* arange */
  int64_t axis;        /* CONCAT, TAKE; TRI: k */
  int32_t flag;        /* FILL, REDUCE, TRI; TAKE: mode */
  int32_t nlist;
  /* FILL/RESHAPE/BROADCAST: shape; TRANSPOSE/REDUCE: axes; INDEX: start,
   * stop, step, is_index per item. */
  int64_t list[4 * STRATA_MAX_DIMS];
} strata__params;

/* dtype and shape of a value; extents -1 are known after computing. */
typedef struct strata__meta {
  strata_dtype dtype;
  int ndim;
  int64_t shape[STRATA_MAX_DIMS];
} strata__meta;

typedef struct strata__node {
  int op;
  strata__params p;
  int nin;
  int *in; /* producers: indices of earlier nodes */
  strata__meta m;
  char *name; /* exported graphs; NULL in contexts */
} strata__node;

/* Same dtype and shape. */
int strata__meta_equal(const strata__meta *a, const strata__meta *b);

/* Elements of a meta, -1 when unknown. */
int64_t strata__meta_nelems(const strata__meta *m);

/* Name of a node's operation ("add", "sum", "index"...) and the opcode and
 * parameters (fn, flag) of a name; -1 when unknown. */
const char *strata__op_name(const strata__node *nd);
int strata__op_from_name(const char *name, strata__node *nd);

/* Inputs the opcode takes: exact count, or -1 for one or more (CONCAT). */
int strata__op_arity(const strata__node *nd);

/* Output dtype and shape of `nd` for inputs `in` (nd->nin of them), or an
 * error code with the reason recorded (strata__fail). */
int strata__infer(const strata__node *nd, const strata__meta *in, strata__meta *out);

/* Submit the tasks of `nd` (all opcodes but INPUT and NONZERO) reading
 * handles `in` and writing `out`, of the metas given. */
int strata__submit_node(const strata__node *nd, const strata__meta *in_meta,
                        const starpu_data_handle_t *in, const strata__meta *out_meta,
                        starpu_data_handle_t out);

/* A contiguous copy of src into dst (same dtype and element count). */
int strata__submit_copy(const strata__meta *m, starpu_data_handle_t src, starpu_data_handle_t dst);

/* The executor. slot[i] describes node i's value: the caller fills the
 * slots of the values that exist already (inputs); strata__exec_run fills
 * the others. */
typedef struct strata__slot {
  strata__meta m;
  starpu_data_handle_t h;
  int temp;  /* h registered by the executor: unregistered after its last reader */
  void *mem; /* storage from the host cache (NULL: StarPU allocates it) */
} strata__slot;

/* Register s->h for a value of meta s->m without a user-visible host copy.
 * Without GPUs it lives in main memory anyway: there it takes a block of
 * the host cache (no fresh pages) and is registered at home, so that a
 * fused group may cut it in chunks of rows (StarPU's planned partitions of
 * a buffer it allocated itself do not share its memory: the chunks' results
 * would be lost). With GPUs, and for the scratch buffer of a sequence's
 * task (each worker's own, never cut), StarPU allocates it: home node -1. */
int strata__slot_register(strata__slot *s, int scratch);
/* Unregister s->h once its submitted tasks have run, without waiting, and
 * give its block back. */
void strata__slot_unregister_submit(strata__slot *s);

enum strata__sink {
  STRATA__SINK_TEMP = 0, /* a handle without host copy, dropped after use */
  STRATA__SINK_ATTACH,   /* the lazy array target[i] gets storage and the result */
  STRATA__SINK_NEW,      /* a new array, stored in target[i] */
  STRATA__SINK_KEEP,     /* storage kept in the graph's plan (On_device, Hosted) */
  STRATA__SINK_VIRTUAL   /* no storage: computed inside its fused group's kernel */
};

/* Run the nodes i with sink[i] >= 0 in increasing order (inputs precede
 * readers): infer, give the result a place, submit. A node of data-dependent
 * shape waits for its count. With a compiled graph `g` (NULL otherwise),
 * fused groups run as one kernel and KEEP sinks use its plan's storage. On
 * error, arrays created are destroyed and target[i] reset. */
int strata__exec_run(const strata__node *nodes, int n, const int *sink, strata__slot *slot,
                     strata_array **target, struct strata_graph *g);

/* The nodes node i's task reads, into *in: a fused root (of compiled
 * graph g, NULL: none) reads its group's leaves, other nodes their inputs. */
int strata__task_inputs(const strata__node *nodes, int i, const strata_graph *g, const int **in);

/* Element strides of `in` broadcast to `out`'s shape (0 on stretched
 * dimensions). */
void strata__broadcast_strides(const strata__meta *in, const strata__meta *out, int64_t *stride);

/* Kernel arguments of an elementwise node (EW) of the given metas. */
void strata__ew_geometry(const strata__params *p, const strata__meta *in, int narrays,
                         const strata__meta *out, struct strata__ew_args *a);

/* NumPy's promotion of two dtypes on Strata's types. */
strata_dtype strata__promote(strata_dtype a, strata_dtype b);

#define STRATA__MAX_SCOPES 64

struct strata_context {
  int recording;
  int depth;
  unsigned char saved[STRATA__MAX_SCOPES];
  int n, cap;
  strata__node *nodes;   /* recording order (topological) */
  strata_array **values; /* node i's array: the input read, or the lazy result */
  strata__live live;
  struct strata_context *next; /* every live context, for writes to their inputs */
};

/* ---- memory modes ---- */

/* The concrete choices a memory mode allows, one bit each: a mode is a set
 * of them, refinement is intersection. */
enum {
  STRATA__MEM_VIRTUAL = 1,
  STRATA__MEM_LOCAL = 2,
  STRATA__MEM_DEVICE_PS = 4,   /* On_device(Per_stream) */
  STRATA__MEM_DEVICE_SX = 8,   /* On_device(Shared_cross_streams) */
  STRATA__MEM_HOST_CONST = 16, /* Hosted(Constant) */
  STRATA__MEM_HOST_COD_PS = 32,
  STRATA__MEM_HOST_COD_SX = 64,
  STRATA__MEM_HOST_VOLATILE = 128,
  STRATA__MEM_DEVICE = STRATA__MEM_DEVICE_PS | STRATA__MEM_DEVICE_SX,
  STRATA__MEM_HOST = 0xF0,
  STRATA__MEM_ANY = 0xFF
};

/* The set of choices of a mode; STRATA_EINVAL for values out of range. */
int strata__mem_mask(strata_memory_mode mode, unsigned *mask);

/* The name of the mode a set of choices is (in buf). */
const char *strata__mem_name(unsigned mask, char *buf, size_t size);

/* A fused group: elementwise nodes run as one task. Members are the
 * Virtual nodes and the root (last), in topological order (at most
 * STRATA__FUSED_MAXMEMBERS); leaves the distinct nodes they read that are
 * not members. */
typedef struct strata__group {
  int root;
  int nmembers;
  int *members;
  int nleaves;
  int leaves[STARPU_NMAXBUFS - 1];
  /* for the metas in kernel_metas (members, then leaves): */
  struct strata__fused_program program;    /* run by GPUs, and CPUs without kernel */
  uint64_t id;                             /* the group's identity for perf models */
  const struct strata__jit_kernel *kernel; /* generated C, NULL when it cannot be built */
  unsigned kernel_generation;              /* strata__jit_generation() at load */
  strata__meta *kernel_metas;
} strata__group;

/* What strata_graph_compile() decided, and the storage kept across runs. */
typedef struct strata__plan {
  int compiled;
  int n;         /* nodes */
  int *group_of; /* per node: the group it belongs to, or -1 */
  int ngroups;
  strata__group *groups;
  int *constant;         /* per node: depends on no graph input */
  strata__slot *kept;    /* per node: On_device handle or Hosted array's handle */
  strata_array **hosted; /* per node: the Hosted intermediate's array */
  int *computed;         /* per node: kept value valid (Constant: never recomputed) */
  int *seq_of;           /* per node: its sequence (one task through Local nodes), or -1 */
  int *order;            /* the nodes in submission order: each sequence's together */
} strata__plan;

struct strata_graph {
  int n;
  strata__node *nodes; /* topological order */
  int ninputs;
  int *inputs; /* node indices (INPUT nodes, named) */
  int noutputs;
  int *outputs;
  char **output_names;
  unsigned char *mem; /* per node: choices its memory mode allows */
  strata__plan plan;
  strata__live live;
};

/* A loaded fused kernel (graphs/jit.c). */
struct strata__jit_kernel {
  uint64_t id; /* hash of source and compiler */
  void *dl;
  strata__fused_fn fn;
};

/* Compile `source` (after the prelude of element semantics) with the C
 * compiler ($STRATA_JIT_CC) unless the disk cache ($STRATA_JIT_CACHE) has
 * it, and load it; the kernel stays loaded until strata_finalize(). */
int strata__jit_build(const char *source, const struct strata__jit_kernel **kernel);

/* Changes at each strata_finalize(), which unloads every kernel. */
unsigned strata__jit_generation(void);

/* Make G's program and kernel those of the metas in `slot` (generated and
 * built when they changed; a kernel the compiler cannot build is NULL, with
 * a warning once). */
int strata__group_kernel(const strata_graph *g, strata__group *G, const strata__slot *slot);

/* Node index of a node or output name, or STRATA_EINVAL with a message. */
int strata__graph_find(const strata_graph *g, const char *name);

/* Release the plan's kept storage and kernels (graph destroy, recompile). */
void strata__plan_free(strata__plan *plan);

/* A graph with room for n nodes, ninputs inputs and noutputs outputs. */
strata_graph *strata__graph_alloc(int n, int ninputs, int noutputs);

/* Free a node's owned parts (inputs, name). */
void strata__node_free(strata__node *nd);

/* Check a graph read from outside: structure, names, and that inference from
 * the input metas reproduces every recorded meta. STRATA_EIO with the
 * reason otherwise. */
int strata__graph_validate(const strata_graph *g);

#endif
