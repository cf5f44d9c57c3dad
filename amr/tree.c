/* The octree's metadata: blocks in a hash table keyed by (level, index),
 * Morton order of the leaves, box traversal from the roots, and the
 * geometric queries of the public API. Replicated identically on every
 * rank; nothing here communicates. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <strata/error.h>

#include "amr_internal.h"

int64_t strata__amr_side(const strata_amr *amr)
{
  return amr->p.block_cells + 2 * amr->p.ghost_depth;
}

int64_t strata__amr_block_size(const strata_amr *amr)
{
  int64_t side = strata__amr_side(amr), n = side * side;
  return amr->p.dim == 3 ? n * side : n;
}

int64_t strata__amr_blocks_at(const strata_amr *amr, int level)
{
  return (int64_t)amr->p.root_blocks << level;
}

int strata__amr_valid(const strata_amr *amr, const strata_amr_block *b)
{
  if (!b || b->level < 0 || b->level > amr->p.max_level)
    return 0;
  int64_t nb = strata__amr_blocks_at(amr, b->level);
  for (int a = 0; a < 3; a++)
    if (b->index[a] < 0 || b->index[a] >= (a < amr->p.dim ? nb : 1))
      return 0;
  return 1;
}

/* 5 bits of level, 19 bits per axis (strata_amr_create bounds the index). */
static uint64_t node_key(const strata_amr_block *b)
{
  return (uint64_t)b->level << 57 | (uint64_t)b->index[2] << 38 | (uint64_t)b->index[1] << 19 |
         (uint64_t)b->index[0];
}

static int64_t bucket_of(const strata_amr *amr, uint64_t key)
{
  key ^= key >> 31;
  key *= 0x9E3779B97F4A7C15ull;
  return (int64_t)((key ^ (key >> 29)) % (uint64_t)amr->nbuckets);
}

struct strata__amr_node *strata__amr_find(const strata_amr *amr, const strata_amr_block *b)
{
  uint64_t key = node_key(b);
  for (struct strata__amr_node *n = amr->buckets[bucket_of(amr, key)]; n; n = n->next)
    if (node_key(&n->b) == key)
      return n;
  return NULL;
}

/* Keep about one node per bucket. */
static int grow(strata_amr *amr)
{
  int64_t nb = amr->nbuckets * 2;
  struct strata__amr_node **nbk = calloc((size_t)nb, sizeof *nbk);
  if (!nbk)
    return STRATA_ENOMEM;
  struct strata__amr_node **old = amr->buckets;
  int64_t oldn = amr->nbuckets;
  amr->buckets = nbk;
  amr->nbuckets = nb;
  for (int64_t i = 0; i < oldn; i++)
    for (struct strata__amr_node *n = old[i], *next; n; n = next) {
      next = n->next;
      int64_t k = bucket_of(amr, node_key(&n->b));
      n->next = nbk[k];
      nbk[k] = n;
    }
  free(old);
  return 0;
}

struct strata__amr_node *strata__amr_add(strata_amr *amr, const strata_amr_block *b)
{
  if (amr->nnodes >= amr->nbuckets && grow(amr) != 0)
    return NULL;
  struct strata__amr_node *n = calloc(1, sizeof *n);
  if (!n)
    return NULL;
  n->b.level = b->level; /* member by member: the padding stays zero, so that blocks
                            copied out of nodes compare bytewise */
  memcpy(n->b.index, b->index, sizeof n->b.index);
  n->rank = -1;
  int64_t k = bucket_of(amr, node_key(b));
  n->next = amr->buckets[k];
  amr->buckets[k] = n;
  amr->nnodes++;
  return n;
}

void strata__amr_remove(strata_amr *amr, struct strata__amr_node *n)
{
  struct strata__amr_node **p = &amr->buckets[bucket_of(amr, node_key(&n->b))];
  while (*p != n)
    p = &(*p)->next;
  *p = n->next;
  amr->nnodes--;
  free(n);
}

struct strata__amr_node *strata__amr_ghost_at(const strata_amr *amr, int64_t pos)
{
  int64_t lo = 0, hi = amr->nghosts; /* ordered by rank, then position: by position */
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (amr->ghosts[mid]->pos < pos)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < amr->nghosts && amr->ghosts[lo]->pos == pos ? amr->ghosts[lo] : NULL;
}

