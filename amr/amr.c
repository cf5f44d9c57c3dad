/* The distributed hierarchy: creation, leaf handles registered with
 * StarPU-MPI, redistribution along the Morton curve, initial refinement,
 * adaptation with 2:1 balance, and the ghost fill task graph. p4est decides
 * the structure (forest.c); each rank decides for its own leaves, from them
 * and its ghost layer, and moves their handles where p4est moves them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <starpu_mpi.h>
#include <strata/starpu.h>

#include "amr.h"
#include "amr_internal.h"
#include "codelets.h"
#include "internal/runtime.h"
#include "kernels/amr_kernels.h"

void strata_amr_params_init(strata_amr_params *p)
{
  if (!p)
    return;
  *p = (strata_amr_params){.dim = 3,
                           .root_blocks = 2,
                           .block_cells = 16,
                           .ghost_depth = 1,
                           .max_level = 5,
                           .dtype = STRATA_FLOAT64,
                           .nfields = 1,
                           .field_names = {"density"},
                           .boundary = STRATA_AMR_PERIODIC};
}

void strata_amr_criterion_init(strata_amr_criterion *c)
{
  if (c)
    *c = (strata_amr_criterion){
        .kind = STRATA_AMR_MASS, .field = 0, .mean = 1, .min_refine = 1, .max_coarsen = 0.25};
}

const strata_amr_params *strata_amr_get_params(const strata_amr *amr)
{
  return amr ? &amr->p : NULL;
}

static int check_params(const strata_amr_params *p)
{
  if (!p)
    return STRATA_EINVAL;
  if (p->dim < 2 || p->dim > 3)
    return strata__fail(STRATA_EINVAL, "amr: dim %d is not 2 or 3", p->dim);
  if (p->block_cells < 4 || p->block_cells % 2 || p->block_cells > 1024)
    return strata__fail(STRATA_EINVAL, "amr: block_cells %d is not an even number in 4..1024",
                        p->block_cells);
  if (p->ghost_depth < 1 || p->ghost_depth > p->block_cells / 2)
    return strata__fail(STRATA_EINVAL, "amr: ghost_depth %d is not in 1..block_cells/2",
                        p->ghost_depth);
  if (p->max_level < 0 || p->max_level > STRATA_AMR_MAX_LEVEL)
    return strata__fail(STRATA_EINVAL, "amr: max_level %d is not in 0..%d", p->max_level,
                        STRATA_AMR_MAX_LEVEL);
  /* 19 bits of block index per axis in the node keys. */
  if (p->root_blocks < 1 || ((int64_t)p->root_blocks << p->max_level) > (1 << 19))
    return strata__fail(STRATA_EINVAL, "amr: root_blocks %d is not in 1..2^(19 - max_level)",
                        p->root_blocks);
  if (p->dtype != STRATA_FLOAT32 && p->dtype != STRATA_FLOAT64)
    return strata__fail(STRATA_ETYPE, "amr: fields are float32 or float64");
  if (p->nfields < 1 || p->nfields > STRATA_AMR_MAX_FIELDS)
    return strata__fail(STRATA_EINVAL, "amr: nfields %d is not in 1..%d", p->nfields,
                        STRATA_AMR_MAX_FIELDS);
  for (int f = 0; f < p->nfields; f++)
    if (!p->field_names[f] || !p->field_names[f][0] || strlen(p->field_names[f]) >= 64)
      return strata__fail(STRATA_EINVAL, "amr: field %d needs a name of 1..63 characters", f);
  if (p->boundary != STRATA_AMR_PERIODIC && p->boundary != STRATA_AMR_EXTRAPOLATE)
    return strata__fail(STRATA_EINVAL, "amr: unknown boundary rule");
  return 0;
}

/* ---- leaf handles ---- */

/* The hierarchy's tags: its leaves' handles in the first half, one per
 * halo exchange in the second. */
static int tag_of(const strata_amr *amr, const struct strata__amr_node *n, int f, int64_t *tag)
{
  strata__tags handles;
  strata__tags_part(&amr->tags, 0, 2, &handles);
  return strata__tag(&handles, n->serial * STRATA_AMR_MAX_FIELDS + f, tag);
}

static int is_double(const strata_amr *amr) { return amr->p.dtype == STRATA_FLOAT64; }

/* Fill task on the owner: zeros, then the problem's values (problem NULL:
 * zeros only). */
static int submit_fill(strata_amr *amr, struct strata__amr_node *n,
                       const strata_amr_problem *problem)
{
  if (n->rank != amr->rank)
    return 0;
  double h = 1.0 / (double)(strata__amr_blocks_at(amr, n->b.level) * amr->p.block_cells);
  struct strata__amr_fill f = {.fn = problem ? problem->fn : NULL,
                               .ctx = problem ? problem->ctx : NULL,
                               .dim = amr->p.dim,
                               .ghost = amr->p.ghost_depth,
                               .is_double = is_double(amr),
                               .cells = amr->p.block_cells,
                               .h = h,
                               .cost_key = problem ? problem->cost_key : 0};
  for (int a = 0; a < amr->p.dim; a++)
    f.origin[a] = ((double)(n->b.index[a] * amr->p.block_cells) + 0.5) * h;
  for (int k = 0; k < amr->p.nfields; k++) {
    f.field = k;
    int ret = strata__amr_fill_submit(MPI_COMM_NULL, n->h[k], &f);
    if (ret)
      return ret;
  }
  return 0;
}

/* Leaf n's field handles on this rank, owner n->rank, registered unless
 * they are. The owner registers them when the leaf is made; another rank
 * only for a migration to it or strata_amr_field_handle() on a ghost leaf
 * (at 4-17 KiB a handle, a rank holds its own leaves' and few more). */
static int hold_leaf(const strata_amr *amr, struct strata__amr_node *n)
{
  size_t elem = is_double(amr) ? sizeof(double) : sizeof(float);
  for (int f = 0; f < amr->p.nfields; f++) {
    if (n->h[f])
      continue;
    int64_t tag;
    int ret = tag_of(amr, n, f, &tag);
    if (ret)
      return ret;
    starpu_vector_data_register(&n->h[f], -1, 0, (uint32_t)strata__amr_block_size(amr), elem);
    starpu_mpi_data_register_comm(n->h[f], tag, n->rank, amr->comm);
  }
  return 0;
}

/* Unregisters leaf n's handles here once their pending work is done:
 * `wait` for it where the leaf stays and this rank may need its handles
 * again soon (StarPU-MPI refuses a tag whose handle is still registered). */
static void release_leaf(const strata_amr *amr, struct strata__amr_node *n, int wait)
{
  for (int f = 0; f < amr->p.nfields; f++)
    if (n->h[f]) {
      starpu_mpi_cache_flush(amr->comm, n->h[f]);
      if (wait)
        starpu_data_unregister(n->h[f]);
      else
        starpu_data_unregister_submit(n->h[f]);
      n->h[f] = NULL;
    }
}

