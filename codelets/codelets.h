/* Codelet layer: StarPU codelets and their insert functions on StarPU
 * handles. Knows nothing of core/ (arrays, runtime state); returns 0 or a
 * STRATA_E* code. */
#ifndef STRATA_CODELETS_H
#define STRATA_CODELETS_H

#include <starpu.h>

#include <strata/error.h>
#include <strata/types.h>

#include "strata_build_config.h"

/* CUDA implementations are registered only when our CUDA kernels were
 * compiled and StarPU itself was built with CUDA. */
#if STRATA_HAVE_CUDA_KERNELS && defined(STARPU_USE_CUDA)
#define STRATA__USE_CUDA 1
#else
#define STRATA__USE_CUDA 0
#endif

/* Prepare the codelet tables; call once after starpu_init(). */
void strata__codelets_init(void);

/* Strata's task insert path: one task of `cl` on `handles` with the
 * codelet's modes (or `modes` when non-NULL, required for
 * STARPU_VARIABLE_NBUFFERS codelets). `cl_arg` is neither copied nor freed:
 * it must outlive the task (Strata passes entries of static tables). */
int strata__submit(struct starpu_codelet *cl, const void *cl_arg, size_t cl_arg_size, int nbuffers,
                   const starpu_data_handle_t *handles, const enum starpu_data_access_mode *modes);

/* Map a negative errno from StarPU to a STRATA_E* code. */
int strata__from_starpu(int starpu_ret);

/* An empty codelet with a variable number of buffers: synchronisation
 * points, and the reference task of the overhead benchmark. */
extern struct starpu_codelet strata__noop_cl;

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
