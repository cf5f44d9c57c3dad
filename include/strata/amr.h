/** @file amr.h
 *  @brief Block-structured adaptive mesh refinement on StarPU-MPI: an octree
 *  (quadtree in 2-D) of blocks like Cello's, refined and coarsened by
 *  criteria with 2:1 balance between neighbours across faces, edges and
 *  corners, leaves distributed over ranks along a Morton curve, every field
 *  of every leaf a StarPU handle registered with StarPU-MPI; restriction,
 *  prolongation, region copies and ghost fills as codelets; test problems;
 *  HDF5 output.
 *
 *  Geometry: the domain is the unit square or cube. Level 0 has
 *  root_blocks blocks per axis, level l has root_blocks * 2^l; a block is
 *  named by its level and its integer index at that level (its octree path
 *  is the index's bits below the root bits, see strata_amr_block_name()).
 *  Every block has block_cells cells per axis plus ghost_depth ghost cells
 *  on each side; field arrays are stored x fastest, ghosts included.
 *  The tree is distributed (p4est holds its structure): a rank knows its
 *  own leaves, the other ranks' leaves that touch them across faces, edges
 *  and corners (its ghost layer) and the ancestors of both, so what it
 *  holds grows with its share of the leaves (strata_amr_get_footprint()),
 *  not with all of them; field data lives on the owner rank only. All
 *  functions taking a strata_amr are collective unless said otherwise.
 *  strata_amr_leaves() and strata_amr_intersect() gather from every rank;
 *  the queries that are not collective (strata_amr_block_query(),
 *  strata_amr_block_at_point() for a leaf, strata_amr_field_handle())
 *  answer for the blocks this rank knows. p4est is Strata's: an
 *  application that initializes it itself (sc_init(), p4est_init()) does so
 *  before creating a hierarchy and finalizes it (sc_finalize()) after
 *  destroying the last one; otherwise Strata registers p4est, its messages
 *  at SC_LP_ERROR. */
#ifndef STRATA_AMR_H
#define STRATA_AMR_H

#include <stdint.h>
#include <stdio.h>

#include <strata/types.h>

