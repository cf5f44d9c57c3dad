/* Fills of deferred compute: arange, zeros, ones, full. Insert functions on StarPU handles
 * (codelets/fill.c). */
#ifndef STRATA_CODELETS_FILL_H
#define STRATA_CODELETS_FILL_H

#include "codelets.h"
#include "kernels/ndarray_kernels.h"

/* One task: out (W) = start + i * step, element i, of a->dtype. */
int strata__affine_fill_submit(const struct strata__affine_fill_args *a, starpu_data_handle_t out);

#endif
