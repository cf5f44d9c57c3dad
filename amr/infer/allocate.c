/* Phase 2, allocate: the level array's element set and what each rank knows
 * of it.
 *
 * No rank holds the whole array. A directory spread over the ranks, each
 * with an equal range of Morton keys, agrees on the element set: every rank
 * sends it the elements its leaves overlap, marked or not, and the
 * directory keeps the marked ones, places them (placement.c), numbers
 * their handles and answers. Each rank then knows the elements its leaves
 * overlap (its transfers), its own, and every element within two of its
 * own (the links between arrays: a links task involves an element, its
 * forward neighbours and their owners). Its share of the directory grows
 * with the key range, what it knows with its leaves and elements: neither
 * with the whole array. */
#include "amr.h"
#include "infer_impl.h"

static int element_cmp(const void *x, const void *y)
{
  const struct element *a = x, *b = y;
  return (a->key > b->key) - (a->key < b->key);
}

struct element *strata__infer_find_element(const strata_infer *inf, const int64_t idx[3])
{
  struct element key = {.key = strata__morton(idx)};
  if (!inf->nel) /* el is NULL before the first cycle */
    return NULL;
  return bsearch(&key, inf->el, (size_t)inf->nel, sizeof *inf->el, element_cmp);
}

static int pos_cmp(const void *x, const void *y)
{
  const struct element *a = x, *b = y;
  return (a->pos > b->pos) - (a->pos < b->pos);
}

struct element *strata__infer_element_at(const strata_infer *inf, int64_t pos)
{
  struct element key = {.pos = pos};
  if (!inf->nel)
    return NULL;
  return bsearch(&key, inf->el, (size_t)inf->nel, sizeof *inf->el, pos_cmp);
}

int strata__infer_allgather_values(const strata_mesh *mesh, const void *mine, int64_t n,
                                   MPI_Datatype type, void **all, int64_t *total)
{
  int *counts = calloc((size_t)mesh->size, sizeof *counts);
  int *displs = calloc((size_t)mesh->size, sizeof *displs);
  int ret = strata__agree(counts && displs ? 0 : STRATA_ENOMEM, NULL, 0);
  *all = NULL;
  *total = 0;
  if (!ret) {
    int mine_count = (int)n;
    MPI_Allgather(&mine_count, 1, MPI_INT, counts, 1, MPI_INT, mesh->meta);
    for (int r = 0; r < mesh->size; r++) {
      displs[r] = (int)*total;
      *total += counts[r];
    }
    *all = malloc((size_t)(*total + 1) * 8);
    ret = strata__agree(*all ? 0 : STRATA_ENOMEM, NULL, 0);
  }
  if (!ret)
    MPI_Allgatherv(mine, (int)n, type, *all, counts, displs, type, mesh->meta);
  else {
    free(*all);
    *all = NULL;
  }
  free(counts);
  free(displs);
  return ret;
}

/* ---- element handles ---- */

/* An element's handles, in the order of their StarPU-MPI tags: its input,
 * output, bubble table, border faces and links. */
enum { H_IN, H_OUT, H_TABLE, H_FACES, H_LINKS, ELEMENT_HANDLES };

static starpu_data_handle_t *element_slot(struct element *e, int k)
{
  starpu_data_handle_t *slots[ELEMENT_HANDLES] = {&e->in, &e->out, &e->table, &e->faces, &e->links};
  return slots[k];
}

/* Handle k of e on this rank, registered the first time it is needed. */
static int register_handle(strata_infer *inf, struct element *e, int k)
{
  starpu_data_handle_t *h = element_slot(e, k);
  if (*h)
    return 0;
  const int64_t cells = inf->n * inf->n * inf->n;
  const int64_t count[ELEMENT_HANDLES] = {cells * inf->p.n_fields, cells * inf->bubble.channels,
                                          table_len(inf), 6 * inf->n * inf->n,
                                          2 * strata__bubble_link_slots(inf->n)};
  const size_t size[ELEMENT_HANDLES] = {sizeof(float), sizeof(float), sizeof(double),
                                        sizeof(int32_t), sizeof(int32_t)};
  strata__tags elements;
  int64_t tag;
  strata__tags_part(&inf->tags, 0, 4, &elements);
  int ret = strata__tag(&elements, e->serial * 8 + ELEMENT_HANDLES - 1, &tag);
  if (ret)
    return ret;
  starpu_vector_data_register(h, -1, 0, (uint32_t)count[k], size[k]);
  starpu_mpi_data_register(*h, tag - (ELEMENT_HANDLES - 1) + k, e->rank);
  return 0;
}

