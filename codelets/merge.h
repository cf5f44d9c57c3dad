/* The merge codelets: merge, accumulate (STARPU_REDUX), identity fill, and the
 * reduction methods of a handle. Insert functions on StarPU handles
 * (codelets/merge.c). */
#ifndef STRATA_CODELETS_MERGE_H
#define STRATA_CODELETS_MERGE_H

#include "codelets.h"

/* Fill the merge codelet tables (called by strata__codelets_start). */
void strata__merge_codelets_init(void);

/* dst = dst op src (vectors; dst of the result type of (op, src_dtype)). */
int strata__merge_submit(starpu_data_handle_t dst, starpu_data_handle_t src, strata_op op,
                         strata_dtype src_dtype);

/* Same in STARPU_REDUX mode on dst; strata__merge_set_redux() must have
 * given dst the reduction methods of (op, dst's type) first. */
int strata__accumulate_submit(starpu_data_handle_t dst, starpu_data_handle_t src, strata_op op,
                              strata_dtype src_dtype);

/* Install the init (identity) and reduction codelets of `op` on a handle of
 * element type `result`. */
void strata__merge_set_redux(starpu_data_handle_t dst, strata_op op, strata_dtype result);

/* dst = identity of op (dst of element type `result`). */
int strata__fill_identity_submit(starpu_data_handle_t dst, strata_op op, strata_dtype result);

#endif
