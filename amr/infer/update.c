/* Phases 4 and 5: the model and bubble extraction on each element, then the
 * bubbles back to the leaves. */
#include "amr.h"
#include "bubbles.h"
#include "infer.h"
#include "infer_impl.h"

/* ---- phase 4: apply inference ---- */

int strata__infer_submit_apply(strata_infer *inf)
{
  const strata_mesh *mesh = inf->mesh;
  const double h = array_cell(inf);
  int ret = 0;
  for (int64_t i = 0; i < inf->nel && !ret; i++) {
    struct element *e = &inf->el[i];
    if (e->rank != mesh->rank)
      continue;
    ret = strata__model_submit_handles(inf->p.model, inf->n, e->in, e->out);
    struct strata__bubble_params bp = inf->bubble;
    bp.cell_size = h;
    for (int a = 0; a < 3; a++)
      bp.origin[a] = mesh->p.lower[a] + (double)strata__infer_element_lo(inf, e, a) * h;
    /* Each extraction as soon as its model is done: the faces another
     * rank's links need do not wait for every queued model. */
    int previous = strata__submit_priority(STRATA__PRIO_DOWNSTREAM);
    if (!ret)
      ret = strata__bubbles_submit(e->out, e->table, inf->bubble_scratch, e->faces, &bp);
    strata__submit_priority(previous);
    strata__infer_note_phase_end(inf, STRATA_INFER_APPLY, e->table);
  }
  int previous = strata__submit_priority(STRATA__PRIO_DOWNSTREAM);
  if (!ret)
    ret = strata__infer_submit_links(inf);
  strata__submit_priority(previous);
  return ret;
}

/* ---- phase 5: update blocks ---- */

static int list_cmp(const void *x, const void *y)
{
  const struct leaf_list *a = x, *b = y;
  return strata__block_cmp(&a->b, a->key, &b->b, b->key);
}

struct leaf_list *strata__infer_find_list(const strata_infer *inf, const strata_amr_block *b)
{
  struct leaf_list key = {.b = *b, .key = strata__morton(b->index)};
  return bsearch(&key, inf->lists, (size_t)inf->nlists, sizeof *inf->lists, list_cmp);
}

/* A zeroed bubble list for every local leaf that an element reaches. */
static int make_lists(strata_infer *inf, const struct transfer *t, int64_t nt)
{
  inf->lists = calloc((size_t)(nt ? nt : 1), sizeof *inf->lists);
  if (!inf->lists)
    return STRATA_ENOMEM;
  int64_t n = 0;
  for (int64_t k = 0; k < nt; k++)
    if (t[k].local)
      inf->lists[n++] = (struct leaf_list){.b = t[k].leaf, .key = t[k].leaf_key};
  inf->nlists = strata__amr_sort_unique(inf->lists, n, sizeof *inf->lists, list_cmp);
  int ret = 0;
  for (int64_t i = 0; i < inf->nlists && !ret; i++) {
    starpu_vector_data_register(&inf->lists[i].h, -1, 0, (uint32_t)table_len(inf), sizeof(double));
    struct strata__amr_fill zero = {0};
    ret = strata__amr_fill_submit(MPI_COMM_NULL, inf->lists[i].h, &zero);
  }
  return ret;
}

static int submit_update(strata_infer *inf, struct transfer *t, int64_t nt, strata_infer_stats *st)
{
  const strata_mesh *mesh = inf->mesh;
  const int me = mesh->rank;
  const int64_t len = table_len(inf), m = mesh->p.block_cells;
  int ret = make_lists(inf, t, nt);
  if (ret)
    return ret;
  struct strata__mailbox mb;
  ret = strata__infer_open_mailbox(inf, &mb, sizeof(double), 1);
  for (int64_t k = 0; k < nt && !ret; k++) {
    int from = inf->el[t[k].element].rank, to = t[k].leaf_rank;
    t[k].offset = from == to ? -1 : strata__mailbox_reserve(&mb, from, to, len);
  }
  if (!ret)
    ret = strata__mailbox_prepare(&mb);
  struct strata__amr_xfer copy = {.kind = STRATA__AMR_COPY,
                                  .dim = 1,
                                  .factor = 1,
                                  .is_double = 1,
                                  .count = {len, 1, 1},
                                  .dst_dims = {len, 1, 1},
                                  .src_dims = {len, 1, 1}};
  for (int64_t k = 0; k < nt && !ret; k++) {
    const struct element *e = &inf->el[t[k].element];
    if (e->rank != me || t[k].leaf_rank == me)
      continue;
    copy.dst_offset = t[k].offset;
    ret = strata__amr_pack_submit(e->table, mb.outbox[t[k].leaf_rank], &copy, &inf->xfer_cpu_ns);
  }
  if (!ret)
    ret = strata__mailbox_post(&mb, &st->messages);
  const double h_array = array_edge(inf);
  for (int64_t k = 0; k < nt && !ret; k++) {
    const struct strata__mesh_leaf *leaf = t[k].local;
    const struct element *e = &inf->el[t[k].element];
    if (!leaf)
      continue;
    const double h = strata__mesh_cell(mesh, leaf->b.level);
    struct strata__infer_mark mk = {.is_double = is_double(inf),
                                    .ghost = mesh->p.ghost_depth,
                                    .cells = m,
                                    .h = h,
                                    .columns = strata__bubble_columns(inf->bubble.values),
                                    .table_offset = e->rank == me ? 0 : t[k].offset,
                                    .table_capacity = inf->p.bubble_capacity,
                                    .list_capacity = inf->p.bubble_capacity};
    for (int a = 0; a < 3; a++) {
      mk.lower[a] = mesh->p.lower[a] + (double)(leaf->b.index[a] * m) * h;
      mk.array_lo[a] = mesh->p.lower[a] + (double)e->idx[a] * h_array;
      mk.array_hi[a] = mesh->p.lower[a] + (double)(e->idx[a] + 1) * h_array;
    }
    ret = strata__infer_mark_submit(
        e->rank == me ? e->table : mb.inbox[e->rank], strata__infer_find_list(inf, &leaf->b)->h,
        inf->p.marker_field >= 0 ? leaf->h[inf->p.marker_field] : NULL, &mk);
  }
  strata__mailbox_close(&mb);
  for (int64_t i = 0; i < inf->nlists; i++)
    strata__infer_note_phase_end(inf, STRATA_INFER_UPDATE, inf->lists[i].h);
  return ret;
}

/* The marks and their messages are downstream of the models too. */
int strata__infer_submit_update(strata_infer *inf, struct transfer *t, int64_t nt,
                                strata_infer_stats *st)
{
  int previous = strata__submit_priority(STRATA__PRIO_DOWNSTREAM);
  int ret = submit_update(inf, t, nt, st);
  strata__submit_priority(previous);
  return ret;
}