/* Make n a leaf owned by `rank`, its fields registered and zeroed on the
 * owner; with a problem, left empty until the leaf has its final owner
 * (place_new_leaves), so that a change of owner sends nothing. */
static int make_leaf(strata_amr *amr, struct strata__amr_node *n, int rank,
                     const strata_amr_problem *problem)
{
  n->is_leaf = 1;
  n->rank = rank;
  n->unfilled = problem != NULL;
  int ret = rank == amr->rank ? hold_leaf(amr, n) : 0;
  return ret || problem ? ret : submit_fill(amr, n, NULL);
}

static void drop_leaf(strata_amr *amr, struct strata__amr_node *n)
{
  release_leaf(amr, n, 0);
  n->is_leaf = 0;
  n->rank = -1;
}

starpu_data_handle_t strata_amr_field_handle(const strata_amr *amr, const strata_amr_block *b,
                                             int field)
{
  if (!amr || !b || field < 0 || field >= amr->p.nfields || !strata__amr_valid(amr, b))
    return NULL;
  /* the node is the hierarchy's own: registering its handles changes no
   * state that callers of a const hierarchy can see */
  struct strata__amr_node *n = (struct strata__amr_node *)strata__amr_find(amr, b);
  return n && n->is_leaf && hold_leaf(amr, n) == 0 ? n->h[field] : NULL;
}

/* ---- distribution ---- */

int strata_amr_set_weights(strata_amr *amr, double (*fn)(void *ctx, const strata_amr_block *b),
                           void *ctx)
{
  strata__clear_error();
  if (!amr)
    return STRATA_EINVAL;
  amr->weight = fn;
  amr->weight_ctx = ctx;
  return 0;
}

/* Leaves per rank: the Morton order cut into `size` pieces of equal weight
 * (each leaf goes to the piece holding the middle of its weight), each
 * rank placing its own leaves from the weight of the ranks before it. */
static int balance_counts(const strata_amr *amr, int32_t *counts)
{
  double *w = malloc((size_t)(amr->nleaves + 1) * sizeof *w);
  double *sums = malloc((size_t)amr->size * sizeof *sums);
  int64_t *mine = calloc((size_t)amr->size, sizeof *mine);
  int local = w && sums && mine ? 0 : STRATA_ENOMEM;
  double sum = 0;
  for (int64_t i = 0; !local && i < amr->nleaves; i++) {
    double x = amr->weight ? amr->weight(amr->weight_ctx, &amr->leaves[i]->b) : 1.0;
    w[i] = isfinite(x) && x > 0 ? x : 0;
    sum += w[i];
  }
  int ret = strata__agree(local, NULL, 0);
  if (!ret && MPI_Allgather(&sum, 1, MPI_DOUBLE, sums, 1, MPI_DOUBLE, amr->meta) != MPI_SUCCESS)
    ret = STRATA_EMPI;
  double total = 0, before = 0;
  for (int r = 0; !ret && r < amr->size; r++) {
    before += r < amr->rank ? sums[r] : 0;
    total += sums[r];
  }
  for (int64_t i = 0; !ret && i < amr->nleaves; i++) {
    double mid =
        total > 0 ? (before + 0.5 * w[i]) / total : (double)(amr->first + i) / (double)amr->total;
    int r = (int)(mid * amr->size);
    mine[r < amr->size ? r : amr->size - 1]++;
    before += w[i];
  }
  if (!ret &&
      MPI_Allreduce(MPI_IN_PLACE, mine, amr->size, MPI_INT64_T, MPI_SUM, amr->meta) != MPI_SUCCESS)
    ret = STRATA_EMPI;
  for (int r = 0; !ret && r < amr->size; r++)
    counts[r] = (int32_t)mine[r];
  free(w);
  free(sums);
  free(mine);
  return ret;
}

/* The hash in step with the forest again after an operation that ended
 * with `local` here; errors agreed. Collective. */
static int mirror_agreed(strata_amr *amr, int local)
{
  int ret = strata__agree(local, NULL, 0);
  if (ret)
    return local ? local : ret;
  local = amr->forest.ops->mirror(amr);
  return strata__agree(local, NULL, 0) ? (local ? local : STRATA_EMPI) : 0;
}

static int by_pos(const void *x, const void *y)
{
  int64_t a = ((const struct strata__amr_move *)x)->pos,
          b = ((const struct strata__amr_move *)y)->pos;
  return (a > b) - (a < b);
}

/* The leaves moved to counts[r] a rank and, with `handles`, their handles
 * with them (StarPU-MPI matches the transfers by tag; both sides list them
 * in Morton order all the same): the new owner registers an arriving
 * leaf's handles under its old owner, then both migrate them; a leaf that
 * holds no values yet changes owner without a message. Collective. */
static int partition(strata_amr *amr, const int32_t *counts, int handles)
{
  struct strata__amr_moves mv = {0};
  int local = amr->forest.ops->partition(amr, counts, &mv);
  if (mv.n) /* mv.m may be NULL */
    qsort(mv.m, (size_t)mv.n, sizeof *mv.m, by_pos);
  for (int64_t k = 0; !local && k < mv.n; k++) {
    struct strata__amr_move *m = &mv.m[k];
    struct strata__amr_node *n = m->n;
    int to = m->peer;
    if (m->arrives) {
      if (!(n = m->n = strata__amr_find(amr, &m->b)) && !(n = m->n = strata__amr_add(amr, &m->b))) {
        local = STRATA_ENOMEM;
        break;
      }
      n->is_leaf = 1;
      n->rank = m->peer;
      n->serial = m->serial;
      n->unfilled = m->unfilled;
      to = amr->rank;
      if (handles)
        local = hold_leaf(amr, n);
    }
    for (int f = 0; !local && handles && f < amr->p.nfields && n->h[f]; f++)
      if (n->unfilled)
        starpu_mpi_data_set_rank_comm(n->h[f], to, amr->comm);
      else
        starpu_mpi_data_migrate(amr->comm, n->h[f], to);
    n->rank = to;
  }
  /* The old owners let go once the values have left, all sends posted
   * first so that they travel together. */
  for (int64_t k = 0; k < mv.n; k++)
    if (!mv.m[k].arrives)
      release_leaf(amr, mv.m[k].n, 1);
  free(mv.m);
  return mirror_agreed(amr, local);
}

int strata_amr_redistribute(strata_amr *amr)
{
  strata__clear_error();
  if (!amr)
    return STRATA_EINVAL;
  int32_t *counts = malloc((size_t)amr->size * sizeof *counts);
  int ret = strata__agree(counts ? 0 : STRATA_ENOMEM, NULL, 0);
  if (!ret)
    ret = balance_counts(amr, counts);
  if (!ret)
    ret = partition(amr, counts, 1);
  free(counts);
  return ret;
}

/* ---- creation ---- */

static int destroy_live(void *amr) { return strata_amr_destroy(amr); }

