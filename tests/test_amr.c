/* The AMR hierarchy on 1 to 4 ranks: parameters, geometry queries and
 * names, initial refinement, ghost fills exact on linear fields (copies,
 * restriction, prolongation, boundary extrapolation), 2:1 balance and
 * exactness after random refinements and coarsenings, conservation of
 * restriction, adaptation with new leaves from a problem equal to
 * adaptation then a fill, adaptation by each rank's flags for its own
 * leaves equal to adaptation by flags for all, the load balance of the
 * distribution. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <strata/amr.h>
#include <strata/starpu.h>

#include "amr.h"
#include "amr_check.h"
#include "codelets.h"

static const double coef[4] = {0.25, 1.5, -2.0, 0.75};

static double linear_at(const double x[3])
{
  return coef[0] + coef[1] * x[0] + coef[2] * x[1] + coef[3] * x[2];
}

struct deviation {
  const strata_amr_params *p;
  double worst;
};

static void linear_deviation(void *ctx, const strata_amr_block *b,
                             const strata_amr_block_info *info, const double *v)
{
  (void)b;
  struct deviation *d = ctx;
  const strata_amr_params *p = d->p;
  int64_t side = p->block_cells + 2 * p->ghost_depth;
  int64_t size = side * side * (p->dim == 3 ? side : 1);
  double h = (info->upper[0] - info->lower[0]) / p->block_cells;
  for (int64_t k = 0; k < size; k++) {
    int64_t c[3] = {k % side, k / side % side, k / (side * side)};
    double x[3] = {0, 0, 0};
    for (int a = 0; a < p->dim; a++)
      x[a] = info->lower[a] + ((double)(c[a] - p->ghost_depth) + 0.5) * h;
    d->worst = fmax(d->worst, fabs(v[k] - linear_at(x)));
  }
}

/* Worst deviation from the linear field over every cell (ghosts
 * included) of every leaf, on all ranks. */
static double linear_error(strata_amr *amr)
{
  struct deviation d = {strata_amr_get_params(amr), 0};
  for_owned_leaves(amr, 0, 1, linear_deviation, &d);
  MPI_Allreduce(MPI_IN_PLACE, &d.worst, 1, MPI_DOUBLE, MPI_MAX, strata_comm());
  return d.worst;
}

/* Every pair of neighbouring leaves (faces, edges, corners) differs by at
 * most one level, and the leaves tile the domain. */
static void check_balance(strata_amr *amr)
{
  const strata_amr_params *p = strata_amr_get_params(amr);
  int64_t n = strata_amr_num_leaves(amr), m;
  strata_amr_block *leaves = malloc((size_t)n * sizeof *leaves);
  strata_amr_block *near = malloc((size_t)4096 * sizeof *near);
  strata_amr_leaves(amr, leaves, n, &n);
  double volume = 0;
  int bad = 0;
  for (int64_t i = 0; i < n; i++) {
    strata_amr_block_info info;
    strata_amr_block_query(amr, &leaves[i], &info);
    double cell = 1, lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    for (int a = 0; a < p->dim; a++) {
      cell *= info.upper[a] - info.lower[a];
      double eps = 0.25 * (info.upper[a] - info.lower[a]) / p->block_cells;
      lo[a] = info.lower[a] - eps;
      hi[a] = info.upper[a] + eps;
    }
    volume += cell;
    CHECK_EQ(strata_amr_intersect(amr, lo, hi, near, 4096, &m), 0);
    for (int64_t j = 0; j < m && j < 4096; j++)
      bad += abs(near[j].level - leaves[i].level) > 1;
  }
  CHECK_EQ(bad, 0);
  CHECK(fabs(volume - 1) < 1e-12);
  free(leaves);
  free(near);
}

static void test_params(void)
{
  strata_amr_params p;
  strata_amr_params_init(&p);
  strata_amr *amr = NULL;
  p.dim = 4;
  CHECK_EQ(strata_amr_create(&p, &amr), STRATA_EINVAL);
  strata_amr_params_init(&p);
  int size;
  MPI_Comm_size(strata_comm(), &size);
  p.block_cells = 8 + 4 * (my_rank() == 1); /* ranks disagree: everyone fails */
  CHECK_EQ(strata_amr_create(&p, &amr), size > 1 ? STRATA_EINVAL : 0);
  CHECK_EQ(strata_amr_destroy(amr), 0);
  amr = NULL;
  strata_amr_params_init(&p);
  p.dtype = STRATA_INT32;
  CHECK_EQ(strata_amr_create(&p, &amr), STRATA_ETYPE);
  strata_amr_params_init(&p);
  p.ghost_depth = 9;
  CHECK_EQ(strata_amr_create(&p, &amr), STRATA_EINVAL);
  CHECK(amr == NULL);
}

