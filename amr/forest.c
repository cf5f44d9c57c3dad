/* The octree's structure on p4est (2-D) or p8est (3-D), so that a rank
 * holds its own leaves and the layer of leaves that touch them, not the
 * whole hierarchy. This file is compiled twice: as it is for 2-D, and
 * through forest3.c, after p4est_to_p8est.h, for 3-D.
 *
 * p4est owns which leaves exist and where they live; Strata's node hash
 * (tree.c) mirrors this rank's leaves, its ghost layer and their ancestors
 * after every change (mirror), and holds what p4est does not: the handles.
 * A brick's trees come in the Morton order of their root index, and p4est
 * orders a tree's quadrants by the same interleaving as Strata's keys, so a
 * leaf's global position is p4est's global quadrant number. */
#include <stdlib.h>
#include <string.h>

#ifndef P4_TO_P8
#include <p4est_algorithms.h>
#include <p4est_extended.h>
#include <p4est_ghost.h>
#define FOREST(name) strata__forest2_##name
#else
#include <p8est_algorithms.h>
#include <p8est_extended.h>
#include <p8est_ghost.h>
#define FOREST(name) strata__forest3_##name
#endif

#include "amr_internal.h"

/* What travels with a leaf in p4est (through partitions and into the
 * ghost layer): the node fields that p4est cannot recompute. */
struct quad_data {
  int64_t serial;
  int8_t flag;
  int8_t unfilled;
};

static struct quad_data *data_of(const p4est_quadrant_t *q) { return q->p.user_data; }

/* Block name of quadrant q of tree t: the tree's corner in root blocks,
 * then the quadrant's place in the tree (a single tree's quadrants at
 * p4est's level root_level are the root blocks). */
static strata_amr_block block_of(const strata_amr *amr, p4est_topidx_t t, const p4est_quadrant_t *q)
{
  const p4est_connectivity_t *conn = amr->forest.conn;
  const double *corner = conn->vertices + 3 * conn->tree_to_vertex[P4EST_CHILDREN * t];
#ifdef P4_TO_P8
  const p4est_qcoord_t xyz[3] = {q->x, q->y, q->z};
#else
  const p4est_qcoord_t xyz[3] = {q->x, q->y, 0};
#endif
  strata_amr_block b = {.level = q->level - amr->forest.root_level};
  for (int a = 0; a < P4EST_DIM; a++)
    b.index[a] = (int64_t)corner[a] << b.level | (int64_t)(xyz[a] >> (P4EST_MAXLEVEL - q->level));
  return b;
}

/* New leaves: a serial of this rank's, and empty when a problem fills them. */
static void init_quad(p4est_t *p4est, p4est_topidx_t t, p4est_quadrant_t *q)
{
  (void)t;
  strata_amr *amr = p4est->user_pointer;
  *data_of(q) = (struct quad_data){.serial = strata__amr_new_serial(amr),
                                   .unfilled = amr->forest.filling != NULL};
}

static int wants_refinement(p4est_t *p4est, p4est_topidx_t t, p4est_quadrant_t *q)
{
  (void)p4est, (void)t;
  return data_of(q)->flag == 1;
}

static int wants_coarsening(p4est_t *p4est, p4est_topidx_t t, p4est_quadrant_t *kids[])
{
  (void)p4est, (void)t;
  for (int o = 0; o < P4EST_CHILDREN; o++)
    if (data_of(kids[o])->flag != STRATA__AMR_MERGE)
      return 0;
  return 1;
}

/* A leaf split into its children (refinement, balance) or a family merged
 * into its parent: the handles follow in amr.c. */
static void replace(p4est_t *p4est, p4est_topidx_t t, int nout, p4est_quadrant_t *out[], int nin,
                    p4est_quadrant_t *in[])
{
  strata_amr *amr = p4est->user_pointer;
  if (nout == 1) {
    strata_amr_block kids[P4EST_CHILDREN];
    int64_t serials[P4EST_CHILDREN];
    for (int o = 0; o < nin; o++) {
      kids[o] = block_of(amr, t, in[o]);
      serials[o] = data_of(in[o])->serial;
    }
    const strata_amr_block parent = block_of(amr, t, out[0]);
    strata__amr_split(amr, &parent, kids, serials);
  } else {
    const strata_amr_block parent = block_of(amr, t, in[0]);
    strata__amr_merge(amr, &parent, data_of(in[0])->serial);
  }
}