int strata_amr_create(const strata_amr_params *p, strata_amr **out)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  int local = out ? check_params(p) : STRATA_EINVAL;
  int64_t v[8] = {0};
  if (local == 0) {
    int64_t fields = 0;
    for (int f = 0; f < p->nfields; f++)
      fields = fields * 31 + (int64_t)strlen(p->field_names[f]);
    int64_t vv[8] = {p->dim,       p->root_blocks, p->block_cells, p->ghost_depth,
                     p->max_level, p->dtype,       p->nfields,     p->boundary * 1000003 + fields};
    memcpy(v, vv, sizeof v);
  }
  ret = strata__agree(local, v, 8);
  if (ret)
    return local ? local : strata__fail(ret, "amr: ranks passed different parameters");
  strata_amr *amr = calloc(1, sizeof *amr);
  int64_t roots = 1;
  for (int a = 0; a < p->dim; a++)
    roots *= p->root_blocks;
  if (amr) {
    amr->nbuckets = 64;
    while (amr->nbuckets < 2 * roots && amr->nbuckets < 4096)
      amr->nbuckets *= 2;
    amr->buckets = calloc((size_t)amr->nbuckets, sizeof *amr->buckets);
  }
  local = amr && amr->buckets ? 0 : STRATA_ENOMEM;
  if ((ret = strata__agree(local, NULL, 0)) != 0) {
    if (amr)
      free(amr->buckets);
    free(amr);
    return ret;
  }
  amr->p = *p;
  for (int f = 0; f < p->nfields; f++) {
    strcpy(amr->names[f], p->field_names[f]);
    amr->p.field_names[f] = amr->names[f];
  }
  for (int f = p->nfields; f < STRATA_AMR_MAX_FIELDS; f++)
    amr->p.field_names[f] = NULL;
  amr->comm = strata_comm();
  amr->meta = strata__coll_comm();
  MPI_Comm_rank(amr->comm, &amr->rank);
  MPI_Comm_size(amr->comm, &amr->size);
  local = strata__tags_take(amr->meta, "amr", &amr->tags);
  /* The root blocks spread evenly by p4est, then by Strata's rule (no
   * handles yet), then registered and zeroed by their owners. */
  amr->forest.ops = p->dim == 3 ? &strata__forest3_ops : &strata__forest2_ops;
  if ((ret = strata__agree(local, NULL, 0)) != 0) {
    strata_amr_destroy(amr);
    return local ? local : ret;
  }
  ret = mirror_agreed(amr, amr->forest.ops->create(amr));
  int32_t *counts = ret ? NULL : malloc((size_t)amr->size * sizeof *counts);
  if (!ret && (ret = strata__agree(counts ? 0 : STRATA_ENOMEM, NULL, 0)) == 0 &&
      (ret = balance_counts(amr, counts)) == 0)
    ret = partition(amr, counts, 0);
  free(counts);
  local = 0;
  for (int64_t i = 0; !ret && !local && i < amr->nleaves; i++)
    local = make_leaf(amr, amr->leaves[i], amr->rank, NULL);
  if (ret || (ret = strata__agree(local, NULL, 0)) != 0) {
    strata_amr_destroy(amr);
    return ret;
  }
  strata__live_add(&strata__objects, &amr->live, "AMR hierarchy", amr, destroy_live);
  *out = amr;
  return 0;
}

int strata_amr_destroy(strata_amr *amr)
{
  if (!amr)
    return 0;
  if (amr->busy)
    return strata__fail(STRATA_ESTATE, "an inference cycle is in flight on this hierarchy: "
                                       "strata_infer_wait() first");
  strata__live_remove(&amr->live);
  starpu_task_wait_for_all();
  for (int64_t i = 0; i < amr->nbuckets; i++)
    for (struct strata__amr_node *n = amr->buckets[i], *next; n; n = next) {
      next = n->next;
      if (n->is_leaf && n->h[0])
        drop_leaf(amr, n);
      free(n);
    }
  starpu_task_wait_for_all();
  if (amr->forest.ops)
    amr->forest.ops->destroy(amr);
  strata__tags_release(&amr->tags);
  free(amr->buckets);
  free(amr->leaves);
  free(amr->ghosts);
  free(amr);
  return 0;
}

/* ---- filling and reading ---- */

/* The unit-domain box of leaf n's cells, ghosts included, as its fill
 * samples them (the axes beyond the hierarchy's dimension at 0). */
static void leaf_box(const strata_amr *amr, const struct strata__amr_node *n, double box[6])
{
  const int64_t cells = amr->p.block_cells, ghost = amr->p.ghost_depth;
  const double h = 1.0 / (double)(strata__amr_blocks_at(amr, n->b.level) * cells);
  for (int a = 0; a < 3; a++) {
    const int used = a < amr->p.dim;
    box[a] = used ? (double)(n->b.index[a] * cells - ghost) * h : 0;
    box[3 + a] = used ? (double)((n->b.index[a] + 1) * cells + ghost) * h : 0;
  }
}

/* The problem fetches what this rank's leaves about to be filled need
 * (every leaf, or the unfilled ones). Collective; nothing for problems that
 * fetch nothing. */
static int prepare_fill(strata_amr *amr, const strata_amr_problem *problem, int unfilled_only)
{
  if (!strata__amr_problem_fetches(problem))
    return 0;
  double *box = malloc((size_t)(6 * amr->nleaves + 1) * sizeof *box);
  int64_t nbox = 0;
  for (int64_t i = 0; box && i < amr->nleaves; i++) {
    const struct strata__amr_node *n = amr->leaves[i];
    if (n->rank == amr->rank && (!unfilled_only || n->unfilled))
      leaf_box(amr, n, box + 6 * nbox++);
  }
  int ret = strata__agree(box ? 0 : STRATA_ENOMEM, NULL, 0);
  if (!ret)
    ret = strata__amr_problem_prepare(problem, amr->meta, box, nbox);
  free(box);
  return ret;
}

int strata_amr_fill(strata_amr *amr, const strata_amr_problem *problem)
{
  strata__clear_error();
  int local = amr && problem ? 0 : STRATA_EINVAL;
  int ret = strata__agree(local, NULL, 0);
  if (ret)
    return local ? local : ret;
  if ((ret = prepare_fill(amr, problem, 0)) != 0)
    return ret;
  for (int64_t i = 0; !local && i < amr->nleaves; i++)
    local = submit_fill(amr, amr->leaves[i], problem);
  return strata__agree(local, NULL, 0) ? (local ? local : STRATA_EINVAL) : 0;
}

/* Host view of a leaf field owned here, or NULL. */
static const void *acquire_field(struct strata__amr_node *n, int f)
{
  if (strata__acquire(n->h[f], STARPU_R) != 0)
    return NULL;
  return (const void *)starpu_vector_get_local_ptr(n->h[f]);
}

/* Value `k` of a block array as a double. */
static double value_at(const strata_amr *amr, const void *data, int64_t k)
{
  return is_double(amr) ? ((const double *)data)[k] : (double)((const float *)data)[k];
}

