/** @file mesh.h
 *  @brief An application's own AMR mesh, described to Strata so that the
 *  inference method (infer.h) reads and writes the application's blocks in
 *  place, on the application's distribution.
 *
 *  Geometry: a box [lower, upper) in physical units, a root grid of
 *  root[0] x root[1] x root[2] blocks (level 0), each level halving the
 *  blocks (level l has root[a] * 2^l blocks along axis a); every block has
 *  block_cells cells per axis plus ghost_depth ghost layers on each side,
 *  stored x fastest, ghosts included, in float32 or float64. Cells must be
 *  cubes: (upper - lower) / root equal on the three axes. A leaf is named
 *  by its level and its integer index at that level, as p4est's quadrants
 *  and Cello's blocks are (strata_amr_block); its parent and children
 *  follow from the index (halve it, or double it and add the octant).
 *
 *  **Each rank describes only its own leaves** (what p4est knows after
 *  p8est_partition): no rank holds data of the size of the whole mesh, and
 *  no call gathers the leaves. The leaves stay where the application put
 *  them; Strata never moves them. A leaf's fields are either pointers to
 *  the application's memory, registered with StarPU in place (zero-copy:
 *  the populate tasks read that memory and the marker is written there), or
 *  StarPU handles that the application registered itself.
 *
 *  The cycle: strata_mesh_begin(), strata_mesh_add_leaf() for each local
 *  leaf, strata_mesh_commit() (collective: checks the description on
 *  every rank together), then strata_infer_create_on_mesh() once and
 *  strata_infer_run() (or submit/wait) each time step. After the
 *  application re-meshes, it describes the new leaves the same way:
 *  begin, add, commit; the method reads the new leaves at its next cycle.
 *
 *  Ghost layers are the application's: prolongation (a leaf coarser than
 *  the arrays' resolution) reads one ghost layer, which must be filled
 *  before a cycle. Between strata_infer_submit() and strata_infer_wait()
 *  the application must not write the described fields outside StarPU
 *  tasks, nor re-describe the mesh (STRATA_ESTATE). */
#ifndef STRATA_MESH_H
#define STRATA_MESH_H

#include <stdint.h>

#include <starpu.h>
#include <strata/amr.h>
#include <strata/types.h>

#ifdef __cplusplus
extern "C" {
#endif
/* The library exports what its public headers declare, and nothing else. */
#pragma GCC visibility push(default)

/** An application's mesh as described to Strata (opaque). */
typedef struct strata_mesh strata_mesh;

/** Geometry and fields of a mesh: the same on every rank. */
typedef struct strata_mesh_params {
  double lower[3];    /**< lower corner of the domain (default 0, 0, 0) */
  double upper[3];    /**< upper corner (default 1, 1, 1) */
  int root[3];        /**< root grid, blocks per axis at level 0 (default 2, 2, 2) */
  int block_cells;    /**< cells per axis of a block, even, 4 ... 1024 (default 16) */
  int ghost_depth;    /**< ghost layers per side, 0 ... block_cells / 2 (default 1) */
  int max_level;      /**< finest level a leaf may have, <= STRATA_AMR_MAX_LEVEL (default 5) */
  strata_dtype dtype; /**< STRATA_FLOAT64 (default) or STRATA_FLOAT32 */
  int nfields;        /**< fields per block, 1 ... STRATA_AMR_MAX_FIELDS (default 1) */
  const char *field_names[STRATA_AMR_MAX_FIELDS]; /**< default "density" for field 0 */
  strata_amr_boundary boundary;                   /**< default periodic */
} strata_mesh_params;

/** @brief Fill @p p with the defaults (the unit cube, 2^3 root blocks of
 *  16^3 cells, one ghost layer, one float64 field "density", periodic). */
void strata_mesh_params_init(strata_mesh_params *p);

/** @brief The geometry and fields of a Strata hierarchy made with @p a (3-D:
 *  the unit cube, root_blocks per axis) as mesh parameters, for an
 *  application that describes the same blocks in memory of its own. */
void strata_mesh_params_of_amr(const strata_amr_params *a, strata_mesh_params *p);

/** @brief A mesh without leaves. Collective over strata_comm(); every rank
 *  passes the same parameters (copied), else every rank gets STRATA_EINVAL
 *  naming the first parameter that differs.
 *  @return 0; STRATA_EINVAL (bad or differing parameters); STRATA_ESTATE
 *  before strata_init(); STRATA_ENOMEM. */
int strata_mesh_create(const strata_mesh_params *p, strata_mesh **out);

/** @brief Free the mesh: the handles Strata registered on the application's
 *  memory are unregistered (their data stays in that memory). NULL is a
 *  no-op. STRATA_ESTATE while an inference method still uses it. Collective. */
int strata_mesh_destroy(strata_mesh *m);

/** @brief Start describing this rank's leaves anew, after a re-mesh:
 *  the previous leaves are dropped (handles Strata registered are
 *  unregistered, the data written back to the application's memory). Not
 *  collective. STRATA_ESTATE while a cycle is in flight. */
int strata_mesh_begin(strata_mesh *m);

/** @brief Add a leaf of this rank: @p level and @p index (its integer
 *  position at that level), and per field a pointer to the application's
 *  block of (block_cells + 2 ghost_depth)^3 values of the mesh's dtype,
 *  x fastest, ghosts included. The memory is registered with StarPU in
 *  place and must stay valid until the next strata_mesh_begin() or
 *  strata_mesh_destroy(). Not collective. Errors found here (a NULL field
 *  pointer, a level or index out of range) are kept and reported by
 *  strata_mesh_commit() on every rank; the call returns them too. */
int strata_mesh_add_leaf(strata_mesh *m, int level, const int64_t index[3], void *const *fields);

/** @brief strata_mesh_add_leaf() with StarPU handles that the application
 *  registered and keeps owning (vector or any interface whose CPU pointer
 *  is the block described above); Strata never unregisters them. */
int strata_mesh_add_leaf_handles(strata_mesh *m, int level, const int64_t index[3],
                                 const starpu_data_handle_t *fields);

/** @brief End the description. Collective. Checks, with messages of the
 *  size of each rank's leaves and never a gather of all leaves, that the
 *  leaves of all ranks tile the domain: no leaf outside it, no two leaves
 *  overlapping (on one rank or on two), no gap, neighbours across faces at
 *  most one level apart (2:1, which prolongation's ghost layer assumes),
 *  and every field given. Any failure gives STRATA_EINVAL on every rank,
 *  with the reason and the leaf in strata_error_message(), and leaves the
 *  mesh uncommitted. */
int strata_mesh_commit(strata_mesh *m);

/** @brief The parameters of the mesh (not collective). */
const strata_mesh_params *strata_mesh_get_params(const strata_mesh *m);

/** @brief Leaves this rank described (not collective). */
int64_t strata_mesh_num_local_leaves(const strata_mesh *m);

/** @brief The StarPU handle of field @p field of local leaf @p b (the
 *  handle registered on the application's pointer, or the application's
 *  own handle). Not collective. STRATA_ERANGE when @p b is not a local
 *  leaf. */
int strata_mesh_field_handle(const strata_mesh *m, const strata_amr_block *b, int field,
                             starpu_data_handle_t *h);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