int strata__infer_link_handles(strata_infer *inf, struct element *e, int links)
{
  int ret = links ? register_handle(inf, e, H_LINKS) : 0;
  return ret ? ret : register_handle(inf, e, H_FACES);
}

void strata__infer_drop_element(struct element *e)
{
  for (int k = 0; k < ELEMENT_HANDLES; k++) {
    starpu_data_handle_t *h = element_slot(e, k);
    if (*h) {
      starpu_data_unregister_submit(*h);
      *h = NULL;
    }
  }
}

int64_t strata__infer_count_handles(strata_infer *inf)
{
  int64_t count = 0;
  for (int64_t i = 0; i < inf->nel; i++)
    for (int k = 0; k < ELEMENT_HANDLES; k++)
      count += *element_slot(&inf->el[i], k) != NULL;
  return count;
}

/* A new element (or one moved to another rank). Its owner registers every
 * handle; other ranks only what the links between arrays exchange with
 * theirs (strata__infer_submit_links), when they do, so that no rank holds
 * handles for the whole level array. */
static int register_element(strata_infer *inf, struct element *e)
{
  if (e->rank != inf->mesh->rank)
    return 0;
  int ret = 0;
  for (int k = 0; k < ELEMENT_HANDLES && !ret; k++)
    ret = register_handle(inf, e, k);
  if (ret)
    return ret;
  /* A first write, so that the transfers may read-modify-write it. */
  struct strata__amr_fill zero = {0};
  return strata__amr_fill_submit(MPI_COMM_NULL, e->in, &zero);
}

void strata__infer_drop_elements(strata_infer *inf)
{
  for (int64_t i = 0; i < inf->nel; i++)
    strata__infer_drop_element(&inf->el[i]);
  free(inf->el);
  free(inf->dir);
  free(inf->dir_firsts);
  free(inf->overlaps);
}

/* ---- requests to the directory and its answers ---- */

/* A request: an element's index, whether one of the sender's masks marks
 * it, the sender. */
enum { Q_IDX, Q_MARKED = 3, Q_RANK, Q_WIDTH };
/* An answer: an element's index, position, rank and serial (-1: not placed
 * yet). */
enum { A_IDX, A_POS = 3, A_RANK, A_SERIAL, A_WIDTH };

int strata__infer_directory_rank(const strata_infer *inf, uint64_t key)
{
  return (int)(key / inf->dir_keys);
}

int64_t *strata__infer_add_record(struct strata__infer_records *r, int dest)
{
  if (r->n == r->cap) {
    int64_t cap = 2 * r->cap + 256;
    int64_t *v = realloc(r->v, (size_t)(cap * r->width) * sizeof *v);
    if (v)
      r->v = v;
    int *d = v ? realloc(r->dest, (size_t)cap * sizeof *d) : NULL;
    if (!d)
      return NULL;
    r->dest = d, r->cap = cap;
  }
  r->dest[r->n] = dest;
  return r->v + r->width * r->n++;
}

void strata__infer_free_records(struct strata__infer_records *r)
{
  free(r->v);
  free(r->dest);
  r->v = NULL, r->dest = NULL, r->n = r->cap = 0;
}

int strata__infer_send_records(strata_infer *inf, int local, struct strata__infer_records *r,
                               int64_t **got, int64_t *ngot, int64_t *bytes)
{
  *got = NULL;
  *ngot = 0;
  int ret = strata__exchange_records(inf->mesh->meta, local, r->v, r->dest, r->n, r->width, got,
                                     ngot, &r->sent_everywhere);
  int64_t to_self = 0;
  for (int64_t i = 0; bytes && !ret && i < r->n; i++)
    to_self += r->dest[i] == inf->mesh->rank;
  if (bytes && !ret)
    *bytes += (*ngot - to_self) * r->width * 8;
  strata__infer_free_records(r);
  return ret; /* agreed, `local` included */
}

