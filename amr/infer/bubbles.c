/* Bubbles that straddle arrays: each array's components ("parts") are
 * joined with those of its neighbours across the shared borders, on any
 * rank, into one bubble per region, delivered as a particle to the leaf
 * that holds its centre.
 *
 * Link tasks compare each element's border faces with those of its 13
 * forward neighbours (StarPU-MPI brings a remote neighbour's faces). After
 * the cycle, no rank gathers every part: components are labelled by their
 * smallest part (element position, first cell) across the links between
 * ranks, and each is joined by the directory rank of that part, summing
 * its parts in the order a single rank would, so the bubbles are bitwise
 * the same on any rank count and under any scheduler. */
#include "bubbles.h"
#include "infer_impl.h"

struct element *strata__infer_neighbour(const strata_infer *inf, const struct element *e,
                                        const int d[3])
{
  const int periodic = inf->mesh->p.boundary == STRATA_AMR_PERIODIC;
  int64_t idx[3];
  for (int a = 0; a < 3; a++) {
    const int64_t blocks = array_blocks(inf, a);
    idx[a] = e->idx[a] + d[a];
    if (idx[a] < 0 || idx[a] >= blocks) {
      if (!periodic)
        return NULL;
      idx[a] = (idx[a] + blocks) % blocks;
    }
  }
  return strata__infer_find_element(inf, idx);
}

/* A links task involves the element's owner, which runs it, and the
 * owners of its neighbours, which send their faces; other ranks neither
 * submit it nor register its handles (StarPU-MPI needs only the ranks
 * that run or send). */
int strata__infer_submit_links(strata_infer *inf)
{
  const int me = inf->mesh->rank;
  int ret = 0;
  for (int64_t i = 0; i < inf->nel && !ret; i++) {
    struct element *e = &inf->el[i];
    struct strata__bubble_links_params lp = {.n = inf->n};
    struct element *nb[STRATA__BUBBLE_DIRECTIONS];
    int involved = e->rank == me;
    for (int k = 0; k < STRATA__BUBBLE_DIRECTIONS; k++) {
      int d[3];
      strata__bubble_direction(k, d);
      nb[k] = strata__infer_neighbour(inf, e, d);
      lp.present[k] = nb[k] != NULL;
      involved |= nb[k] && nb[k]->rank == me;
    }
    if (!involved)
      continue;
    starpu_data_handle_t faces[STRATA__BUBBLE_DIRECTIONS];
    ret = strata__infer_link_handles(inf, e, 1);
    for (int k = 0; k < STRATA__BUBBLE_DIRECTIONS && !ret; k++)
      if (nb[k] && !(ret = strata__infer_link_handles(inf, nb[k], 0)))
        faces[k] = nb[k]->faces;
    if (!ret)
      ret = strata__bubble_links_submit(inf->mesh->comm, e->links, e->faces, faces, &lp);
  }
  /* A rank that received a neighbour's faces keeps them in StarPU-MPI's
   * cache, and the owner's next extraction (a task of its own, not a
   * StarPU-MPI one) does not invalidate them there: drop them now, on
   * every rank that registered them. */
  for (int64_t i = 0; i < inf->nel && !ret; i++)
    if (inf->el[i].faces)
      starpu_mpi_cache_flush(inf->mesh->comm, inf->el[i].faces);
  return ret;
}

/* ---- joining ---- */

/* A part as gathered: its element's position in the level array, its
 * first cell in the array and over the whole level_infer grid, then its
 * figures and its value channels' means (part_width() doubles in all). */
enum { P_ELEMENT, P_FIRST, P_CELL, P_X, P_Y, P_Z, P_MASS, P_PEAK, P_CELLS, P_VALUES };

static int64_t part_width(const strata_infer *inf) { return P_VALUES + inf->bubble.values; }
/* A link: element position and first cell of each side, then the ranks of
 * the two elements. */
enum { L_POS, L_FIRST, L_NB_POS, L_NB_FIRST, L_RANK, L_NB_RANK, LINK_VALUES };

static int part_cmp(const void *x, const void *y)
{
  const double *a = x, *b = y;
  for (int k = P_ELEMENT; k <= P_FIRST; k++)
    if (a[k] != b[k])
      return a[k] < b[k] ? -1 : 1;
  return 0;
}

static int link_cmp(const void *x, const void *y)
{
  const int64_t *a = x, *b = y;
  for (int k = 0; k < LINK_VALUES; k++)
    if (a[k] != b[k])
      return a[k] < b[k] ? -1 : 1;
  return 0;
}