static void test_geometry(void)
{
  strata_amr_params p;
  strata_amr_params_init(&p);
  p.block_cells = 8;
  strata_amr *amr;
  CHECK_EQ(strata_amr_create(&p, &amr), 0);
  CHECK_EQ(strata_amr_num_leaves(amr), 8);
  /* The design document's example: element (13, 6, 9) of level 4 lies in
   * root block (0, 0, 0), and in block (3, 1, 2) of level 2. */
  strata_amr_block b;
  int64_t e[3] = {13, 6, 9};
  CHECK_EQ(strata_amr_block_at_index(amr, 4, e, 0, &b), 0);
  CHECK(b.level == 0 && b.index[0] == 0 && b.index[1] == 0 && b.index[2] == 0);
  CHECK_EQ(strata_amr_block_at_index(amr, 4, e, 2, &b), 0);
  CHECK(b.index[0] == 3 && b.index[1] == 1 && b.index[2] == 2);
  int64_t bad[3] = {32, 0, 0};
  CHECK_EQ(strata_amr_block_at_index(amr, 4, bad, 0, &b), STRATA_ERANGE);
  char name[64];
  strata_amr_block nb = {.level = 2, .index = {5, 0, 3}};
  CHECK_EQ(strata_amr_block_name(amr, &nb, name, sizeof name), 0);
  CHECK(strcmp(name, "B1:01_0:00_0:11") == 0);
  CHECK_EQ(strata_amr_block_name(amr, &nb, name, 4), STRATA_ERANGE);
  strata_amr_block parent, child;
  CHECK_EQ(strata_amr_parent(amr, &nb, &parent), 0);
  CHECK(parent.level == 1 && parent.index[0] == 2 && parent.index[2] == 1);
  CHECK_EQ(strata_amr_child(amr, &parent, 5, &child), 0);
  CHECK(child.index[0] == 5 && child.index[1] == 0 && child.index[2] == 3);
  CHECK_EQ(strata_amr_parent(amr, &parent, &parent), 0);
  CHECK_EQ(strata_amr_parent(amr, &parent, &parent), STRATA_ERANGE);
  /* Refine root block (1, 0, 0): flags in leaf order, by every rank. */
  int64_t n;
  strata_amr_block leaves[8];
  strata_amr_leaves(amr, leaves, 8, &n);
  int8_t flags[8] = {0};
  for (int i = 0; i < 8; i++)
    flags[i] = leaves[i].index[0] == 1 && leaves[i].index[1] == 0 && leaves[i].index[2] == 0;
  int64_t changed;
  CHECK_EQ(strata_amr_adapt_flags(amr, flags, &changed), 0);
  CHECK_EQ(changed, 9);
  CHECK_EQ(strata_amr_num_leaves(amr), 15);
  double x[3] = {0.6, 0.1, 0.3};
  CHECK_EQ(strata_amr_block_at_point(amr, x, -1, &b), 0);
  CHECK(b.level == 1 && b.index[0] == 2 && b.index[1] == 0 && b.index[2] == 1);
  CHECK_EQ(strata_amr_block_at_point(amr, x, 0, &b), 0);
  CHECK(b.level == 0 && b.index[0] == 1);
  strata_amr_block_info info;
  CHECK_EQ(strata_amr_block_query(amr, &b, &info), 0);
  CHECK(info.exists && !info.is_leaf && info.rank == -1);
  double lo[3] = {0.55, 0.05, 0.05}, hi[3] = {0.8, 0.2, 0.2};
  strata_amr_block hits[8];
  CHECK_EQ(strata_amr_intersect(amr, lo, hi, hits, 8, &n), 0);
  CHECK_EQ(n, 2); /* children (2,0,0) and (3,0,0) of level 1 */
  strata_amr_block deep = {.level = 3, .index = {9, 0, 0}};
  CHECK_EQ(strata_amr_block_query(amr, &deep, &info), 0);
  CHECK(!info.exists);
  deep.level = 9;
  CHECK_EQ(strata_amr_block_query(amr, &deep, &info), STRATA_ERANGE);
  CHECK_EQ(strata_amr_destroy(amr), 0);
}

