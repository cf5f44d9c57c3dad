/* Nonzero counts and positions of deferred compute. Insert functions on StarPU handles
 * (codelets/nonzero.c). */
#ifndef STRATA_CODELETS_NONZERO_H
#define STRATA_CODELETS_NONZERO_H

#include "codelets.h"
#include "kernels/ndarray_kernels.h"

/* count (one int64) = number of nonzero elements of in (n of dtype). */
int strata__count_nonzero_submit(strata_dtype dtype, int64_t n, starpu_data_handle_t in,
                                 starpu_data_handle_t count);
/* out (int64) = positions of the nonzero elements of in. */
int strata__flatnonzero_submit(strata_dtype dtype, int64_t n, starpu_data_handle_t in,
                               starpu_data_handle_t out);

#endif