/* A growable list of element indices (triples). */
struct triples {
  int64_t *v;
  int64_t n, cap;
};

static int add_triple(struct triples *l, const int64_t idx[3])
{
  if (l->n == l->cap) {
    int64_t cap = 2 * l->cap + 256, *v = realloc(l->v, (size_t)(3 * cap) * sizeof *v);
    if (!v)
      return STRATA_ENOMEM;
    l->v = v, l->cap = cap;
  }
  memcpy(l->v + 3 * l->n++, idx, 3 * sizeof *idx);
  return 0;
}

static void sort_triples(struct triples *l)
{
  if (l->n)
    l->n = strata__amr_sort_unique(l->v, l->n, 3 * sizeof *l->v, strata__amr_compare_triples);
}

static int has_triple(const struct triples *l, const int64_t idx[3])
{
  return l->n && bsearch(idx, l->v, (size_t)l->n, 3 * sizeof *l->v, strata__amr_compare_triples);
}

/* Requests for the triples of `l` to their directory ranks, marked where
 * `marked` (sorted, or NULL) holds them. */
static int request(const strata_infer *inf, struct strata__infer_records *r,
                   const struct triples *l, const struct triples *marked)
{
  for (int64_t i = 0; i < l->n; i++) {
    const int64_t *idx = l->v + 3 * i;
    int64_t *q =
        strata__infer_add_record(r, strata__infer_directory_rank(inf, strata__morton(idx)));
    if (!q)
      return STRATA_ENOMEM;
    memcpy(q + Q_IDX, idx, 3 * sizeof *q);
    q[Q_MARKED] = marked && has_triple(marked, idx);
    q[Q_RANK] = inf->mesh->rank;
  }
  return 0;
}

/* The requests of this rank's leaves: each element a leaf overlaps, marked
 * when its level_base mask marks it. */
static int leaf_requests(strata_infer *inf, struct strata__infer_records *r)
{
  const int la = inf->p.level_array;
  struct triples marked = {0}, overlapped = {0};
  int ret = 0;
  for (int64_t i = 0; i < inf->nmasks && !ret; i++) {
    struct mask *m = &inf->masks[i];
    if (strata__acquire(m->h, STARPU_R) != 0) {
      ret = STRATA_ESTARPU;
      break;
    }
    const uint8_t *bits = (const void *)starpu_vector_get_local_ptr(m->h);
    const int finer = m->b.level > la ? m->b.level - la : 0;
    for (int64_t c = 0; c < m->cells * m->cells * m->cells && !ret; c++)
      if (bits[c]) {
        int64_t cell[3] = {c % m->cells, c / m->cells % m->cells, c / (m->cells * m->cells)},
                idx[3];
        for (int a = 0; a < 3; a++) /* the element holding this part of the leaf */
          idx[a] = (m->b.index[a] >> finer) * m->cells + cell[a];
        ret = add_triple(&marked, idx);
      }
    starpu_data_release(m->h);
  }
  /* A mask marks elements its leaf overlaps: the marked are among these. */
  const strata_mesh *mesh = inf->mesh;
  for (int64_t i = 0; i < mesh->nleaves && !ret; i++) {
    const strata_amr_block *b = &mesh->leaves[i].b;
    const int64_t span = b->level < la ? (int64_t)1 << (la - b->level) : 1;
    for (int64_t c = 0; c < span * span * span && !ret; c++) {
      int64_t idx[3] = {c % span, c / span % span, c / (span * span)};
      for (int a = 0; a < 3; a++)
        idx[a] += b->level < la ? b->index[a] << (la - b->level) : b->index[a] >> (b->level - la);
      ret = add_triple(&overlapped, idx);
    }
  }
  sort_triples(&marked);
  sort_triples(&overlapped);
  if (!ret)
    ret = request(inf, r, &overlapped, &marked);
  free(marked.v);
  free(overlapped.v);
  return ret;
}