/* Append element e's distinct links (from its link array `l`) to *links
 * (*nl of *capacity records, grown as needed). */
static int append_links(strata_infer *inf, const struct element *e, const int32_t *l,
                        int64_t **links, int64_t *nl, int64_t *capacity)
{
  int64_t first = *nl;
  for (int k = 0; k < STRATA__BUBBLE_DIRECTIONS; k++) {
    int d[3];
    strata__bubble_direction(k, d);
    const struct element *nb = strata__infer_neighbour(inf, e, d);
    int64_t end = strata__bubble_link_offset(inf->n, k + 1);
    for (int64_t s = strata__bubble_link_offset(inf->n, k); nb && s < end; s++) {
      if (l[2 * s] < 0)
        continue;
      if (*nl == *capacity) {
        int64_t grown = 2 * *capacity + 64;
        int64_t *more = realloc(*links, (size_t)grown * LINK_VALUES * sizeof *more);
        if (!more)
          return STRATA_ENOMEM;
        *links = more, *capacity = grown;
      }
      int64_t *q = *links + *nl * LINK_VALUES;
      q[L_POS] = e->pos, q[L_FIRST] = l[2 * s], q[L_NB_POS] = nb->pos, q[L_NB_FIRST] = l[2 * s + 1];
      q[L_RANK] = e->rank, q[L_NB_RANK] = nb->rank;
      /* Neighbouring slots mostly repeat a pair: skip it at once. */
      if (*nl == first || link_cmp(q - LINK_VALUES, q))
        (*nl)++;
    }
  }
  *nl = first + strata__amr_sort_unique(*links + first * LINK_VALUES, *nl - first,
                                        LINK_VALUES * sizeof **links, link_cmp);
  return 0;
}

/* Index of cell f of element e in the scan order of the whole level_infer grid. */
static int64_t global_cell(const strata_infer *inf, const struct element *e, int64_t f)
{
  const int64_t n = inf->n, side[3] = {array_blocks(inf, 0) * n, array_blocks(inf, 1) * n};
  int64_t local[3] = {f % n, f / n % n, f / (n * n)}, g[3];
  for (int a = 0; a < 3; a++)
    g[a] = e->idx[a] * n + local[a];
  return (g[2] * side[1] + g[1]) * side[0] + g[0];
}

/* This rank's stored parts (from its tables) and distinct links (from its
 * link arrays), malloc'd; counts[0] gets the parts found, counts[1] those
 * that did not fit a table. */
static int local_parts(strata_infer *inf, double **parts, int64_t *np, int64_t **links, int64_t *nl,
                       int64_t counts[2])
{
  const int64_t cap = inf->p.bubble_capacity;
  int64_t mine = 0, link_capacity = 0;
  for (int64_t i = 0; i < inf->nel; i++)
    mine += inf->el[i].rank == inf->mesh->rank;
  const int64_t width = part_width(inf), columns = strata__bubble_columns(inf->bubble.values);
  *parts = malloc((size_t)((mine * cap + 1) * width) * sizeof **parts);
  *links = NULL;
  *np = *nl = counts[0] = counts[1] = 0;
  if (!*parts)
    return STRATA_ENOMEM;
  int ret = 0;
  for (int64_t i = 0; i < inf->nel && !ret; i++) {
    struct element *e = &inf->el[i];
    if (e->rank != inf->mesh->rank)
      continue;
    if (strata__acquire(e->table, STARPU_R) != 0)
      return STRATA_ESTARPU;
    const double *t = (const void *)starpu_vector_get_local_ptr(e->table);
    int64_t found = (int64_t)t[0], stored = found < cap ? found : cap;
    counts[0] += found;
    counts[1] += found - stored;
    for (int64_t r = 0; r < stored; r++) {
      const double *row = t + (1 + r) * columns;
      double *p = *parts + *np * width;
      p[P_ELEMENT] = (double)e->pos;
      p[P_FIRST] = row[STRATA__BUBBLE_FIRST];
      p[P_CELL] = (double)global_cell(inf, e, (int64_t)row[STRATA__BUBBLE_FIRST]);
      p[P_X] = row[STRATA__BUBBLE_X];
      p[P_Y] = row[STRATA__BUBBLE_Y];
      p[P_Z] = row[STRATA__BUBBLE_Z];
      p[P_MASS] = row[STRATA__BUBBLE_MASS];
      p[P_PEAK] = row[STRATA__BUBBLE_PEAK];
      p[P_CELLS] = row[STRATA__BUBBLE_CELLS];
      for (int k = 0; k < inf->bubble.values; k++)
        p[P_VALUES + k] = row[STRATA__BUBBLE_FIELDS + k];
      (*np)++;
    }
    starpu_data_release(e->table);
    if (strata__acquire(e->links, STARPU_R) != 0)
      return STRATA_ESTARPU;
    ret = append_links(inf, e, (const void *)starpu_vector_get_local_ptr(e->links), links, nl,
                       &link_capacity);
    starpu_data_release(e->links);
  }
  return ret;
}

