/* Lower and upper triangles (tril, triu) of deferred compute. Insert functions on StarPU handles
 * (codelets/tri.c). */
#ifndef STRATA_CODELETS_TRI_H
#define STRATA_CODELETS_TRI_H

#include "codelets.h"
#include "kernels/ndarray_kernels.h"

/* One task: out (W) = the lower or upper triangle of in (R), as `a` says. */
int strata__tri_submit(const struct strata__tri_args *a, starpu_data_handle_t in,
                       starpu_data_handle_t out);

#endif
