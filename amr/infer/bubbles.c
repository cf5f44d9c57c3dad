/* Bubbles that straddle arrays: each array's components ("parts") are
 * joined with those of its neighbours across the shared borders, on any
 * rank, into one bubble per region, delivered as a particle to the leaf
 * that holds its centre.
 *
 * Link tasks compare each element's border faces with those of its 13
 * forward neighbours (StarPU-MPI brings a remote neighbour's faces). After
 * the cycle, every rank gathers the parts (a few numbers each, named by
 * their elements' positions in the level array) and the distinct links,
 * and runs the same union-find over them in the same order, so the
 * bubbles are bitwise the same on any rank count and under any scheduler.
 * This gather grows with the whole problem's bubbles (docs/scaling.md). */
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
/* A link as gathered: element position and first cell of each side. */
enum { LINK_VALUES = 4 };

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
      q[0] = e->pos, q[1] = l[2 * s], q[2] = nb->pos, q[3] = l[2 * s + 1];
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
  for (int a = 0; a < 3; a++) {
    const int64_t cells = strata__mesh_blocks(mesh, a, top) * mesh->p.block_cells;
    const double scale = (double)cells / (mesh->p.upper[a] - mesh->p.lower[a]);
    cell[a] = (int64_t)floor((x[a] - mesh->p.lower[a]) * scale);
    cell[a] = cell[a] < 0 ? 0 : cell[a] >= cells ? cells - 1 : cell[a];
  }
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

/* Each bubble to the leaf holding its centre, kept where that leaf is local. */
static int deliver_particles(strata_infer *inf)
{
  inf->particles = malloc((size_t)(inf->nbubbles + 1) * sizeof *inf->particles);
  if (!inf->particles)
    return STRATA_ENOMEM;
  for (int64_t k = 0; k < inf->nbubbles; k++) {
    const struct strata__mesh_leaf *leaf = local_leaf_at(inf->mesh, inf->bubbles[k].center);
    if (leaf)
      inf->particles[inf->nparticles++] = (struct particle){leaf->b, leaf->key, k};
  }
  qsort(inf->particles, (size_t)inf->nparticles, sizeof *inf->particles, particle_cmp);
  return 0;
}

void strata__infer_drop_bubbles(strata_infer *inf)
{
  free(inf->bubbles);
  free(inf->bubble_element);
  free(inf->particles);
  inf->bubbles = NULL;
  inf->bubble_element = NULL;
  inf->particles = NULL;
  inf->nbubbles = inf->nparticles = 0;
}

int strata__infer_join_bubbles(strata_infer *inf, strata_infer_stats *st)
{
  const strata_mesh *mesh = inf->mesh;
  strata__infer_drop_bubbles(inf);
  double *mine = NULL;
  int64_t *mine_links = NULL, np = 0, nl = 0, counts[2] = {0, 0};
  int ret = strata__agree(local_parts(inf, &mine, &np, &mine_links, &nl, counts), NULL, 0);
  st->parts_local = counts[0];
  void *all_parts = NULL, *all_links = NULL;
  int64_t total_parts = 0, total_links = 0;
  if (!ret)
    ret = strata__infer_allgather_values(mesh, mine, np * part_width(inf), MPI_DOUBLE, &all_parts,
                                         &total_parts);
  if (!ret)
    ret = strata__infer_allgather_values(mesh, mine_links, nl * LINK_VALUES, MPI_INT64_T,
                                         &all_links, &total_links);
  if (!ret) /* what came from the other ranks */
    st->join_bytes_local =
        (total_parts - np * part_width(inf) + total_links - nl * LINK_VALUES) * 8;
  free(mine);
  free(mine_links);
  double *parts = all_parts;
  int64_t *links = all_links, *parent = NULL;
  np = total_parts / part_width(inf);
  nl = total_links / LINK_VALUES;
  if (!ret) {
    parent = malloc((size_t)(np + 1) * sizeof *parent);
    ret = strata__agree(parent ? 0 : STRATA_ENOMEM, NULL, 0);
  }
  if (!ret) {
    /* The same order on every rank whatever the ranks' shares. */
    qsort(parts, (size_t)np, (size_t)part_width(inf) * sizeof *parts, part_cmp);
    for (int64_t i = 0; i < np; i++)
      parent[i] = i;
    for (int64_t k = 0; k < nl; k++) {
      const int64_t *l = links + k * LINK_VALUES;
      int64_t a = find_part(parts, part_width(inf), np, l[0], l[1]),
              b = find_part(parts, part_width(inf), np, l[2], l[3]);
      if (a < 0 || b < 0) /* a part beyond its table's capacity */
        continue;
      a = find_root(parent, a);
      b = find_root(parent, b);
      if (a != b) /* the smaller index stays the root */
        parent[a > b ? a : b] = a < b ? a : b;
    }
    ret = strata__agree(build_bubbles(inf, parts, np, parent), NULL, 0);
  }
  if (!ret)
    ret = strata__agree(deliver_particles(inf), NULL, 0);
  if (!ret) {
    MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_INT64_T, MPI_SUM, mesh->meta);
    st->bubbles = inf->nbubbles;
    st->parts = counts[0];
    st->parts_lost = counts[1];
    st->particles_local = inf->nparticles;
  }
  free(parent);
  free(all_parts);
  free(all_links);
  return ret;
}

