/* Phase 3, populate: the leaf-to-element transfers, packed into one message
 * per pair of ranks. */
#include "amr.h"
#include "infer_impl.h"

/* ---- transfers between leaves and elements ---- */

int64_t strata__infer_element_lo(const strata_infer *inf, const struct element *e, int a)
{
  return e->idx[a] * inf->n;
}

/* The transfer between local leaf `leaf` and element i: the overlap in
 * cells of level_infer. */
static struct transfer transfer_of(const strata_infer *inf, int64_t i,
                                   const struct strata__mesh_leaf *leaf)
{
  const struct element *e = &inf->el[i];
  const int li = inf->p.level_infer, l = leaf->b.level;
  const int64_t m = inf->mesh->p.block_cells;
  struct transfer t = {.element = i,
                       .leaf = leaf->b,
                       .leaf_key = leaf->key,
                       .leaf_rank = inf->mesh->rank,
                       .local = leaf,
                       .kind = l == li  ? STRATA__AMR_COPY
                               : l > li ? STRATA__AMR_RESTRICT
                                        : STRATA__AMR_PROLONG};
  for (int a = 0; a < 3; a++) {
    int64_t llo = l <= li ? (leaf->b.index[a] * m) << (li - l) : (leaf->b.index[a] * m) >> (l - li);
    int64_t lhi = l <= li ? ((leaf->b.index[a] + 1) * m) << (li - l)
                          : ((leaf->b.index[a] + 1) * m) >> (l - li);
    int64_t elo = strata__infer_element_lo(inf, e, a), ehi = elo + inf->n;
    t.lo[a] = llo > elo ? llo : elo;
    t.hi[a] = lhi < ehi ? lhi : ehi;
  }
  return t;
}

/* Transfer order: element, then leaf level and key. */
static int transfer_cmp(const void *x, const void *y)
{
  const struct transfer *a = x, *b = y;
  if (a->element != b->element)
    return a->element < b->element ? -1 : 1;
  return strata__block_cmp(&a->leaf, a->leaf_key, &b->leaf, b->leaf_key);
}

int strata__infer_plan_transfers(strata_infer *inf, struct transfer **out, int64_t *n)
{
  const strata_mesh *mesh = inf->mesh;
  const int la = inf->p.level_array;
  struct transfer *t = NULL;
  int64_t nt = 0, cap = 0;
  for (int64_t i = 0; i < mesh->nleaves; i++) {
    const struct strata__mesh_leaf *leaf = &mesh->leaves[i];
    /* The elements the leaf overlaps: its ancestor at level_array, or
     * the 2^(level_array - level) per axis below it. */
    const int l = leaf->b.level;
    const int64_t span = l < la ? (int64_t)1 << (la - l) : 1;
    int64_t first[3];
    for (int a = 0; a < 3; a++)
      first[a] = l < la ? leaf->b.index[a] << (la - l) : leaf->b.index[a] >> (l - la);
    for (int64_t c = 0; c < span * span * span; c++) {
      const int64_t idx[3] = {first[0] + c % span, first[1] + c / span % span,
                              first[2] + c / (span * span)};
      const struct element *e = strata__infer_find_element(inf, idx);
      if (!e)
        continue;
      if (strata__grow(&t, nt, &cap, sizeof *t, 256)) {
        free(t);
        return STRATA_ENOMEM;
      }
      t[nt++] = transfer_of(inf, e - inf->el, leaf);
    }
  }
  if (nt)
    qsort(t, (size_t)nt, sizeof *t, transfer_cmp);
  *out = t;
  *n = nt;
  return 0;
}

/* A transfer's description between ranks. */
enum {
  D_ELEMENT, /* its position in the level array */
  D_RANK,    /* the leaf's */
  D_LEVEL,
  D_INDEX,
  D_KIND = D_INDEX + 3,
  D_LO,
  D_HI = D_LO + 3,
  D_WIDTH = D_HI + 3
};

