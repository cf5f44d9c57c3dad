/* Fused groups of deferred compute: one task per group. Insert functions on StarPU handles
 * (codelets/fused.c). */
#ifndef STRATA_CODELETS_FUSED_H
#define STRATA_CODELETS_FUSED_H

#include "codelets.h"

/* A generated kernel of a fused group: rows [lo, hi) of the result's first
 * dimension (0 and 1 for a 0-d result); buf[0] the result from row lo on,
 * then the leaves (whole). */
typedef void (*strata__fused_fn)(void *const *buf, int64_t lo, int64_t hi);

/* The tasks computing a fused group's result `out` (W) from its leaves (R,
 * program->nleaves of them, at most STARPU_NMAXBUFS - 1): with the
 * generated kernel `fn` on CPUs (NULL: the program), with the program on
 * GPUs; `id` identifies the group for the perf model. A large result on a
 * node without GPUs is cut into one chunk of rows per CPU worker, one task
 * each (the leaves are read whole), so that every core works on it;
 * otherwise, and inside a captured sequence, one task. */
struct strata__fused_program;
int strata__fused_submit(strata__fused_fn fn, uint64_t id,
                         const struct strata__fused_program *program,
                         const starpu_data_handle_t *leaves, starpu_data_handle_t out);

#endif