static int64_t find_root(int64_t *parent, int64_t i)
{
  while (parent[i] != i) {
    parent[i] = parent[parent[i]];
    i = parent[i];
  }
  return i;
}

static int64_t find_part(const double *parts, int64_t width, int64_t np, int64_t element,
                         int64_t first)
{
  double key[P_FIRST + 1] = {(double)element, (double)first}; /* what part_cmp reads */
  const double *hit = bsearch(key, parts, (size_t)np, (size_t)width * sizeof *parts, part_cmp);
  return hit ? (hit - parts) / width : -1;
}

struct ranked {
  strata_bubble b;
  int64_t element;
};

static int ranked_cmp(const void *x, const void *y)
{
  const struct ranked *a = x, *b = y;
  return (a->b.id > b->b.id) - (a->b.id < b->b.id);
}

/* The bubbles of the union-find forest `parent` over the sorted parts:
 * sums in part order, centres as the nearest periodic image of the root
 * part's, then wrapped into the domain. */
static int build_bubbles(strata_infer *inf, const double *parts, int64_t np, int64_t *parent)
{
  const strata_mesh_params *mp = &inf->mesh->p;
  const int periodic = mp->boundary == STRATA_AMR_PERIODIC;
  const double h = array_cell(inf);
  int64_t *slot = malloc((size_t)(np + 1) * sizeof *slot);
  strata_bubble *b = calloc((size_t)(np + 1), sizeof *b);
  int64_t *element = malloc((size_t)(np + 1) * sizeof *element);
  if (!slot || !b || !element) {
    free(slot), free(b), free(element);
    return STRATA_ENOMEM;
  }
  int64_t nb = 0;
  for (int64_t i = 0; i < np; i++) {
    const double *p = parts + i * part_width(inf);
    int64_t root = find_root(parent, i);
    const double *r = parts + root * part_width(inf);
    if (root == i) {
      slot[i] = nb;
      b[nb] = (strata_bubble){.id = INT64_MAX, .nvalues = inf->bubble.values};
      element[nb++] = -1;
    }
    strata_bubble *x = &b[slot[root]];
    for (int a = 0; a < 3; a++) {
      double c = p[P_X + a], length = mp->upper[a] - mp->lower[a];
      if (periodic) /* the image nearest the root part's centre */
        c += length * round((r[P_X + a] - c) / length);
      x->center[a] += p[P_MASS] * c;
    }
    x->mass += p[P_MASS];
    for (int k = 0; k < inf->bubble.values; k++)
      x->values[k] += p[P_MASS] * p[P_VALUES + k];
    x->peak = fmax(x->peak, p[P_PEAK]);
    x->cells += (int64_t)p[P_CELLS];
    x->parts++;
    int64_t id = (int64_t)p[P_CELL];
    if (id < x->id) {
      x->id = id;
      element[slot[root]] = (int64_t)p[P_ELEMENT];
    }
  }
  int64_t kept = 0;
  for (int64_t k = 0; k < nb; k++) {
    strata_bubble *x = &b[k];
    if (x->cells < inf->p.bubble_min_cells)
      continue;
    for (int k = 0; k < inf->bubble.values; k++)
      x->values[k] /= x->mass;
    for (int a = 0; a < 3; a++) {
      x->center[a] /= x->mass;
      if (periodic) { /* into [lower, upper): a tiny negative would round to 1 */
        const double length = mp->upper[a] - mp->lower[a];
        double f = (x->center[a] - mp->lower[a]) / length;
        f -= floor(f);
        x->center[a] = mp->lower[a] + length * (f < 1.0 ? f : 0.0);
      }
    }
    x->radius = strata__bubble_radius((double)x->cells, h);
    b[kept] = *x;
    element[kept++] = element[k];
  }
  /* By id: the order of their first cells over the whole grid. */
  struct ranked *order = malloc((size_t)(kept + 1) * sizeof *order);
  if (!order) {
    free(slot), free(b), free(element);
    return STRATA_ENOMEM;
  }
  for (int64_t k = 0; k < kept; k++)
    order[k] = (struct ranked){b[k], element[k]};
  qsort(order, (size_t)kept, sizeof *order, ranked_cmp);
  for (int64_t k = 0; k < kept; k++)
    b[k] = order[k].b, element[k] = order[k].element;
  free(order);
  free(slot);
  inf->bubbles = b;
  inf->bubble_element = element;
  inf->nbubbles = kept;
  return 0;
}