int strata__infer_share_transfers(strata_infer *inf, struct transfer **t, int64_t *nt)
{
  const strata_mesh *mesh = inf->mesh;
  const int me = mesh->rank;
  int64_t *send = malloc((size_t)(*nt + 1) * D_WIDTH * sizeof *send), nsend = 0;
  int *dest = malloc((size_t)(*nt + 1) * sizeof *dest);
  const int local = send && dest ? 0 : STRATA_ENOMEM; /* agreed in the exchange */
  for (int64_t k = 0; !local && k < *nt; k++) {
    const struct transfer *x = &(*t)[k];
    const int to = inf->el[x->element].rank;
    if (to == me) /* this rank's own elements need no description */
      continue;
    int64_t *d = send + nsend * D_WIDTH;
    d[D_ELEMENT] = inf->el[x->element].pos, d[D_RANK] = me, d[D_LEVEL] = x->leaf.level,
    d[D_KIND] = x->kind;
    for (int a = 0; a < 3; a++)
      d[D_INDEX + a] = x->leaf.index[a], d[D_LO + a] = x->lo[a], d[D_HI + a] = x->hi[a];
    dest[nsend++] = to;
  }
  int64_t *got = NULL, ngot = 0;
  int ret =
      strata__exchange_records(mesh->meta, local, send, dest, nsend, D_WIDTH, &got, &ngot, NULL);
  free(send), free(dest);
  struct transfer *all = ret ? NULL : malloc((size_t)(*nt + ngot + 1) * sizeof *all);
  if (!ret)
    ret = strata__agree(all ? 0 : STRATA_ENOMEM, NULL, 0);
  if (ret) {
    free(got);
    return ret;
  }
  /* This rank's leaves' transfers, all kept (the leaf side sends), then
   * the received ones. */
  if (*nt) /* *t is NULL without transfers */
    memcpy(all, *t, (size_t)*nt * sizeof *all);
  int64_t n = *nt;
  for (int64_t k = 0; k < ngot; k++) {
    const int64_t *d = got + k * D_WIDTH;
    const struct element *e = strata__infer_element_at(inf, d[D_ELEMENT]); /* its own */
    struct transfer x = {.element = e - inf->el,
                         .leaf = {.level = (int)d[D_LEVEL]},
                         .kind = (int)d[D_KIND],
                         .leaf_rank = (int)d[D_RANK]};
    for (int a = 0; a < 3; a++)
      x.leaf.index[a] = d[D_INDEX + a], x.lo[a] = d[D_LO + a], x.hi[a] = d[D_HI + a];
    x.leaf_key = strata__morton(x.leaf.index);
    all[n++] = x;
  }
  free(got);
  free(*t);
  qsort(all, (size_t)n, sizeof *all, transfer_cmp);
  *t = all;
  *nt = n;
  return 0;
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
  const strata_mesh *mesh = inf->mesh;
  const int64_t m = mesh->p.block_cells, g = mesh->p.ghost_depth, side = m + 2 * g;
  const int li = inf->p.level_infer, l = t->leaf.level;
  const struct element *e = &inf->el[t->element];
  *x = (struct strata__amr_xfer){.kind = t->kind,
                                 .dim = 3,
                                 .is_double = is_double(inf),
                                 .dst_float = 1,
                                 .factor = l == li ? 1 : 1 << (l > li ? l - li : li - l)};
  for (int a = 0; a < 3; a++) {
    const int64_t origin = t->leaf.index[a] * m - g; /* leaf array cell 0, leaf's level */
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

double strata__infer_transfer_seconds(const strata_infer *inf, const struct transfer *t,
                                      int workerid, double *work_cells)
{
  struct strata__amr_xfer x;
  int64_t box_lo[3], box_n[3];
  leaf_xfer(inf, t, &x, box_lo, box_n);
  const double f = x.kind == STRATA__AMR_RESTRICT ? (double)x.factor : 1;
  *work_cells = (double)(inf->p.n_fields * strata__infer_cells_of(t->lo, t->hi)) * f * f * f;
  return inf->p.n_fields * strata__amr_xfer_expected_seconds(&x, workerid);
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
  return ret ? ret : strata__mailbox_open(mb, inf->mesh->comm, tag, elemsize);
}

/* ---- phase 3: populate ---- */

int strata__infer_submit_populate(strata_infer *inf, struct transfer *t, int64_t nt,
                                  strata_infer_stats *st)
{
  const int me = inf->mesh->rank, nch = inf->p.n_fields;
  const int64_t cells = inf->n * inf->n * inf->n;
  struct strata__mailbox mb;
  int ret = strata__infer_open_mailbox(inf, &mb, amr_elemsize(inf), 0);
  for (int64_t k = 0; k < nt && !ret; k++) {
    int from = t[k].leaf_rank, to = inf->el[t[k].element].rank;
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
    if (t[k].leaf_rank != me || e->rank == me)
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
      ret = strata__amr_pack_submit(t[k].local->h[inf->p.fields[c]], mb.outbox[e->rank], &x,
                                    &inf->xfer_cpu_ns);
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
    const int remote = t[k].leaf_rank != me;
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
          MPI_COMM_NULL, remote ? mb.inbox[t[k].leaf_rank] : t[k].local->h[inf->p.fields[c]], e->in,
          &x, &inf->xfer_cpu_ns);
    }
  }
  strata__mailbox_close(&mb);
  for (int64_t i = 0; i < inf->nel; i++)
    if (inf->el[i].rank == me)
      strata__infer_note_phase_end(inf, STRATA_INFER_POPULATE, inf->el[i].in);
  return ret;
}
