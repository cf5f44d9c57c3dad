/* An application's mesh (strata/mesh.h): each rank's own leaves, their
 * fields registered in place, and the collective check that the leaves of
 * all ranks tile the domain, done by "home" ranks that each receive the
 * leaves of some root blocks (never all leaves on one rank). Strata's own
 * octree is described through the same object (strata__mesh_of_amr). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amr_internal.h"

void strata_mesh_params_init(strata_mesh_params *p)
{
  if (!p)
    return;
  *p = (strata_mesh_params){.upper = {1, 1, 1},
                            .root = {2, 2, 2},
                            .block_cells = 16,
                            .ghost_depth = 1,
                            .max_level = 5,
                            .dtype = STRATA_FLOAT64,
                            .nfields = 1,
                            .field_names = {"density"},
                            .boundary = STRATA_AMR_PERIODIC};
}

static int check_params(const strata_mesh_params *p)
{
  if (p->block_cells < 4 || p->block_cells > 1024 || p->block_cells % 2)
    return strata__fail(STRATA_EINVAL, "mesh: block_cells %d is not an even number in 4..1024",
                        p->block_cells);
  if (p->ghost_depth < 0 || p->ghost_depth > p->block_cells / 2)
    return strata__fail(STRATA_EINVAL, "mesh: ghost_depth %d out of 0..%d", p->ghost_depth,
                        p->block_cells / 2);
  if (p->max_level < 0 || p->max_level > STRATA_AMR_MAX_LEVEL)
    return strata__fail(STRATA_EINVAL, "mesh: max_level %d out of 0..%d", p->max_level,
                        STRATA_AMR_MAX_LEVEL);
  if (p->dtype != STRATA_FLOAT32 && p->dtype != STRATA_FLOAT64)
    return strata__fail(STRATA_EINVAL, "mesh: dtype must be float32 or float64");
  if (p->nfields < 1 || p->nfields > STRATA_AMR_MAX_FIELDS)
    return strata__fail(STRATA_EINVAL, "mesh: nfields %d out of 1..%d", p->nfields,
                        STRATA_AMR_MAX_FIELDS);
  if (p->boundary != STRATA_AMR_PERIODIC && p->boundary != STRATA_AMR_EXTRAPOLATE)
    return strata__fail(STRATA_EINVAL, "mesh: unknown boundary %d", (int)p->boundary);
  double cell[3];
  for (int a = 0; a < 3; a++) {
    if (p->root[a] < 1 || ((int64_t)p->root[a] << p->max_level) > (INT64_C(1) << 20))
      return strata__fail(STRATA_EINVAL, "mesh: root[%d] = %d out of 1..2^(20 - max_level)", a,
                          p->root[a]);
    if (!(p->upper[a] > p->lower[a]) || !isfinite(p->upper[a] - p->lower[a]))
      return strata__fail(STRATA_EINVAL, "mesh: upper[%d] must be above lower[%d]", a, a);
    cell[a] = (p->upper[a] - p->lower[a]) / p->root[a];
  }
  for (int a = 1; a < 3; a++)
    if (fabs(cell[a] - cell[0]) > 1e-12 * cell[0])
      return strata__fail(STRATA_EINVAL,
                          "mesh: blocks must be cubes, but (upper - lower) / root is %g along "
                          "x and %g along %c",
                          cell[0], cell[a], "xyz"[a]);
  for (int f = 0; f < p->nfields; f++)
    if (p->field_names[f] && strlen(p->field_names[f]) >= 64)
      return strata__fail(STRATA_EINVAL, "mesh: field name %d longer than 63 bytes", f);
  return 0;
}

/* What every rank must pass the same: the geometry, bit for bit. */
static int agree_params(const strata_mesh_params *p, int local)
{
  int64_t same[16];
  int n = 0;
  for (int a = 0; a < 3; a++) {
    memcpy(&same[n++], &p->lower[a], sizeof(double));
    memcpy(&same[n++], &p->upper[a], sizeof(double));
    same[n++] = p->root[a];
  }
  same[n++] = p->block_cells;
  same[n++] = p->ghost_depth;
  same[n++] = p->max_level;
  same[n++] = p->dtype;
  same[n++] = p->nfields;
  same[n++] = p->boundary;
  int ret = strata__agree(local, same, n);
  if (ret == STRATA_EINVAL && !local)
    return strata__fail(ret, "mesh: the ranks passed different domains or block layouts");
  return ret;
}