int64_t strata__amr_sort_unique(void *base, int64_t n, size_t size,
                                int (*cmp)(const void *, const void *))
{
  if (n == 0) /* base may be NULL */
    return 0;
  qsort(base, (size_t)n, size, cmp);
  char *b = base;
  int64_t u = 0;
  for (int64_t i = 0; i < n; i++)
    if (!u || cmp(b + (u - 1) * size, b + i * size))
      memmove(b + u++ * size, b + i * size, size);
  return u;
}

static int compare_int64s(const int64_t *x, const int64_t *y, int n)
{
  for (int k = 0; k < n; k++)
    if (x[k] != y[k])
      return x[k] < y[k] ? -1 : 1;
  return 0;
}

int strata__amr_compare_pairs(const void *a, const void *b) { return compare_int64s(a, b, 2); }

int strata__amr_compare_triples(const void *a, const void *b) { return compare_int64s(a, b, 3); }

/* Extent of a block in cells of the finest level. */
static void fine_extent(const strata_amr *amr, const strata_amr_block *b, int64_t lo[3],
                        int64_t hi[3])
{
  int64_t span = (int64_t)amr->p.block_cells << (amr->p.max_level - b->level);
  for (int a = 0; a < 3; a++) {
    lo[a] = a < amr->p.dim ? b->index[a] * span : 0;
    hi[a] = a < amr->p.dim ? lo[a] + span : 1;
  }
}

struct visit {
  const strata_amr *amr;
  int64_t lo[3], hi[3]; /* finest-level cells */
  int (*fn)(void *, struct strata__amr_node *);
  void *ctx;
};

static int visit_node(struct visit *v, const strata_amr_block *b)
{
  int64_t lo[3], hi[3];
  fine_extent(v->amr, b, lo, hi);
  for (int a = 0; a < v->amr->p.dim; a++)
    if (hi[a] <= v->lo[a] || lo[a] >= v->hi[a])
      return 0;
  struct strata__amr_node *n = strata__amr_find(v->amr, b);
  if (!n)
    return 0;
  if (n->is_leaf)
    return v->fn(v->ctx, n);
  for (int o = 0; o < 1 << v->amr->p.dim; o++) {
    strata_amr_block c = {.level = b->level + 1};
    for (int a = 0; a < v->amr->p.dim; a++)
      c.index[a] = 2 * b->index[a] + ((o >> a) & 1);
    int ret = visit_node(v, &c);
    if (ret)
      return ret;
  }
  return 0;
}

int strata__amr_visit_box(const strata_amr *amr, int level, const int64_t lo[3],
                          const int64_t hi[3], int (*fn)(void *ctx, struct strata__amr_node *leaf),
                          void *ctx)
{
  struct visit v = {.amr = amr, .fn = fn, .ctx = ctx};
  int shift = amr->p.max_level - level;
  int64_t rlo[3] = {0, 0, 0}, rhi[3] = {0, 0, 0};
  for (int a = 0; a < amr->p.dim; a++) {
    v.lo[a] = lo[a] << shift;
    v.hi[a] = hi[a] << shift;
    int64_t root_span = (int64_t)amr->p.block_cells << amr->p.max_level;
    rlo[a] = v.lo[a] / root_span;
    rhi[a] = (v.hi[a] - 1) / root_span;
  }
  /* A box inside one block of its level (a neighbour region is) starts at
   * the deepest node holding that block, not at the roots: the same leaves
   * in the same order, from a lookup or two instead of a walk per level. */
  strata_amr_block b = {.level = level};
  int single = 1;
  const int64_t span = (int64_t)amr->p.block_cells << shift;
  for (int a = 0; a < amr->p.dim; a++) {
    b.index[a] = v.lo[a] / span;
    single &= (v.hi[a] - 1) / span == b.index[a];
  }
  if (single) {
    while (b.level > 0 && !strata__amr_find(amr, &b)) {
      b.level--;
      for (int a = 0; a < amr->p.dim; a++)
        b.index[a] /= 2;
    }
    return visit_node(&v, &b);
  }
  strata_amr_block r = {.level = 0};
  for (r.index[2] = rlo[2]; r.index[2] <= rhi[2]; r.index[2]++)
    for (r.index[1] = rlo[1]; r.index[1] <= rhi[1]; r.index[1]++)
      for (r.index[0] = rlo[0]; r.index[0] <= rhi[0]; r.index[0]++) {
        int ret = visit_node(&v, &r);
        if (ret)
          return ret;
      }
  return 0;
}