/* The place in the block array of interior cell i (x fastest). */
static int64_t interior_index(const strata_amr *amr, int64_t i)
{
  const int64_t m = amr->p.block_cells, g = amr->p.ghost_depth, side = strata__amr_side(amr);
  int64_t x = i % m, y = i / m % m, z = amr->p.dim == 3 ? i / (m * m) : 0;
  int64_t zz = amr->p.dim == 3 ? z + g : 0;
  return (zz * side + y + g) * side + x + g;
}

static int64_t interior_size(const strata_amr *amr)
{
  int64_t m = amr->p.block_cells;
  return amr->p.dim == 3 ? m * m * m : m * m;
}

int strata_amr_read(strata_amr *amr, const strata_amr_block *b, int field, int ghosts, double *out)
{
  strata__clear_error();
  if (!amr || !b || !out || field < 0 || field >= amr->p.nfields || !strata__amr_valid(amr, b))
    return STRATA_EINVAL;
  struct strata__amr_node *n = strata__amr_find(amr, b);
  if (!n || !n->is_leaf || n->rank != amr->rank)
    return strata__fail(STRATA_EINVAL, "amr_read: not a leaf owned by this rank");
  const void *data = acquire_field(n, field);
  if (!data)
    return STRATA_ESTARPU;
  int64_t count = ghosts ? strata__amr_block_size(amr) : interior_size(amr);
  for (int64_t i = 0; i < count; i++)
    out[i] = value_at(amr, data, ghosts ? i : interior_index(amr, i));
  starpu_data_release(n->h[field]);
  return 0;
}

/* ---- refinement ---- */

/* The largest interior value of a block array (NaN ignored), row by row. */
static double interior_max(const strata_amr *amr, const void *data)
{
  const int64_t m = amr->p.block_cells, nz = amr->p.dim == 3 ? m : 1;
  double vmax = -INFINITY;
  for (int64_t z = 0; z < nz; z++)
    for (int64_t y = 0; y < m; y++) {
      const int64_t at = interior_index(amr, (z * m + y) * m); /* the row's first cell */
      if (is_double(amr)) {
        const double *row = (const double *)data + at;
        for (int64_t x = 0; x < m; x++)
          vmax = row[x] > vmax ? row[x] : vmax;
      } else {
        const float *row = (const float *)data + at;
        for (int64_t x = 0; x < m; x++)
          vmax = (double)row[x] > vmax ? (double)row[x] : vmax;
      }
    }
  return vmax;
}

/* Largest criterion value over a leaf owned here. */
static int criterion_value(strata_amr *amr, struct strata__amr_node *n,
                           const strata_amr_criterion *c, double *value)
{
  const void *data = acquire_field(n, c->field);
  if (!data)
    return STRATA_ESTARPU;
  double vmax = interior_max(amr, data);
  starpu_data_release(n->h[c->field]);
  vmax /= c->mean;
  if (c->kind == STRATA_AMR_MASS)
    vmax = ldexp(vmax, -amr->p.dim * n->b.level);
  *value = vmax;
  return 0;
}

static int check_criterion(const strata_amr *amr, const strata_amr_criterion *c)
{
  if (!c || (c->kind != STRATA_AMR_OVERDENSITY && c->kind != STRATA_AMR_MASS) || c->field < 0 ||
      c->field >= amr->p.nfields || !(c->mean > 0) || !isfinite(c->mean) || isnan(c->min_refine) ||
      isnan(c->max_coarsen) || c->max_coarsen > c->min_refine)
    return strata__fail(STRATA_EINVAL, "amr: bad refinement criterion");
  return 0;
}

/* Flags of this rank's leaves from the criterion. */
static int criterion_flags(strata_amr *amr, const strata_amr_criterion *c, int coarsen,
                           int8_t *flags)
{
  int local = 0;
  for (int64_t i = 0; i < amr->nleaves; i++) {
    struct strata__amr_node *n = amr->leaves[i];
    flags[i] = 0;
    double v;
    if (local)
      continue;
    local = criterion_value(amr, n, c, &v);
    if (!local && v > c->min_refine && n->b.level < amr->p.max_level)
      flags[i] = 1;
    else if (!local && coarsen && v < c->max_coarsen && n->b.level > 0)
      flags[i] = -1;
  }
  return local;
}

/* For each of the 3^dim - 1 directions: the neighbouring leaves of b, one
 * cell thick at b's level, through fn (stops at a nonzero return). */
static int visit_neighbors(const strata_amr *amr, const strata_amr_block *b,
                           int (*fn)(void *ctx, struct strata__amr_node *leaf), void *ctx)
{
  int ndir = amr->p.dim == 3 ? 27 : 9;
  for (int d = 0; d < ndir; d++) {
    int delta[3] = {d % 3 - 1, d / 3 % 3 - 1, d / 9 - 1};
    if (amr->p.dim == 2)
      delta[2] = 0;
    if (!delta[0] && !delta[1] && !delta[2])
      continue;
    int64_t lo[3], hi[3], shift[3];
    if (!strata__amr_neighbor_region(amr, b, delta, 1, lo, hi, shift))
      continue;
    int ret = strata__amr_visit_box(amr, b->level, lo, hi, fn, ctx);
    if (ret)
      return ret;
  }
  return 0;
}

static int too_fine(void *ctx, struct strata__amr_node *leaf)
{
  return leaf->b.level > *(const int *)ctx;
}

/* Whether parent p's children are all leaves of this rank flagged -1 and
 * p, as a leaf, would keep 2:1 balance with the leaves around it (which
 * touch its children: this rank's or its ghost layer). */
static int can_coarsen(strata_amr *amr, const strata_amr_block *p, struct strata__amr_node **kids)
{
  for (int o = 0; o < 1 << amr->p.dim; o++) {
    strata_amr_block c;
    strata_amr_child(amr, p, o, &c);
    kids[o] = strata__amr_find(amr, &c);
    if (!kids[o] || !kids[o]->is_leaf || kids[o]->rank != amr->rank || kids[o]->flag != -1)
      return 0;
  }
  int limit = p->level + 1;
  return visit_neighbors(amr, p, too_fine, &limit) == 0;
}

/* Every field of parent p from its children (restriction) or of the
 * children from p (prolongation): one task per field and family. */
static int family_fields(strata_amr *amr, int kind, struct strata__amr_node *p,
                         struct strata__amr_node *const *kids)
{
  struct strata__amr_family fam = {.nchildren = 1 << amr->p.dim};
  for (int o = 0; o < fam.nchildren; o++)
    fam.x[o] = strata__amr_family_xfer(kind, amr->p.dim, amr->p.block_cells, amr->p.ghost_depth, o,
                                       is_double(amr));
  /* A family is on one rank (p4est's partition for coarsening). */
  int ret = 0;
  for (int f = 0; !ret && f < amr->p.nfields; f++) {
    starpu_data_handle_t h[8];
    for (int o = 0; o < fam.nchildren; o++)
      h[o] = kids[o]->h[f];
    ret = strata__amr_family_submit(amr->comm, p->h[f], h, &fam);
  }
  return ret;
}