/* ---- particles ---- */

static int particle_cmp(const void *x, const void *y)
{
  const struct particle *a = x, *b = y;
  int c = strata__block_cmp(&a->leaf, a->key, &b->leaf, b->key);
  return c ? c : (a->bubble > b->bubble) - (a->bubble < b->bubble);
}

/* The local leaf holding point x of the domain (clamped inside), NULL when
 * another rank's leaf holds it: the leaf containing its cell of the finest
 * level, looked for at each level. */
static const struct strata__mesh_leaf *local_leaf_at(const strata_mesh *mesh, const double x[3])
{
  const int top = mesh->p.max_level;
  int64_t cell[3];
  strata__infer_finest_cell(mesh, x, cell);
  for (int level = 0; level <= top; level++) {
    strata_amr_block b = {.level = level};
    for (int a = 0; a < 3; a++)
      b.index[a] = (cell[a] / mesh->p.block_cells) >> (top - level);
    const struct strata__mesh_leaf *leaf = strata__mesh_find(mesh, &b);
    if (leaf)
      return leaf;
  }
  return NULL;
}

static int bubble_id_cmp(const void *x, const void *y)
{
  const strata_bubble *a = x, *b = y;
  return (a->id > b->id) - (a->id < b->id);
}

/* Of the bubbles `b` sent here, those whose centre a local leaf holds, as
 * its particles. */
static int deliver_particles(strata_infer *inf, strata_bubble *b, int64_t n)
{
  inf->particles = malloc((size_t)(n + 1) * sizeof *inf->particles);
  if (!inf->particles)
    return STRATA_ENOMEM;
  if (n)
    qsort(b, (size_t)n, sizeof *b, bubble_id_cmp); /* particles in id order */
  for (int64_t k = 0; k < n; k++) {
    const struct strata__mesh_leaf *leaf = local_leaf_at(inf->mesh, b[k].center);
    if (leaf) {
      b[inf->ndelivered] = b[k];
      inf->particles[inf->nparticles++] = (struct particle){leaf->b, leaf->key, inf->ndelivered++};
    }
  }
  inf->delivered = b;
  qsort(inf->particles, (size_t)inf->nparticles, sizeof *inf->particles, particle_cmp);
  return 0;
}

void strata__infer_drop_bubbles(strata_infer *inf)
{
  free(inf->bubbles);
  free(inf->bubble_element);
  free(inf->delivered);
  free(inf->particles);
  inf->bubbles = inf->delivered = NULL;
  inf->bubble_element = NULL;
  inf->particles = NULL;
  inf->nbubbles = inf->ndelivered = inf->nparticles = 0;
}

/* ---- the join, across ranks ---- */

/* A part's component label: the smallest (element position, first cell)
 * of the parts it is linked to, which is the union-find root of the
 * single-rank join. */
struct label {
  int64_t pos, first;
};

static int label_less(struct label a, struct label b)
{
  return a.pos != b.pos ? a.pos < b.pos : a.first < b.first;
}

/* A link between a local part and another rank's. */
struct edge {
  int64_t part; /* local */
  int rank;
  struct label remote, sent; /* the other side; the smallest label it is known to have */
};

static int edge_cmp(const void *x, const void *y)
{
  const struct edge *a = x, *b = y;
  if (a->part != b->part)
    return a->part < b->part ? -1 : 1;
  if (a->remote.pos != b->remote.pos)
    return a->remote.pos < b->remote.pos ? -1 : 1;
  return (a->remote.first > b->remote.first) - (a->remote.first < b->remote.first);
}

/* A label sent across an edge: the receiver's part, the sender's part, the
 * label, the sender's rank. */
enum { S_PART, S_PART_FIRST, S_FROM, S_FROM_FIRST, S_LABEL, S_LABEL_FIRST, S_RANK, S_WIDTH };

/* Sorted by (part, remote), each pair once, with the smaller of its known
 * labels; the new count. */
static int64_t merge_edges(struct edge *edges, int64_t n)
{
  if (!n)
    return 0;
  qsort(edges, (size_t)n, sizeof *edges, edge_cmp);
  int64_t kept = 1;
  for (int64_t i = 1; i < n; i++) {
    struct edge *last = &edges[kept - 1];
    if (edge_cmp(last, &edges[i]))
      edges[kept++] = edges[i];
    else if (label_less(edges[i].sent, last->sent))
      last->sent = edges[i].sent;
  }
  return kept;
}