int strata__amr_neighbor_region(const strata_amr *amr, const strata_amr_block *b,
                                const int delta[3], int64_t thickness, int64_t lo[3], int64_t hi[3],
                                int64_t shift[3])
{
  const int64_t m = amr->p.block_cells, n = strata__amr_blocks_at(amr, b->level) * m;
  for (int a = 0; a < 3; a++) {
    shift[a] = 0;
    if (a >= amr->p.dim) {
      lo[a] = 0;
      hi[a] = 1;
      continue;
    }
    lo[a] = b->index[a] * m;
    hi[a] = lo[a] + m;
    if (delta[a] < 0) {
      hi[a] = lo[a];
      lo[a] -= thickness;
    } else if (delta[a] > 0) {
      lo[a] = hi[a];
      hi[a] += thickness;
    }
    if (lo[a] >= 0 && hi[a] <= n)
      continue;
    if (amr->p.boundary != STRATA_AMR_PERIODIC)
      return 0;
    shift[a] = lo[a] < 0 ? n : -n;
    lo[a] += shift[a];
    hi[a] += shift[a];
  }
  return 1;
}

/* ---- public queries ---- */

int64_t strata_amr_num_leaves(const strata_amr *amr) { return amr ? amr->total : 0; }

/* Every rank's `n` blocks of `mine`, in rank order, up to `cap` into `out`;
 * *total gets their number. Collective, errors agreed. */
static int gather_blocks(const strata_amr *amr, int local, const strata_amr_block *mine, int64_t n,
                         strata_amr_block *out, int64_t cap, int64_t *total)
{
  int64_t *counts = malloc((size_t)amr->size * sizeof *counts);
  int *bytes = malloc((size_t)amr->size * 2 * sizeof *bytes);
  local = local ? local : counts && bytes ? 0 : STRATA_ENOMEM;
  int64_t v[1] = {n};
  int ret = strata__agree(local, NULL, 0);
  if (!ret && MPI_Allgather(v, 1, MPI_INT64_T, counts, 1, MPI_INT64_T, amr->meta) != MPI_SUCCESS)
    ret = STRATA_EMPI;
  int64_t all = 0;
  for (int r = 0; !ret && r < amr->size; r++) {
    bytes[r] = (int)(counts[r] * (int64_t)sizeof *mine);
    bytes[amr->size + r] = (int)(all * (int64_t)sizeof *mine);
    all += counts[r];
  }
  if (!ret && all > INT_MAX / (int64_t)sizeof *mine)
    ret = strata__fail(STRATA_ERANGE, "amr: %lld leaves are too many to gather", (long long)all);
  strata_amr_block *every = ret ? NULL : all <= cap ? out : malloc((size_t)all * sizeof *every);
  ret = ret ? ret : strata__agree(every || !all ? 0 : STRATA_ENOMEM, NULL, 0);
  if (!ret && MPI_Allgatherv(mine, (int)(n * (int64_t)sizeof *mine), MPI_BYTE, every, bytes,
                             bytes + amr->size, MPI_BYTE, amr->meta) != MPI_SUCCESS)
    ret = STRATA_EMPI;
  if (!ret && every != out && cap > 0)
    memcpy(out, every, (size_t)cap * sizeof *out);
  if (every != out)
    free(every);
  free(counts);
  free(bytes);
  if (!ret)
    *total = all;
  return ret;
}

int strata_amr_leaves(const strata_amr *amr, strata_amr_block *out, int64_t cap, int64_t *n)
{
  strata__clear_error();
  int local = amr && n && cap >= 0 && (cap == 0 || out) ? 0 : STRATA_EINVAL;
  strata_amr_block *mine = local ? NULL : malloc((size_t)(amr->nleaves + 1) * sizeof *mine);
  if (!local && !mine)
    local = STRATA_ENOMEM;
  for (int64_t i = 0; mine && i < amr->nleaves; i++)
    mine[i] = amr->leaves[i]->b;
  int ret =
      amr ? gather_blocks(amr, local, mine, mine ? amr->nleaves : 0, out, cap, n) : STRATA_EINVAL;
  free(mine);
  return local ? local : ret;
}

