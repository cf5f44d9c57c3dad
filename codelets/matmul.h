/* Matrix products of deferred compute (OpenBLAS / cuBLAS). Insert functions on StarPU handles
 * (codelets/matmul.c). */
#ifndef STRATA_CODELETS_MATMUL_H
#define STRATA_CODELETS_MATMUL_H

#include "codelets.h"
#include "kernels/ndarray_kernels.h"

/* One task: out (W) = x (R) times y (R), stacks of matrices as `a` says;
 * OpenBLAS on CPUs, cuBLAS on CUDA workers. */
int strata__matmul_submit(const struct strata__matmul_args *a, starpu_data_handle_t x,
                          starpu_data_handle_t y, starpu_data_handle_t out);

#endif