/* Labels of this rank's parts (sorted, np of them) over their components:
 * the local links join parts at once, and each round sends the label of
 * a part's component across every link to another rank that is not known
 * to have one as small, until no rank sends any. A link is known to the
 * rank of its element only: the first round introduces it to the other
 * side with the sender's label, and the other side answers only when its
 * own label is smaller. *bytes grows by what other ranks send. Collective;
 * `local`: this rank's error so far. */
static int label_parts(strata_infer *inf, const double *parts, int64_t np, const int64_t *links,
                       int64_t nl, struct label *label, int local, int64_t *bytes)
{
  const int me = inf->mesh->rank, width = (int)part_width(inf);
  int64_t *parent = malloc((size_t)(np + 1) * sizeof *parent), nedges = 0;
  struct edge *edges = malloc((size_t)(nl + 1) * sizeof *edges);
  int ret = local ? local : parent && edges ? 0 : STRATA_ENOMEM;
  for (int64_t i = 0; !ret && i < np; i++) {
    parent[i] = i;
    label[i] =
        (struct label){(int64_t)parts[i * width + P_ELEMENT], (int64_t)parts[i * width + P_FIRST]};
  }
  for (int64_t k = 0; !ret && k < nl; k++) {
    const int64_t *l = links + k * LINK_VALUES;
    int64_t a = find_part(parts, width, np, l[L_POS], l[L_FIRST]),
            b = l[L_NB_RANK] == me ? find_part(parts, width, np, l[L_NB_POS], l[L_NB_FIRST]) : -1;
    if (a >= 0 && b >= 0) { /* the smaller index stays the root */
      a = find_root(parent, a), b = find_root(parent, b);
      if (a != b)
        parent[a > b ? a : b] = a < b ? a : b;
    } else if (a >= 0 && l[L_NB_RANK] != me) /* a part beyond its table's capacity joins nothing */
      edges[nedges++] = (struct edge){.part = a,
                                      .rank = (int)l[L_NB_RANK],
                                      .remote = {l[L_NB_POS], l[L_NB_FIRST]},
                                      .sent = {INT64_MAX, INT64_MAX}};
  }
  for (int64_t i = 0; !ret && i < np; i++) /* roots are their components' smallest parts */
    label[i] = label[find_root(parent, i)];
  struct strata__infer_records r = {.width = S_WIDTH};
  for (int64_t round = 0, sent = 1; sent > 0; round++) {
    int64_t *got = NULL, ngot = 0;
    for (int64_t e = 0; !ret && e < nedges; e++) {
      struct edge *x = &edges[e];
      const struct label mine = label[find_root(parent, x->part)];
      if (!label_less(mine, x->sent))
        continue;
      int64_t *q = strata__infer_add_record(&r, x->rank);
      if (!q) {
        ret = STRATA_ENOMEM;
        break;
      }
      x->sent = mine;
      q[S_PART] = x->remote.pos, q[S_PART_FIRST] = x->remote.first;
      q[S_FROM] = (int64_t)parts[x->part * width + P_ELEMENT];
      q[S_FROM_FIRST] = (int64_t)parts[x->part * width + P_FIRST];
      q[S_LABEL] = mine.pos, q[S_LABEL_FIRST] = mine.first, q[S_RANK] = me;
    }
    ret = strata__infer_send_records(inf, ret, &r, &got, &ngot, bytes);
    sent = r.sent_everywhere; /* none anywhere: the labels are final */
    struct edge *more = !ret && round == 0 && ngot
                            ? realloc(edges, (size_t)(nedges + ngot) * sizeof *edges)
                            : edges;
    if (!more)
      ret = STRATA_ENOMEM;
    else
      edges = more;
    for (int64_t k = 0; !ret && k < ngot; k++) {
      const int64_t *q = got + S_WIDTH * k;
      const int64_t i = find_part(parts, width, np, q[S_PART], q[S_PART_FIRST]);
      if (i < 0)
        continue;
      const struct label theirs = {q[S_LABEL], q[S_LABEL_FIRST]};
      struct edge key = {.part = i, .remote = {q[S_FROM], q[S_FROM_FIRST]}}, *x;
      if (round == 0) /* the other side of a link: its sender has `theirs` */
        edges[nedges++] = (struct edge){i, (int)q[S_RANK], key.remote, theirs};
      else if ((x = bsearch(&key, edges, (size_t)nedges, sizeof *edges, edge_cmp)) &&
               label_less(theirs, x->sent))
        x->sent = theirs;
      const int64_t root = find_root(parent, i);
      if (label_less(theirs, label[root]))
        label[root] = theirs;
    }
    free(got);
    if (!ret && round == 0)
      nedges = merge_edges(edges, nedges);
    for (int64_t i = 0; !ret && i < np; i++)
      label[i] = label[find_root(parent, i)];
    sent = ret ? 0 : sent;
  }
  free(parent), free(edges);
  return ret;
}