void strata__infer_finest_cell(const strata_mesh *mesh, const double x[3], int64_t cell[3])
{
  const int top = mesh->p.max_level;
  for (int a = 0; a < 3; a++) {
    const int64_t cells = strata__mesh_blocks(mesh, a, top) * mesh->p.block_cells;
    const double scale = (double)cells / (mesh->p.upper[a] - mesh->p.lower[a]);
    cell[a] = (int64_t)floor((x[a] - mesh->p.lower[a]) * scale);
    cell[a] = cell[a] < 0 ? 0 : cell[a] >= cells ? cells - 1 : cell[a];
  }
}

static int overlap_cmp(const void *x, const void *y)
{
  const struct overlap *a = x, *b = y;
  if (a->key != b->key)
    return a->key < b->key ? -1 : 1;
  return (a->rank > b->rank) - (a->rank < b->rank);
}

/* Who overlaps each key of this directory range, from the requests. */
static int note_overlaps(strata_infer *inf, const int64_t *q, int64_t nq)
{
  struct overlap *o = malloc((size_t)(nq + 1) * sizeof *o);
  if (!o)
    return STRATA_ENOMEM;
  for (int64_t k = 0; k < nq; k++)
    o[k] = (struct overlap){strata__morton(q + k * Q_WIDTH + Q_IDX), (int)q[k * Q_WIDTH + Q_RANK]};
  free(inf->overlaps);
  inf->overlaps = o;
  inf->noverlaps = strata__amr_sort_unique(o, nq, sizeof *o, overlap_cmp);
  return 0;
}

static int entry_cmp(const void *x, const void *y)
{
  const struct directory_entry *a = x, *b = y;
  return (a->key > b->key) - (a->key < b->key);
}

static struct directory_entry *find_entry(const strata_infer *inf, const int64_t idx[3])
{
  struct directory_entry key = {.key = strata__morton(idx)};
  return inf->ndir ? bsearch(&key, inf->dir, (size_t)inf->ndir, sizeof *inf->dir, entry_cmp) : NULL;
}

/* The directory's range made of the marked elements among the requests:
 * kept entries keep their rank and serial, new ones are to be placed. */
static int update_directory(strata_infer *inf, const int64_t *q, int64_t nq, int64_t counts[2])
{
  struct directory_entry *next = malloc((size_t)(nq + 1) * sizeof *next);
  if (!next)
    return STRATA_ENOMEM;
  int64_t n = 0;
  for (int64_t k = 0; k < nq; k++)
    if (q[k * Q_WIDTH + Q_MARKED]) {
      struct directory_entry *e = &next[n++];
      *e = (struct directory_entry){.rank = -1, .serial = -1};
      memcpy(e->idx, q + k * Q_WIDTH + Q_IDX, sizeof e->idx);
      e->key = strata__morton(e->idx);
    }
  n = strata__amr_sort_unique(next, n, sizeof *next, entry_cmp);
  for (int64_t i = 0; i < n; i++) {
    const struct directory_entry *old = find_entry(inf, next[i].idx);
    if (old)
      next[i].rank = old->rank, next[i].serial = old->serial;
    else
      counts[0]++; /* created */
  }
  counts[1] += inf->ndir - (n - counts[0]); /* removed */
  free(inf->dir);
  inf->dir = next;
  inf->ndir = n;
  return 0;
}

/* Answer to `to` about entry e. */
static int answer(const strata_infer *inf, struct strata__infer_records *r,
                  const struct directory_entry *e, int to)
{
  int64_t *a = strata__infer_add_record(r, to);
  if (!a)
    return STRATA_ENOMEM;
  memcpy(a + A_IDX, e->idx, 3 * sizeof *a);
  a[A_POS] = inf->dir_first + (e - inf->dir);
  a[A_RANK] = e->rank;
  a[A_SERIAL] = e->serial;
  return 0;
}