static int destroy_live(void *m) { return strata_mesh_destroy(m); }

static int mesh_new(const strata_mesh_params *p, strata_mesh **out)
{
  *out = NULL;
  strata_mesh *m = calloc(1, sizeof *m);
  int ret = strata__agree(m ? 0 : STRATA_ENOMEM, NULL, 0);
  if (ret) {
    free(m);
    return ret;
  }
  m->p = *p;
  for (int f = 0; f < STRATA_AMR_MAX_FIELDS; f++) {
    if (f < p->nfields)
      snprintf(m->names[f], sizeof m->names[f], "%s",
               p->field_names[f] ? p->field_names[f] : "field");
    m->p.field_names[f] = f < p->nfields ? m->names[f] : NULL;
  }
  m->comm = strata_comm();
  m->meta = strata__coll_comm();
  MPI_Comm_rank(m->comm, &m->rank);
  MPI_Comm_size(m->comm, &m->size);
  *out = m;
  return 0;
}

int strata_mesh_create(const strata_mesh_params *p, strata_mesh **out)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!p || !out)
    return STRATA_EINVAL;
  *out = NULL;
  if ((ret = agree_params(p, check_params(p))))
    return ret;
  if ((ret = mesh_new(p, out)))
    return ret;
  strata__live_add(&strata__objects, &(*out)->live, "mesh", *out, destroy_live);
  return 0;
}

static void drop_leaves(strata_mesh *m)
{
  for (int64_t i = 0; i < m->nleaves; i++)
    for (int f = 0; m->leaves[i].owned && f < m->p.nfields; f++)
      if (m->leaves[i].h[f])
        starpu_data_unregister(m->leaves[i].h[f]); /* back into the application's memory */
  m->nleaves = 0;
  m->committed = 0;
  m->error = 0;
  m->error_message[0] = '\0';
}

void strata__mesh_free(strata_mesh *m)
{
  if (!m)
    return;
  drop_leaves(m);
  free(m->leaves);
  free(m);
}

int strata_mesh_destroy(strata_mesh *m)
{
  strata__clear_error();
  if (!m)
    return 0;
  int ret = strata__agree(m->users ? STRATA_ESTATE : 0, NULL, 0);
  if (ret)
    return m->users ? strata__fail(ret, "mesh: an inference method still reads it") : ret;
  strata__live_remove(&m->live);
  strata__mesh_free(m);
  return 0;
}

int strata_mesh_begin(strata_mesh *m)
{
  strata__clear_error();
  if (!m)
    return STRATA_EINVAL;
  if (m->busy)
    return strata__fail(STRATA_ESTATE, "mesh: a cycle is in flight: strata_infer_wait() first");
  drop_leaves(m);
  return 0;
}

/* Keep the first error of a description, for the commit to report. */
static int keep_error(strata_mesh *m, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int keep_error(strata_mesh *m, int code, const char *fmt, ...)
{
  if (!m->error) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->error_message, sizeof m->error_message, fmt, ap);
    va_end(ap);
    m->error = code;
  }
  return strata__fail(code, "%s", m->error_message);
}

