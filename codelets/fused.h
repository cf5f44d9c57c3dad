/* Fused groups of deferred compute: one task per group. Insert functions on StarPU handles
 * (codelets/fused.c). */
#ifndef STRATA_CODELETS_FUSED_H
#define STRATA_CODELETS_FUSED_H

#include "codelets.h"

/* A generated kernel of a fused group: buf[0] the result, then the leaves. */
typedef void (*strata__fused_fn)(void *const *buf);

/* One task computing a fused group's result `out` (W) from its leaves (R,
 * program->nleaves of them, at most STARPU_NMAXBUFS - 1): with the
 * generated kernel `fn` on CPUs (NULL: the program), with the program on
 * GPUs; `id` identifies the group for the perf model. */
struct strata__fused_program;
int strata__fused_submit(strata__fused_fn fn, uint64_t id,
                         const struct strata__fused_program *program,
                         const starpu_data_handle_t *leaves, starpu_data_handle_t out);

#endif
