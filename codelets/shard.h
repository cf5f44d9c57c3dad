/* Sharded operations: one task per shard. Insert functions on StarPU handles
 * (codelets/shard.c). */
#ifndef STRATA_CODELETS_SHARD_H
#define STRATA_CODELETS_SHARD_H

#include <strata/shard.h>

#include "codelets.h"

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

#endif