int strata_amr_get_footprint(const strata_amr *amr, strata_amr_footprint *out)
{
  strata__clear_error();
  if (!amr || !out)
    return STRATA_EINVAL;
  int64_t forest, connectivity;
  amr->forest.ops->memory(amr, &forest, &connectivity);
  *out = (strata_amr_footprint){.leaves = amr->nleaves,
                                .ghost_leaves = amr->nghosts,
                                .nodes = amr->nnodes,
                                .bytes = amr->nnodes * (int64_t)sizeof(struct strata__amr_node) +
                                         (amr->nbuckets + amr->nleaves + amr->nghosts) *
                                             (int64_t)sizeof(void *) +
                                         forest + connectivity,
                                .connectivity_bytes = connectivity};
  return 0;
}

int strata_amr_local_leaves(const strata_amr *amr, strata_amr_block *out, int64_t cap, int64_t *n)
{
  strata__clear_error();
  if (!amr || !n || cap < 0 || (cap > 0 && !out))
    return STRATA_EINVAL;
  for (int64_t i = 0; i < amr->nleaves && i < cap; i++)
    out[i] = amr->leaves[i]->b;
  *n = amr->nleaves;
  return 0;
}

int strata_amr_block_query(const strata_amr *amr, const strata_amr_block *b,
                           strata_amr_block_info *info)
{
  strata__clear_error();
  if (!amr || !b || !info)
    return STRATA_EINVAL;
  if (!strata__amr_valid(amr, b))
    return STRATA_ERANGE;
  const struct strata__amr_node *n = strata__amr_find(amr, b);
  *info = (strata_amr_block_info){.exists = n != NULL,
                                  .is_leaf = n && n->is_leaf,
                                  .rank = n && n->is_leaf ? n->rank : -1,
                                  .handles_here = n && n->is_leaf && n->h[0] != NULL};
  double w = 1.0 / (double)strata__amr_blocks_at(amr, b->level);
  for (int a = 0; a < 3; a++) {
    info->lower[a] = a < amr->p.dim ? (double)b->index[a] * w : 0;
    info->upper[a] = a < amr->p.dim ? (double)(b->index[a] + 1) * w : 0;
  }
  return 0;
}

int strata_amr_parent(const strata_amr *amr, const strata_amr_block *b, strata_amr_block *parent)
{
  strata__clear_error();
  if (!amr || !b || !parent)
    return STRATA_EINVAL;
  if (!strata__amr_valid(amr, b) || b->level == 0)
    return STRATA_ERANGE;
  *parent = (strata_amr_block){.level = b->level - 1};
  for (int a = 0; a < amr->p.dim; a++)
    parent->index[a] = b->index[a] / 2;
  return 0;
}

int strata_amr_child(const strata_amr *amr, const strata_amr_block *b, int octant,
                     strata_amr_block *child)
{
  strata__clear_error();
  if (!amr || !b || !child)
    return STRATA_EINVAL;
  if (!strata__amr_valid(amr, b) || b->level >= amr->p.max_level || octant < 0 ||
      octant >= 1 << amr->p.dim)
    return STRATA_ERANGE;
  *child = (strata_amr_block){.level = b->level + 1};
  for (int a = 0; a < amr->p.dim; a++)
    child->index[a] = 2 * b->index[a] + ((octant >> a) & 1);
  return 0;
}

static int first_leaf(void *ctx, struct strata__amr_node *leaf)
{
  *(strata_amr_block *)ctx = leaf->b;
  return 1;
}

int strata_amr_block_at_point(const strata_amr *amr, const double x[3], int level,
                              strata_amr_block *b)
{
  strata__clear_error();
  if (!amr || !x || !b || level > amr->p.max_level)
    return STRATA_EINVAL;
  for (int a = 0; a < amr->p.dim; a++)
    if (!(x[a] >= 0 && x[a] < 1))
      return STRATA_ERANGE;
  int at = level < 0 ? amr->p.max_level : level;
  int64_t nb = strata__amr_blocks_at(amr, at);
  strata_amr_block q = {.level = at};
  for (int a = 0; a < amr->p.dim; a++) {
    q.index[a] = (int64_t)(x[a] * (double)nb);
    if (q.index[a] >= nb)
      q.index[a] = nb - 1;
  }
  if (level >= 0) {
    *b = q;
    return 0;
  }
  int64_t lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
  for (int a = 0; a < amr->p.dim; a++) {
    lo[a] = q.index[a] * amr->p.block_cells;
    hi[a] = lo[a] + 1;
  }
  return strata__amr_visit_box(amr, at, lo, hi, first_leaf, b) ? 0 : STRATA_ERANGE;
}