/* Build on a linear field with a criterion that refines part of the
 * domain, in 2-D and 3-D, then random adaptations: every cell of every
 * leaf (ghosts included) stays equal to the field. */
static void test_linear(int dim, strata_dtype dtype)
{
  strata_amr_params p;
  strata_amr_params_init(&p);
  p.dim = dim;
  p.block_cells = 8;
  p.ghost_depth = 2;
  p.max_level = dim == 3 ? 2 : 4;
  p.dtype = dtype;
  p.boundary = STRATA_AMR_EXTRAPOLATE;
  strata_amr *amr;
  strata_amr_problem *lin;
  CHECK_EQ(strata_amr_create(&p, &amr), 0);
  CHECK_EQ(strata_amr_problem_linear(coef, &lin), 0);
  strata_amr_criterion c;
  strata_amr_criterion_init(&c);
  c.kind = STRATA_AMR_OVERDENSITY;
  c.min_refine = 1.6; /* refines toward large x */
  c.max_coarsen = -100;
  CHECK_EQ(strata_amr_build(amr, lin, &c), 0);
  int64_t n = strata_amr_num_leaves(amr);
  CHECK(n > (dim == 3 ? 8 : 4));
  double tol = dtype == STRATA_FLOAT64 ? 1e-12 : 2e-5;
  double err = linear_error(amr);
  CHECK(err <= tol);
  if (err > tol)
    fprintf(stderr, "dim %d: build error %g\n", dim, err);
  check_balance(amr);
  srand(11); /* the same flags on every rank */
  for (int round = 0; round < 5; round++) {
    n = strata_amr_num_leaves(amr);
    int8_t *flags = malloc((size_t)n);
    for (int64_t i = 0; i < n; i++)
      flags[i] = (int8_t)(rand() % 6 == 0 ? 1 : rand() % 3 == 0 ? -1 : 0);
    int64_t changed;
    CHECK_EQ(strata_amr_adapt_flags(amr, flags, &changed), 0);
    free(flags);
    check_balance(amr);
    err = linear_error(amr);
    CHECK(err <= tol);
    if (err > tol)
      fprintf(stderr, "dim %d round %d: error %g\n", dim, round, err);
  }
  strata_amr_problem_destroy(lin);
  CHECK_EQ(strata_amr_destroy(amr), 0);
}

struct mass {
  const strata_amr_params *p;
  double total;
};

static void add_mass(void *ctx, const strata_amr_block *b, const strata_amr_block_info *info,
                     const double *v)
{
  (void)b;
  struct mass *m = ctx;
  int64_t cells = 1;
  for (int a = 0; a < m->p->dim; a++)
    cells *= m->p->block_cells;
  double sum = 0;
  for (int64_t k = 0; k < cells; k++)
    sum += v[k];
  m->total += sum * pow(info->upper[0] - info->lower[0], m->p->dim) / (double)cells;
}

/* Integral of field 0 over the domain, on all ranks. */
static double total_mass(strata_amr *amr)
{
  struct mass m = {strata_amr_get_params(amr), 0};
  for_owned_leaves(amr, 0, 0, add_mass, &m);
  MPI_Allreduce(MPI_IN_PLACE, &m.total, 1, MPI_DOUBLE, MPI_SUM, strata_comm());
  return m.total;
}

/* 8-cell blocks up to level 3, refined where the overdensity passes 3,
 * families coarsened below max_coarsen. */
static void blob_setup(strata_amr_params *p, strata_amr_criterion *c, double max_coarsen)
{
  strata_amr_params_init(p);
  p->block_cells = 8;
  p->max_level = 3;
  strata_amr_criterion_init(c);
  c->kind = STRATA_AMR_OVERDENSITY;
  c->min_refine = 3;
  c->max_coarsen = max_coarsen;
}

