/* AMR codelets: region copy, restriction and prolongation, families, a
 * leaf's ghost fill, the initial-conditions fill. Insert functions on StarPU handles
 * (codelets/amr.c). */
#ifndef STRATA_CODELETS_AMR_H
#define STRATA_CODELETS_AMR_H

#include "codelets.h"
#include "kernels/amr_kernels.h"

/* dst (RW, vector) gets a region copied, restricted or prolonged from src
 * (R, vector) as `x` says (kernels/amr_kernels.h); on `comm` when the
 * handles are registered with StarPU-MPI, else (MPI_COMM_NULL) locally.
 * The task's CPU time on a CPU worker is added to *account (nanoseconds,
 * atomically) when account is not NULL: the inference's measured work. */
int strata__amr_xfer_submit(MPI_Comm comm, starpu_data_handle_t src, starpu_data_handle_t dst,
                            const struct strata__amr_xfer *x, int64_t *account);

/* The same, locally, into a message buffer (`outbox`, handed to the
 * exchange layer): a pack. Packs of one buffer write disjoint regions, so
 * they commute (STARPU_COMMUTE: any order, none waits for a pack submitted
 * before it), and they run at top priority, so that the message leaves
 * before computation already queued. */
int strata__amr_pack_submit(starpu_data_handle_t src, starpu_data_handle_t outbox,
                            const struct strata__amr_xfer *x, int64_t *account);

/* The time StarPU's history of x's transfer codelet expects for one such
 * transfer on worker `workerid` (seconds; NAN without enough measurements:
 * strata__expected_seconds). */
double strata__amr_xfer_expected_seconds(const struct strata__amr_xfer *x, int workerid);

/* The transfers between one parent block and its children as one task:
 * child o restricted into the parent (children R, parent RW) or prolonged
 * from it (parent R, children RW) as x[o] says, for o < nchildren (at most
 * 8, all of one kind). On `comm` the task runs where the parent (restriction)
 * or the first child (prolongation) lives. */
int strata__amr_family_submit(MPI_Comm comm, starpu_data_handle_t parent,
                              const starpu_data_handle_t *children,
                              const struct strata__amr_family *f);

/* A leaf's ghost fill as one task (one per region would cost a task per
 * neighbour): the transfers in order, each from task buffer `src` (0: the
 * leaf itself, k >= 1: sources[k - 1]), then linear extrapolation at the
 * domain faces in boundary.faces (none when 0). */
struct strata__amr_ghost_xfer {
  int src;
  struct strata__amr_xfer x;
};
struct strata__amr_ghosts {
  struct strata__amr_boundary boundary;
  int nxfers;
  struct strata__amr_ghost_xfer xfer[];
};
/* The most sources one ghost task reads. */
#define STRATA__AMR_GHOST_SOURCES (STRATA__MAX_BUFFERS - 1)
/* leaf (RW) from sources (R, distinct, not the leaf), locally. */
int strata__amr_ghosts_submit(starpu_data_handle_t leaf, const starpu_data_handle_t *sources,
                              int nsources, const struct strata__amr_ghosts *g);

/* A block (W) set to zero, then, when `fn` is not NULL, its interior set
 * to `fn` evaluated row by row at the cell centres: interior cell (i, j, k)
 * has its centre at origin + (i, j, k) h. CPU only (`fn` is host code). */
struct strata__amr_fill {
  void (*fn)(void *ctx, int field, const double centre[3], double h, int64_t n, double *out);
  void *ctx;
  int field, dim, ghost, is_double;
  int64_t cells; /* interior cells per axis */
  double origin[3], h;
  /* What the values cost to compute, the same in every run of the same
   * problem (0: zeros only): with the block's size and the field, the
   * footprint, so that problems of unequal cost have models of their own. */
  uint32_t cost_key;
};
int strata__amr_fill_submit(MPI_Comm comm, starpu_data_handle_t block,
                            const struct strata__amr_fill *f);

#endif
