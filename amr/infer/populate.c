/* Phase 3, populate: the leaf-to-element transfers, packed into one message
 * per pair of ranks. */
#include "amr.h"
#include "infer_impl.h"

/* ---- transfers between leaves and elements ---- */

struct plan {
  strata_infer *inf;
  int64_t element;
  struct transfer *t;
  int64_t n, cap;
};

int64_t strata__infer_element_lo(const strata_infer *inf, const struct element *e, int a)
{
  return e->idx[a] * inf->n;
}

static int add_transfer(void *ctx, struct strata__amr_node *leaf)
{
  struct plan *pl = ctx;
  strata_infer *inf = pl->inf;
  if (pl->n == pl->cap) {
    int64_t cap = pl->cap ? 2 * pl->cap : 256;
    struct transfer *t = realloc(pl->t, (size_t)cap * sizeof *t);
    if (!t)
      return STRATA_ENOMEM;
    pl->t = t;
    pl->cap = cap;
  }
  const struct element *e = &inf->el[pl->element];
  const int li = inf->p.level_infer, l = leaf->b.level;
  const int64_t m = inf->amr->p.block_cells;
  struct transfer *t = &pl->t[pl->n++];
  *t = (struct transfer){.element = pl->element,
                         .leaf = leaf,
                         .kind = l == li  ? STRATA__AMR_COPY
                                 : l > li ? STRATA__AMR_RESTRICT
                                          : STRATA__AMR_PROLONG};
  for (int a = 0; a < 3; a++) {
    int64_t llo = l <= li ? (leaf->b.index[a] * m) << (li - l) : (leaf->b.index[a] * m) >> (l - li);
    int64_t lhi = l <= li ? ((leaf->b.index[a] + 1) * m) << (li - l)
                          : ((leaf->b.index[a] + 1) * m) >> (l - li);
    int64_t elo = strata__infer_element_lo(inf, e, a), ehi = elo + inf->n;
    t->lo[a] = llo > elo ? llo : elo;
    t->hi[a] = lhi < ehi ? lhi : ehi;
  }
  return 0;
}

int strata__infer_plan_transfers(strata_infer *inf, struct transfer **out, int64_t *n)
{
  struct plan pl = {.inf = inf};
  const int la = inf->p.level_array;
  const int64_t m = inf->amr->p.block_cells;
  int ret = 0;
  for (int64_t i = 0; i < inf->nel && !ret; i++) {
    pl.element = i;
    int64_t lo[3], hi[3];
    for (int a = 0; a < 3; a++) {
      lo[a] = inf->el[i].idx[a] * m;
      hi[a] = lo[a] + m;
    }
    ret = strata__amr_visit_box(inf->amr, la, lo, hi, add_transfer, &pl);
  }
  *out = pl.t;
  *n = pl.n;
  return ret;
}

