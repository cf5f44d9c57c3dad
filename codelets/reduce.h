/* Reductions along axes of deferred compute. Insert functions on StarPU handles
 * (codelets/reduce.c). */
#ifndef STRATA_CODELETS_REDUCE_H
#define STRATA_CODELETS_REDUCE_H

#include "codelets.h"
#include "kernels/ndarray_kernels.h"

/* One task: out (W) = in (R) reduced over the axes `a` names. */
int strata__reduce_submit(const struct strata__reduce_args *a, starpu_data_handle_t in,
                          starpu_data_handle_t out);

#endif
