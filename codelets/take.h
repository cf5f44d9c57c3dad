/* Take along an axis of deferred compute. Insert functions on StarPU handles
 * (codelets/take.c). */
#ifndef STRATA_CODELETS_TAKE_H
#define STRATA_CODELETS_TAKE_H

#include "codelets.h"
#include "kernels/ndarray_kernels.h"

/* One task: out (W) = in (R) at the indices idx (R) along one axis. */
int strata__take_submit(const struct strata__take_args *a, starpu_data_handle_t in,
                        starpu_data_handle_t idx, starpu_data_handle_t out);

#endif
