/* Strided copies (views, concatenation) of deferred compute. Insert functions on StarPU handles
 * (codelets/view.c). */
#ifndef STRATA_CODELETS_VIEW_H
#define STRATA_CODELETS_VIEW_H

#include "codelets.h"
#include "kernels/ndarray_kernels.h"

/* A strided copy into dst: W mode, or RW when `partial` (other tasks write
 * the rest of dst: concatenation). */
int strata__view_submit(const struct strata__view_args *a, starpu_data_handle_t src,
                        starpu_data_handle_t dst, int partial);

/* The whole of vector src into vector dst of the same size: StarPU's own
 * starpu_data_cpy() is a task that a simulation does not run. */
int strata__copy_submit(starpu_data_handle_t src, starpu_data_handle_t dst);

#endif