/* Coarsening everything restricts: the mass is conserved to rounding. */
static void test_conservation(void)
{
  strata_amr_params p;
  strata_amr_criterion c;
  blob_setup(&p, &c, 0);
  strata_amr *amr;
  strata_amr_problem *blobs;
  const double centres[6] = {0.3, 0.3, 0.3, 0.7, 0.6, 0.5}, sigma[2] = {0.05, 0.08},
               amp[2] = {50, 20};
  CHECK_EQ(strata_amr_create(&p, &amr), 0);
  CHECK_EQ(strata_amr_problem_blobs(2, centres, sigma, amp, &blobs), 0);
  CHECK_EQ(strata_amr_build(amr, blobs, &c), 0);
  int64_t before = strata_amr_num_leaves(amr);
  CHECK(before > 8);
  double mass = total_mass(amr);
  c.min_refine = 2e9; /* coarsen everything */
  c.max_coarsen = 1e9;
  for (int round = 0; round < 3; round++) {
    int64_t changed;
    CHECK_EQ(strata_amr_adapt(amr, &c, &changed), 0);
    double now = total_mass(amr);
    CHECK(fabs(now - mass) <= 1e-13 * mass);
  }
  CHECK_EQ(strata_amr_num_leaves(amr), 8);
  strata_amr_problem_destroy(blobs);
  CHECK_EQ(strata_amr_destroy(amr), 0);
}

/* Every owned leaf's block and ghosted values, in leaf order. */
struct snapshot {
  const strata_amr_params *p;
  double *values;
  int64_t count, cap, blocks;
};

static void take_leaf(void *ctx, const strata_amr_block *b, const strata_amr_block_info *info,
                      const double *v)
{
  (void)info;
  struct snapshot *s = ctx;
  int64_t side = s->p->block_cells + 2 * s->p->ghost_depth, size = side * side * side;
  if (s->count + size + 4 > s->cap) { /* doubling: a realloc per leaf copies quadratically */
    s->cap = 2 * (s->count + size + 4);
    s->values = realloc(s->values, (size_t)s->cap * sizeof *s->values);
  }
  s->values[s->count++] = b->level;
  for (int a = 0; a < 3; a++)
    s->values[s->count++] = (double)b->index[a];
  memcpy(s->values + s->count, v, (size_t)size * sizeof *v);
  s->count += size;
  s->blocks++;
}

/* Two blobs before and after they moved (refinement and coarsening). */
static void moving_blobs(strata_amr_problem **old, strata_amr_problem **now)
{
  const double before[6] = {0.3, 0.3, 0.3, 0.7, 0.6, 0.5},
               after[6] = {0.55, 0.3, 0.3, 0.2, 0.7, 0.6}, sigma[2] = {0.05, 0.08},
               amp[2] = {50, 20};
  CHECK_EQ(strata_amr_problem_blobs(2, before, sigma, amp, old), 0);
  CHECK_EQ(strata_amr_problem_blobs(2, after, sigma, amp, now), 0);
}

/* strata_amr_adapt_problem gives what adapt, fill and fill_ghosts give: the
 * same leaves, owners and bitwise-equal fields, ghosts included, after
 * blobs that moved (refinement and coarsening). */
static void test_adapt_problem(void)
{
  strata_amr_params p;
  strata_amr_criterion c;
  blob_setup(&p, &c, 1);
  strata_amr_problem *old, *now;
  moving_blobs(&old, &now);
  struct snapshot shots[2] = {{0}};
  for (int k = 0; k < 2; k++) {
    strata_amr *amr;
    int64_t changed = 0;
    CHECK_EQ(strata_amr_create(&p, &amr), 0);
    CHECK_EQ(strata_amr_build(amr, old, &c), 0);
    CHECK_EQ(strata_amr_fill(amr, now), 0);
    if (k == 0) {
      CHECK_EQ(strata_amr_adapt(amr, &c, &changed), 0);
      CHECK_EQ(strata_amr_fill(amr, now), 0);
      CHECK_EQ(strata_amr_fill_ghosts(amr), 0);
    } else
      CHECK_EQ(strata_amr_adapt_problem(amr, &c, now, &changed), 0);
    CHECK(changed > 0); /* the blobs moved: leaves were made and removed */
    shots[k].p = strata_amr_get_params(amr);
    for_owned_leaves(amr, 0, 1, take_leaf, &shots[k]);
    CHECK_EQ(strata_amr_destroy(amr), 0);
  }
  CHECK(shots[0].blocks > 0);
  CHECK(shots[0].count == shots[1].count &&
        memcmp(shots[0].values, shots[1].values, (size_t)shots[0].count * sizeof(double)) == 0);
  CHECK_EQ(strata_amr_adapt_problem(NULL, &c, now, NULL), STRATA_EINVAL);
  free(shots[0].values), free(shots[1].values);
  strata_amr_problem_destroy(old);
  strata_amr_problem_destroy(now);
}