static int add_leaf(strata_mesh *m, int level, const int64_t index[3], void *const *ptrs,
                    const starpu_data_handle_t *handles)
{
  strata__clear_error();
  if (!m)
    return STRATA_EINVAL;
  if (m->busy)
    return strata__fail(STRATA_ESTATE, "mesh: a cycle is in flight: strata_infer_wait() first");
  if (m->committed)
    return strata__fail(STRATA_ESTATE, "mesh: committed: strata_mesh_begin() first");
  if (!index || level < 0 || level > m->p.max_level)
    return keep_error(m, STRATA_EINVAL, "mesh: rank %d: leaf at level %d outside levels 0..%d",
                      m->rank, level, m->p.max_level);
  for (int a = 0; a < 3; a++)
    if (index[a] < 0 || index[a] >= strata__mesh_blocks(m, a, level))
      return keep_error(
          m, STRATA_EINVAL, "mesh: rank %d: leaf (%d; %lld, %lld, %lld) lies outside the domain",
          m->rank, level, (long long)index[0], (long long)index[1], (long long)index[2]);
  for (int f = 0; f < m->p.nfields; f++)
    if (!(ptrs ? (void *)ptrs[f] : (void *)(handles ? handles[f] : NULL)))
      return keep_error(m, STRATA_EINVAL,
                        "mesh: rank %d: leaf (%d; %lld, %lld, %lld) has no field %d ('%s')",
                        m->rank, level, (long long)index[0], (long long)index[1],
                        (long long)index[2], f, m->names[f]);
  if (strata__grow(&m->leaves, m->nleaves, &m->cap, sizeof *m->leaves, 64))
    return keep_error(m, STRATA_ENOMEM, "mesh: out of memory");
  struct strata__mesh_leaf *l = &m->leaves[m->nleaves++];
  *l = (struct strata__mesh_leaf){.b = {.level = level}, .owned = ptrs != NULL};
  memcpy(l->b.index, index, sizeof l->b.index);
  l->key = strata__morton(index);
  const int64_t side = m->p.block_cells + 2 * m->p.ghost_depth;
  const size_t elem = m->p.dtype == STRATA_FLOAT64 ? 8 : 4;
  for (int f = 0; f < m->p.nfields; f++) {
    if (ptrs) /* zero-copy: the application's memory is the home copy */
      starpu_vector_data_register(&l->h[f], STARPU_MAIN_RAM, (uintptr_t)ptrs[f],
                                  (uint32_t)(side * side * side), elem);
    else
      l->h[f] = handles[f];
  }
  return 0;
}

int strata_mesh_add_leaf(strata_mesh *m, int level, const int64_t index[3], void *const *fields)
{
  if (m && !fields)
    return keep_error(m, STRATA_EINVAL, "mesh: rank %d: a leaf without field pointers", m->rank);
  return add_leaf(m, level, index, fields, NULL);
}

int strata_mesh_add_leaf_handles(strata_mesh *m, int level, const int64_t index[3],
                                 const starpu_data_handle_t *fields)
{
  if (m && !fields)
    return keep_error(m, STRATA_EINVAL, "mesh: rank %d: a leaf without field handles", m->rank);
  return add_leaf(m, level, index, NULL, fields);
}

static int leaf_cmp(const void *x, const void *y)
{
  const struct strata__mesh_leaf *a = x, *b = y;
  return strata__block_cmp(&a->b, a->key, &b->b, b->key);
}

/* The leaves in (level, key) order, for strata__mesh_find; committed. */
static void sort_leaves(strata_mesh *m)
{
  if (m->nleaves) /* leaves is NULL without any */
    qsort(m->leaves, (size_t)m->nleaves, sizeof *m->leaves, leaf_cmp);
  m->committed = 1;
}

struct strata__mesh_leaf *strata__mesh_find(const strata_mesh *m, const strata_amr_block *b)
{
  if (!m || !b || !m->nleaves) /* a rank may have no leaf, and leaves NULL */
    return NULL;
  struct strata__mesh_leaf key = {.b = *b, .key = strata__morton(b->index)};
  return bsearch(&key, m->leaves, (size_t)m->nleaves, sizeof *m->leaves, leaf_cmp);
}

/* ---- the tiling check ---- */

/* A record to a home rank: a leaf (kind 0) of the home's root blocks, or a
 * question (kind 1) about the face neighbour region (level, index) of a
 * leaf: is it inside a leaf more than one level coarser, or is one of its
 * four children on the face (`axis`, `side` of the asker) subdivided? */