/* Answers to the requests for elements that exist. */
static int answer_requests(const strata_infer *inf, const int64_t *q, int64_t nq,
                           struct strata__infer_records *r)
{
  int ret = 0;
  for (int64_t k = 0; k < nq && !ret; k++) {
    const struct directory_entry *e = find_entry(inf, q + k * Q_WIDTH + Q_IDX);
    if (e)
      ret = answer(inf, r, e, (int)q[k * Q_WIDTH + Q_RANK]);
  }
  return ret;
}

/* Elements from answers, in Morton order, one of each. */
static int elements_of(const int64_t *a, int64_t na, struct element **out, int64_t *n)
{
  struct element *el = calloc((size_t)(na + 1), sizeof *el);
  if (!el)
    return STRATA_ENOMEM;
  for (int64_t k = 0; k < na; k++) {
    const int64_t *x = a + k * A_WIDTH;
    struct element *e = &el[k];
    memcpy(e->idx, x + A_IDX, sizeof e->idx);
    e->key = strata__morton(e->idx);
    e->pos = x[A_POS];
    e->rank = (int)x[A_RANK];
    e->serial = x[A_SERIAL];
  }
  *n = strata__amr_sort_unique(el, na, sizeof *el, element_cmp);
  *out = el;
  return 0;
}

/* Every element index within two of this rank's own elements among the
 * answers `a` (periodic domains wrap), sorted. */
static int near_own(const strata_infer *inf, const int64_t *a, int64_t na, struct triples *near)
{
  const int periodic = inf->mesh->p.boundary == STRATA_AMR_PERIODIC;
  int ret = 0;
  for (int64_t i = 0; i < na && !ret; i++) {
    const int64_t *x = a + i * A_WIDTH;
    if (x[A_RANK] != inf->mesh->rank)
      continue;
    for (int d = 0; d < 125 && !ret; d++) {
      int64_t idx[3];
      int inside = 1;
      for (int k = 0, rest = d; k < 3; k++, rest /= 5) {
        const int64_t blocks = array_blocks(inf, k);
        idx[k] = x[A_IDX + k] + rest % 5 - 2;
        if (idx[k] < 0 || idx[k] >= blocks)
          idx[k] = periodic ? (idx[k] + 2 * blocks) % blocks : (inside = 0);
      }
      if (inside)
        ret = add_triple(near, idx);
    }
  }
  sort_triples(near);
  return ret;
}

/* Requests for the elements near this rank's own ones among the answers. */
static int neighbourhood_requests(strata_infer *inf, const int64_t *a, int64_t na,
                                  struct strata__infer_records *r)
{
  struct triples near = {0};
  int ret = near_own(inf, a, na, &near);
  if (!ret)
    ret = request(inf, r, &near, NULL);
  free(near.v);
  return ret;
}

/* Placed entries get serials of this directory rank (kept ones moved to
 * another rank too: populate overwrites all of an element's data, so
 * nothing moves, and its handles are registered anew there). */
static void apply_placement(strata_infer *inf, const int *ranks, strata_infer_stats *st)
{
  for (int64_t i = 0; i < inf->ndir; i++) {
    struct directory_entry *e = &inf->dir[i];
    if (e->serial >= 0) {
      st->kept++;
      if (e->rank == ranks[i])
        continue;
      st->migrated++;
    }
    e->rank = ranks[i];
    e->serial = inf->next_serial++ * inf->mesh->size + inf->mesh->rank;
  }
}

/* The new known list replaces the old: an element that keeps its serial
 * keeps its handles, the others' are dropped; this rank's new elements are
 * registered. */
static int adopt(strata_infer *inf, struct element *next, int64_t n)
{
  int64_t j = 0;
  for (int64_t i = 0; i < n; i++) {
    while (j < inf->nel && inf->el[j].key < next[i].key)
      strata__infer_drop_element(&inf->el[j++]);
    if (j < inf->nel && inf->el[j].key == next[i].key) {
      struct element *old = &inf->el[j++];
      if (old->serial == next[i].serial)
        for (int k = 0; k < ELEMENT_HANDLES; k++)
          *element_slot(&next[i], k) = *element_slot(old, k);
      else
        strata__infer_drop_element(old);
    }
  }
  for (; j < inf->nel; j++)
    strata__infer_drop_element(&inf->el[j]);
  free(inf->el);
  inf->el = next;
  inf->nel = n;
  int ret = 0;
  for (int64_t i = 0; i < n && !ret; i++)
    if (!inf->el[i].in)
      ret = register_element(inf, &inf->el[i]);
  return ret;
}

