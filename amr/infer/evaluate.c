/* Phase 1, evaluate: criterion masks of this rank's leaves. */
#include "amr.h"
#include "infer.h"
#include "infer_impl.h"

/* ---- phase 1: evaluate ---- */

static int mask_cmp(const void *x, const void *y)
{
  const struct mask *a = x, *b = y;
  return strata__block_cmp(&a->b, a->key, &b->b, b->key);
}

struct mask *strata__infer_find_mask(const strata_infer *inf, const strata_amr_block *b)
{
  if (!inf->nmasks) /* masks is NULL before the first cycle */
    return NULL;
  struct mask key = {.b = *b, .key = strata__morton(b->index)};
  return bsearch(&key, inf->masks, (size_t)inf->nmasks, sizeof *inf->masks, mask_cmp);
}

static int64_t mask_cells(const strata_infer *inf, int level)
{
  return level >= inf->p.level_array ? 1 : (int64_t)1 << (inf->p.level_array - level);
}

/* A criterion task per local leaf at level >= level_base into its mask
 * (the mesh's leaves are sorted by level and key, and so are the masks),
 * and the marker field zeroed. */
int strata__infer_submit_evaluate(strata_infer *inf)
{
  const strata_mesh *mesh = inf->mesh;
  inf->masks = calloc((size_t)(mesh->nleaves + 1), sizeof *inf->masks);
  if (!inf->masks)
    return STRATA_ENOMEM;
  int ret = 0;
  for (int64_t i = 0; i < mesh->nleaves && !ret; i++) {
    const struct strata__mesh_leaf *leaf = &mesh->leaves[i];
    if (inf->p.marker_field >= 0) { /* the marker restarts from zero every cycle */
      struct strata__amr_fill zero = {0};
      ret = strata__amr_fill_submit(MPI_COMM_NULL, leaf->h[inf->p.marker_field], &zero);
    }
    if (ret || leaf->b.level < inf->p.level_base)
      continue;
    struct mask *m = &inf->masks[inf->nmasks++];
    *m = (struct mask){.b = leaf->b, .key = leaf->key, .cells = mask_cells(inf, leaf->b.level)};
    starpu_vector_data_register(&m->h, -1, 0, (uint32_t)(m->cells * m->cells * m->cells), 1);
    struct strata__infer_criterion c = {.is_double = is_double(inf),
                                        .ghost = mesh->p.ghost_depth,
                                        .cells = mesh->p.block_cells,
                                        .mask = m->cells,
                                        .local_mean = inf->p.reference == STRATA_INFER_BLOCK_MEAN,
                                        .threshold = inf->p.overdensity_threshold,
                                        .reference = inf->p.reference_value};
    ret = strata__infer_criterion_submit(leaf->h[inf->p.criterion_field], m->h, &c);
  }
  return ret;
}
