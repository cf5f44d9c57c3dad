/* Elementwise operations of deferred compute. Insert functions on StarPU handles
 * (codelets/elementwise.c). */
#ifndef STRATA_CODELETS_ELEMENTWISE_H
#define STRATA_CODELETS_ELEMENTWISE_H

#include "codelets.h"
#include "kernels/ndarray_kernels.h"

/* Array operations of deferred compute (kernels/ndarray_kernels.h): one
 * task each on vector handles, results written whole (W). */
int strata__ew_submit(const struct strata__ew_args *a, const starpu_data_handle_t *operands,
                      starpu_data_handle_t out);

#endif