enum { R_KIND, R_LEVEL, R_X, R_Y, R_Z, R_AXIS, R_SIDE, R_RANK, R_WIDTH };

static int64_t root_of(const strata_mesh *m, int level, const int64_t idx[3])
{
  int64_t r = 0;
  for (int a = 2; a >= 0; a--)
    r = r * m->p.root[a] + (idx[a] >> level);
  return r;
}

static int home_of(const strata_mesh *m, int64_t root) { return (int)(root % m->size); }

/* A leaf's interval of finest cells in the Morton order inside its root
 * block: [start, start + 8^(max_level - level)). */
struct span {
  int64_t root;
  uint64_t start, end;
  int level;
  int64_t idx[3];
  int rank;
};

static struct span span_of(const strata_mesh *m, int level, const int64_t idx[3], int rank)
{
  const int shift = m->p.max_level - level;
  struct span s = {.root = root_of(m, level, idx), .level = level, .rank = rank};
  int64_t local[3];
  for (int a = 0; a < 3; a++) {
    s.idx[a] = idx[a];
    local[a] = (idx[a] - ((idx[a] >> level) << level)) << shift;
  }
  s.start = strata__morton(local);
  s.end = s.start + ((uint64_t)1 << (3 * shift));
  return s;
}

static int span_cmp(const void *x, const void *y)
{
  const struct span *a = x, *b = y;
  if (a->root != b->root)
    return a->root < b->root ? -1 : 1;
  return (a->start > b->start) - (a->start < b->start);
}

/* The span of the home's leaves holding finest cell `start` of `root`,
 * NULL when none does. */
static const struct span *span_at(const struct span *s, int64_t n, int64_t root, uint64_t start)
{
  int64_t lo = 0, hi = n;
  while (lo < hi) { /* the last span starting at or before (root, start) */
    int64_t mid = (lo + hi) / 2;
    if (s[mid].root < root || (s[mid].root == root && s[mid].start <= start))
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0 || s[lo - 1].root != root || s[lo - 1].end <= start)
    return NULL;
  return &s[lo - 1];
}

static int describe(const struct span *s, char *buf, size_t size)
{
  return snprintf(buf, size, "(%d; %lld, %lld, %lld) of rank %d", s->level, (long long)s->idx[0],
                  (long long)s->idx[1], (long long)s->idx[2], s->rank);
}

/* The home's checks: its root blocks tiled exactly, and the questions. */
static int check_home(const strata_mesh *m, struct span *s, int64_t ns, const int64_t *q,
                      int64_t nq, char *why, size_t size)
{
  qsort(s, (size_t)ns, sizeof *s, span_cmp);
  const uint64_t full = (uint64_t)1 << (3 * m->p.max_level);
  const int64_t roots = (int64_t)m->p.root[0] * m->p.root[1] * m->p.root[2];
  char a[96], b[96];
  int64_t k = 0;
  for (int64_t root = m->rank; root < roots; root += m->size) {
    uint64_t covered = 0;
    for (; k < ns && s[k].root == root; k++) {
      if (s[k].start < covered) {
        describe(&s[k - 1], a, sizeof a), describe(&s[k], b, sizeof b);
        snprintf(why, size, "mesh: leaves %s and %s overlap", a, b);
        return STRATA_EINVAL;
      }
      if (s[k].start > covered)
        break;
      covered = s[k].end;
    }
    if (covered != full) {
      snprintf(why, size,
               "mesh: no leaf covers part of root block %lld (the leaves leave a gap there)",
               (long long)root);
      return STRATA_EINVAL;
    }
  }
  for (int64_t i = 0; i < nq; i++) {
    const int64_t *r = q + i * R_WIDTH;
    const int level = (int)r[R_LEVEL], axis = (int)r[R_AXIS], side = (int)r[R_SIDE];
    const int64_t idx[3] = {r[R_X], r[R_Y], r[R_Z]};
    struct span region = span_of(m, level, idx, (int)r[R_RANK]);
    const struct span *holder = span_at(s, ns, region.root, region.start);
    const char *face = "xyz";
    if (holder && holder->end >= region.end && holder->level < level - 1) {
      describe(holder, a, sizeof a);
      snprintf(why, size,
               "mesh: leaf %s is %d levels coarser than a leaf of rank %lld beside it along %c "
               "(2:1 balance: at most one level between face neighbours)",
               a, level - holder->level, (long long)r[R_RANK], face[axis]);
      return STRATA_EINVAL;
    }
    /* The region's four children on the asker's face: subdivided ones
     * hold leaves two levels finer than the asker. */
    for (int c = 0; c < 8 && level < m->p.max_level; c++) {
      if (((c >> axis) & 1) != !side)
        continue;
      int64_t child[3];
      for (int d = 0; d < 3; d++)
        child[d] = 2 * idx[d] + ((c >> d) & 1);
      struct span cs = span_of(m, level + 1, child, region.rank);
      const struct span *h = span_at(s, ns, cs.root, cs.start);
      if (h && h->end < cs.end) {
        describe(h, a, sizeof a);
        snprintf(why, size,
                 "mesh: leaf %s is %d levels finer than a leaf of rank %lld beside it along %c "
                 "(2:1 balance: at most one level between face neighbours)",
                 a, h->level - (level - 1), (long long)r[R_RANK], face[axis]);
        return STRATA_EINVAL;
      }
    }
  }
  return 0;
}

