/** @file infer.h
 *  @brief Inference arrays on an AMR hierarchy (Enzo-E's EnzoMethodInference
 *  as a StarPU-MPI task graph): regular float32 arrays placed where a local
 *  criterion fires, filled from the leaves, passed through a model, and
 *  the bubbles found sent back to the leaves.
 *
 *  The "level array" is a sparse 3-D array aligned with the blocks of
 *  level_array: its element (i, j, k) covers the same box as block
 *  (i, j, k) of that level, at the resolution of level_infer, so it holds
 *  N = 2^(level_infer - level_array) * block_cells cells per axis (one
 *  inference array per element, with one channel per transferred field).
 *  One cycle (strata_infer_run()) has five phases:
 *  1. Evaluate: each leaf at level >= level_base applies the criterion into
 *     a mask of max(1, 2^(level_array - level)) cells per axis (one per
 *     level-array element it covers), a task on its rank; each rank reads
 *     its own leaves' masks and the elements they mark are agreed on by all
 *     ranks (the union of the marks, what Enzo-E's merge up the tree to
 *     level_base computes) through a directory spread over the ranks by
 *     ranges of Morton keys; each rank then knows only the elements its
 *     leaves overlap, its own, and those near its own.
 *  2. Allocate: the elements marked in the level_base masks, each created
 *     once, placed on ranks by the placement policy; an element kept from
 *     the previous cycle whose rank changes is registered anew there
 *     (populate overwrites all its data, so none of it moves); the level
 *     array is reused untouched when the same
 *     elements are needed again. No element: the cycle ends here.
 *  3. Populate: each element's intersecting leaves (found by each leaf's
 *     rank from its own leaves; the element's rank learns of them from one
 *     exchange of transfer descriptions) copy,
 *     restrict (finer than level_infer, on the leaf's rank) or prolong
 *     (coarser, on the element's rank) their part straight into the
 *     element; across ranks one message per pair of ranks.
 *  4. Apply inference: the model task on each element (CPU or CUDA worker,
 *     the scheduler decides), then bubble extraction.
 *  5. Update blocks: every leaf intersecting an element receives its
 *     bubbles: a per-leaf bubble list and, optionally, a marker field set
 *     to 1 at cells inside bubbles (0 elsewhere).
 *  Then the bubbles of neighbouring arrays that touch across their shared
 *  border, on any rank, are joined into one bubble per region (union-find
 *  over the links that tasks find between the arrays' border faces), and
 *  each joined bubble goes as a particle to the leaf holding its centre.
 *
 *  Differences from Enzo-E, on purpose: the criterion runs on every leaf at
 *  level >= level_base (Enzo-E: only leaves finer than level_array), its
 *  field and reference (block mean or a fixed value) are parameters;
 *  interior cells are aligned exactly (Enzo-E's copy starts one ghost
 *  layer early); the model is a real one; completion is tracked by handle
 *  dependencies, not counters. Leaves must have their ghost layers filled
 *  (strata_amr_build(), strata_amr_adapt() and strata_amr_fill_ghosts()
 *  leave them so): prolongation reads one coarse ghost layer.
 *
 *  All functions taking a strata_infer are collective unless said otherwise. */
#ifndef STRATA_INFER_H
#define STRATA_INFER_H

#include <stdint.h>

#include <strata/amr.h>
#include <strata/model.h>