/* The leaves of amr, all of them (*n). */
static strata_amr_block *all_leaves(strata_amr *amr, int64_t *n)
{
  *n = strata_amr_num_leaves(amr);
  strata_amr_block *leaves = malloc((size_t)*n * sizeof *leaves);
  CHECK_EQ(strata_amr_leaves(amr, leaves, *n, n), 0);
  return leaves;
}

/* Flags for this rank's own leaves (strata_amr_local_leaves) taken from
 * flags over all of them: *n of them. */
static int8_t *own_flags(strata_amr *amr, const int8_t *flags, int64_t *n)
{
  int64_t nall, k = 0;
  strata_amr_block *leaves = all_leaves(amr, &nall);
  CHECK_EQ(strata_amr_local_leaves(amr, NULL, 0, n), 0);
  strata_amr_block *mine = malloc((size_t)(*n + 1) * sizeof *mine);
  int8_t *own = malloc((size_t)(*n + 1));
  CHECK_EQ(strata_amr_local_leaves(amr, mine, *n, n), 0);
  for (int64_t i = 0; i < nall; i++) {
    strata_amr_block_info info;
    CHECK_EQ(strata_amr_block_query(amr, &leaves[i], &info), 0);
    if (info.rank != strata_rank())
      continue;
    CHECK(k < *n && memcmp(&mine[k], &leaves[i], sizeof *mine) == 0);
    own[k++] = flags[i];
  }
  CHECK_EQ(k, *n);
  free(leaves), free(mine);
  return own;
}

/* The octree is not replicated: each rank holds its own leaves, the leaves
 * touching them and their ancestors; on several ranks none holds every leaf,
 * and the ranks' own leaves add up to the hierarchy's. */
static void check_footprint(strata_amr *amr)
{
  strata_amr_footprint fp;
  CHECK_EQ(strata_amr_get_footprint(amr, &fp), 0);
  int64_t total = strata_amr_num_leaves(amr), own, sum = fp.leaves;
  CHECK_EQ(strata_amr_local_leaves(amr, NULL, 0, &own), 0);
  CHECK_EQ(fp.leaves, own);
  MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_INT64_T, MPI_SUM, strata_comm());
  CHECK_EQ(sum, total);
  CHECK(fp.nodes > fp.leaves + fp.ghost_leaves && fp.bytes > fp.nodes * 64);
  int size;
  MPI_Comm_size(strata_comm(), &size);
  CHECK(size == 1 ? fp.ghost_leaves == 0 && fp.leaves == total
                  : fp.ghost_leaves > 0 && fp.leaves + fp.ghost_leaves < total);
  if (strata_rank() == 0)
    printf("footprint: %lld of %lld leaves, %lld ghost leaves, %lld nodes, %lld bytes on rank 0\n",
           (long long)fp.leaves, (long long)total, (long long)fp.ghost_leaves, (long long)fp.nodes,
           (long long)fp.bytes);
  CHECK_EQ(strata_amr_get_footprint(amr, NULL), STRATA_EINVAL);
}

/* strata_amr_adapt_local with each rank's flags for its own leaves gives
 * what strata_amr_adapt_flags gives with flags for all: the same leaves and
 * bitwise-equal fields, ghosts included, over rounds of refinement and
 * coarsening. A rank with a flag too many or too few fails every rank and
 * changes nothing. */