/* Point the transfers at `next`'s elements instead of `from`'s. */
static void repoint(struct transfer *t, int64_t nt, const struct element *from,
                    const struct element *next, int64_t n)
{
  for (int64_t k = 0; k < nt; k++) {
    const struct element *e =
        bsearch(&from[t[k].element], next, (size_t)n, sizeof *next, element_cmp);
    t[k].element = e - next; /* the leaves' elements are known */
  }
}

/* Append na answers to *all (*nall of them). */
static int append_answers(int64_t **all, int64_t *nall, const int64_t *a, int64_t na)
{
  int64_t *more = realloc(*all, (size_t)((*nall + na) * A_WIDTH + 1) * sizeof *more);
  if (!more)
    return STRATA_ENOMEM;
  if (na)
    memcpy(more + *nall * A_WIDTH, a, (size_t)(na * A_WIDTH) * sizeof *more);
  *all = more;
  *nall += na;
  return 0;
}

/* Element e as an answer, appended. */
static int append_element(int64_t **all, int64_t *nall, const struct element *e)
{
  const int64_t a[A_WIDTH] = {e->idx[0], e->idx[1], e->idx[2], e->pos, e->rank, e->serial};
  return append_answers(all, nall, a, 1);
}

/* This rank's own elements as answers: the level array is unchanged. */
static int own_answers(const strata_infer *inf, int64_t **all, int64_t *nall)
{
  int ret = 0;
  for (int64_t i = 0; i < inf->nel && !ret; i++)
    if (inf->el[i].rank == inf->mesh->rank)
      ret = append_element(all, nall, &inf->el[i]);
  return ret;
}

/* The answers neighbourhood_requests would get, from the known elements of
 * the last cycle, which asked for them: right when the level array, its
 * positions and its owners are the same (st->reused), so that this rank's
 * own elements and what exists near them are too. Appended to *known,
 * whose own elements say what is near. */
static int recall_neighbourhood(const strata_infer *inf, int64_t **known, int64_t *nknown)
{
  struct triples near = {0};
  int ret = near_own(inf, *known, *nknown, &near);
  for (int64_t i = 0; i < inf->nel && !ret; i++)
    if (has_triple(&near, inf->el[i].idx))
      ret = append_element(known, nknown, &inf->el[i]);
  free(near.v);
  return ret;
}

