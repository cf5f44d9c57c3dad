/** @file shard.h
 *  @brief Sharded execution of operations: an operation is an index range,
 *  one ZProjection per tensor and a kernel; Strata splits the index range
 *  into shards, derives every shard's tensor regions, hands them to one
 *  StarPU task per shard (partitions where the regions tile a tensor, halo
 *  copies where they overlap, StarPU reductions for reduced outputs) and
 *  spreads the shards over the ranks of strata_comm(). A cost model picks
 *  the shard counts. See docs/sharding.md. */
#ifndef STRATA_SHARD_H
#define STRATA_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include <strata/array.h>
#include <strata/types.h>
#include <strata/zspace.h>

#ifdef __cplusplus
extern "C" {
#endif
/* The library exports what its public headers declare, and nothing else. */
#pragma GCC visibility push(default)

/** Most tensors an operation can have (StarPU's buffer limit). */
#define STRATA_SHARD_MAX_TENSORS 8

/** What a shard hands its kernel: its part of the index space and, for
 *  every tensor, the tensor cells its buffer holds (a dense row-major box
 *  of the region's shape; under STRATA_OOB_CLIP the clipped region). */
typedef struct strata_shard {
  strata_zrange index;                            /**< this shard's index points */
  int ntensors;                                   /**< number of tensors */
  strata_zrange region[STRATA_SHARD_MAX_TENSORS]; /**< cells of buffer t, in tensor coordinates */
} strata_shard;

/** CPU kernel of one shard: @p buffers[t] holds region t of tensor t. */
typedef void (*strata_shard_cpu_fn)(const strata_shard *shard, void *const *buffers,
                                    const void *arg);

/** CUDA kernel of one shard: device buffers, asynchronous on @p stream (a
 *  cudaStream_t) with @p cublas (a cublasHandle_t bound to it).
 *  @return 0, or nonzero on a launch failure. */
typedef int (*strata_shard_cuda_fn)(const strata_shard *shard, void *const *buffers,
                                    const void *arg, void *stream, void *cublas);

/** How a kernel uses a tensor. */
typedef enum strata_shard_access {
  STRATA_SHARD_READ = 0, /**< input: the buffer holds the region's cells */
  STRATA_SHARD_WRITE,    /**< output: the kernel writes every cell of its buffer; where
                              regions of several shards overlap, the last shard wins */
  STRATA_SHARD_REDUCE    /**< reduced output: the buffer starts at the identity of
                              `op` or at this worker's earlier partial result and the
                              kernel combines its contribution into it; the partials
                              are merged into the tensor, its initial value included */
} strata_shard_access;

/** One tensor of an operation. */
typedef struct strata_shard_tensor {
  strata_array *array;        /**< the tensor (each array at most once per operation) */
  strata_zproj proj;          /**< index point -> region; input rank = the index rank,
                                   output rank = the array's rank */
  strata_shard_access access; /**< read, write or reduce */
  strata_op op;               /**< reduction operator (STRATA_SHARD_REDUCE) */
  strata_oob_policy policy;   /**< regions leaving the tensor (WRITE/REDUCE: ERROR or CLIP) */
  double fill;                /**< STRATA_OOB_PAD value, converted to the array's type */
} strata_shard_tensor;

/** An operation to shard. */
typedef struct strata_shard_op {
  const char *name;                                     /**< perf-model key (and logs) */
  strata_zrange index;                                  /**< the index space */
  int ntensors;                                         /**< 1 to STRATA_SHARD_MAX_TENSORS */
  strata_shard_tensor tensor[STRATA_SHARD_MAX_TENSORS]; /**< the tensors */
  strata_shard_cpu_fn cpu;                              /**< CPU kernel (required) */
  strata_shard_cuda_fn cuda;                            /**< CUDA kernel, or NULL */
  const void *arg;                                      /**< kernel argument, copied per task */
  size_t arg_size;                                      /**< its size in bytes (at most 4096) */
  double flops_per_point; /**< work per index point, for the cost model */
} strata_shard_op;

/** Shard counts per index dimension: dimension d is cut into counts[d]
 *  near-equal chunks (1 <= counts[d] <= extent); the shards are the
 *  chunks' cartesian product, numbered row-major. */
typedef struct strata_sharding {
  int ndim;                         /**< the index rank */
  int64_t counts[STRATA_ZMAX_DIMS]; /**< chunks per dimension */
} strata_sharding;

/** The machine the cost model plans for; zero fields take the defaults. */
typedef struct strata_shard_machine {
  int workers;                  /**< StarPU workers per rank (default: this process's) */
  int ranks;                    /**< ranks (default: size of strata_comm()) */
  double task_seconds;          /**< cost of one task (default 2e-5) */
  double bytes_per_second;      /**< kernel memory traffic per worker (default 1e10) */
  double copy_bytes_per_second; /**< halo copies and messages (default 2e9) */
  double flops_per_second;      /**< per worker (default 5e10) */
  int max_shards;               /**< largest shard count tried (default 4 x workers x ranks) */
} strata_shard_machine;

/** The cost model's estimate of one sharding. */
typedef struct strata_shard_cost {
  int64_t shards;      /**< number of shards */
  double seconds;      /**< predicted time of the operation */
  int64_t shard_bytes; /**< bytes the largest shard's kernel touches, all tensors */
  int64_t copy_bytes;  /**< bytes moved by halo copies and messages, all shards */
  double shard_flops;  /**< flops of the largest shard */
} strata_shard_cost;

/** How neighbouring shards share a tensor along one index dimension. */
typedef enum strata_zsharing {
  STRATA_ZSHARE_NONE = 0, /**< disjoint regions (linear maps) */
  STRATA_ZSHARE_PARTIAL,  /**< overlapping regions: halos (convolution windows) */
  STRATA_ZSHARE_TOTAL     /**< the same region (fixed views) */
} strata_zsharing;

/** @brief The constant change of a projection's region start per unit step
 *  along index dimension @p dim: column @p dim of the map.
 *  @param stride receives out_dims entries. @return 0 or STRATA_EINVAL. */
int strata_zproj_stride(const strata_zproj *p, int dim, int64_t *stride);

/** @brief What neighbouring shards along index dimension @p dim share:
 *  @p overlap[k] (out_dims entries, may be NULL) receives the cells their
 *  regions share along output dimension k (the full shape where the map
 *  does not move, max(0, shape - |stride|) where it does), independent of
 *  the shard size. @return the sharing kind, or STRATA_EINVAL. */
int strata_zproj_sharing(const strata_zproj *p, int dim, int64_t *overlap);

/** @brief Check an operation: tensors, ranks of the projections, access
 *  and policy combinations, kernel and argument.
 *  @return 0; STRATA_EINVAL with the reason logged; STRATA_ETYPE when a
 *          reduction does not keep a tensor's type. */
int strata_shard_op_check(const strata_shard_op *op);

/** @brief The cost model's estimate of running @p op with @p sharding on
 *  @p machine (NULL: defaults). @return 0 or STRATA_EINVAL. */
int strata_shard_estimate(const strata_shard_op *op, const strata_sharding *sharding,
                          const strata_shard_machine *machine, strata_shard_cost *cost);

/** @brief The cheapest sharding of @p op by the cost model: every vector
 *  of shard counts with at most machine->max_shards shards is estimated;
 *  ties go to fewer shards. @p cost (may be NULL) receives its estimate.
 *  @return 0 or STRATA_EINVAL. */
int strata_shard_choose(const strata_shard_op *op, const strata_shard_machine *machine,
                        strata_sharding *sharding, strata_shard_cost *cost);

/** @brief Collective over strata_comm(): run @p op in shards. Every rank
 *  passes the same operation (arrays of the same shapes and types) and
 *  sharding; the tensors that count are rank @p root's, the others' are
 *  not touched. Shards go to ranks in contiguous blocks; each runs on one
 *  worker of its rank. Returns after submission: read the outputs with
 *  strata_array_acquire().
 *  @param op the operation.  @param sharding shard counts, or NULL for
 *  strata_shard_choose() with the default machine.  @param root the rank
 *  whose tensors are used.
 *  @return 0; STRATA_EINVAL or STRATA_ETYPE (strata_shard_op_check, bad
 *          sharding or root, ranks disagreeing); STRATA_ERANGE when a
 *          region leaves its tensor under STRATA_OOB_ERROR; STRATA_ENOMEM;
 *          STRATA_ESTATE before strata_init(). The same code on every rank. */
int strata_launch_sharded(const strata_shard_op *op, const strata_sharding *sharding, int root);

/** @brief Example operation, a linear layer: y [B, O] = x [B, I] . w [I, O]
 *  + bias [O], float32, index space (B, O); OpenBLAS on CPU, cuBLAS on
 *  CUDA. x and y shard along B, w and bias along O.
 *  @return 0, STRATA_EINVAL (shapes) or STRATA_ETYPE (not float32). */
int strata_shard_op_linear(strata_array *x, strata_array *w, strata_array *bias, strata_array *y,
                           strata_shard_op *op);

/** @brief Example operation, a 2-D convolution window: y [H, W] (i, j) =
 *  sum over (a, b) of k [KH, KW] (a, b) * x (i + a - KH/2, j + b - KW/2),
 *  float32, index space (H, W); x's cells outside the tensor follow
 *  @p policy (PAD with 0, WRAP, CLIP: treated as 0). Neighbouring shards
 *  share halos of KH-1 rows and KW-1 columns of x.
 *  @return 0, STRATA_EINVAL or STRATA_ETYPE. */
int strata_shard_op_conv2d(strata_array *x, strata_array *k, strata_array *y,
                           strata_oob_policy policy, strata_shard_op *op);

/** @brief Example operation, an axial sum: y += sum of x along @p axis
 *  (negative counts from the last), y having x's shape without that axis;
 *  float32, index space = x's shape; shards along @p axis reduce into y
 *  through StarPU reductions with the merge codelet.
 *  @return 0, STRATA_EINVAL or STRATA_ETYPE. */
int strata_shard_op_axial_sum(strata_array *x, int axis, strata_array *y, strata_shard_op *op);

/** @brief Example operation with a fixed-view input: y [B, N] = x [B, N] +
 *  v [N], float32, index space (B, N); every shard reads all of v.
 *  @return 0, STRATA_EINVAL or STRATA_ETYPE. */
int strata_shard_op_broadcast_add(strata_array *x, strata_array *v, strata_array *y,
                                  strata_shard_op *op);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