static void test_adapt_local(int root_blocks, int max_level)
{
  strata_amr_params p;
  strata_amr_criterion c;
  blob_setup(&p, &c, 1);
  p.root_blocks = root_blocks;
  p.max_level = max_level;
  strata_amr_problem *old, *now;
  moving_blobs(&old, &now);
  strata_amr *amr[2];
  for (int k = 0; k < 2; k++) {
    CHECK_EQ(strata_amr_create(&p, &amr[k]), 0);
    CHECK_EQ(strata_amr_build(amr[k], old, &c), 0);
  }
  srand(5); /* the same flags on every rank */
  for (int round = 0; round < 3; round++) {
    int64_t n, nown, changed[2];
    strata_amr_block *leaves = all_leaves(amr[0], &n);
    int8_t *flags = malloc((size_t)n);
    for (int64_t i = 0; i < n; i++)
      flags[i] = (int8_t)(rand() % 5 == 0 ? 1 : rand() % 2 == 0 ? -1 : 0);
    int8_t *own = own_flags(amr[1], flags, &nown);
    CHECK_EQ(strata_amr_adapt_flags(amr[0], flags, &changed[0]), 0);
    CHECK_EQ(strata_amr_adapt_local(amr[1], own, nown, &changed[1]), 0);
    CHECK(changed[0] > 0 && changed[0] == changed[1]);
    free(leaves), free(flags), free(own);
  }
  struct snapshot shots[2] = {{0}};
  int64_t n[2];
  strata_amr_block *leaves[2];
  for (int k = 0; k < 2; k++) {
    leaves[k] = all_leaves(amr[k], &n[k]);
    shots[k].p = strata_amr_get_params(amr[k]);
    for_owned_leaves(amr[k], 0, 1, take_leaf, &shots[k]);
  }
  CHECK(n[0] == n[1] && memcmp(leaves[0], leaves[1], (size_t)n[0] * sizeof *leaves[0]) == 0);
  check_footprint(amr[1]);
  CHECK(shots[0].blocks > 0 && shots[0].count == shots[1].count &&
        memcmp(shots[0].values, shots[1].values, (size_t)shots[0].count * sizeof(double)) == 0);
  /* the last rank miscounts: refused everywhere, nothing changed */
  int64_t nown;
  CHECK_EQ(strata_amr_local_leaves(amr[1], NULL, 0, &nown), 0);
  int8_t *ones = malloc((size_t)nown + 1);
  memset(ones, 1, (size_t)nown + 1);
  int size;
  MPI_Comm_size(strata_comm(), &size);
  const int64_t told = nown + (strata_rank() == size - 1);
  CHECK_EQ(strata_amr_adapt_local(amr[1], ones, told, NULL), STRATA_EINVAL);
  CHECK_EQ(strata_amr_adapt_local(amr[1], NULL, nown, NULL), STRATA_EINVAL);
  strata_amr_block *after = all_leaves(amr[1], &n[1]);
  CHECK(n[0] == n[1] && memcmp(leaves[0], after, (size_t)n[0] * sizeof *after) == 0);
  CHECK_EQ(strata_amr_local_leaves(amr[1], NULL, -1, &nown), STRATA_EINVAL);
  free(ones), free(after);
  for (int k = 0; k < 2; k++) {
    free(leaves[k]), free(shots[k].values);
    CHECK_EQ(strata_amr_destroy(amr[k]), 0);
  }
  strata_amr_problem_destroy(old);
  strata_amr_problem_destroy(now);
}

/* Morton distribution: every rank owns a contiguous, balanced share. */
static void test_distribution(void)
{
  strata_amr_params p;
  strata_amr_params_init(&p);
  p.block_cells = 4;
  p.root_blocks = 4;
  strata_amr *amr;
  CHECK_EQ(strata_amr_create(&p, &amr), 0);
  int size;
  MPI_Comm_size(strata_comm(), &size);
  int64_t n = strata_amr_num_leaves(amr), count[8] = {0};
  strata_amr_block *leaves = malloc((size_t)n * sizeof *leaves);
  strata_amr_leaves(amr, leaves, n, &n);
  int last = 0;
  for (int64_t i = 0; i < n; i++) {
    strata_amr_block_info info;
    strata_amr_block_query(amr, &leaves[i], &info);
    CHECK(info.rank >= last && info.rank < size);
    last = info.rank;
    count[info.rank]++;
  }
  for (int r = 0; r < size; r++)
    CHECK(count[r] >= n / size && count[r] <= n / size + 1);
  free(leaves);
  CHECK_EQ(strata_amr_destroy(amr), 0);
}

/* Leaves of amr whose handles this rank holds without owning them; every
 * owned leaf must hold its own. */
static int64_t held_elsewhere(strata_amr *amr)
{
  int64_t n = strata_amr_num_leaves(amr), held = 0;
  strata_amr_block *leaves = malloc((size_t)n * sizeof *leaves);
  strata_amr_leaves(amr, leaves, n, &n);
  for (int64_t i = 0; i < n; i++) {
    strata_amr_block_info info;
    CHECK_EQ(strata_amr_block_query(amr, &leaves[i], &info), 0);
    if (info.rank == strata_rank())
      CHECK_EQ(info.handles_here, 1);
    else
      held += info.handles_here;
  }
  free(leaves);
  return held;
}

