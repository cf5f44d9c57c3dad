/* Region moves of sharded operations (gather, scatter) and the example
 * operations' kernels. Insert functions on StarPU handles
 * (codelets/shard_ops.c). */
#ifndef STRATA_CODELETS_SHARD_OPS_H
#define STRATA_CODELETS_SHARD_OPS_H

#include <strata/shard.h>

#include "codelets.h"

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

#endif