/* Every part to the directory rank of its component's smallest part, which
 * joins the components rooted in its range as the single-rank join does:
 * parts in sorted order, each added to its root's bubble. */
static int collect_bubbles(strata_infer *inf, const double *parts, int64_t np,
                           const struct label *label, int64_t *bytes)
{
  const int width = (int)part_width(inf), wide = width + 2;
  struct strata__infer_records r = {.width = wide};
  int ret = 0;
  for (int64_t i = 0; !ret && i < np; i++) {
    int64_t *q =
        strata__infer_add_record(&r, strata__range_at(inf->dir_firsts, inf->mesh->size,
                                                      label[i].pos)); /* its directory rank */
    if (!q) {
      ret = STRATA_ENOMEM;
      break;
    }
    const double root[2] = {(double)label[i].pos, (double)label[i].first};
    memcpy(q, parts + i * width, (size_t)width * sizeof *q);
    memcpy(q + width, root, sizeof root);
  }
  int64_t *got = NULL, ngot = 0;
  ret = strata__infer_send_records(inf, ret, &r, &got, &ngot, bytes);
  double *mine = ret ? NULL : malloc((size_t)(ngot * width + 1) * sizeof *mine);
  int64_t *parent = ret ? NULL : malloc((size_t)(ngot + 1) * sizeof *parent);
  if (!ret && (!mine || !parent))
    ret = STRATA_ENOMEM;
  if (!ret) {
    /* Sorted by part: a part's label columns follow it. */
    qsort(got, (size_t)ngot, (size_t)wide * sizeof *got, part_cmp);
    const double *g = (const double *)(const void *)got;
    for (int64_t i = 0; i < ngot; i++)
      memcpy(mine + i * width, g + i * wide, (size_t)width * sizeof *mine);
    for (int64_t i = 0; i < ngot; i++) { /* the root is among them: its own label */
      parent[i] = find_part(mine, width, ngot, (int64_t)g[i * wide + width],
                            (int64_t)g[i * wide + width + 1]);
      parent[i] = parent[i] < 0 ? i : parent[i];
    }
    ret = build_bubbles(inf, mine, ngot, parent);
  }
  free(got), free(mine), free(parent);
  return ret;
}

/* The directory rank of the element holding point x. */
static int directory_of_point(const strata_infer *inf, const double x[3], uint64_t *key)
{
  const int64_t shift = inf->mesh->p.max_level - inf->p.level_array;
  int64_t cell[3], idx[3];
  strata__infer_finest_cell(inf->mesh, x, cell);
  for (int a = 0; a < 3; a++)
    idx[a] = (cell[a] / inf->mesh->p.block_cells) >> shift;
  *key = strata__morton(idx);
  return strata__infer_directory_rank(inf, *key);
}

/* The order of overlaps: by key, then rank. */
static int overlap_before(const struct overlap *a, const struct overlap *b)
{
  return a->key != b->key ? a->key < b->key : a->rank < b->rank;
}

/* Each collected bubble to the directory rank of the element holding its
 * centre, which sends it on to every rank whose leaves overlap that
 * element: the leaf holding the centre is one of theirs. */