int64_t strata__amr_new_serial(strata_amr *amr)
{
  return amr->next_serial++ * amr->size + amr->rank;
}

void strata__amr_split(strata_amr *amr, const strata_amr_block *parent,
                       const strata_amr_block *kids, const int64_t *serials)
{
  struct strata__amr_node *p = strata__amr_find(amr, parent), *k[8];
  int ret = amr->forest.error ? amr->forest.error : p && p->is_leaf ? 0 : STRATA_EINVAL;
  for (int o = 0; !ret && o < 1 << amr->p.dim; o++) {
    k[o] = strata__amr_find(amr, &kids[o]);
    if (!k[o] && !(k[o] = strata__amr_add(amr, &kids[o]))) {
      ret = STRATA_ENOMEM;
      break;
    }
    k[o]->serial = serials[o];
    k[o]->flag = 0;
    ret = make_leaf(amr, k[o], amr->rank, amr->forest.filling);
  }
  if (!ret && !amr->forest.filling)
    ret = family_fields(amr, STRATA__AMR_PROLONG, p, k);
  if (!ret)
    drop_leaf(amr, p);
  amr->forest.changed += (1 << amr->p.dim) + 1;
  amr->forest.error = ret;
}

void strata__amr_merge(strata_amr *amr, const strata_amr_block *parent, int64_t serial)
{
  struct strata__amr_node *p = strata__amr_find(amr, parent), *k[8];
  int ret = amr->forest.error ? amr->forest.error : p ? 0 : STRATA_EINVAL;
  for (int o = 0; !ret && o < 1 << amr->p.dim; o++) {
    strata_amr_block c;
    strata_amr_child(amr, parent, o, &c);
    if (!(k[o] = strata__amr_find(amr, &c)))
      ret = STRATA_EINVAL;
  }
  if (!ret) {
    p->serial = serial;
    p->flag = 0;
    ret = make_leaf(amr, p, amr->rank, amr->forest.filling);
  }
  if (!ret && !amr->forest.filling)
    ret = family_fields(amr, STRATA__AMR_RESTRICT, p, k);
  for (int o = 0; !ret && o < 1 << amr->p.dim; o++)
    drop_leaf(amr, k[o]);
  amr->forest.changed += (1 << amr->p.dim) + 1;
  amr->forest.error = ret;
}

void strata__amr_forget(strata_amr *amr, struct strata__amr_node *n)
{
  release_leaf(amr, n, 0);
  strata__amr_remove(amr, n);
}

/* Apply the leaves' flags: refinement first (with 2:1 balance), then the
 * coarsening that balance allows, decided for every family before any
 * changes, after a partition that puts each family on one rank. New
 * children and new parents come from the problem when given, else from
 * prolongation and restriction. Collective. */
static int apply_flags(strata_amr *amr, const strata_amr_problem *problem, int64_t *changed)
{
  amr->forest.filling = problem;
  amr->forest.error = 0;
  amr->forest.changed = 0;
  int local = amr->forest.ops->refine(amr);
  int ret = mirror_agreed(amr, local ? local : amr->forest.error);
  int32_t *counts = ret ? NULL : malloc((size_t)amr->size * sizeof *counts);
  if (!ret && (ret = strata__agree(counts ? 0 : STRATA_ENOMEM, NULL, 0)) == 0) {
    if (amr->forest.ops->for_coarsening(amr, counts)) /* a family across ranks */
      ret = partition(amr, counts, 1);
  }
  free(counts);
  for (int64_t i = 0; !ret && i < amr->nleaves; i++) {
    struct strata__amr_node *n = amr->leaves[i], *kids[8];
    strata_amr_block p;
    /* One candidate per family: the leaf of octant 0. */
    if (n->flag != -1 || (n->b.index[0] | n->b.index[1] | n->b.index[2]) & 1)
      continue;
    strata_amr_parent(amr, &n->b, &p);
    if (can_coarsen(amr, &p, kids))
      for (int o = 0; o < 1 << amr->p.dim; o++)
        kids[o]->flag = STRATA__AMR_MERGE;
  }
  if (!ret) {
    local = amr->forest.ops->coarsen(amr);
    ret = mirror_agreed(amr, local ? local : amr->forest.error);
  }
  int64_t count = amr->forest.changed;
  amr->forest.filling = NULL;
  if (!ret &&
      MPI_Allreduce(MPI_IN_PLACE, &count, 1, MPI_INT64_T, MPI_SUM, amr->meta) != MPI_SUCCESS)
    ret = STRATA_EMPI;
  if (changed)
    *changed = count;
  return ret;
}

/* The owners after an adaptation, then the problem's values on the leaves
 * it created, each computed where the leaf now lives. */
static int place_new_leaves(strata_amr *amr, const strata_amr_problem *problem)
{
  int ret = strata_amr_redistribute(amr);
  if (ret || !problem || (ret = prepare_fill(amr, problem, 1)) != 0)
    return ret;
  int local = 0;
  for (int64_t i = 0; i < amr->nleaves; i++) {
    struct strata__amr_node *n = amr->leaves[i];
    if (n->unfilled && !local)
      local = submit_fill(amr, n, problem);
    n->unfilled = 0;
  }
  return strata__agree(local, NULL, 0) ? (local ? local : STRATA_ESTARPU) : 0;
}

int strata_amr_build(strata_amr *amr, const strata_amr_problem *problem,
                     const strata_amr_criterion *criterion)
{
  strata__clear_error();
  if (!amr)
    return STRATA_EINVAL;
  int local = problem ? check_criterion(amr, criterion) : STRATA_EINVAL;
  if (!local)
    for (int64_t i = 0; i < amr->nleaves; i++)
      if (amr->leaves[i]->b.level != 0)
        local = strata__fail(STRATA_EINVAL, "amr_build: the hierarchy is already refined");
  int ret = strata__agree(local, NULL, 0);
  if (ret)
    return local ? local : ret;
  if ((ret = strata_amr_fill(amr, problem)) != 0)
    return ret;
  /* Until no leaf asks for refinement: the values come from the problem,
   * so a leaf that did not ask once never will. */
  for (int pass = 0; pass <= amr->p.max_level; pass++) {
    int8_t *flags = malloc((size_t)(amr->nleaves ? amr->nleaves : 1));
    local = flags ? criterion_flags(amr, criterion, 0, flags) : STRATA_ENOMEM;
    int any = 0;
    for (int64_t i = 0; !local && i < amr->nleaves; i++)
      any |= (amr->leaves[i]->flag = flags[i]) == 1;
    free(flags);
    if ((ret = strata__agree(local, NULL, 0)) != 0)
      return local ? local : ret;
    if (MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, amr->meta) != MPI_SUCCESS)
      return STRATA_EMPI;
    if (!any)
      break;
    int64_t changed;
    local = apply_flags(amr, problem, &changed);
    if ((ret = strata__agree(local, NULL, 0)) != 0)
      return local ? local : ret;
    if ((ret = place_new_leaves(amr, problem)) != 0)
      return ret;
  }
  return strata_amr_fill_ghosts(amr);
}