/* The records this rank sends: each leaf to its root block's home, and a
 * question per face neighbour region to that region's home (dest[i]). */
static int64_t records_to_homes(const strata_mesh *m, int64_t *rec, int *dest)
{
  int64_t n = 0;
  for (int64_t i = 0; i < m->nleaves; i++) {
    const strata_amr_block *b = &m->leaves[i].b;
    int64_t *r = rec + n * R_WIDTH;
    r[R_KIND] = 0, r[R_LEVEL] = b->level, r[R_RANK] = m->rank;
    memcpy(r + R_X, b->index, 3 * sizeof *r);
    r[R_AXIS] = r[R_SIDE] = 0;
    dest[n++] = home_of(m, root_of(m, b->level, b->index));
    for (int axis = 0; axis < 3; axis++)
      for (int side = 0; side < 2; side++) {
        int64_t nb[3] = {b->index[0], b->index[1], b->index[2]};
        const int64_t blocks = strata__mesh_blocks(m, axis, b->level);
        nb[axis] += side ? 1 : -1;
        if (nb[axis] < 0 || nb[axis] >= blocks) {
          if (m->p.boundary != STRATA_AMR_PERIODIC)
            continue;
          nb[axis] = (nb[axis] + blocks) % blocks;
        }
        r = rec + n * R_WIDTH;
        r[R_KIND] = 1, r[R_LEVEL] = b->level, r[R_AXIS] = axis, r[R_SIDE] = side;
        r[R_RANK] = m->rank;
        memcpy(r + R_X, nb, sizeof nb);
        dest[n++] = home_of(m, root_of(m, b->level, nb));
      }
  }
  return n;
}

/* The failure of the lowest failing rank, on every rank. */
static int report(strata_mesh *m, int local, const char *why)
{
  int ret = strata__agree(local, NULL, 0);
  if (!ret)
    return 0;
  int first = local ? m->rank : m->size;
  MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, m->meta);
  char msg[512];
  snprintf(msg, sizeof msg, "%s", why);
  if (first < m->size)
    MPI_Bcast(msg, sizeof msg, MPI_CHAR, first, m->meta);
  return strata__fail(ret, "%s", first < m->size ? msg : "mesh: the check failed on a rank");
}