#ifdef __cplusplus
extern "C" {
#endif
/* The library exports what its public headers declare, and nothing else. */
#pragma GCC visibility push(default)

/** The inference method on one hierarchy (opaque). */
typedef struct strata_infer strata_infer;

/** What the criterion's threshold multiplies. */
typedef enum strata_infer_reference {
  STRATA_INFER_BLOCK_MEAN = 0, /**< the leaf's mean of the criterion field (Enzo-E) */
  STRATA_INFER_FIXED           /**< the value reference_value */
} strata_infer_reference;

/** How elements are placed on ranks. */
typedef enum strata_infer_placement {
  /** Elements in Morton order cut into equal counts per rank (default). */
  STRATA_INFER_PLACE_CURVE = 0,
  /** Largest estimated cost first onto the least loaded rank; the cost of
   *  an element is its inference (N^3 cells) plus the cells its leaves
   *  send it. It orders every element, so every rank gathers every
   *  element's cost: O(elements) per rank, where the other policies need
   *  only sums over the ranks. */
  STRATA_INFER_PLACE_GREEDY,
  /** By measured cost, aware of migration: each rank's share is its speed
   *  at the model (the sum over its workers of 1 / the model task's time
   *  in StarPU's history for that worker's architecture; its worker count
   *  until every kind of worker has a measurement). Each element weighs
   *  one model task plus its transfers from the leaves: their cells at the
   *  seconds per cell that StarPU's histories of the transfer codelets
   *  (copy, restriction, prolongation) give on a CPU worker, agreed over
   *  the ranks, over the model's time on one (all weights equal until
   *  transfers are measured). The
   *  elements in Morton order are cut into the shares of their weights,
   *  each cut moved by up to 1 % (within the directory rank's range that
   *  holds its balanced point) to where it moves the fewest kept
   *  elements, and a kept element stays on its rank while that rank stays
   *  within 2 % of its share (the directory ranks before asking first). */
  STRATA_INFER_PLACE_MEASURED
} strata_infer_placement;

/** Phases of a cycle, indices of strata_infer_stats::seconds. */
enum strata_infer_phase {
  STRATA_INFER_EVALUATE,
  STRATA_INFER_ALLOCATE,
  STRATA_INFER_POPULATE,
  STRATA_INFER_APPLY,
  STRATA_INFER_UPDATE,
  STRATA_INFER_PHASES
};

/** Parameters of the method. */
typedef struct strata_infer_params {
  int level_base;  /**< coarsest level evaluated (default 2) */
  int level_array; /**< level the elements align with (default 4) */
  int level_infer; /**< level whose resolution the arrays have (default 5) */
  /** Fields copied into the arrays, one channel each; n_fields 0 (default):
   *  the model's named input fields, else field 0. */
  int fields[STRATA_AMR_MAX_FIELDS];
  int n_fields;                     /**< entries of fields */
  int criterion_field;              /**< default 0 */
  strata_infer_reference reference; /**< default STRATA_INFER_BLOCK_MEAN */
  double overdensity_threshold; /**< a cell fires when value > threshold * reference (default 32) */
  double reference_value;       /**< reference of STRATA_INFER_FIXED (default 1) */
  strata_model *model;          /**< required; must outlive the method */
  /** The model output whose (first) channel is the probability, by name;
   *  NULL (default): the model's first channel, which must then be a
   *  probability (strata_model_describe()). */
  const char *probability_output;
  /** The model outputs whose channels every bubble carries as values
   *  (strata_bubble::values: probability-weighted means over its cells), by
   *  name, comma-separated ("mass,class"); NULL (default): every channel but
   *  the probability's; "": none. At most STRATA_BUBBLE_MAX_VALUES channels. */
  const char *value_outputs;
  float bubble_threshold;           /**< probability above which cells are in bubbles (0.5) */
  int64_t bubble_min_cells;         /**< smaller joined bubbles are dropped (default 1) */
  int bubble_capacity;              /**< parts kept per array and per leaf list (default 64) */
  int marker_field;                 /**< field set to 1 inside bubbles, -1: none (default) */
  strata_infer_placement placement; /**< default STRATA_INFER_PLACE_CURVE */
  /** Run the phases separated by global barriers (all tasks of a phase
   *  finish on every rank before the next starts), as the original
   *  synchronises with counters: the comparison mode of the benchmark. */
  int bulk_synchronous;
} strata_infer_params;

/** @brief Name of a phase ("evaluate", "allocate", "populate", "apply",
 *  "update"), "" when out of range. */
const char *strata_infer_phase_name(int phase);

/** @brief Fill @p p with the defaults (model NULL: set it). */
void strata_infer_params_init(strata_infer_params *p);

/** Per-cycle figures (identical on every rank except the *_local ones). */
typedef struct strata_infer_stats {
  int64_t elements;             /**< elements of the level array */
  int64_t elements_local;       /**< ... on this rank */
  int64_t elements_max;         /**< ... on the most loaded rank */
  int64_t created;              /**< elements created this cycle */
  int64_t removed;              /**< elements removed this cycle */
  int64_t migrated;             /**< kept elements moved to another rank (re-registered there:
                                     populate overwrites their data, so none of it moves) */
  int64_t kept;                 /**< elements kept from the previous cycle */
  int reused;                   /**< the level array was reused unchanged */
  int64_t transfers;            /**< leaf-to-element transfers (copy, restrict, prolong) */
  int64_t transfers_by_kind[3]; /**< ... copies, restrictions, prolongations */
  int64_t messages;             /**< point-to-point messages of populate and update */
  int64_t bubbles;              /**< bubbles: regions joined across arrays and ranks */
  int64_t parts;                /**< components found in the arrays (a bubble's share of one) */
  int64_t parts_local;          /**< ... in arrays on this rank */
  /** Parts that did not fit their array's table (bubble_capacity) and
   *  are missing from the bubbles: raise bubble_capacity when not 0. */
  int64_t parts_lost;
  int64_t particles_local; /**< bubbles delivered to leaves of this rank */
  int64_t leaf_bubbles;    /**< (leaf, bubble) pairs delivered to leaves */
  double volume_min;       /**< least covered volume of an element (1 when exact) */
  double volume_max;       /**< largest covered volume of an element */
  /** Time at which each phase completed on the slowest rank, minus the
   *  completion of the previous phase (seconds). In the task-graph mode
   *  phases overlap, so this is each phase's share of the critical path. */
  double seconds[STRATA_INFER_PHASES];
  double total; /**< wall time of the cycle (seconds, slowest rank) */
  /** Seconds from the cycle's start until strata_infer_submit() returned
   *  (slowest rank): the part of the cycle the caller's thread spends; the
   *  tasks submitted by then run while the caller does other work. */
  double submit_seconds;
  /** Predicted work per rank at this cycle's placement: its elements'
   *  weights over its speed at the model (seconds with StarPU's measured
   *  times, else elements per worker; weights 1 but with
   *  STRATA_INFER_PLACE_MEASURED), largest and mean over the ranks; 0 when
   *  the level array was reused unplaced. */
  double predicted_max, predicted_mean;
  /** The transfers' share of the predicted work (0 to 1): 0 but with
   *  STRATA_INFER_PLACE_MEASURED once transfers have been measured. */
  double transfer_share;
  /** Measured work per rank in this cycle: the CPU time (thread CPU
   *  clock, so other processes on the core do not count) of its model
   *  tasks and its leaf-to-element transfer tasks on CPU workers; largest
   *  and mean over the ranks (seconds). CUDA tasks are not counted. */
  double measured_max, measured_mean;
  /** Data handles of elements registered on this rank after the cycle:
   *  its own elements' and, for the links between arrays, its neighbours'
   *  faces and links. It grows with the rank's share of the level array
   *  and its border, not with the whole array. */
  int64_t handles_local;
  /** Elements of the level array this rank knows (index, rank, handles):
   *  those its leaves overlap, its own, and every element within two of
   *  its own (the links between arrays). It grows with the rank's leaves
   *  and share, not with the whole array (docs/scaling.md). */
  int64_t elements_known;
  /** Bytes this rank received from the others to join the bubbles: the
   *  links that cross to its elements, the labels of the components that
   *  reach across ranks, the parts of the components rooted in its
   *  directory range, and the bubbles to deliver to its leaves. It grows
   *  with the bubbles near the rank's elements and leaves, not with the
   *  whole problem's (docs/scaling.md). */
  int64_t join_bytes_local;
} strata_infer_stats;

/** @brief Check the levels of @p p against a hierarchy made with @p a,
 *  before building either: the geometric conditions of strata_infer_create()
 *  (3-D, levels ordered up to max_level, masks no finer than a block's
 *  cells, leaves that restrict to whole cells of level_infer, arrays of at
 *  most 1024 cells per axis). Local (not collective), needs no
 *  strata_init(). @return 0, or STRATA_EINVAL with the reason in
 *  strata_error_message(). */
int strata_infer_check_geometry(const strata_amr_params *a, const strata_infer_params *p);

struct strata_mesh; /* strata/mesh.h, which includes StarPU's headers */

/** @brief Set the method up on an application's mesh (strata/mesh.h,
 *  committed), read and written in place, with @p p (copied); as
 *  strata_infer_create() otherwise. The mesh must outlive the method; the
 *  application may describe new leaves between cycles (strata_mesh_begin,
 *  add, commit), which the next cycle reads. strata_infer_write_hdf5()
 *  needs Strata's own hierarchy (STRATA_EINVAL here). Collective. */
int strata_infer_create_on_mesh(struct strata_mesh *mesh, const strata_infer_params *p,
                                strata_infer **out);

/** @brief Set the method up on @p amr (3-D) with @p p (copied). Invalid
 *  combinations give STRATA_EINVAL with the reason in
 *  strata_error_message(): levels not ordered level_base <= level_array <=
 *  level_infer <= max_level, masks finer than a block's cells, leaves
 *  finer than level_infer that do not restrict to whole cells, fields out
 *  of range, a model whose channels differ from the fields or whose
 *  first channel is not a probability when no probability_output is named,
 *  an output name the model does not have, more than
 *  STRATA_BUBBLE_MAX_VALUES value channels, N not accepted by the model.
 *  Every bubble gets the probability-weighted means of the value channels
 *  (strata_bubble::values), joined across arrays weighted by mass. */
int strata_infer_create(strata_amr *amr, const strata_infer_params *p, strata_infer **out);

/** @brief Free the method and its level array. NULL is a no-op. A cycle
 *  still in flight is waited for first (its tasks only). */
int strata_infer_destroy(strata_infer *inf);

/** @brief Run one cycle (the five phases) on the hierarchy as it is now:
 *  strata_infer_submit() then strata_infer_wait(). Collective.
 *  @p stats may be NULL. */
int strata_infer_run(strata_infer *inf, strata_infer_stats *stats);

/** @brief Submit one cycle on the hierarchy as it is now and return once
 *  its tasks are submitted, without waiting for them to run. Collective.
 *
 *  The calling thread waits only where the plan needs a result: for the
 *  evaluate tasks (the masks decide which elements exist), then for the
 *  agreement on the element set and its placement (exchanges with the
 *  directory of the elements this rank's leaves overlap and of those near
 *  its own; the greedy policy also gathers every element's cost). The populate, apply and update
 * tasks are submitted and left to run beside the application's own tasks, ordered against them by
 *  their data: the application may submit its next time step at once.
 *  Until strata_infer_wait(), the hierarchy must not be adapted or
 *  destroyed (STRATA_ESTATE); the element set is already this cycle's,
 *  queries that read task results (leaf lists, probabilities, parts) wait
 *  for this cycle's tasks, and the joined bubbles and particles stay the
 *  previous cycle's until strata_infer_wait(). In the bulk-synchronous
 *  mode every phase still ends with a barrier over all tasks.
 *  @return 0; STRATA_ESTATE when a cycle is already in flight; the codes
 *          of strata_infer_run(), the same on every rank. */
int strata_infer_submit(strata_infer *inf);

/** @brief Wait for the cycle that strata_infer_submit() started, and only
 *  for this method's tasks (never with starpu_task_wait_for_all(): the
 *  application's tasks keep running), then join the bubbles and deliver
 *  them (see strata_infer_bubbles()). Collective. @p stats may be NULL.
 *  @return 0; STRATA_ESTATE when no cycle is in flight. */
int strata_infer_wait(strata_infer *inf, strata_infer_stats *stats);

/** @brief The parameters in use (fields resolved), NULL for NULL. Not collective. */
const strata_infer_params *strata_infer_get_params(const strata_infer *inf);

/** @brief Extent N of the inference arrays (cells per axis). Not collective. */
int64_t strata_infer_array_cells(const strata_infer *inf);

/** @brief Value channels each bubble carries (strata_bubble::values): the
 *  channels of strata_infer_params::value_outputs, by default every model
 *  channel but the probability's; 0 ... STRATA_BUBBLE_MAX_VALUES. Not
 *  collective. */
int strata_infer_values(const strata_infer *inf);

/** @brief Name of value channel @p k (strata_bubble::values[k]), its column
 *  in the particle table: the model output holding it, with the channel
 *  within that output appended ("class_2") when the output has several,
 *  or "value<k>" when the output has no name or the name is taken. NULL
 *  when @p k is out of range. Not collective. */
const char *strata_infer_value_name(const strata_infer *inf, int k);

/** @brief The level array's elements after the last cycle, in Morton order:
 *  up to @p cap indices (3 each) into @p idx and owner ranks into @p ranks
 *  (either may be NULL); @p n gets the count. Collective: no rank keeps
 *  the whole array (a directory spread over the ranks does), so this
 *  gathers it on every rank, O(elements) each; for pictures and checks,
 *  not for every cycle. */
int strata_infer_elements(const strata_infer *inf, int64_t (*idx)[3], int *ranks, int64_t cap,
                          int64_t *n);

/** @brief Channel @p channel of element @p idx (N^3 floats, x fastest) as
 *  populated by the last cycle. Only on the element's owner: STRATA_EINVAL
 *  on every other rank, and on every rank when the level array has no
 *  element at @p idx; STRATA_ERANGE when @p idx lies outside the level
 *  array. Not collective. */
int strata_infer_read_array(strata_infer *inf, const int64_t idx[3], int channel, float *out);

/** @brief The model's probability map of element @p idx (N^3 floats, x
 *  fastest) computed by the last cycle; the owner only, as
 *  strata_infer_read_array(). */
int strata_infer_read_probability(strata_infer *inf, const int64_t idx[3], float *out);

/** @brief Output channel @p channel of the model (0 ... its output channels
 *  - 1, strata_model_describe()) on element @p idx, N^3 floats, x fastest,
 *  from the last cycle; the owner only, as strata_infer_read_array(). */
int strata_infer_read_output(strata_infer *inf, const int64_t idx[3], int channel, float *out);

/** @brief The mask of leaf @p b computed by the last cycle's evaluation:
 *  m^3 bytes (m = max(1, 2^(level_array - level))), m into @p m. Only on
 *  the leaf's owner, else STRATA_EINVAL; STRATA_ERANGE for a block
 *  coarser than level_base (no mask). @p out holds at least 4096 bytes.
 *  Not collective. */
int strata_infer_read_mask(strata_infer *inf, const strata_amr_block *b, uint8_t *out, int64_t *m);

/** @brief The bubbles of the last cycle, gathered on every rank
 *  (collective: each rank holds only those it joined, O(bubbles) each):
 *  one per region above bubble_threshold, joined across arrays and ranks,
 *  of at least bubble_min_cells cells, in the order of their id (the first
 *  cell in scan order z, y, x over the level_infer grid); malloc'd (free()).
 *  Each has its summed mass and cells, probability-weighted centre
 *  (periodic domains: inside the domain), equivalent radius, peak and the
 *  number of arrays it spans. @p element (may be NULL) gets, per bubble,
 *  the position in strata_infer_elements() order of the element holding
 *  its first cell (malloc'd). The same on any rank count and scheduler. */
int strata_infer_bubbles(strata_infer *inf, strata_bubble **list, int64_t **element, int64_t *n);

/** @brief The parts of the last cycle's bubbles: every array's components
 *  on its own (ids over the array), in the Morton order of their elements,
 *  then in their table's order; malloc'd (free()). @p element (may be NULL)
 *  gets, per part, its element's position in strata_infer_elements()
 *  order (malloc'd). Collective. */
int strata_infer_bubble_parts(strata_infer *inf, strata_bubble **list, int64_t **element,
                              int64_t *n);

/** @brief The particles of leaf @p b: the bubbles of strata_infer_bubbles()
 *  whose centre lies in the leaf (each bubble is delivered to exactly one
 *  leaf), in id order; malloc'd (free()), their number in @p n. Only on the
 *  leaf's owner (else STRATA_EINVAL). Not collective. */
int strata_infer_leaf_particles(strata_infer *inf, const strata_amr_block *b, strata_bubble **list,
                                int64_t *n);

/** @brief The bubble parts delivered to leaf @p b by the last cycle (those
 *  whose sphere, clipped to their array, reaches the leaf): malloc'd list (free())
 *  of at most bubble_capacity entries, their number in @p n, and how many
 *  reached the leaf in @p found (may be NULL). Only on the leaf's owner. */
int strata_infer_leaf_bubbles(strata_infer *inf, const strata_amr_block *b, strata_bubble **list,
                              int64_t *n, int64_t *found);

/** @brief strata_amr_write_hdf5_annotated() of the method's hierarchy,
 *  plus the last cycle's bubbles as a table "particles" (one record per
 *  bubble: id, x, y, z, radius, mass, peak, cells, parts, and the level and
 *  index of the leaf holding it; layout in docs/infer.md). Collective; rank
 *  0 writes the file. */
int strata_infer_write_hdf5(strata_infer *inf, const char *path, const char *const *keys,
                            const char *const *values, int n);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