/* One adaptation step by flags: one per leaf in Morton order (`nlocal`
 * NULL), or *nlocal of them, one per leaf of this rank in order. New
 * leaves from `problem` when given (no ghost fill needed first), else from
 * prolongation and restriction. */
static int adapt(strata_amr *amr, const int8_t *flags, const int64_t *nlocal,
                 const strata_amr_problem *problem, int64_t *changed)
{
  int local = flags || (nlocal && *nlocal == 0) ? 0 : STRATA_EINVAL;
  if (!local && nlocal && *nlocal != amr->nleaves)
    local =
        strata__fail(STRATA_EINVAL, "amr_adapt_local: %lld flags for the %lld leaves of rank %d",
                     (long long)*nlocal, (long long)amr->nleaves, amr->rank);
  if (!local && amr->busy)
    local = strata__fail(STRATA_ESTATE, "an inference cycle is in flight on this hierarchy: "
                                        "strata_infer_wait() first");
  for (int64_t i = 0; !local && i < amr->nleaves; i++) {
    struct strata__amr_node *n = amr->leaves[i];
    const int8_t asked = nlocal ? flags[i] : flags[n->pos];
    const int8_t f = asked > 0 ? 1 : asked < 0 ? -1 : 0;
    n->flag = (f == 1 && n->b.level >= amr->p.max_level) || (f == -1 && n->b.level == 0) ? 0 : f;
  }
  int ret = strata__agree(local, NULL, 0);
  if (ret)
    return local ? local : ret;
  /* Prolongation reads one ghost layer of the parents. */
  if (!problem && (ret = strata_amr_fill_ghosts(amr)) != 0)
    return ret;
  local = apply_flags(amr, problem, changed);
  if ((ret = strata__agree(local, NULL, 0)) != 0)
    return local ? local : ret;
  if ((ret = place_new_leaves(amr, problem)) != 0)
    return ret;
  return strata_amr_fill_ghosts(amr);
}

int strata_amr_adapt_flags(strata_amr *amr, const int8_t *flags, int64_t *changed)
{
  strata__clear_error();
  return amr ? adapt(amr, flags, NULL, NULL, changed) : STRATA_EINVAL;
}

int strata_amr_adapt_local(strata_amr *amr, const int8_t *flags, int64_t nflags, int64_t *changed)
{
  strata__clear_error();
  return amr ? adapt(amr, flags, &nflags, NULL, changed) : STRATA_EINVAL;
}

/* An adaptation step by a criterion, new leaves from `problem` or not. */
static int adapt_by_criterion(strata_amr *amr, const strata_amr_criterion *criterion,
                              const strata_amr_problem *problem, int64_t *changed)
{
  int8_t *flags = malloc((size_t)(amr->nleaves ? amr->nleaves : 1));
  int local = flags ? check_criterion(amr, criterion) : STRATA_ENOMEM;
  if (!local)
    local = criterion_flags(amr, criterion, 1, flags);
  int ret = strata__agree(local, NULL, 0);
  if (!ret)
    ret = adapt(amr, flags, &amr->nleaves, problem, changed);
  free(flags);
  return local ? local : ret;
}

int strata_amr_adapt(strata_amr *amr, const strata_amr_criterion *criterion, int64_t *changed)
{
  strata__clear_error();
  return amr ? adapt_by_criterion(amr, criterion, NULL, changed) : STRATA_EINVAL;
}

int strata_amr_adapt_problem(strata_amr *amr, const strata_amr_criterion *criterion,
                             const strata_amr_problem *problem, int64_t *changed)
{
  strata__clear_error();
  return amr && problem ? adapt_by_criterion(amr, criterion, problem, changed) : STRATA_EINVAL;
}

/* ---- ghost fill ---- */

/* One halo exchange (a level of the ghost fill): the leaves a rank needs
 * from another travel in one message per pair of ranks, packed by copy
 * tasks into a buffer handle and read by the ghost tasks straight from the
 * received buffer. Per-block messages would each cost a round of the
 * StarPU-MPI progress thread, which starves next to spinning workers on
 * small nodes. Both sides list the same leaves in the same order (Morton
 * positions): the reader from its ghost layer, the owner from the reader's
 * requests. */
struct exchange {
  struct strata__mailbox mb;
  struct crossings { /* leaves that go to / come from other ranks, */
    int64_t *pair;   /* (peer, pos) pairs, sorted and unique once listed */
    int64_t n, cap;
  } send, recv;
  int64_t *offset; /* [ghost slot]: place of a received leaf in its sender's message */
};

static int crossings_add(struct crossings *c, int64_t peer, int64_t pos)
{
  int ret = strata__grow(&c->pair, c->n, &c->cap, 2 * sizeof *c->pair, 64);
  if (!ret) {
    c->pair[2 * c->n] = peer;
    c->pair[2 * c->n + 1] = pos;
    c->n++;
  }
  return ret;
}

/* Peer by peer, Morton positions ascending on both sides of a message,
 * each leaf once however many parts read it. */
static void crossings_sort(struct crossings *c)
{
  c->n = strata__amr_sort_unique(c->pair, c->n, 2 * sizeof *c->pair, strata__amr_compare_pairs);
}

static int exchange_open(strata_amr *amr, struct exchange *ex)
{
  *ex = (struct exchange){0};
  int64_t tag;
  strata__tags halos;
  strata__tags_part(&amr->tags, 1, 2, &halos);
  int ret = strata__tag(&halos, amr->exchanges++, &tag);
  if (!ret)
    ret = strata__mailbox_open(&ex->mb, amr->comm, tag,
                               is_double(amr) ? sizeof(double) : sizeof(float));
  ex->offset = calloc((size_t)(amr->nghosts ? amr->nghosts : 1), sizeof *ex->offset);
  return ret ? ret : ex->offset ? 0 : STRATA_ENOMEM;
}

static void exchange_close(struct exchange *ex)
{
  strata__mailbox_close(&ex->mb);
  free(ex->send.pair);
  free(ex->recv.pair);
  free(ex->offset);
}

/* Reserve each crossing leaf's fields in the messages, in Morton order on
 * both sides, pack the outgoing ones and post the messages. */