int strata_mesh_commit(strata_mesh *m)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!m)
    return STRATA_EINVAL;
  char why[512] = "";
  int local = m->error;
  if (local)
    snprintf(why, sizeof why, "%s", m->error_message);
  else if (m->busy || m->committed)
    snprintf(why, sizeof why, "mesh: %s",
             m->busy ? "a cycle is in flight" : "already committed: strata_mesh_begin() first"),
        local = STRATA_ESTATE;
  /* One record per leaf and one per face neighbour: 7 a leaf at most. */
  int64_t *mine = malloc((size_t)(7 * m->nleaves + 1) * R_WIDTH * sizeof *mine), nmine = 0;
  int *dest = malloc((size_t)(7 * m->nleaves + 1) * sizeof *dest);
  if (!local && !(mine && dest))
    local = STRATA_ENOMEM, snprintf(why, sizeof why, "mesh: out of memory");
  if (!local)
    nmine = records_to_homes(m, mine, dest);
  int64_t *got = NULL, ngot = 0;
  if (!(ret = report(m, local, why)))
    ret = strata__exchange_records(m->meta, 0, mine, dest, nmine, R_WIDTH, &got, &ngot, NULL);
  free(mine), free(dest);
  if (ret)
    return ret;
  int64_t ns = 0;
  struct span *s = malloc((size_t)(ngot + 1) * sizeof *s);
  int64_t *questions = malloc((size_t)(ngot + 1) * R_WIDTH * sizeof *questions), nq = 0;
  if (!s || !questions)
    local = STRATA_ENOMEM, snprintf(why, sizeof why, "mesh: out of memory");
  for (int64_t i = 0; !local && i < ngot; i++) {
    const int64_t *r = got + i * R_WIDTH;
    if (r[R_KIND] == 0)
      s[ns++] = span_of(m, (int)r[R_LEVEL], r + R_X, (int)r[R_RANK]);
    else
      memcpy(questions + nq++ * R_WIDTH, r, R_WIDTH * sizeof *r);
  }
  if (!local)
    local = check_home(m, s, ns, questions, nq, why, sizeof why);
  free(s), free(questions), free(got);
  if ((ret = report(m, local, why)))
    return ret;
  sort_leaves(m);
  return 0;
}

const strata_mesh_params *strata_mesh_get_params(const strata_mesh *m) { return m ? &m->p : NULL; }

int64_t strata_mesh_num_local_leaves(const strata_mesh *m) { return m ? m->nleaves : 0; }

int strata_mesh_field_handle(const strata_mesh *m, const strata_amr_block *b, int field,
                             starpu_data_handle_t *h)
{
  strata__clear_error();
  if (!m || !b || !h || field < 0 || field >= m->p.nfields)
    return STRATA_EINVAL;
  const struct strata__mesh_leaf *l = strata__mesh_find(m, b);
  if (!l)
    return STRATA_ERANGE;
  *h = l->h[field];
  return 0;
}

/* ---- Strata's own octree as a mesh ---- */

void strata_mesh_params_of_amr(const strata_amr_params *a, strata_mesh_params *p)
{
  if (!a || !p)
    return;
  strata_mesh_params_init(p); /* the unit cube */
  for (int k = 0; k < 3; k++)
    p->root[k] = a->root_blocks;
  p->block_cells = a->block_cells;
  p->ghost_depth = a->ghost_depth;
  p->max_level = a->max_level;
  p->dtype = a->dtype;
  p->nfields = a->nfields;
  memcpy(p->field_names, a->field_names, sizeof p->field_names);
  p->boundary = a->boundary;
}

int strata__mesh_of_amr(strata_amr *amr, strata_mesh **out)
{
  strata_mesh_params p;
  strata_mesh_params_of_amr(&amr->p, &p);
  int ret = mesh_new(&p, out);
  if (!ret)
    (*out)->amr = amr;
  return ret;
}

int strata__mesh_describe_amr(strata_mesh *m)
{
  const strata_amr *amr = m->amr;
  drop_leaves(m);
  for (int64_t i = 0; i < amr->nleaves; i++) {
    const struct strata__amr_node *leaf = amr->leaves[i];
    if (leaf->rank != amr->rank)
      continue;
    int ret = add_leaf(m, leaf->b.level, leaf->b.index, NULL, leaf->h);
    if (ret)
      return ret;
  }
  sort_leaves(m);
  return 0;
}