/* ---- queries ---- */

int strata_infer_bubbles(strata_infer *inf, strata_bubble **list, int64_t **element, int64_t *n)
{
  strata__clear_error();
  if (!inf || !list || !n)
    return STRATA_EINVAL;
  *list = malloc((size_t)(inf->nbubbles + 1) * sizeof **list);
  int64_t *pos = element ? malloc((size_t)(inf->nbubbles + 1) * sizeof *pos) : NULL;
  if (!*list || (element && !pos)) {
    free(*list);
    free(pos);
    *list = NULL;
    return STRATA_ENOMEM;
  }
  memcpy(*list, inf->bubbles, (size_t)inf->nbubbles * sizeof **list);
  if (pos)
    memcpy(pos, inf->bubble_element, (size_t)inf->nbubbles * sizeof *pos);
  if (element)
    *element = pos;
  *n = inf->nbubbles;
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
    (*list)[k - lo] = inf->bubbles[inf->particles[k].bubble];
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
  /* The leaf of each bubble from its rank's particles (4 numbers each). */
  int64_t *where = malloc((size_t)(4 * inf->nbubbles + 1) * sizeof *where);
  strata_amr_block *leaves = malloc((size_t)(inf->nbubbles + 1) * sizeof *leaves);
  if ((ret = strata__agree(where && leaves ? 0 : STRATA_ENOMEM, NULL, 0))) {
    free(where), free(leaves);
    return ret;
  }
  for (int64_t k = 0; k < 4 * inf->nbubbles; k++)
    where[k] = -1;
  for (int64_t k = 0; k < inf->nparticles; k++) {
    const struct particle *p = &inf->particles[k];
    where[4 * p->bubble] = p->leaf.level;
    memcpy(where + 4 * p->bubble + 1, p->leaf.index, 3 * sizeof *where);
  }
  MPI_Allreduce(MPI_IN_PLACE, where, (int)(4 * inf->nbubbles), MPI_INT64_T, MPI_MAX,
                inf->mesh->meta);
  for (int64_t k = 0; k < inf->nbubbles; k++) {
    leaves[k] = (strata_amr_block){.level = (int)where[4 * k]};
    memcpy(leaves[k].index, where + 4 * k + 1, sizeof leaves[k].index);
  }
  free(where);
  const char *names[STRATA_BUBBLE_MAX_VALUES];
  for (int k = 0; k < inf->bubble.values; k++)
    names[k] = inf->value_names[k];
  struct strata__amr_particles particles = {inf->nbubbles, inf->bubbles, leaves, inf->bubble.values,
                                            names};
  ret = strata__amr_write_hdf5(inf->mesh->amr, path, keys, values, n, &particles);
  free(leaves);
  return ret;
}
