/* p4est quadrants as the leaves of a Strata mesh (strata/mesh.h): the
 * naming and the description that a p8est application needs, shared by
 * examples/p4est_infer.c and the p4est path of bench/infer.c. The forest
 * is a brick of trees (p8est_connectivity_new_brick), one tree per root
 * block, and each quadrant's user data holds its blocks. */
#ifndef STRATA_EXAMPLES_P4EST_MESH_H
#define STRATA_EXAMPLES_P4EST_MESH_H

#include <p8est_extended.h>
#include <p8est_iterate.h>
#include <strata/mesh.h>

/* Level and index of quadrant q of tree t: the tree's brick coordinates
 * (its first vertex) times 2^level, plus the quadrant's coordinates at
 * its level. */
static inline void p4est_mesh_name(const p8est_t *p, p4est_topidx_t t, const p8est_quadrant_t *q,
                                   strata_amr_block *b)
{
  const p8est_connectivity_t *conn = p->connectivity;
  const double *corner = conn->vertices + 3 * conn->tree_to_vertex[P8EST_CHILDREN * t];
  const p4est_qcoord_t xyz[3] = {q->x, q->y, q->z};
  b->level = q->level;
  for (int a = 0; a < 3; a++)
    b->index[a] = ((int64_t)corner[a] << q->level) + (xyz[a] >> (P8EST_MAXLEVEL - q->level));
}

/* fn(ctx, quadrant, its name) on each local quadrant, through p4est's own
 * iterator. */
typedef void (*p4est_mesh_fn)(void *ctx, p8est_quadrant_t *q, const strata_amr_block *b);

struct p4est_mesh_visit {
  p4est_mesh_fn fn;
  void *ctx;
};

static inline void p4est_mesh_volume(p8est_iter_volume_info_t *info, void *user)
{
  const struct p4est_mesh_visit *v = user;
  strata_amr_block b;
  p4est_mesh_name(info->p4est, info->treeid, info->quad, &b);
  v->fn(v->ctx, info->quad, &b);
}

static inline void p4est_mesh_each(p8est_t *p, p4est_mesh_fn fn, void *ctx)
{
  struct p4est_mesh_visit v = {fn, ctx};
  p8est_iterate(p, NULL, &v, p4est_mesh_volume, NULL, NULL, NULL);
}

/* A description in progress: the first error, and where each quadrant's
 * fields lie in its user data. */
struct p4est_mesh_description {
  strata_mesh *mesh;
  void (*fields)(void *user_data, void **out);
  int ret;
};

static inline void p4est_mesh_add(void *ctx, p8est_quadrant_t *q, const strata_amr_block *b)
{
  struct p4est_mesh_description *d = ctx;
  void *ptrs[STRATA_AMR_MAX_FIELDS];
  d->fields(q->p.user_data, ptrs);
  if (!d->ret)
    d->ret = strata_mesh_add_leaf(d->mesh, b->level, b->index, ptrs);
}

/* Each rank's quadrants described anew (after every re-mesh):
 * strata_mesh_begin, one strata_mesh_add_leaf per local quadrant with the
 * addresses `fields` gives for its user data, strata_mesh_commit
 * (collective: every rank calls it, whatever happened before). */
static inline int p4est_mesh_describe(p8est_t *p, strata_mesh *mesh,
                                      void (*fields)(void *user_data, void **out))
{
  struct p4est_mesh_description d = {mesh, fields, strata_mesh_begin(mesh)};
  p4est_mesh_each(p, p4est_mesh_add, &d);
  int commit = strata_mesh_commit(mesh);
  return d.ret ? d.ret : commit;
}

#endif