static int exchange_post(strata_amr *amr, struct exchange *ex)
{
  const int64_t block = strata__amr_block_size(amr), side = strata__amr_side(amr);
  const int nf = amr->p.nfields;
  crossings_sort(&ex->recv);
  crossings_sort(&ex->send);
  for (int64_t k = 0; k < ex->recv.n; k++)
    ex->offset[strata__amr_ghost_at(amr, ex->recv.pair[2 * k + 1])->slot] =
        strata__mailbox_reserve(&ex->mb, (int)ex->recv.pair[2 * k], amr->rank, nf * block);
  for (int64_t k = 0; k < ex->send.n; k++)
    strata__mailbox_reserve(&ex->mb, amr->rank, (int)ex->send.pair[2 * k], nf * block);
  int ret = strata__mailbox_prepare(&ex->mb);
  struct strata__amr_xfer x = {
      .kind = STRATA__AMR_COPY, .dim = amr->p.dim, .factor = 1, .is_double = is_double(amr)};
  for (int a = 0; a < 3; a++)
    x.count[a] = x.dst_dims[a] = x.src_dims[a] = a < amr->p.dim ? side : 1;
  for (int64_t k = 0, at = 0; k < ex->send.n && !ret; k++) {
    int peer = (int)ex->send.pair[2 * k];
    at = k && peer == ex->send.pair[2 * (k - 1)] ? at : 0; /* fields' place in peer's message */
    for (int f = 0; f < nf && !ret; f++, at++) {
      x.dst_offset = at * block;
      ret = strata__amr_pack_submit(amr->leaves[ex->send.pair[2 * k + 1] - amr->first]->h[f],
                                    ex->mb.outbox[peer], &x, NULL);
    }
  }
  return ret ? ret : strata__mailbox_post(&ex->mb, NULL);
}

/* A transfer into a leaf's ghost region from a source leaf. */
struct ghost_part {
  struct strata__amr_node *src;
  struct strata__amr_xfer x;
};

/* The ghost parts of one leaf owned here, found once per fill. */
struct ghost_ctx {
  strata_amr *amr;
  struct strata__amr_node *dst;
  int64_t lo[3], hi[3], shift[3]; /* ghost region, in the domain, cells of dst's level */
  struct ghost_part *parts;       /* dst's transfers, in order */
  int64_t nparts, cap;
  int ret;
};

/* One transfer from `leaf` into the part of the ghost region it covers. */
static int ghost_from(void *ctx, struct strata__amr_node *leaf)
{
  struct ghost_ctx *gc = ctx;
  strata_amr *amr = gc->amr;
  const int64_t m = amr->p.block_cells, g = amr->p.ghost_depth, side = strata__amr_side(amr);
  const int dl = gc->dst->b.level, sl = leaf->b.level;
  struct strata__amr_xfer x = {
      .dim = amr->p.dim, .is_double = is_double(amr), .factor = 1, .kind = STRATA__AMR_COPY};
  if (sl > dl) {
    x.kind = STRATA__AMR_RESTRICT;
    x.factor = 1 << (sl - dl);
  } else if (sl < dl) {
    x.kind = STRATA__AMR_PROLONG;
    x.factor = 1 << (dl - sl);
  }
  for (int a = 0; a < 3; a++) {
    if (a >= amr->p.dim) {
      x.count[a] = x.dst_dims[a] = x.src_dims[a] = 1;
      continue;
    }
    /* The leaf's extent in cells of dst's level (exact: balance keeps the
     * levels within one of each other and block_cells is even). */
    int64_t elo =
        sl >= dl ? (leaf->b.index[a] * m) >> (sl - dl) : (leaf->b.index[a] * m) << (dl - sl);
    int64_t ehi = sl >= dl ? ((leaf->b.index[a] + 1) * m) >> (sl - dl)
                           : ((leaf->b.index[a] + 1) * m) << (dl - sl);
    int64_t lo = gc->lo[a] > elo ? gc->lo[a] : elo, hi = gc->hi[a] < ehi ? gc->hi[a] : ehi;
    int64_t src_origin = leaf->b.index[a] * m - g; /* cells of the leaf's level */
    x.count[a] = hi - lo;
    x.dst_dims[a] = x.src_dims[a] = side;
    x.dst_start[a] = lo - gc->shift[a] - (gc->dst->b.index[a] * m - g);
    if (x.kind == STRATA__AMR_COPY)
      x.src_start[a] = lo - src_origin;
    else if (x.kind == STRATA__AMR_RESTRICT)
      x.src_start[a] = lo * x.factor - src_origin;
    else
      x.src_start[a] = lo - src_origin * x.factor;
  }
  if (strata__grow(&gc->parts, gc->nparts, &gc->cap, sizeof *gc->parts, 32))
    return gc->ret = STRATA_ENOMEM;
  gc->parts[gc->nparts++] = (struct ghost_part){leaf, x};
  return 0;
}

/* The ghost parts of leaf n, direction by direction. */
static int find_ghost_parts(strata_amr *amr, struct strata__amr_node *n, struct ghost_ctx *gc)
{
  *gc = (struct ghost_ctx){.amr = amr, .dst = n};
  int ndir = amr->p.dim == 3 ? 27 : 9;
  for (int d = 0; d < ndir && !gc->ret; d++) {
    int delta[3] = {d % 3 - 1, d / 3 % 3 - 1, d / 9 - 1};
    if (amr->p.dim == 2)
      delta[2] = 0;
    if ((!delta[0] && !delta[1] && !delta[2]) ||
        !strata__amr_neighbor_region(amr, &n->b, delta, amr->p.ghost_depth, gc->lo, gc->hi,
                                     gc->shift))
      continue;
    strata__amr_visit_box(amr, n->b.level, gc->lo, gc->hi, ghost_from, gc);
  }
  return gc->ret;
}

/* Faces of leaf n on the boundary of a non-periodic domain (bit 2a: low
 * side of axis a, bit 2a + 1: high side). */
static int boundary_faces(const strata_amr *amr, const struct strata__amr_node *n)
{
  if (amr->p.boundary == STRATA_AMR_PERIODIC)
    return 0;
  int faces = 0;
  int64_t last = strata__amr_blocks_at(amr, n->b.level) - 1;
  for (int a = 0; a < amr->p.dim; a++)
    faces |= (n->b.index[a] == 0) << (2 * a) | (n->b.index[a] == last) << (2 * a + 1);
  return faces;
}

/* Field f's source handle of part p: the source leaf's, or the message
 * from its rank (the offset of the leaf's field in it, into *offset). */
static starpu_data_handle_t part_source(const strata_amr *amr, const struct exchange *ex,
                                        const struct ghost_part *p, int f, int64_t *offset)
{
  *offset = 0;
  if (p->src->rank == amr->rank)
    return p->src->h[f];
  *offset = ex->offset[p->src->slot] + f * strata__amr_block_size(amr);
  return ex->mb.inbox[p->src->rank];
}

/* Field f of gc->dst: its ghost parts in order, then the extrapolation at
 * the domain faces, as one task. 2:1 balance and ghost_depth <= m / 2 keep
 * the distinct sources to 56 in 3-D (4 a face, 2 an edge, 1 a corner). */