int64_t strata__infer_cells_of(const int64_t lo[3], const int64_t hi[3])
{
  return (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
}

/* The transfer as the kernels see it, reading the leaf's own array: into
 * the element's channel array (the destination of x), plus, for
 * prolongation, the box of coarse cells it reads (packed across ranks). */
static void leaf_xfer(const strata_infer *inf, const struct transfer *t, struct strata__amr_xfer *x,
                      int64_t box_lo[3], int64_t box_n[3])
{
  const strata_amr *amr = inf->amr;
  const int64_t m = amr->p.block_cells, g = amr->p.ghost_depth, side = m + 2 * g;
  const int li = inf->p.level_infer, l = t->leaf->b.level;
  const struct element *e = &inf->el[t->element];
  *x = (struct strata__amr_xfer){.kind = t->kind,
                                 .dim = 3,
                                 .is_double = is_double(inf),
                                 .dst_float = 1,
                                 .factor = l == li ? 1 : 1 << (l > li ? l - li : li - l)};
  for (int a = 0; a < 3; a++) {
    const int64_t origin = t->leaf->b.index[a] * m - g; /* leaf array cell 0, leaf's level */
    x->count[a] = t->hi[a] - t->lo[a];
    x->dst_dims[a] = inf->n;
    x->dst_start[a] = t->lo[a] - strata__infer_element_lo(inf, e, a);
    x->src_dims[a] = side;
    if (t->kind == STRATA__AMR_COPY)
      x->src_start[a] = t->lo[a] - origin;
    else if (t->kind == STRATA__AMR_RESTRICT)
      x->src_start[a] = t->lo[a] * x->factor - origin;
    else
      x->src_start[a] = t->lo[a] - origin * x->factor;
    if (t->kind == STRATA__AMR_PROLONG) {
      const int64_t f = x->factor, q0 = x->src_start[a], q1 = q0 + x->count[a] - 1;
      box_lo[a] = strata__amr_prolong_cell(q0, (int)f);
      box_n[a] = strata__amr_prolong_cell(q1, (int)f) + 2 - box_lo[a];
    } else {
      box_lo[a] = 0;
      box_n[a] = x->count[a];
    }
  }
}

int64_t strata__infer_piece_cells(const strata_infer *inf, const struct transfer *t)
{
  struct strata__amr_xfer x;
  int64_t box_lo[3], box_n[3];
  leaf_xfer(inf, t, &x, box_lo, box_n);
  return box_n[0] * box_n[1] * box_n[2];
}

/* ---- messages: one mailbox per pair of ranks and phase ---- */

int strata__infer_open_mailbox(strata_infer *inf, struct strata__mailbox *mb, size_t elemsize,
                               int which)
{
  strata__tags mail;
  int64_t tag;
  memset(mb, 0, sizeof *mb);
  strata__tags_part(&inf->tags, 2, 4, &mail);
  int ret = strata__tag(&mail, inf->cycles * 4 + which, &tag);
  return ret ? ret : strata__mailbox_open(mb, inf->amr->comm, tag, elemsize);
}

/* ---- phase 3: populate ---- */

int strata__infer_submit_populate(strata_infer *inf, struct transfer *t, int64_t nt,
                                  strata_infer_stats *st)
{
  strata_amr *amr = inf->amr;
  const int me = amr->rank, nch = inf->p.n_fields;
  const int64_t cells = inf->n * inf->n * inf->n;
  struct strata__mailbox mb;
  int ret = strata__infer_open_mailbox(inf, &mb, amr_elemsize(inf), 0);
  for (int64_t k = 0; k < nt && !ret; k++) {
    int from = t[k].leaf->rank, to = inf->el[t[k].element].rank;
    t[k].offset = from == to ? -1
                             : strata__mailbox_reserve(&mb, from, to,
                                                       nch * strata__infer_piece_cells(inf, &t[k]));
  }
  if (!ret)
    ret = strata__mailbox_prepare(&mb);
  /* Pack: copies and restrictions of this rank's leaves, and the coarse
   * boxes that remote elements prolong from. */
  for (int64_t k = 0; k < nt && !ret; k++) {
    const struct element *e = &inf->el[t[k].element];
    if (t[k].leaf->rank != me || e->rank == me)
      continue;
    struct strata__amr_xfer x;
    int64_t box_lo[3], box_n[3];
    leaf_xfer(inf, &t[k], &x, box_lo, box_n);
    x.dst_float = 0;
    for (int a = 0; a < 3; a++) {
      x.dst_dims[a] = box_n[a];
      x.dst_start[a] = 0;
      if (t[k].kind == STRATA__AMR_PROLONG) {
        x.src_start[a] = box_lo[a];
        x.count[a] = box_n[a];
      }
    }
    if (t[k].kind == STRATA__AMR_PROLONG) {
      x.kind = STRATA__AMR_COPY;
      x.factor = 1;
    }
    const int64_t piece = box_n[0] * box_n[1] * box_n[2];
    for (int c = 0; c < nch && !ret; c++) {
      x.dst_offset = t[k].offset + c * piece;
      ret = strata__amr_xfer_submit(MPI_COMM_NULL, t[k].leaf->h[inf->p.fields[c]],
                                    mb.outbox[e->rank], &x);
    }
  }
  if (!ret)
    ret = strata__mailbox_post(&mb, &st->messages);
  /* Into this rank's elements: straight from local leaves, else from the
   * received pieces. */
  for (int64_t k = 0; k < nt && !ret; k++) {
    const struct element *e = &inf->el[t[k].element];
    if (e->rank != me)
      continue;
    st->transfers++;
    st->transfers_by_kind[t[k].kind]++;
    struct strata__amr_xfer x;
    int64_t box_lo[3], box_n[3];
    leaf_xfer(inf, &t[k], &x, box_lo, box_n);
    const int remote = t[k].leaf->rank != me;
    if (remote) {
      for (int a = 0; a < 3; a++) {
        x.src_dims[a] = box_n[a];
        x.src_start[a] =
            t[k].kind == STRATA__AMR_PROLONG ? x.src_start[a] - box_lo[a] * x.factor : 0;
      }
      if (t[k].kind == STRATA__AMR_RESTRICT) {
        x.kind = STRATA__AMR_COPY;
        x.factor = 1;
      }
    }
    const int64_t piece = box_n[0] * box_n[1] * box_n[2];
    for (int c = 0; c < nch && !ret; c++) {
      x.dst_offset = c * cells;
      x.src_offset = remote ? t[k].offset + c * piece : 0;
      ret = strata__amr_xfer_submit(
          MPI_COMM_NULL, remote ? mb.inbox[t[k].leaf->rank] : t[k].leaf->h[inf->p.fields[c]], e->in,
          &x);
    }
  }
  strata__mailbox_close(&mb);
  for (int64_t i = 0; i < inf->nel; i++)
    if (inf->el[i].rank == me)
      strata__infer_note_phase_end(inf, STRATA_INFER_POPULATE, inf->el[i].in);
  return ret;
}