/* The mirrored node fields into p4est, leaf by leaf (the hash is in step
 * with the forest between operations). */
static void store(strata_amr *amr)
{
  p4est_t *p4est = amr->forest.p4est;
  int64_t i = 0;
  for (p4est_topidx_t t = p4est->first_local_tree; t <= p4est->last_local_tree; t++) {
    sc_array_t *qs = &p4est_tree_array_index(p4est->trees, t)->quadrants;
    for (size_t k = 0; k < qs->elem_count; k++, i++) {
      const struct strata__amr_node *n = amr->leaves[i];
      *data_of(p4est_quadrant_array_index(qs, k)) =
          (struct quad_data){.serial = n->serial, .flag = n->flag, .unfilled = n->unfilled};
    }
  }
}

/* Owner of global position g under the partition `first` (size + 1). */
static int owner_of(const p4est_gloidx_t *first, int size, int64_t g)
{
  int lo = 0, hi = size - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (first[mid] <= g)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/* Node of leaf b, made if it is not mirrored yet, with its ancestors. */
static struct strata__amr_node *mirror_leaf(strata_amr *amr, const strata_amr_block *b,
                                            uint32_t epoch)
{
  struct strata__amr_node *n = strata__amr_find(amr, b);
  if (!n && !(n = strata__amr_add(amr, b)))
    return NULL;
  n->epoch = epoch;
  n->is_leaf = 1;
  strata_amr_block up = *b;
  while (up.level > 0) {
    up.level--;
    for (int a = 0; a < P4EST_DIM; a++)
      up.index[a] /= 2;
    struct strata__amr_node *x = strata__amr_find(amr, &up);
    if (x && x->epoch == epoch)
      break;
    if (!x && !(x = strata__amr_add(amr, &up)))
      return NULL;
    x->epoch = epoch;
    x->is_leaf = 0;
    x->rank = -1;
  }
  return n;
}

static int mirror_forest(strata_amr *amr)
{
  p4est_t *p4est = amr->forest.p4est;
  if (amr->forest.ghost)
    p4est_ghost_destroy(amr->forest.ghost);
  p4est_ghost_t *ghost = amr->forest.ghost = p4est_ghost_new(p4est, P4EST_CONNECT_FULL);
  const size_t nghosts = ghost->ghosts.elem_count, nlocal = (size_t)p4est->local_num_quadrants;
  struct quad_data *gdata = malloc((nghosts ? nghosts : 1) * sizeof *gdata);
  struct strata__amr_node **leaves = calloc(nlocal ? nlocal : 1, sizeof *leaves);
  struct strata__amr_node **ghosts = calloc(nghosts ? nghosts : 1, sizeof *ghosts);
  if (!gdata || !leaves || !ghosts) {
    free(gdata), free(leaves), free(ghosts);
    return STRATA_ENOMEM;
  }
  p4est_ghost_exchange_data(p4est, ghost, gdata);
  const uint32_t epoch = ++amr->forest.epoch;
  const int64_t first = p4est->global_first_quadrant[amr->rank];
  int ret = 0;
  int64_t i = 0;
  for (p4est_topidx_t t = p4est->first_local_tree; !ret && t <= p4est->last_local_tree; t++) {
    sc_array_t *qs = &p4est_tree_array_index(p4est->trees, t)->quadrants;
    for (size_t k = 0; !ret && k < qs->elem_count; k++, i++) {
      const p4est_quadrant_t *q = p4est_quadrant_array_index(qs, k);
      const strata_amr_block b = block_of(amr, t, q);
      struct strata__amr_node *n = leaves[i] = mirror_leaf(amr, &b, epoch);
      if (!n) {
        ret = STRATA_ENOMEM;
        break;
      }
      n->rank = amr->rank;
      n->serial = data_of(q)->serial;
      n->flag = data_of(q)->flag;
      n->unfilled = data_of(q)->unfilled;
      n->pos = first + i;
      n->slot = i;
    }
  }
  for (int r = 0, k = 0; !ret && r < amr->size; r++)
    for (; !ret && k < ghost->proc_offsets[r + 1]; k++) {
      const p4est_quadrant_t *q = p4est_quadrant_array_index(&ghost->ghosts, (size_t)k);
      const strata_amr_block b = block_of(amr, q->p.piggy3.which_tree, q);
      struct strata__amr_node *n = ghosts[k] = mirror_leaf(amr, &b, epoch);
      if (!n) {
        ret = STRATA_ENOMEM;
        break;
      }
      n->rank = r;
      n->serial = gdata[k].serial;
      n->flag = gdata[k].flag;
      n->unfilled = gdata[k].unfilled;
      n->pos = p4est->global_first_quadrant[r] + q->p.piggy3.local_num;
      n->slot = k;
    }
  free(gdata);
  /* Whatever is not mirrored any more: leaves that moved away or were
   * replaced, and ancestors nothing here descends from. */
  for (int64_t k = 0; !ret && k < amr->nbuckets; k++)
    for (struct strata__amr_node *n = amr->buckets[k], *next; n; n = next) {
      next = n->next;
      if (n->epoch != epoch)
        strata__amr_forget(amr, n);
    }
  free(amr->leaves);
  free(amr->ghosts);
  amr->leaves = leaves;
  amr->nleaves = (int64_t)nlocal;
  amr->ghosts = ghosts;
  amr->nghosts = (int64_t)nghosts;
  amr->first = first;
  amr->total = p4est->global_num_quadrants;
  return ret;
}

static int create(strata_amr *amr)
{
  const int periodic = amr->p.boundary == STRATA_AMR_PERIODIC, m = amr->p.root_blocks;
  if (p4est_package_id < 0)
    p4est_init(NULL, SC_LP_ERROR); /* p4est's progress messages off, unless the application
                                      registered p4est itself */
  /* Root blocks a power of two: one tree, its quadrants of level log2(m)
   * the root blocks, so that no rank holds a tree per root block (p4est's
   * connectivity is on every rank); else a brick of m^dim trees. */
  int bits = 0;
  while (1 << bits < m)
    bits++;
  const int one_tree = 1 << bits == m && bits + amr->p.max_level <= P4EST_QMAXLEVEL;
  amr->forest.root_level = one_tree ? bits : 0;
#ifdef P4_TO_P8
  amr->forest.conn =
      one_tree ? periodic ? p8est_connectivity_new_periodic() : p8est_connectivity_new_unitcube()
               : p8est_connectivity_new_brick(m, m, m, periodic, periodic, periodic);
#else
  amr->forest.conn =
      one_tree ? periodic ? p4est_connectivity_new_periodic() : p4est_connectivity_new_unitsquare()
               : p4est_connectivity_new_brick(m, m, periodic, periodic);
#endif
  if (!amr->forest.conn)
    return STRATA_ENOMEM;
  amr->forest.p4est = p4est_new_ext(amr->meta, amr->forest.conn, 0, amr->forest.root_level, 1,
                                    sizeof(struct quad_data), init_quad, amr);
  return 0;
}

static void destroy(strata_amr *amr)
{
  if (amr->forest.ghost)
    p4est_ghost_destroy(amr->forest.ghost);
  if (amr->forest.p4est)
    p4est_destroy(amr->forest.p4est);
  if (amr->forest.conn)
    p4est_connectivity_destroy(amr->forest.conn);
  amr->forest.ghost = amr->forest.p4est = amr->forest.conn = NULL;
}

/* The leaves flagged 1 split, then 2:1 balance across faces, edges and
 * corners: the leaves it splits are replaced the same way. The caller
 * mirrors. */
static int refine(strata_amr *amr)
{
  store(amr);
  p4est_refine_ext(amr->forest.p4est, 0, amr->forest.root_level + amr->p.max_level,
                   wants_refinement, init_quad, replace);
  p4est_balance_ext(amr->forest.p4est, P4EST_CONNECT_FULL, init_quad, replace);
  return 0;
}

/* The families whose children all carry STRATA__AMR_MERGE, each on one
 * rank (for_coarsening). */
static int coarsen(strata_amr *amr)
{
  store(amr);
  p4est_coarsen_ext(amr->forest.p4est, 0, 0, wants_coarsening, init_quad, replace);
  return 0;
}

/* counts[r]: rank r's leaves now, moved so that no family is cut; whether
 * any moved (the same answer on every rank). */
static int for_coarsening(strata_amr *amr, int32_t *counts)
{
  const p4est_gloidx_t *first = ((p4est_t *)amr->forest.p4est)->global_first_quadrant;
  for (int r = 0; r < amr->size; r++)
    counts[r] = (int32_t)(first[r + 1] - first[r]);
  p4est_partition_for_coarsening(amr->forest.p4est, counts);
  int moved = 0;
  for (int r = 0; r < amr->size; r++)
    moved |= counts[r] != first[r + 1] - first[r];
  return moved;
}

static int moves_add(struct strata__amr_moves *mv, const struct strata__amr_move *m)
{
  int ret = strata__grow(&mv->m, mv->n, &mv->cap, sizeof *mv->m, 64);
  if (!ret)
    mv->m[mv->n++] = *m;
  return ret;
}

/* `counts[r]` leaves to rank r, in order. The leaves that leave this rank
 * and those that arrive, into *mv; the hash still shows the old partition
 * (the caller moves the handles, then mirrors). */
static int partition(strata_amr *amr, const int32_t *counts, struct strata__amr_moves *mv)
{
  p4est_t *p4est = amr->forest.p4est;
  const int me = amr->rank, size = amr->size;
  p4est_gloidx_t *old = malloc((size_t)(size + 1) * sizeof *old);
  if (!old)
    return STRATA_ENOMEM;
  memcpy(old, p4est->global_first_quadrant, (size_t)(size + 1) * sizeof *old);
  store(amr);
  p4est_partition_given(p4est, counts);
  const p4est_gloidx_t *now = p4est->global_first_quadrant;
  int ret = 0;
  for (int64_t g = old[me]; !ret && g < old[me + 1]; g++)
    if (g < now[me] || g >= now[me + 1])
      ret = moves_add(mv, &(struct strata__amr_move){.n = amr->leaves[g - old[me]],
                                                     .b = amr->leaves[g - old[me]]->b,
                                                     .pos = g,
                                                     .peer = owner_of(now, size, g)});
  int64_t g = now[me];
  for (p4est_topidx_t t = p4est->first_local_tree; !ret && t <= p4est->last_local_tree; t++) {
    sc_array_t *qs = &p4est_tree_array_index(p4est->trees, t)->quadrants;
    for (size_t k = 0; !ret && k < qs->elem_count; k++, g++) {
      if (g >= old[me] && g < old[me + 1])
        continue;
      const p4est_quadrant_t *q = p4est_quadrant_array_index(qs, k);
      ret = moves_add(mv, &(struct strata__amr_move){.b = block_of(amr, t, q),
                                                     .serial = data_of(q)->serial,
                                                     .unfilled = data_of(q)->unfilled,
                                                     .pos = g,
                                                     .peer = owner_of(old, size, g),
                                                     .arrives = 1});
    }
  }
  free(old);
  return ret;
}

static void memory(const strata_amr *amr, int64_t *forest, int64_t *connectivity)
{
  *forest = (int64_t)p4est_memory_used(amr->forest.p4est);
  if (amr->forest.ghost)
    *forest += (int64_t)p4est_ghost_memory_used(amr->forest.ghost);
  *connectivity = (int64_t)p4est_connectivity_memory_used(amr->forest.conn);
}

const struct strata__forest_ops FOREST(ops) = {
    .create = create,
    .destroy = destroy,
    .mirror = mirror_forest,
    .refine = refine,
    .coarsen = coarsen,
    .for_coarsening = for_coarsening,
    .partition = partition,
    .memory = memory,
};