static int send_to_leaves(strata_infer *inf, int64_t *bytes)
{
  enum { WIDTH = sizeof(strata_bubble) / 8 };
  struct strata__infer_records r = {.width = WIDTH};
  uint64_t key;
  int ret = 0;
  for (int64_t k = 0; !ret && k < inf->nbubbles; k++) {
    int64_t *q =
        strata__infer_add_record(&r, directory_of_point(inf, inf->bubbles[k].center, &key));
    if (q)
      memcpy(q, &inf->bubbles[k], sizeof inf->bubbles[k]);
    else
      ret = STRATA_ENOMEM;
  }
  int64_t *got = NULL, ngot = 0;
  ret = strata__infer_send_records(inf, ret, &r, &got, &ngot, bytes);
  /* The directory: on to the ranks that overlap the element. */
  for (int64_t k = 0; !ret && k < ngot; k++) {
    const int64_t *b = got + k * WIDTH;
    directory_of_point(inf, ((const strata_bubble *)(const void *)b)->center, &key);
    const struct overlap first = {key, -1};
    int64_t lo = 0, hi = inf->noverlaps; /* the first overlap of this key */
    while (lo < hi) {
      int64_t mid = (lo + hi) / 2;
      if (overlap_before(&inf->overlaps[mid], &first))
        lo = mid + 1;
      else
        hi = mid;
    }
    for (; !ret && lo < inf->noverlaps && inf->overlaps[lo].key == key; lo++) {
      int64_t *q = strata__infer_add_record(&r, inf->overlaps[lo].rank);
      if (q)
        memcpy(q, b, WIDTH * sizeof *q);
      else
        ret = STRATA_ENOMEM;
    }
  }
  free(got);
  ret = strata__infer_send_records(inf, ret, &r, &got, &ngot, bytes);
  if (!ret) /* got holds bubbles now: theirs to keep */
    ret = deliver_particles(inf, (strata_bubble *)(void *)got, ngot);
  else
    free(got);
  return ret;
}

int strata__infer_join_bubbles(strata_infer *inf, strata_infer_stats *st)
{
  strata__infer_drop_bubbles(inf);
  double *parts = NULL;
  int64_t *links = NULL, np = 0, nl = 0, counts[2] = {0, 0}, bytes = 0;
  int local = local_parts(inf, &parts, &np, &links, &nl, counts); /* agreed in the labelling */
  st->parts_local = counts[0];
  struct label *label = local ? NULL : malloc((size_t)(np + 1) * sizeof *label);
  if (!local && np) /* the order of the single-rank join */
    qsort(parts, (size_t)np, (size_t)part_width(inf) * sizeof *parts, part_cmp);
  int ret = label_parts(inf, parts, np, links, nl, label,
                        local   ? local
                        : label ? 0
                                : STRATA_ENOMEM,
                        &bytes);
  free(links);
  if (!ret)
    ret = collect_bubbles(inf, parts, np, label, &bytes);
  free(parts), free(label);
  if (!ret)
    ret = send_to_leaves(inf, &bytes);
  if (!ret) { /* this rank's: the cycle's statistics sum them */
    st->bubbles = inf->nbubbles;
    st->parts = counts[0];
    st->parts_lost = counts[1];
    st->particles_local = inf->nparticles;
    st->join_bytes_local = bytes;
  }
  return ret;
}

/* ---- queries ---- */

/* Every rank's collected bubbles, each with its element's position after
 * it, in id order, on every rank: *all (malloc'd, ROW values a bubble)
 * and *n. Collective. */
enum { BUBBLE_VALUES = sizeof(strata_bubble) / 8, ROW = BUBBLE_VALUES + 1 };
_Static_assert(sizeof(strata_bubble) % 8 == 0, "a bubble is a row of 8-byte fields");

static int row_id_cmp(const void *x, const void *y) { return bubble_id_cmp(x, y); }

static int gather_bubbles(strata_infer *inf, int64_t **all, int64_t *n)
{
  int64_t *mine = malloc((size_t)(inf->nbubbles * ROW + 1) * sizeof *mine);
  int ret = strata__agree(mine ? 0 : STRATA_ENOMEM, NULL, 0);
  for (int64_t k = 0; !ret && k < inf->nbubbles; k++) {
    memcpy(mine + k * ROW, &inf->bubbles[k], sizeof inf->bubbles[k]);
    mine[k * ROW + BUBBLE_VALUES] = inf->bubble_element[k];
  }
  void *gathered = NULL;
  int64_t total = 0;
  if (!ret)
    ret = strata__infer_allgather_values(inf->mesh, mine, inf->nbubbles * ROW, MPI_INT64_T,
                                         &gathered, &total);
  free(mine);
  *all = gathered;
  *n = total / ROW;
  if (!ret && *n) /* the id leads each row */
    qsort(*all, (size_t)*n, ROW * sizeof **all, row_id_cmp);
  return ret;
}