static int submit_ghosts(const struct ghost_ctx *gc, const struct exchange *ex, int f,
                         const struct strata__amr_boundary *b, struct strata__amr_ghosts *g)
{
  starpu_data_handle_t dst = gc->dst->h[f], sources[STRATA__AMR_GHOST_SOURCES];
  int nsources = 0;
  g->nxfers = gc->nparts;
  g->boundary = *b;
  for (int k = 0; k < gc->nparts; k++) {
    int64_t offset;
    starpu_data_handle_t h = part_source(gc->amr, ex, &gc->parts[k], f, &offset);
    int src = h == dst ? 0 : -1;
    for (int j = 0; j < nsources && src < 0; j++)
      src = sources[j] == h ? 1 + j : -1;
    if (src < 0 && nsources == STRATA__AMR_GHOST_SOURCES)
      return strata__fail(STRATA_EINVAL, "amr: a ghost fill reads more than %d leaves", nsources);
    if (src < 0) {
      sources[nsources++] = h;
      src = nsources;
    }
    g->xfer[k] = (struct strata__amr_ghost_xfer){src, gc->parts[k].x};
    g->xfer[k].x.src_offset = offset;
  }
  return g->nxfers || b->faces ? strata__amr_ghosts_submit(dst, sources, nsources, g) : 0;
}

/* The ghost fill of an owned leaf from its parts: one task per field. */
static int fill_leaf_ghosts(strata_amr *amr, const struct exchange *ex, const struct ghost_ctx *gc)
{
  const struct strata__amr_node *n = gc->dst;
  int64_t side = strata__amr_side(amr);
  struct strata__amr_boundary b = {.dim = amr->p.dim,
                                   .ghost = amr->p.ghost_depth,
                                   .is_double = is_double(amr),
                                   .faces = boundary_faces(amr, n),
                                   .dims = {side, side, amr->p.dim == 3 ? side : 1}};
  struct strata__amr_ghosts *g =
      malloc(sizeof *g + (size_t)(gc->nparts ? gc->nparts : 1) * sizeof g->xfer[0]);
  int ret = g ? 0 : STRATA_ENOMEM;
  for (int f = 0; f < amr->p.nfields && !ret; f++)
    ret = submit_ghosts(gc, ex, f, &b, g);
  free(g);
  return ret;
}

/* Each rank finds the ghost parts of its own leaves only, and tells the
 * owners of remote sources what it needs (one exchange of records: the
 * level, the reader, the source's Morton position, once each however many
 * parts read that source); the tree walks are then a rank's share, not the
 * whole hierarchy's. */
static int plan_ghosts(strata_amr *amr, struct ghost_ctx *plans, int64_t **wanted, int64_t *nwanted)
{
  int64_t n = amr->nleaves, count = 0, cap = 0;
  int64_t *records = NULL;
  int *dest = NULL, local = 0;
  for (int64_t i = 0; i < n && !local; i++) {
    if (amr->leaves[i]->rank != amr->rank)
      continue;
    local = find_ghost_parts(amr, amr->leaves[i], &plans[i]);
    for (int k = 0; k < plans[i].nparts && !local; k++) {
      const struct strata__amr_node *src = plans[i].parts[k].src;
      if (src->rank == amr->rank)
        continue;
      if ((local = strata__grow(&records, count, &cap, 3 * sizeof *records, 256)))
        break;
      records[3 * count] = amr->leaves[i]->b.level;
      records[3 * count + 1] = amr->rank;
      records[3 * count + 2] = src->pos;
      count++;
    }
  }
  int64_t unique = 0;
  if (!local && count) {
    unique =
        strata__amr_sort_unique(records, count, 3 * sizeof *records, strata__amr_compare_triples);
    dest = malloc((size_t)unique * sizeof *dest);
    if (!dest)
      local = STRATA_ENOMEM;
    for (int64_t k = 0; dest && k < unique; k++)
      dest[k] = strata__amr_ghost_at(amr, records[3 * k + 2])->rank;
  }
  int ret =
      strata__exchange_records(amr->meta, local, records, dest, unique, 3, wanted, nwanted, NULL);
  free(records);
  free(dest);
  return ret; /* agreed, `local` included */
}

/* One level's exchange: mark what goes where, post, then the ghost tasks
 * of the level's leaves. */
static int fill_level_ghosts(strata_amr *amr, int level, struct ghost_ctx *plans,
                             const int64_t *wanted, int64_t nwanted, const uint8_t *urgent)
{
  struct exchange ex;
  int64_t n = amr->nleaves;
  int ret = exchange_open(amr, &ex);
  for (int64_t k = 0; k < nwanted && !ret; k++)
    if (wanted[3 * k] == level)
      ret = crossings_add(&ex.send, wanted[3 * k + 1], wanted[3 * k + 2]);
  for (int64_t i = 0; i < n && !ret; i++)
    for (int k = 0; amr->leaves[i]->b.level == level && k < plans[i].nparts && !ret; k++) {
      const struct strata__amr_node *src = plans[i].parts[k].src;
      if (src->rank != amr->rank)
        ret = crossings_add(&ex.recv, src->rank, src->pos);
    }
  /* Post, then the tasks: a pack task then waits only for writes of
   * earlier levels, never for this level's ghost tasks, which would chain
   * the ranks' task graphs. */
  if (!ret)
    ret = exchange_post(amr, &ex);
  int base = strata__submit_priority(0); /* the caller's */
  for (int64_t i = 0; i < n && !ret; i++)
    if (amr->leaves[i]->b.level == level && plans[i].dst) {
      strata__submit_priority(urgent[i] ? STARPU_MAX_PRIO : base);
      ret = fill_leaf_ghosts(amr, &ex, &plans[i]);
    }
  strata__submit_priority(base);
  exchange_close(&ex);
  return ret;
}

int strata_amr_fill_ghosts(strata_amr *amr)
{
  strata__clear_error();
  if (!amr)
    return STRATA_EINVAL;
  size_t n = (size_t)(amr->nleaves ? amr->nleaves : 1);
  struct ghost_ctx *plans = calloc(n, sizeof *plans);
  uint8_t *urgent = calloc(n, 1);
  int64_t *wanted = NULL, nwanted = 0;
  int local = plans && urgent ? 0 : STRATA_ENOMEM;
  int ret = strata__agree(local, NULL, 0);
  if (!ret)
    ret = plan_ghosts(amr, plans, &wanted, &nwanted);
  /* A coarser leaf that a finer remote leaf prolongs from is packed with
   * its ghost layer at a later level: its ghost tasks go first, as the
   * packs that wait for them do. */
  for (int64_t k = 0; !ret && k < nwanted; k++)
    urgent[wanted[3 * k + 2] - amr->first] |=
        amr->leaves[wanted[3 * k + 2] - amr->first]->b.level < wanted[3 * k];
  /* Coarse levels first: prolongation into a finer leaf reads the ghost
   * layer of its coarser neighbour, written in an earlier level, so each
   * level is its own exchange; the same-level and finer sources are read
   * for their interiors only. */
  local = 0;
  for (int level = 0; level <= amr->p.max_level && !ret && !local; level++)
    local = fill_level_ghosts(amr, level, plans, wanted, nwanted, urgent);
  free(urgent);
  for (int64_t i = 0; plans && i < amr->nleaves; i++)
    free(plans[i].parts);
  free(plans);
  free(wanted);
  if (ret)
    return ret;
  return strata__agree(local, NULL, 0) ? (local ? local : STRATA_ESTARPU) : 0;
}
