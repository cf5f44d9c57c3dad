/* Inference-array codelets: criterion masks, the bubbles onto the leaves. Insert functions on
 * StarPU handles (codelets/infer.c). */
#ifndef STRATA_CODELETS_INFER_H
#define STRATA_CODELETS_INFER_H

#include "codelets.h"

struct strata__infer_criterion;
struct strata__infer_mark;
/* Evaluation: a leaf's field (R) into its mask (W, uint8 vector), on
 * the leaf's rank. */
int strata__infer_criterion_submit(starpu_data_handle_t field, starpu_data_handle_t mask,
                                   const struct strata__infer_criterion *c);
/* An array's bubble table (R) into a leaf's list (RW) and marker field
 * (RW; NULL: none), locally. */
int strata__infer_mark_submit(starpu_data_handle_t table, starpu_data_handle_t list,
                              starpu_data_handle_t field, const struct strata__infer_mark *m);

#endif