#ifdef __cplusplus
extern "C" {
#endif
/* The library exports what its public headers declare, and nothing else. */
#pragma GCC visibility push(default)

/** Most fields per block. */
#define STRATA_AMR_MAX_FIELDS 8
/** Deepest refinement level. */
#define STRATA_AMR_MAX_LEVEL 12

/** A hierarchy (opaque). */
typedef struct strata_amr strata_amr;

/** A block: its level and its index at that level (index[2] = 0 in 2-D). */
typedef struct strata_amr_block {
  int level;        /**< 0 (root) ... max_level */
  int64_t index[3]; /**< 0 ... root_blocks * 2^level - 1 per axis */
} strata_amr_block;

/** What ghost cells at the domain boundary hold. */
typedef enum strata_amr_boundary {
  STRATA_AMR_PERIODIC = 0, /**< the domain wraps around (cosmology) */
  STRATA_AMR_EXTRAPOLATE   /**< linear extrapolation from the interior (exact for linear data) */
} strata_amr_boundary;

/** Parameters of a hierarchy. */
typedef struct strata_amr_params {
  int dim;            /**< 2 or 3 */
  int root_blocks;    /**< blocks per axis at level 0 (default 2) */
  int block_cells;    /**< cells per axis of a block: an even number in 4..1024 (default 16) */
  int ghost_depth;    /**< ghost layers, 1 ... block_cells / 2 (default 1) */
  int max_level;      /**< finest level allowed (default 5) */
  strata_dtype dtype; /**< STRATA_FLOAT64 (default) or STRATA_FLOAT32 */
  int nfields;        /**< 1 ... STRATA_AMR_MAX_FIELDS (default 1) */
  const char *field_names[STRATA_AMR_MAX_FIELDS]; /**< default "density" */
  strata_amr_boundary boundary;                   /**< default periodic */
} strata_amr_params;

/** @brief Fill @p p with the defaults: 3-D, 2 root blocks of 16^3 cells,
 *  one ghost layer, levels 0..5, one float64 field "density", periodic
 *  (Enzo-E's inference test: a 32^3 root grid). */
void strata_amr_params_init(strata_amr_params *p);

/** @brief Create a hierarchy of root blocks only (all leaves, fields
 *  zero), distributed over the ranks of strata_comm(). Collective; every
 *  rank passes the same parameters (else every rank gets STRATA_EINVAL).
 *  @return 0; STRATA_EINVAL; STRATA_ESTATE before strata_init(); STRATA_ENOMEM. */
int strata_amr_create(const strata_amr_params *p, strata_amr **amr);

/** @brief Wait for the hierarchy's tasks and free it. Collective. NULL is a no-op. */
int strata_amr_destroy(strata_amr *amr);

/** @brief The parameters the hierarchy was created with (not collective). */
const strata_amr_params *strata_amr_get_params(const strata_amr *amr);

struct strata_cosmology_params;

/** A test problem: a function evaluated at cell centres. */
typedef struct strata_amr_problem strata_amr_problem;

/** @brief The values of field @p field at the centres of @p n cells along x:
 *  the first at @p centre, the next ones @p h apart. Called from CPU
 *  workers, concurrently: it must be thread-safe. */
typedef void (*strata_amr_problem_fn)(void *ctx, int field, const double centre[3], double h,
                                      int64_t n, double *out);

/** @brief A problem from a user function (every field; @p ctx must outlive it).
 *  Its fill tasks' performance model keys on the function, so problems of
 *  different functions are modeled apart, and those of one function with
 *  different contexts share a model. */
int strata_amr_problem_custom(strata_amr_problem_fn fn, void *ctx, strata_amr_problem **out);

/** @brief A linear field c[0] + c[1] x + c[2] y + c[3] z (every field):
 *  restriction and prolongation reproduce it exactly. */
int strata_amr_problem_linear(const double c[4], strata_amr_problem **out);

/** @brief A density 1 + sum_k a_k exp(-|x - c_k|^2 / (2 s_k^2)) of @p n
 *  isolated Gaussian blobs (periodic distance), centres @p centres (3 per
 *  blob, z ignored in 2-D), widths @p sigma, amplitudes @p amplitude. */
int strata_amr_problem_blobs(int n, const double *centres, const double *sigma,
                             const double *amplitude, strata_amr_problem **out);

/** @brief The cosmology-like log-normal density of strata_cosmology_density()
 *  on a periodic @p grid^3 generation grid, sampled at any resolution by
 *  trilinear interpolation (2-D hierarchies see the z = 0 plane).
 *  Deterministic: the same seed gives the same values on any rank count. */
int strata_amr_problem_cosmology(int64_t grid, const struct strata_cosmology_params *p,
                                 strata_amr_problem **out);

/** @brief The Gaussian random field behind strata_cosmology_density() (see
 *  strata_cosmology_field_create()). */
typedef struct strata_cosmology_field strata_cosmology_field;

/** @brief strata_amr_problem_cosmology() with the log density's standard
 *  deviation @p sigma, from a field made once: a run whose structure grows
 *  between cycles (the same seed, a larger sigma) pays for the noise and
 *  the FFTs once, not every cycle. The values are bit for bit those of
 *  strata_amr_problem_cosmology() with the field's parameters and @p sigma.
 *  @p f may be destroyed after the call. With a distributed field
 *  (strata_cosmology_field_create_distributed()) the call is collective and
 *  the problem holds this rank's slab of the density and the parts its
 *  leaves were filled from: strata_amr_fill(), strata_amr_build() and
 *  strata_amr_adapt_problem() fetch those parts first, and
 *  strata_amr_problem_eval() gives NAN where none was fetched. */
int strata_amr_problem_cosmology_field(const strata_cosmology_field *f, double sigma,
                                       strata_amr_problem **out);

/** @brief @p base plus @p n compact clumps, 3-D Gaussians exp(-r^2 / (2 s^2))
 *  (periodic distance) of width @p sigma[k] (domain units, at most 1/2)
 *  centred at @p centres[3k..3k+2], each holding the mass @p mass[k] in
 *  units of the whole domain's at a mean density of 1: a clump of the mass
 *  of one root cell of a 32^3 root grid has mass 32^-3. A clump adds its
 *  mean over each cell, not its value at the centre, so a cell of any size
 *  holds its share of the clump's mass, and mass refinement
 *  (STRATA_AMR_MASS) finds a clump smaller than a coarse cell: collapsed
 *  objects in a smooth background, as in a cosmology run. The new problem
 *  owns @p base, which is destroyed with it, and on failure too.
 *  @return 0; STRATA_EINVAL (a NULL, a width outside (0, 1/2], a negative
 *  or non-finite mass or centre); STRATA_ENOMEM. */
int strata_amr_problem_add_clumps(strata_amr_problem *base, int n, const double *centres,
                                  const double *sigma, const double *mass,
                                  strata_amr_problem **out);

/** @brief Evaluate a problem as the fill tasks do: field @p field at the
 *  centres of @p n cells along x, the first at @p centre, the next @p h
 *  apart, into @p out. For applications that fill their own mesh
 *  (strata/mesh.h) with Strata's test problems: the values are the ones
 *  strata_amr_fill() writes at the same centres. Not collective; needs no
 *  strata_init(). */
int strata_amr_problem_eval(const strata_amr_problem *problem, int field, const double centre[3],
                            double h, int64_t n, double *out);

/** @brief Before strata_amr_problem_eval() in @p nboxes boxes of the unit
 *  domain (box k: lower corner @p boxes[6k..6k+2], upper corner
 *  @p boxes[6k+3..6k+5]), fetch what the problem needs there from the
 *  ranks that hold it: a problem made from a distributed field
 *  (strata_cosmology_field_create_distributed()) fetches those parts of the
 *  density; for any other problem it does nothing. For applications that
 *  fill their own mesh: each rank gives the boxes of its own blocks. The
 *  hierarchy's fills do this themselves. Collective over strata_comm().
 *  @return 0; STRATA_EINVAL (the same on every rank); STRATA_ENOMEM. */
int strata_amr_problem_prepare(const strata_amr_problem *problem, const double *boxes,
                               int64_t nboxes);

/** @brief Free a problem (NULL is a no-op), after the submitted tasks,
 *  which may still evaluate it. */
void strata_amr_problem_destroy(strata_amr_problem *problem);

/** Refinement criteria. The value compared is, over a leaf's interior
 *  cells, the largest of the criterion field divided by @c mean; for
 *  STRATA_AMR_MASS it is further multiplied by the cell volume in units of
 *  a root cell, 2^(-dim level): the cell mass relative to the mean mass of
 *  a root cell, as in Enzo-E's mass refinement. */
typedef enum strata_amr_criterion_kind {
  STRATA_AMR_OVERDENSITY = 0, /**< refine where rho / mean > min_refine */
  STRATA_AMR_MASS             /**< refine where the relative cell mass > min_refine */
} strata_amr_criterion_kind;

/** A refinement criterion: refine a leaf where the value exceeds
 *  min_refine; coarsen a family of 2^dim sibling leaves where all of them
 *  stay below max_coarsen. */
typedef struct strata_amr_criterion {
  strata_amr_criterion_kind kind; /**< default STRATA_AMR_MASS */
  int field;                      /**< criterion field (default 0) */
  double mean;                    /**< mean of the field (default 1) */
  double min_refine;              /**< default 1 */
  double max_coarsen;             /**< default 0.25 */
} strata_amr_criterion;

/** @brief Fill @p c with the defaults. */
void strata_amr_criterion_init(strata_amr_criterion *c);

/** @brief Initial refinement: fill the leaves from @p problem, then level by
 *  level refine the leaves that the criterion flags (keeping 2:1 balance),
 *  fill the new leaves from the problem directly and rebalance the ranks;
 *  ghost layers are filled at the end. The hierarchy must still be the
 *  root grid. Deterministic: the same hierarchy and bitwise-equal fields on
 *  any number of ranks. */
int strata_amr_build(strata_amr *amr, const strata_amr_problem *problem,
                     const strata_amr_criterion *criterion);

/** @brief Fill every leaf's interior from @p problem (ghosts untouched). */
int strata_amr_fill(strata_amr *amr, const strata_amr_problem *problem);

/** @brief One adaptation step by explicit flags: @p flags has one entry
 *  per leaf, in strata_amr_leaves() order; each rank's entries for the
 *  leaves it owns count (+1 refine, -1 coarsen, 0 keep), the others are
 *  ignored. Refinement is propagated to keep 2:1 balance; a family is
 *  coarsened only when all its children ask for it and balance allows.
 *  New children are prolonged from their parent (ghosts filled first), new
 *  parents restricted from their children; then leaves are redistributed
 *  and ghosts filled. @p changed (may be NULL) gets the number of leaves
 *  created plus removed. */
int strata_amr_adapt_flags(strata_amr *amr, const int8_t *flags, int64_t *changed);

/** @brief One adaptation step by flags for this rank's own leaves:
 *  @p flags has @p nflags entries, one per leaf of
 *  strata_amr_local_leaves() in that order (+1 refine, -1 coarsen, 0
 *  keep); otherwise as strata_amr_adapt_flags(). No rank needs a flag for
 *  a leaf it does not own, so no rank allocates one per leaf of the whole
 *  hierarchy.
 *  @return 0; STRATA_EINVAL on every rank when a rank's @p nflags is not
 *          the number of its leaves (or @p flags is NULL where it is not
 *          0); as strata_amr_adapt_flags otherwise. */
int strata_amr_adapt_local(strata_amr *amr, const int8_t *flags, int64_t nflags, int64_t *changed);

/** @brief One adaptation step by a criterion (see strata_amr_adapt_flags). */
int strata_amr_adapt(strata_amr *amr, const strata_amr_criterion *criterion, int64_t *changed);

/** @brief One adaptation step by a criterion for fields that @p problem
 *  gives: as strata_amr_adapt, but new children and new parents are filled
 *  from the problem instead of prolonged and restricted (so no ghost fill
 *  comes first). For an application that recomputes its fields (a test
 *  problem that evolves, a re-read snapshot): after strata_amr_fill() with
 *  the new problem, this one call leaves every leaf and ghost layer holding
 *  it, where strata_amr_adapt() would need a second fill and ghost fill.
 *  @return 0; STRATA_EINVAL for a NULL hierarchy or problem; as
 *          strata_amr_adapt otherwise. */
int strata_amr_adapt_problem(strata_amr *amr, const strata_amr_criterion *criterion,
                             const strata_amr_problem *problem, int64_t *changed);

/** @brief Fill the ghost layers of every leaf: copies from same-level
 *  neighbours, restriction from finer ones, prolongation from coarser
 *  ones (after their own ghosts), and the boundary rule at the domain
 *  edges, as tasks ordered by their handles. */
int strata_amr_fill_ghosts(strata_amr *amr);

/** @brief Per-leaf weight for load balancing (default 1 per leaf); @p fn
 *  NULL restores the default. Takes effect at the next redistribution. */
int strata_amr_set_weights(strata_amr *amr, double (*fn)(void *ctx, const strata_amr_block *b),
                           void *ctx);

/** @brief Reassign leaves to ranks by cutting the Morton order into pieces
 *  of equal weight, moving data with starpu_mpi_data_migrate(). */
int strata_amr_redistribute(strata_amr *amr);

/** @brief Number of leaves of the whole hierarchy (not collective). */
int64_t strata_amr_num_leaves(const strata_amr *amr);

/** @brief The leaves of every rank in Morton order, gathered (collective:
 *  every rank gets them): up to @p cap into @p out (may be NULL with cap
 *  0); @p n gets the number of leaves. It allocates for all of them on
 *  every rank: code that scales uses strata_amr_local_leaves(). */
int strata_amr_leaves(const strata_amr *amr, strata_amr_block *out, int64_t cap, int64_t *n);

/** What this rank holds of a hierarchy's structure (strata_amr_get_footprint()). */
typedef struct strata_amr_footprint {
  int64_t leaves;             /**< this rank's own leaves */
  int64_t ghost_leaves;       /**< other ranks' leaves touching them (faces, edges, corners) */
  int64_t nodes;              /**< blocks known here: both kinds of leaves and their ancestors */
  int64_t bytes;              /**< memory of those nodes and of p4est's forest and ghost layer */
  int64_t connectivity_bytes; /**< of which p4est's connectivity: one tree per root block */
} strata_amr_footprint;

/** @brief What this rank holds of the hierarchy's structure (not
 *  collective): it grows with the rank's share of the leaves, not with
 *  all of them (field data and handles aside: those are the rank's own
 *  leaves'). */
int strata_amr_get_footprint(const strata_amr *amr, strata_amr_footprint *out);

/** @brief This rank's own leaves in Morton order (not collective): up to
 *  @p cap into @p out (may be NULL with cap 0); @p n gets their number.
 *  With strata_amr_adapt_local(), the view of the hierarchy that is this
 *  rank's share. */
int strata_amr_local_leaves(const strata_amr *amr, strata_amr_block *out, int64_t cap, int64_t *n);

/** Where a block stands in the hierarchy. */
typedef struct strata_amr_block_info {
  int exists;      /**< the block is in the tree (leaf or not) as far as this rank knows */
  int is_leaf;     /**< it holds field data */
  int rank;        /**< owner of a leaf, -1 otherwise */
  double lower[3]; /**< physical lower corner */
  double upper[3]; /**< physical upper corner */
  /** This rank holds the leaf's StarPU handles: its own leaves, and ghost
   *  leaves that strata_amr_field_handle() registered here. */
  int handles_here;
} strata_amr_block_info;

/** @brief Look a block up among those this rank knows (not collective):
 *  its own leaves, its ghost layer and their ancestors. STRATA_ERANGE when
 *  the block cannot exist (level or index out of range); a block that
 *  could exist but is not known here gives 0 with info->exists = 0. */
int strata_amr_block_query(const strata_amr *amr, const strata_amr_block *b,
                           strata_amr_block_info *info);

/** @brief Parent of @p b (STRATA_ERANGE at level 0). Not collective. */
int strata_amr_parent(const strata_amr *amr, const strata_amr_block *b, strata_amr_block *parent);

/** @brief Child @p octant (bit a: upper half along axis a) of @p b. Not collective. */
int strata_amr_child(const strata_amr *amr, const strata_amr_block *b, int octant,
                     strata_amr_block *child);

/** @brief The block at @p level containing point @p x (whether it exists
 *  or not); @p level < 0: the leaf containing it, among the leaves this
 *  rank knows (STRATA_ERANGE elsewhere). Not collective. */
int strata_amr_block_at_point(const strata_amr *amr, const double x[3], int level,
                              strata_amr_block *b);

/** @brief The block at @p level containing element @p idx of a level array
 *  aligned with the blocks of @p array_level (level <= array_level). With
 *  2 root blocks, element (13, 6, 9) of level 4 lies in root block (0, 0, 0).
 *  Not collective. */
int strata_amr_block_at_index(const strata_amr *amr, int array_level, const int64_t idx[3],
                              int level, strata_amr_block *b);

/** @brief Leaves intersecting the box [lo, hi) (physical coordinates; a
 *  positive-volume overlap counts), in Morton order, gathered from every
 *  rank as strata_amr_leaves() (collective). */
int strata_amr_intersect(const strata_amr *amr, const double lo[3], const double hi[3],
                         strata_amr_block *out, int64_t cap, int64_t *n);

/** @brief Cello-style name of @p b: "B" then, per axis, the root index bits,
 *  ':' and the octree path bits, axes separated by '_' (level 2, index
 *  (5, 0, 3) with 2 root blocks: "B1:01_0:00_0:11"). Not collective.
 *  @return 0; STRATA_ERANGE when @p size is too small or the block invalid. */
int strata_amr_block_name(const strata_amr *amr, const strata_amr_block *b, char *buf, size_t size);

/** @brief Copy the cells of field @p field of leaf @p b into @p out as
 *  doubles: the interior (block_cells^dim values) or, with @p ghosts, the
 *  whole array. Only on the leaf's owner (else STRATA_EINVAL); waits for
 *  the tasks writing it. Not collective. */
int strata_amr_read(strata_amr *amr, const strata_amr_block *b, int field, int ghosts, double *out);

/** @brief Write the hierarchy to an HDF5 file (layout in docs/amr.md):
 *  with parallel HDF5 every rank writes its own leaves' blocks (MPI-IO),
 *  else rank 0 writes the blocks gathered to it; `STRATA_HDF5_WRITE=serial`
 *  chooses the second way in a parallel build. Atomically: into a
 *  temporary file beside @p path, renamed over it once complete
 *  (strata_output_begin), so a failed or killed write leaves an existing
 *  file as it was. Collective; every rank passes the same @p path.
 *  @return 0; STRATA_EINVAL on every rank when a path is missing, the
 *  paths or STRATA_HDF5_WRITE differ between ranks, or STRATA_HDF5_WRITE
 *  names no way this build has; STRATA_EIO on every rank when the file
 *  cannot be written (strata_error_message() names the path and the cause
 *  on rank 0). */
int strata_amr_write_hdf5(strata_amr *amr, const char *path);

/** @brief strata_amr_write_hdf5() with @p n string attributes
 *  @p keys[k] = @p values[k] in a group `parameters` of the file, for the
 *  parameters of the run that made it; every rank passes the same (else
 *  STRATA_EINVAL on every rank). */
int strata_amr_write_hdf5_annotated(strata_amr *amr, const char *path, const char *const *keys,
                                    const char *const *values, int n);

/** @brief Load a hierarchy from a file of strata_amr_write_hdf5()'s layout
 *  (docs/amr.md): its geometry, boundary, fields (names, numbers, type) and
 *  leaves, the tree refined from the root grid to those leaves and the
 *  leaves spread over the ranks of strata_comm() by Strata's own
 *  distribution; each rank reads the field rows of its own leaves, then the
 *  ghost layers are filled. Collective. A file of another layout, a
 *  truncated or damaged file, a field that is missing or of the wrong shape
 *  gives STRATA_EIO with the file and the cause in strata_error_message(),
 *  on every rank. */
int strata_amr_read_hdf5(const char *path, strata_amr **amr);

/** @brief Print a summary of an HDF5 file written by strata_amr_write_hdf5()
 *  (blocks per level and rank, field ranges, mass) to @p out. Needs no
 *  strata_init(). @return 0; STRATA_EIO when the file is not such a file. */
int strata_amr_hdf5_summary(const char *path, FILE *out);

/** Parameters of the cosmology-like density field. */
typedef struct strata_cosmology_params {
  uint64_t seed;         /**< random seed: the same seed gives the same field, bit for bit */
  double spectral_index; /**< power spectrum P(k) ~ k^index (default -2: large-scale power) */
  double sigma;          /**< standard deviation of the log density (default 1) */
  double cutoff;         /**< Gaussian cutoff of the spectrum, in cells (default 1) */
} strata_cosmology_params;

/** @brief Fill @p p with the defaults (seed 1). */
void strata_cosmology_params_init(strata_cosmology_params *p);

/** @brief A log-normal overdensity field on a periodic n^3 grid, in units
 *  of the mean density: a Gaussian random field with a power-law spectrum
 *  (white noise shaped in Fourier space with FFTW), scaled to the requested
 *  standard deviation and exponentiated, rho = exp(delta - sigma^2 / 2),
 *  then rescaled to a mean of exactly 1. Peaks cluster where the
 *  large-scale modes are high, like halos. Deterministic: the noise of cell
 *  (x, y, z) depends only on the seed and the cell.
 *  @param n cells per axis (2 to 1024).  @param p parameters (NULL: defaults).
 *  @param rho n^3 values, x fastest.
 *  @return 0; STRATA_EINVAL; STRATA_ENOMEM. Needs no strata_init(). */
int strata_cosmology_density(int64_t n, const strata_cosmology_params *p, double *rho);

/** @brief The Gaussian random field of strata_cosmology_density() before
 *  its log-normal transform (white noise shaped by the spectrum of @p p;
 *  p->sigma is not used), kept for strata_amr_problem_cosmology_field().
 *  Holds n^3 doubles. @param n cells per axis (2 to 1024).
 *  @param p parameters (NULL: defaults).
 *  @return 0; STRATA_EINVAL; STRATA_ENOMEM. Needs no strata_init(). */
int strata_cosmology_field_create(int64_t n, const strata_cosmology_params *p,
                                  strata_cosmology_field **out);

/** @brief strata_cosmology_field_create() spread over the ranks: each
 *  rank holds a slab of whole z planes (about n^3 / ranks doubles, in
 *  layers of 8 to 16 planes: ranks beyond the layers hold none), made by FFTs plane by plane and
 * line by line with rows moved between the ranks, so that no rank holds the whole grid. The values
 * are bit for bit those of strata_cosmology_field_create() on any number of ranks. A problem made
 * from it (strata_amr_problem_cosmology_field()) fetches, before each fill, the parts of the
 * density that this rank's leaves need from the ranks that hold them. Collective over
 * strata_comm().
 *  @param n cells per axis (2 to 1024).
 *  @param p parameters (NULL: defaults).
 *  @return 0; STRATA_EINVAL (the same on every rank); STRATA_ENOMEM;
 *  STRATA_ESTATE before strata_init(). */
int strata_cosmology_field_create_distributed(int64_t n, const strata_cosmology_params *p,
                                              strata_cosmology_field **out);

/** @brief The z planes [@p z0, @p z1) of the field held on this rank: all
 *  of them for strata_cosmology_field_create(), this rank's slab for
 *  strata_cosmology_field_create_distributed(). */
int strata_cosmology_field_planes(const strata_cosmology_field *f, int64_t *z0, int64_t *z1);

/** @brief Free a field (NULL is a no-op). */
void strata_cosmology_field_destroy(strata_cosmology_field *f);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