int strata_infer_bubbles(strata_infer *inf, strata_bubble **list, int64_t **element, int64_t *n)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!inf)
    return STRATA_EINVAL;
  ret = strata__agree(list && n ? 0 : STRATA_EINVAL, NULL, 0);
  int64_t *all = NULL, count = 0;
  if (!ret)
    ret = gather_bubbles(inf, &all, &count);
  strata_bubble *b = ret ? NULL : malloc((size_t)(count + 1) * sizeof *b);
  int64_t *pos = ret || !element ? NULL : malloc((size_t)(count + 1) * sizeof *pos);
  if (!ret && (!b || (element && !pos)))
    ret = STRATA_ENOMEM;
  for (int64_t k = 0; !ret && k < count; k++) {
    memcpy(&b[k], all + k * ROW, sizeof b[k]);
    if (pos)
      pos[k] = all[k * ROW + BUBBLE_VALUES];
  }
  free(all);
  if (ret) {
    free(b), free(pos);
    return ret;
  }
  *list = b;
  if (element)
    *element = pos;
  *n = count;
  return 0;
}

int strata_infer_leaf_particles(strata_infer *inf, const strata_amr_block *b, strata_bubble **list,
                                int64_t *n)
{
  strata__clear_error();
  if (!inf || !b || !list || !n || !strata__infer_is_local_leaf(inf, b))
    return STRATA_EINVAL;
  struct particle key = {.leaf = *b, .key = strata__morton(b->index), .bubble = -1};
  int64_t lo = 0, hi = inf->nparticles;
  while (lo < hi) { /* the first particle at or after (leaf, -1) */
    int64_t mid = (lo + hi) / 2;
    if (particle_cmp(&inf->particles[mid], &key) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  int64_t end = lo;
  while (end < inf->nparticles &&
         !strata__block_cmp(&inf->particles[end].leaf, inf->particles[end].key, b, key.key))
    end++;
  *list = malloc((size_t)(end - lo + 1) * sizeof **list);
  if (!*list)
    return STRATA_ENOMEM;
  for (int64_t k = lo; k < end; k++)
    (*list)[k - lo] = inf->delivered[inf->particles[k].bubble];
  *n = end - lo;
  return 0;
}

int strata_infer_write_hdf5(strata_infer *inf, const char *path, const char *const *keys,
                            const char *const *values, int n)
{
  strata__clear_error();
  if (!inf)
    return STRATA_EINVAL;
  int ret = strata__agree(inf->mesh->amr ? 0 : STRATA_EINVAL, NULL, 0);
  if (ret)
    return strata__fail(ret, "strata_infer_write_hdf5 needs Strata's own hierarchy: an "
                             "application's mesh is written by the application");
  /* Every bubble, and its leaf from the particles of that leaf's rank (4
   * numbers each). */
  int64_t *all = NULL, nb = 0;
  ret = gather_bubbles(inf, &all, &nb);
  int64_t *where = ret ? NULL : malloc((size_t)(4 * nb + 1) * sizeof *where);
  strata_amr_block *leaves = ret ? NULL : malloc((size_t)(nb + 1) * sizeof *leaves);
  strata_bubble *bubbles = ret ? NULL : malloc((size_t)(nb + 1) * sizeof *bubbles);
  if (ret || (ret = strata__agree(where && leaves && bubbles ? 0 : STRATA_ENOMEM, NULL, 0))) {
    free(all), free(where), free(leaves), free(bubbles);
    return ret;
  }
  for (int64_t k = 0; k < nb; k++)
    memcpy(&bubbles[k], all + k * ROW, sizeof bubbles[k]);
  free(all);
  for (int64_t k = 0; k < 4 * nb; k++)
    where[k] = -1;
  for (int64_t k = 0; k < inf->nparticles; k++) {
    const struct particle *p = &inf->particles[k];
    const strata_bubble *b =
        bsearch(&inf->delivered[p->bubble], bubbles, (size_t)nb, sizeof *bubbles, bubble_id_cmp);
    const int64_t at = b - bubbles; /* every delivered bubble is one of them */
    where[4 * at] = p->leaf.level;
    memcpy(where + 4 * at + 1, p->leaf.index, 3 * sizeof *where);
  }
  MPI_Allreduce(MPI_IN_PLACE, where, (int)(4 * nb), MPI_INT64_T, MPI_MAX, inf->mesh->meta);
  for (int64_t k = 0; k < nb; k++) {
    leaves[k] = (strata_amr_block){.level = (int)where[4 * k]};
    memcpy(leaves[k].index, where + 4 * k + 1, sizeof leaves[k].index);
  }
  free(where);
  const char *names[STRATA_BUBBLE_MAX_VALUES];
  for (int k = 0; k < inf->bubble.values; k++)
    names[k] = inf->value_names[k];
  struct strata__amr_particles particles = {nb, bubbles, leaves, inf->bubble.values, names};
  ret = strata__amr_write_hdf5(inf->mesh->amr, path, keys, values, n, &particles);
  free(leaves);
  free(bubbles);
  return ret;
}
