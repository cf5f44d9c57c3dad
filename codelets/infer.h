/* Inference-array codelets: criterion masks, their merge up the tree, the
 * bubbles onto the leaves. Insert functions on StarPU handles
 * (codelets/infer.c). */
#ifndef STRATA_CODELETS_INFER_H
#define STRATA_CODELETS_INFER_H

#include "codelets.h"

struct strata__infer_criterion;
struct strata__infer_merge;
struct strata__infer_mark;
/* Evaluation: a leaf's field (R) into its mask (W, uint8 vector). */
int strata__infer_criterion_submit(MPI_Comm comm, starpu_data_handle_t field,
                                   starpu_data_handle_t mask,
                                   const struct strata__infer_criterion *c);
/* A child's mask (R) OR-ed into its parent's (RW). */
int strata__infer_merge_submit(MPI_Comm comm, starpu_data_handle_t child,
                               starpu_data_handle_t parent, const struct strata__infer_merge *m);
/* An array's bubble table (R) into a leaf's list (RW) and marker field
 * (RW; NULL: none), locally. */
int strata__infer_mark_submit(starpu_data_handle_t table, starpu_data_handle_t list,
                              starpu_data_handle_t field, const struct strata__infer_mark *m);

#endif