int strata__infer_allocate(strata_infer *inf, int local, struct transfer **t, int64_t *nt,
                           strata_infer_stats *st)
{
  /* The directory: the key range of the level array in equal parts. */
  int64_t last[3];
  for (int a = 0; a < 3; a++)
    last[a] = array_blocks(inf, a) - 1;
  const uint64_t keys = strata__morton(last) + 1, size = (uint64_t)inf->mesh->size;
  inf->dir_keys = (keys + size - 1) / size;
  struct strata__infer_records r = {.width = Q_WIDTH};
  int64_t *q = NULL, nq = 0, *a = NULL, na = 0, *known = NULL, nknown = 0;
  int ret =
      strata__infer_send_records(inf, local ? local : leaf_requests(inf, &r), &r, &q, &nq, NULL);
  /* The directory: the new set, its counts and positions. */
  int64_t counts[3] = {0, 0, 0}; /* created, removed, elements */
  /* `local` was agreed by the exchange: from here on it is this rank's next error. */
  if (!ret) {
    local = update_directory(inf, q, nq, counts);
    local = local ? local : note_overlaps(inf, q, nq);
    if (!local && !inf->dir_firsts &&
        !(inf->dir_firsts = malloc((size_t)inf->mesh->size * sizeof *inf->dir_firsts)))
      local = STRATA_ENOMEM;
    counts[2] = inf->ndir;
    const int64_t *all = NULL; /* every range's counts: their sums, and where each starts */
    ret = strata__agree_gather(local, counts, 3, &all);
    for (int k = 0; !ret && k < 3; k++)
      counts[k] = 0;
    for (int r = 0; !ret && r < inf->mesh->size; r++) {
      inf->dir_firsts[r] = counts[2];
      for (int k = 0; k < 3; k++)
        counts[k] += all[4 * r + k];
    }
  }
  inf->dir_first = ret ? 0 : inf->dir_firsts[inf->mesh->rank];
  st->created = counts[0];
  st->removed = counts[1];
  inf->elements = counts[2];
  st->reused = !ret && !counts[0] && !counts[1] && counts[2] > 0;
  const int recall = st->reused && inf->neighbourhood_known; /* agreed, both */
  /* What this rank's leaves overlap, and their transfers. */
  r.width = A_WIDTH;
  if (!ret)
    ret = strata__infer_send_records(inf, answer_requests(inf, q, nq, &r), &r, &a, &na, NULL);
  struct element *seen = NULL, *old = inf->el;
  int64_t nseen = 0, nold = inf->nel;
  /* This rank's errors from here on are agreed at the next collective call. */
  local = ret ? 0 : elements_of(a, na, &seen, &nseen);
  /* Planning and placement read `seen` as the known elements (no handles). */
  if (!ret && !local) {
    inf->el = seen, inf->nel = nseen;
    local = strata__infer_plan_transfers(inf, t, nt);
  }
  /* Placement, then the answers again, and to the owners; or, when the
   * level array is the same, this rank's own elements as they were. */
  if (!ret && !st->reused) {
    int *ranks = malloc((size_t)(inf->ndir + 1) * sizeof *ranks);
    ret = strata__agree(local ? local : ranks ? 0 : STRATA_ENOMEM, NULL, 0);
    if (!ret)
      ret = strata__infer_place(inf, seen, *t, *nt, ranks, st);
    if (!ret) {
      apply_placement(inf, ranks, st);
      int64_t moved[2] = {st->kept, st->migrated};
      if (MPI_Allreduce(MPI_IN_PLACE, moved, 2, MPI_INT64_T, MPI_SUM, inf->mesh->meta))
        ret = STRATA_EMPI;
      st->kept = moved[0], st->migrated = moved[1];
    }
    if (!ret) {
      local = answer_requests(inf, q, nq, &r);
      for (int64_t i = 0; i < inf->ndir && !local; i++)
        local = answer(inf, &r, &inf->dir[i], inf->dir[i].rank);
      ret = strata__infer_send_records(inf, local, &r, &known, &nknown, NULL);
    }
    free(ranks);
  }
  inf->el = old, inf->nel = nold;
  if (!ret && st->reused) {
    local = local ? local : append_answers(&known, &nknown, a, na);
    local = local ? local : own_answers(inf, &known, &nknown);
  }
  free(q), free(a);
  q = a = NULL;
  na = 0;
  /* The elements within two of this rank's own: asked for through the
   * directory, or the same as the last cycle's (two exchanges fewer). */
  if (!ret && recall)
    local = local ? local : recall_neighbourhood(inf, &known, &nknown);
  if (!ret && !recall) {
    r.width = Q_WIDTH;
    local = local ? local : neighbourhood_requests(inf, known, nknown, &r);
    ret = strata__infer_send_records(inf, local, &r, &q, &nq, NULL);
    r.width = A_WIDTH;
    if (!ret)
      ret = strata__infer_send_records(inf, answer_requests(inf, q, nq, &r), &r, &a, &na, NULL);
  }
  struct element *next = NULL;
  int64_t nnext = 0;
  if (!ret) {
    local = local ? local : append_answers(&known, &nknown, a, na);
    local = local ? local : elements_of(known, nknown, &next, &nnext);
    if (!local) {
      repoint(*t, *nt, seen, next, nnext);
      local = adopt(inf, next, nnext); /* which keeps `next` */
    } else
      free(next);
    ret = strata__agree(local, NULL, 0);
  }
  inf->neighbourhood_known = !ret;
  strata__infer_free_records(&r);
  free(q), free(a), free(known), free(seen);
  return ret;
}