/* A rank registers the handles of its own leaves, not every leaf's: none
 * of another rank's after a build from a problem (its new leaves move
 * without values), those of a leaf asked for with strata_amr_field_handle
 * from then on, and after adaptations with families across ranks (the
 * blobs moved) no more than the leaves it exchanged with. */
static void test_handle_locality(void)
{
  strata_amr_params p;
  strata_amr_criterion c;
  blob_setup(&p, &c, 1);
  strata_amr_problem *old, *now;
  moving_blobs(&old, &now);
  strata_amr *amr;
  CHECK_EQ(strata_amr_create(&p, &amr), 0);
  CHECK_EQ(strata_amr_build(amr, old, &c), 0);
  int64_t n = strata_amr_num_leaves(amr);
  CHECK_EQ(held_elsewhere(amr), 0);
  strata_amr_block *leaves = malloc((size_t)n * sizeof *leaves);
  strata_amr_leaves(amr, leaves, n, &n);
  strata_amr_block_info info;
  CHECK_EQ(strata_amr_block_query(amr, &leaves[n - 1], &info), 0);
  CHECK(strata_amr_field_handle(amr, &leaves[n - 1], 0) != NULL);
  CHECK_EQ(held_elsewhere(amr), info.rank != strata_rank());
  CHECK_EQ(strata_amr_fill(amr, now), 0);
  int64_t changed = 0;
  CHECK_EQ(strata_amr_adapt(amr, &c, &changed), 0);
  CHECK(changed > 0);
  int size;
  MPI_Comm_size(strata_comm(), &size);
  n = strata_amr_num_leaves(amr);
  const int64_t held = held_elsewhere(amr);
  CHECK(size == 1 ? held == 0 : held < n - n / size - 1);
  free(leaves);
  CHECK_EQ(strata_amr_destroy(amr), 0);
  strata_amr_problem_destroy(old);
  strata_amr_problem_destroy(now);
}

/* One family task on local handles (9 of them: past STARPU_NMAXBUFS), on
 * 4^3 blocks with one ghost layer: eight constant children (child o holds
 * o + 1) restricted into the octants of a parent whose ghosts hold 8 (its
 * interior starts at -1: a child left out shows), then
 * child 7 prolonged back: its fine cells whose stencils stay inside octant
 * 7 and the ghosts are exactly 8. Malformed families are refused. */
static void test_family_task(void)
{
  enum { M = 4, G = 1, S = M + 2 * G, CELLS = S * S * S };
  double kid[8][CELLS], parent[CELLS];
  starpu_data_handle_t hk[8], hp;
  struct strata__amr_family restrict_all = {.nchildren = 8}, prolong_one = {.nchildren = 1};
  for (int z = 0; z < S; z++)
    for (int y = 0; y < S; y++)
      for (int i = 0; i < S; i++) {
        int ghost = z < G || z >= G + M || y < G || y >= G + M || i < G || i >= G + M;
        parent[(z * S + y) * S + i] = ghost ? 8 : -1;
      }
  for (int o = 0; o < 8; o++) {
    for (int i = 0; i < CELLS; i++)
      kid[o][i] = o + 1;
    starpu_vector_data_register(&hk[o], STARPU_MAIN_RAM, (uintptr_t)kid[o], CELLS, sizeof(double));
    restrict_all.x[o] = strata__amr_family_xfer(STRATA__AMR_RESTRICT, 3, M, G, o, 1);
  }
  starpu_vector_data_register(&hp, STARPU_MAIN_RAM, (uintptr_t)parent, CELLS, sizeof(double));
  CHECK_EQ(strata__amr_family_submit(MPI_COMM_NULL, hp, hk, &restrict_all), 0);
  CHECK_EQ(starpu_data_acquire(hp, STARPU_R), 0); /* the task may have run on a GPU */
  for (int o = 0; o < 8; o++)
    for (int z = 0; z < M / 2; z++)
      for (int y = 0; y < M / 2; y++)
        for (int i = 0; i < M / 2; i++) {
          int at = (G + ((o >> 2) & 1) * M / 2 + z) * S * S + (G + ((o >> 1) & 1) * M / 2 + y) * S +
                   G + (o & 1) * M / 2 + i;
          CHECK(parent[at] == o + 1);
        }
  starpu_data_release(hp);
  CHECK_EQ(starpu_data_acquire(hk[7], STARPU_W), 0);
  memset(kid[7], 0, sizeof kid[7]);
  starpu_data_release(hk[7]);
  prolong_one.x[0] = strata__amr_family_xfer(STRATA__AMR_PROLONG, 3, M, G, 7, 1);
  CHECK_EQ(strata__amr_family_submit(MPI_COMM_NULL, hp, &hk[7], &prolong_one), 0);
  CHECK_EQ(starpu_data_acquire(hk[7], STARPU_R), 0);
  /* fine cell 0 along an axis also reads octant 6, 5 or 3 */
  for (int z = 1; z < M; z++)
    for (int y = 1; y < M; y++)
      for (int i = 1; i < M; i++)
        CHECK(kid[7][((G + z) * S + G + y) * S + G + i] == 8);
  starpu_data_release(hk[7]);
  struct strata__amr_family bad = restrict_all;
  bad.nchildren = 0;
  CHECK_EQ(strata__amr_family_submit(MPI_COMM_NULL, hp, hk, &bad), STRATA_EINVAL);
  bad.nchildren = 9;
  CHECK_EQ(strata__amr_family_submit(MPI_COMM_NULL, hp, hk, &bad), STRATA_EINVAL);
  bad.nchildren = 8;
  bad.x[3].kind = STRATA__AMR_PROLONG;
  CHECK_EQ(strata__amr_family_submit(MPI_COMM_NULL, hp, hk, &bad), STRATA_EINVAL);
  for (int o = 0; o < 8; o++)
    bad.x[o].kind = STRATA__AMR_COPY;
  CHECK_EQ(strata__amr_family_submit(MPI_COMM_NULL, hp, hk, &bad), STRATA_EINVAL);
  for (int o = 0; o < 8; o++)
    starpu_data_unregister(hk[o]);
  starpu_data_unregister(hp);
}

