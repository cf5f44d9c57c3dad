/* Phase 1, evaluate: criterion masks of the leaves, merged up the tree. */
#include "amr.h"
#include "infer.h"
#include "infer_impl.h"

/* ---- phase 1: evaluate ---- */

int strata__infer_block_cmp(const strata_amr_block *a, uint64_t ka, const strata_amr_block *b,
                            uint64_t kb)
{
  if (a->level != b->level)
    return a->level < b->level ? -1 : 1;
  return ka < kb ? -1 : ka > kb;
}

static int mask_cmp(const void *x, const void *y)
{
  const struct mask *a = x, *b = y;
  int c = strata__infer_block_cmp(&a->b, a->key, &b->b, b->key);
  return c ? c : (a->first > b->first) - (a->first < b->first);
}

struct mask *strata__infer_find_mask(const strata_infer *inf, const strata_amr_block *b)
{
  struct mask key = {.b = *b, .key = morton(b->index), .first = -1};
  int64_t lo = 0, hi = inf->nmasks;
  while (lo < hi) {
    int64_t mid = (lo + hi) / 2;
    int c = strata__infer_block_cmp(&inf->masks[mid].b, inf->masks[mid].key, &key.b, key.key);
    if (!c)
      return &inf->masks[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

static int64_t mask_cells(const strata_infer *inf, int level)
{
  return level >= inf->p.level_array ? 1 : (int64_t)1 << (inf->p.level_array - level);
}

/* The masks: every leaf at level >= level_base and its ancestors down to
 * level_base, sorted by level then Morton key, owned by their first leaf's
 * rank. */
static int plan_masks(strata_infer *inf)
{
  const strata_amr *amr = inf->amr;
  const int lb = inf->p.level_base;
  int64_t cap = 0;
  for (int64_t i = 0; i < amr->nleaves; i++)
    if (amr->leaves[i]->b.level >= lb)
      cap += amr->leaves[i]->b.level - lb + 1;
  inf->masks = calloc((size_t)(cap ? cap : 1), sizeof *inf->masks);
  if (!inf->masks)
    return STRATA_ENOMEM;
  int64_t n = 0;
  for (int64_t i = 0; i < amr->nleaves; i++) {
    const struct strata__amr_node *leaf = amr->leaves[i];
    strata_amr_block b = leaf->b;
    for (; b.level >= lb; b.level--) {
      inf->masks[n++] =
          (struct mask){.b = b, .key = morton(b.index), .first = leaf->pos, .rank = leaf->rank};
      for (int a = 0; a < 3; a++)
        b.index[a] >>= 1;
    }
  }
  qsort(inf->masks, (size_t)n, sizeof *inf->masks, mask_cmp);
  int64_t u = 0;
  for (int64_t i = 0; i < n; i++)
    if (!u || strata__infer_block_cmp(&inf->masks[u - 1].b, inf->masks[u - 1].key, &inf->masks[i].b,
                                      inf->masks[i].key))
      inf->masks[u++] = inf->masks[i]; /* the first of equals has the smallest position */
  inf->nmasks = u;
  return 0;
}

/* Mask i of this cycle's tag; at most 2^26 masks a cycle. */
static int mask_tag(const strata_infer *inf, int64_t i, int64_t *tag)
{
  strata__tags masks;
  strata__tags_part(&inf->tags, 1, 4, &masks);
  if (i >= (INT64_C(1) << 26))
    return strata__fail(STRATA_ENOMEM, "infer: more than 2^26 criterion masks");
  return strata__tag(&masks, (inf->cycles << 26) + i, tag);
}

int strata__infer_submit_evaluate(strata_infer *inf)
{
  strata_amr *amr = inf->amr;
  int64_t last_tag;
  int ret = plan_masks(inf);
  if (!ret && inf->nmasks)
    ret = mask_tag(inf, inf->nmasks - 1, &last_tag);
  for (int64_t i = 0; i < inf->nmasks && !ret; i++) {
    struct mask *m = &inf->masks[i];
    m->cells = mask_cells(inf, m->b.level);
    int64_t tag;
    mask_tag(inf, i, &tag); /* checked for the last mask below */
    starpu_vector_data_register(&m->h, -1, 0, (uint32_t)(m->cells * m->cells * m->cells), 1);
    starpu_mpi_data_register(m->h, tag, m->rank);
    struct strata__amr_node *node = strata__amr_find(amr, &m->b);
    if (node && node->is_leaf) {
      struct strata__infer_criterion c = {.is_double = is_double(inf),
                                          .ghost = amr->p.ghost_depth,
                                          .cells = amr->p.block_cells,
                                          .mask = m->cells,
                                          .local_mean = inf->p.reference == STRATA_INFER_BLOCK_MEAN,
                                          .threshold = inf->p.overdensity_threshold,
                                          .reference = inf->p.reference_value};
      ret = strata__infer_criterion_submit(amr->comm, node->h[inf->p.criterion_field], m->h, &c);
    } else {
      struct strata__amr_fill zero = {0};
      ret = strata__amr_fill_submit(amr->comm, m->h, &zero);
    }
  }
  /* Children into parents, finest level first, so that a parent is
   * complete before it merges into its own parent. */
  for (int64_t i = inf->nmasks - 1; i >= 0 && !ret; i--) {
    const struct mask *child = &inf->masks[i];
    if (child->b.level == inf->p.level_base)
      break;
    strata_amr_block pb = child->b;
    pb.level--;
    struct strata__infer_merge mg = {.child = child->cells};
    for (int a = 0; a < 3; a++) {
      pb.index[a] >>= 1;
      mg.offset[a] = pb.level >= inf->p.level_array ? 0 : (child->b.index[a] & 1) * child->cells;
    }
    const struct mask *parent = strata__infer_find_mask(inf, &pb);
    mg.parent = parent->cells;
    ret = strata__infer_merge_submit(amr->comm, child->h, parent->h, &mg);
  }
  /* The marker field restarts from zero every cycle. */
  for (int64_t i = 0; i < amr->nleaves && !ret && inf->p.marker_field >= 0; i++)
    if (amr->leaves[i]->rank == amr->rank) {
      struct strata__amr_fill zero = {0};
      ret = strata__amr_fill_submit(MPI_COMM_NULL, amr->leaves[i]->h[inf->p.marker_field], &zero);
    }
  return ret;
}