int strata_amr_block_at_index(const strata_amr *amr, int array_level, const int64_t idx[3],
                              int level, strata_amr_block *b)
{
  strata__clear_error();
  if (!amr || !idx || !b)
    return STRATA_EINVAL;
  strata_amr_block e = {.level = array_level, .index = {idx[0], idx[1], idx[2]}};
  if (!strata__amr_valid(amr, &e) || level < 0 || level > array_level)
    return STRATA_ERANGE;
  *b = (strata_amr_block){.level = level};
  for (int a = 0; a < amr->p.dim; a++)
    b->index[a] = idx[a] >> (array_level - level);
  return 0;
}

int strata_amr_intersect(const strata_amr *amr, const double lo[3], const double hi[3],
                         strata_amr_block *out, int64_t cap, int64_t *n)
{
  strata__clear_error();
  int local = amr && lo && hi && n && cap >= 0 && (cap == 0 || out) ? 0 : STRATA_EINVAL;
  /* Cells of the finest level overlapping the box, clipped to the domain;
   * an empty box (lo == hi on an axis) overlaps nothing. */
  int empty = 0;
  int64_t clo[3] = {0, 0, 0}, chi[3] = {1, 1, 1};
  for (int a = 0; !local && a < amr->p.dim; a++) {
    int L = amr->p.max_level;
    int64_t cells = strata__amr_blocks_at(amr, L) * amr->p.block_cells;
    if (!(lo[a] < hi[a]) || !(hi[a] > 0) || !(lo[a] < 1)) {
      local = lo[a] <= hi[a] ? 0 : STRATA_EINVAL;
      empty = 1;
      continue;
    }
    double l = lo[a] > 0 ? lo[a] * (double)cells : 0;
    double h = hi[a] < 1 ? hi[a] * (double)cells : (double)cells;
    clo[a] = (int64_t)l;
    chi[a] = (int64_t)h;
    if ((double)chi[a] < h)
      chi[a]++;
  }
  /* This rank's overlapping leaves in Morton order; the ranks' pieces
   * follow each other in that order. */
  strata_amr_block *mine = local ? NULL : malloc((size_t)(amr->nleaves + 1) * sizeof *mine);
  if (!local && !mine)
    local = STRATA_ENOMEM;
  int64_t k = 0;
  for (int64_t i = 0; mine && !empty && i < amr->nleaves; i++) {
    int64_t blo[3], bhi[3];
    fine_extent(amr, &amr->leaves[i]->b, blo, bhi);
    int overlap = 1;
    for (int a = 0; a < amr->p.dim; a++)
      overlap &= blo[a] < chi[a] && bhi[a] > clo[a];
    if (overlap)
      mine[k++] = amr->leaves[i]->b;
  }
  int ret = amr ? gather_blocks(amr, local, mine, k, out, cap, n) : STRATA_EINVAL;
  free(mine);
  return local ? local : ret;
}

int strata_amr_block_name(const strata_amr *amr, const strata_amr_block *b, char *buf, size_t size)
{
  strata__clear_error();
  if (!amr || !b || !buf)
    return STRATA_EINVAL;
  if (!strata__amr_valid(amr, b))
    return STRATA_ERANGE;
  int root_bits = 0;
  while ((1 << root_bits) < amr->p.root_blocks)
    root_bits++;
  size_t at = 0;
  char tmp[160];
  tmp[at++] = 'B';
  for (int a = 0; a < amr->p.dim; a++) {
    if (a)
      tmp[at++] = '_';
    int64_t v = b->index[a];
    for (int i = root_bits + b->level - 1; i >= b->level; i--)
      tmp[at++] = (char)('0' + ((v >> i) & 1));
    tmp[at++] = ':';
    for (int i = b->level - 1; i >= 0; i--)
      tmp[at++] = (char)('0' + ((v >> i) & 1));
  }
  tmp[at] = '\0';
  if (at + 1 > size)
    return STRATA_ERANGE;
  memcpy(buf, tmp, at + 1);
  return 0;
}