/* A transfer task adds its CPU time to the account its submitter gives
 * (the inference's measured work), to that one only; a pack submitted
 * without one counts nowhere. The copies themselves are checked too. */
static void test_transfer_account(void)
{
  if (starpu_cuda_worker_get_count() > 0)
    return; /* a task on a CUDA worker takes no CPU time to account */
  enum { M = 32, CELLS = M * M * M };
  static double src[CELLS], dst[3][CELLS];
  for (int i = 0; i < CELLS; i++)
    src[i] = i;
  starpu_data_handle_t hs, hd[3];
  starpu_vector_data_register(&hs, STARPU_MAIN_RAM, (uintptr_t)src, CELLS, sizeof(double));
  for (int k = 0; k < 3; k++)
    starpu_vector_data_register(&hd[k], STARPU_MAIN_RAM, (uintptr_t)dst[k], CELLS, sizeof(double));
  struct strata__amr_xfer x = {.kind = STRATA__AMR_COPY, .dim = 3, .factor = 1, .is_double = 1};
  for (int a = 0; a < 3; a++)
    x.count[a] = x.dst_dims[a] = x.src_dims[a] = M;
  int64_t first = 0, second = 0;
  CHECK_EQ(strata__amr_xfer_submit(MPI_COMM_NULL, hs, hd[0], &x, &first), 0);
  CHECK_EQ(strata_wait_all(), 0);
  int64_t once = first;
  CHECK(once > 0);
  CHECK_EQ(strata__amr_xfer_submit(MPI_COMM_NULL, hs, hd[1], &x, &second), 0);
  CHECK_EQ(strata__amr_pack_submit(hs, hd[2], &x, NULL), 0);
  CHECK_EQ(strata_wait_all(), 0);
  CHECK(second > 0);
  CHECK(first == once);
  for (int k = 0; k < 3; k++) {
    CHECK_EQ(starpu_data_acquire(hd[k], STARPU_R), 0);
    CHECK(memcmp(dst[k], src, sizeof src) == 0);
    starpu_data_release(hd[k]);
    starpu_data_unregister(hd[k]);
  }
  starpu_data_unregister(hs);
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  test_params();
  test_geometry();
  test_distribution();
  test_linear(2, STRATA_FLOAT64);
  test_linear(3, STRATA_FLOAT64);
  test_linear(3, STRATA_FLOAT32);
  test_conservation();
  test_adapt_problem();
  test_adapt_local(2, 3); /* p4est: one tree, its level-1 quadrants the root blocks */
  test_adapt_local(3, 2); /* a brick of 3^3 trees */
  test_handle_locality();
  test_family_task();
  test_transfer_account();
  strata_finalize();
  return check_status();
}
