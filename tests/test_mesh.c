/* The inference method on an application's mesh (strata/mesh.h):
 * - the same leaves and the same field as Strata's own octree, spread over
 *   the ranks differently (each rank describes only its own leaves), give
 *   the same elements and the same bubbles, field for field, and the same
 *   number of marked cells; again after the application re-describes its
 *   leaves on another distribution;
 * - a domain box that is not the unit cube, on a root grid that is not
 *   cubic: a blob across its periodic boundary is one bubble, centred where
 *   it was planted, inside the box, delivered to one leaf;
 * - the application's own time step, submitted as StarPU tasks on its
 *   handles right after strata_infer_submit, runs after the cycle's reads:
 *   the cycle sees the old field, the next one the new;
 * - zero-copy: each field's StarPU handle has the application's pointer as
 *   its main-memory copy, and the marker is written into that memory;
 * - bad descriptions get STRATA_EINVAL on every rank with the reason:
 *   overlapping leaves (on one rank and across ranks), a leaf outside the
 *   domain, a gap, a 2:1 violation, a field pointer missing on one rank,
 *   ranks that disagree on the domain; the mesh is usable afterwards. */
#include <math.h>
#include <string.h>

#include <strata/mesh.h>
#include <strata/starpu.h>

#include "amr_check.h"

enum { CELLS = 8, GHOST = 1, SIDE = CELLS + 2 * GHOST, FIELDS = 2 };

/* Two Gaussian blobs on a background of 1 (periodic distance): one where
 * the leaves are fine, one where they are coarser than the arrays. */
static double density(const double x[3])
{
  static const double c[2][3] = {{0.74, 0.31, 0.62}, {0.12, 0.78, 0.2}};
  double v = 1;
  for (int k = 0; k < 2; k++) {
    double d2 = 0;
    for (int a = 0; a < 3; a++) {
      double d = fabs(x[a] - c[k][a]);
      d = fmin(d, 1 - d);
      d2 += d * d;
    }
    v += 12 * exp(-d2 / (2 * 0.04 * 0.04));
  }
  return v;
}

/* The whole ghosted block of leaf b: the density at every cell centre. */
static void fill_block(const strata_amr_block *b, double *out)
{
  const double h = 1.0 / (double)((2 << b->level) * CELLS);
  for (int k = 0; k < SIDE; k++)
    for (int j = 0; j < SIDE; j++)
      for (int i = 0; i < SIDE; i++) {
        const int c[3] = {i, j, k};
        double x[3];
        for (int a = 0; a < 3; a++)
          x[a] = ((double)(b->index[a] * CELLS + c[a] - GHOST) + 0.5) * h;
        out[(k * SIDE + j) * SIDE + i] = density(x);
      }
}

/* Level 1 everywhere, level 2 for x >= 1/2, level 3 around the first blob. */
static int blob_levels(int step, const strata_amr_block_info *info)
{
  double centre[3];
  for (int a = 0; a < 3; a++)
    centre[a] = 0.5 * (info->lower[a] + info->upper[a]);
  double d = fabs(centre[0] - 0.74) + fabs(centre[1] - 0.31) + fabs(centre[2] - 0.62);
  return step == 0 || (step == 1 && centre[0] >= 0.5) || (step == 2 && d < 0.15);
}

static strata_amr *octree(void)
{
  strata_amr_params p;
  strata_amr_params_init(&p);
  p.block_cells = CELLS;
  p.max_level = 3;
  p.nfields = FIELDS;
  p.field_names[1] = "marker";
  strata_amr *amr = NULL;
  CHECK_EQ(strata_amr_create(&p, &amr), 0);
  refine_where(amr, 3, blob_levels);
  int64_t n = strata_amr_num_leaves(amr);
  strata_amr_block *leaves = malloc((size_t)n * sizeof *leaves);
  strata_amr_leaves(amr, leaves, n, &n);
  for (int64_t i = 0; i < n; i++) {
    starpu_data_handle_t h = strata_amr_field_handle(amr, &leaves[i], 0);
    strata_amr_block_info info;
    strata_amr_block_query(amr, &leaves[i], &info);
    if (info.rank != my_rank())
      continue;
    CHECK_EQ(starpu_data_acquire(h, STARPU_W), 0);
    fill_block(&leaves[i], starpu_data_get_local_ptr(h));
    starpu_data_release(h);
  }
  free(leaves);
  return amr;
}

/* The application's side: the octree's leaves, but leaf i on rank
 * (i * stride + 1) % ranks, in memory the application owns. */
struct app {
  strata_mesh *mesh;
  int64_t n;
  strata_amr_block *leaves;
  double **field; /* per leaf: FIELDS blocks, NULL on other ranks */
};

static void describe(struct app *app, int stride)
{
  CHECK_EQ(strata_mesh_begin(app->mesh), 0);
  for (int64_t i = 0; i < app->n; i++) {
    if ((int)((i * stride + 1) % num_ranks()) != my_rank()) {
      free(app->field[i]);
      app->field[i] = NULL;
      continue;
    }
    if (!app->field[i]) {
      app->field[i] = calloc(FIELDS * SIDE * SIDE * SIDE, sizeof(double));
      fill_block(&app->leaves[i], app->field[i]);
    }
    void *ptrs[FIELDS] = {app->field[i], app->field[i] + SIDE * SIDE * SIDE};
    CHECK_EQ(strata_mesh_add_leaf(app->mesh, app->leaves[i].level, app->leaves[i].index, ptrs), 0);
  }
  int ret = strata_mesh_commit(app->mesh);
  if (ret)
    fprintf(stderr, "commit: %s\n", strata_error_message());
  CHECK_EQ(ret, 0);
}

/* The application's mesh of the octree's leaves (none described yet). */
static void app_open(struct app *app, strata_amr *amr)
{
  strata_mesh_params mp;
  strata_mesh_params_of_amr(strata_amr_get_params(amr), &mp);
  *app = (struct app){0};
  CHECK_EQ(strata_mesh_create(&mp, &app->mesh), 0);
  app->n = strata_amr_num_leaves(amr);
  app->leaves = malloc((size_t)app->n * sizeof *app->leaves);
  app->field = calloc((size_t)app->n, sizeof *app->field);
  strata_amr_leaves(amr, app->leaves, app->n, &app->n);
}

static void app_close(struct app *app)
{
  CHECK_EQ(strata_mesh_destroy(app->mesh), 0);
  for (int64_t i = 0; i < app->n; i++)
    free(app->field[i]);
  free(app->field), free(app->leaves);
}

static strata_infer *method(strata_amr *amr, strata_mesh *mesh, strata_model *model)
{
  strata_infer_params ip;
  strata_infer_params_init(&ip);
  ip.level_base = 1;
  ip.level_array = 2;
  ip.level_infer = 3;
  ip.model = model;
  ip.reference = STRATA_INFER_FIXED;
  ip.overdensity_threshold = 2;
  ip.fields[0] = 0;
  ip.n_fields = 1;
  ip.marker_field = 1;
  strata_infer *inf = NULL;
  int ret =
      amr ? strata_infer_create(amr, &ip, &inf) : strata_infer_create_on_mesh(mesh, &ip, &inf);
  if (ret)
    fprintf(stderr, "create: %s\n", strata_error_message());
  CHECK_EQ(ret, 0);
  return inf;
}

static int same_bubble(const strata_bubble *a, const strata_bubble *b)
{
  return !memcmp(a->center, b->center, sizeof a->center) && a->radius == b->radius &&
         a->mass == b->mass && a->peak == b->peak && a->cells == b->cells && a->id == b->id &&
         a->parts == b->parts && a->nvalues == b->nvalues;
}

/* Elements and bubbles of two methods after a cycle: equal. */
static void compare(strata_infer *a, strata_infer *b)
{
  int64_t na, nb;
  strata_infer_elements(a, NULL, NULL, 0, &na);
  strata_infer_elements(b, NULL, NULL, 0, &nb);
  CHECK_EQ(na, nb);
  int64_t(*ia)[3] = malloc((size_t)(na + 1) * sizeof *ia),
  (*ib)[3] = malloc((size_t)(nb + 1) * sizeof *ib);
  strata_infer_elements(a, ia, NULL, na, &na);
  strata_infer_elements(b, ib, NULL, nb, &nb);
  CHECK(na == nb && memcmp(ia, ib, (size_t)na * sizeof *ia) == 0);
  free(ia), free(ib);
  strata_bubble *ba, *bb;
  CHECK_EQ(strata_infer_bubbles(a, &ba, NULL, &na), 0);
  CHECK_EQ(strata_infer_bubbles(b, &bb, NULL, &nb), 0);
  CHECK_EQ(na, nb);
  int64_t differ = 0;
  for (int64_t k = 0; k < na && na == nb; k++)
    differ += !same_bubble(&ba[k], &bb[k]);
  CHECK_EQ(differ, 0);
  CHECK(na >= 2); /* both blobs, the coarse one through prolongation */
  if (my_rank() == 0)
    printf("%lld bubbles, the same through the mesh and the octree\n", (long long)na);
  free(ba), free(bb);
}

/* Marked cells of the application's leaves (read in its own memory, after
 * acquiring the handle, whose main-memory pointer must be that memory). */
static int64_t app_marked(struct app *app)
{
  int64_t marked = 0, checked = 0, same = 0;
  for (int64_t i = 0; i < app->n; i++) {
    if (!app->field[i])
      continue;
    for (int f = 0; f < FIELDS; f++) {
      starpu_data_handle_t h;
      CHECK_EQ(strata_mesh_field_handle(app->mesh, &app->leaves[i], f, &h), 0);
      double *mine = app->field[i] + f * SIDE * SIDE * SIDE;
      same += starpu_data_handle_to_pointer(h, STARPU_MAIN_RAM) == mine;
      CHECK_EQ(starpu_data_acquire(h, STARPU_R), 0);
      same += starpu_data_get_local_ptr(h) == mine;
      starpu_data_release(h);
      checked += 2;
    }
    for (int c = 0; c < SIDE * SIDE * SIDE; c++)
      marked += app->field[i][SIDE * SIDE * SIDE + c] == 1;
  }
  CHECK_EQ(same, checked);
  MPI_Allreduce(MPI_IN_PLACE, &marked, 1, MPI_INT64_T, MPI_SUM, strata_comm());
  return marked;
}

static void count_marked(void *ctx, const strata_amr_block *b, const strata_amr_block_info *info,
                         const double *v)
{
  (void)b, (void)info;
  for (int c = 0; c < SIDE * SIDE * SIDE; c++)
    *(int64_t *)ctx += v[c] == 1;
}

static int64_t octree_marked(strata_amr *amr)
{
  int64_t marked = 0;
  for_owned_leaves(amr, 1, 1, count_marked, &marked);
  MPI_Allreduce(MPI_IN_PLACE, &marked, 1, MPI_INT64_T, MPI_SUM, strata_comm());
  return marked;
}

static void check_same_as_octree(strata_model *model)
{
  strata_amr *amr = octree();
  struct app app;
  app_open(&app, amr);
  describe(&app, 3);
  strata_infer *own = method(amr, NULL, model), *theirs = method(NULL, app.mesh, model);
  CHECK_EQ(strata_infer_run(own, NULL), 0);
  CHECK_EQ(strata_infer_run(theirs, NULL), 0);
  compare(own, theirs);
  int64_t marked = octree_marked(amr);
  CHECK_EQ(app_marked(&app), marked);
  CHECK(marked > 0);
  /* A cycle in flight: the mesh cannot be re-described. */
  CHECK_EQ(strata_infer_submit(theirs), 0);
  CHECK_EQ(strata_mesh_begin(app.mesh), STRATA_ESTATE);
  CHECK_EQ(strata_mesh_destroy(app.mesh), STRATA_ESTATE);
  CHECK_EQ(strata_infer_wait(theirs, NULL), 0);
  /* Re-described on another distribution: the same again. */
  describe(&app, 5);
  CHECK_EQ(strata_infer_run(theirs, NULL), 0);
  compare(own, theirs);
  CHECK_EQ(app_marked(&app), marked);
  CHECK_EQ(strata_infer_write_hdf5(theirs, "unused.h5", NULL, NULL, 0), STRATA_EINVAL);
  strata_infer_destroy(own);
  strata_infer_destroy(theirs);
  app_close(&app);
  strata_amr_destroy(amr);
}

/* ---- a box that is not the unit cube ---- */

/* A blob at (0.99, 0.3, 2.3) in the domain [-1, 1) x [0, 1) x [2, 3) of
 * 4 x 2 x 2 root blocks, periodic: it straddles the x boundary. */
static double box_density(const double x[3])
{
  static const double length[3] = {2, 1, 1}, c[3] = {0.99, 0.3, 2.3};
  double d2 = 0;
  for (int a = 0; a < 3; a++) {
    double d = fmod(fabs(x[a] - c[a]), length[a]);
    d = fmin(d, length[a] - d);
    d2 += d * d;
  }
  return 1 + 12 * exp(-d2 / (2 * 0.05 * 0.05));
}

static void check_box(strata_model *model)
{
  strata_mesh_params mp;
  strata_mesh_params_init(&mp);
  const double lower[3] = {-1, 0, 2}, upper[3] = {1, 1, 3};
  const int root[3] = {4, 2, 2};
  for (int a = 0; a < 3; a++)
    mp.lower[a] = lower[a], mp.upper[a] = upper[a], mp.root[a] = root[a];
  mp.block_cells = CELLS;
  mp.max_level = 1;
  strata_mesh *m = NULL;
  CHECK_EQ(strata_mesh_create(&mp, &m), 0);
  const int64_t blocks[3] = {8, 4, 4}, n = 8 * 4 * 4;
  const double h = 2.0 / (8 * CELLS);
  double **field = calloc((size_t)n, sizeof *field);
  for (int64_t i = 0; i < n; i++) {
    if (i % num_ranks() != my_rank())
      continue;
    const int64_t idx[3] = {i % blocks[0], i / blocks[0] % blocks[1], i / (blocks[0] * blocks[1])};
    field[i] = malloc(SIDE * SIDE * SIDE * sizeof **field);
    for (int c = 0; c < SIDE * SIDE * SIDE; c++) {
      const int64_t cell[3] = {c % SIDE, c / SIDE % SIDE, c / (SIDE * SIDE)};
      double x[3];
      for (int a = 0; a < 3; a++)
        x[a] = lower[a] + ((double)(idx[a] * CELLS + cell[a] - GHOST) + 0.5) * h;
      field[i][c] = box_density(x);
    }
    CHECK_EQ(strata_mesh_add_leaf(m, 1, idx, (void *[]){field[i]}), 0);
  }
  CHECK_EQ(strata_mesh_commit(m), 0);
  strata_infer_params ip;
  strata_infer_params_init(&ip);
  ip.level_base = 0;
  ip.level_array = 0;
  ip.level_infer = 1;
  ip.model = model;
  ip.reference = STRATA_INFER_FIXED;
  ip.overdensity_threshold = 2;
  strata_infer *inf = NULL;
  CHECK_EQ(strata_infer_create_on_mesh(m, &ip, &inf), 0);
  CHECK_EQ(strata_infer_run(inf, NULL), 0);
  strata_bubble *b = NULL;
  int64_t nb = 0, mine = 0, total;
  CHECK_EQ(strata_infer_bubbles(inf, &b, NULL, &nb), 0);
  CHECK_EQ(nb, 1); /* one region across the periodic boundary */
  if (nb == 1) {
    const double want[3] = {0.99, 0.3, 2.3};
    for (int a = 0; a < 3; a++)
      CHECK(fabs(b[0].center[a] - want[a]) < h && b[0].center[a] >= lower[a] &&
            b[0].center[a] < upper[a]);
    CHECK(b[0].parts == 2);
    if (my_rank() == 0)
      printf("box [-1, 1) x [0, 1) x [2, 3): one bubble at (%.4f, %.4f, %.4f), %lld parts\n",
             b[0].center[0], b[0].center[1], b[0].center[2], (long long)b[0].parts);
  }
  /* Delivered once, to the leaf of this rank that holds the centre. */
  for (int64_t i = 0; i < n; i++) {
    const int64_t idx[3] = {i % blocks[0], i / blocks[0] % blocks[1], i / (blocks[0] * blocks[1])};
    strata_bubble *p = NULL;
    int64_t np = 0;
    strata_amr_block leaf = {.level = 1, .index = {idx[0], idx[1], idx[2]}};
    if (field[i] && strata_infer_leaf_particles(inf, &leaf, &p, &np) == 0)
      mine += np;
    free(p);
  }
  MPI_Allreduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, strata_comm());
  CHECK_EQ(total, nb);
  free(b);
  strata_infer_destroy(inf);
  CHECK_EQ(strata_mesh_destroy(m), 0);
  for (int64_t i = 0; i < n; i++)
    free(field[i]);
  free(field);
}

/* ---- the application's next time step beside a cycle ---- */

static void double_density(void *buffers[], void *arg)
{
  (void)arg;
  double *v = (double *)STARPU_VECTOR_GET_PTR(buffers[0]);
  for (uint32_t i = 0; i < STARPU_VECTOR_GET_NX(buffers[0]); i++)
    v[i] *= 2;
}

static struct starpu_codelet double_cl = {
    .cpu_funcs = {double_density}, .nbuffers = 1, .modes = {STARPU_RW}, .name = "app_step"};

static int64_t bubble_cells(strata_infer *inf)
{
  strata_bubble *b = NULL;
  int64_t n = 0, cells = 0;
  CHECK_EQ(strata_infer_bubbles(inf, &b, NULL, &n), 0);
  for (int64_t k = 0; k < n; k++)
    cells += b[k].cells;
  free(b);
  return cells;
}

/* The application submits its own time step (a task on each of its
 * density handles) right after strata_infer_submit: StarPU orders it after
 * the cycle's reads of those blocks, so the cycle sees the old density and
 * the next cycle the new one. */
static void check_next_step(strata_model *model)
{
  strata_amr *amr = octree();
  struct app app;
  app_open(&app, amr);
  describe(&app, 3);
  strata_infer *inf = method(NULL, app.mesh, model);
  CHECK_EQ(strata_infer_run(inf, NULL), 0);
  const int64_t before = bubble_cells(inf);
  CHECK_EQ(strata_infer_submit(inf), 0);
  for (int64_t i = 0; i < app.n; i++)
    if (app.field[i]) {
      starpu_data_handle_t h;
      CHECK_EQ(strata_mesh_field_handle(app.mesh, &app.leaves[i], 0, &h), 0);
      CHECK_EQ(starpu_task_insert(&double_cl, STARPU_RW, h, 0), 0);
    }
  CHECK_EQ(strata_infer_wait(inf, NULL), 0);
  const int64_t during = bubble_cells(inf);
  CHECK_EQ(strata_infer_run(inf, NULL), 0);
  const int64_t after = bubble_cells(inf);
  CHECK_EQ(during, before); /* the cycle read the density before the step */
  CHECK(after > before);    /* the next one reads the doubled density */
  int64_t doubled = 0, mine = 0;
  for (int64_t i = 0; i < app.n; i++)
    if (app.field[i]) {
      double once[SIDE * SIDE * SIDE];
      fill_block(&app.leaves[i], once);
      doubled += app.field[i][0] == 2 * once[0];
      mine++;
    }
  CHECK_EQ(doubled, mine); /* in the application's own memory */
  if (my_rank() == 0)
    printf("the application's next step beside a cycle: %lld bubble cells during it, %lld "
           "after\n",
           (long long)during, (long long)after);
  strata_infer_destroy(inf);
  app_close(&app);
  strata_amr_destroy(amr);
}

/* ---- bad descriptions ---- */

static double scratch[SIDE * SIDE * SIDE];

/* Level-l leaves everywhere, leaf i on rank i % ranks, all fields on
 * `scratch` (never read: the descriptions are only committed). */
static void uniform(strata_mesh *m, int level)
{
  const int64_t n = 2 << level;
  void *ptrs[FIELDS] = {scratch, scratch};
  for (int64_t i = 0; i < n * n * n; i++)
    if (i % num_ranks() == my_rank()) {
      const int64_t idx[3] = {i % n, i / n % n, i / (n * n)};
      strata_mesh_add_leaf(m, level, idx, ptrs);
    }
}

static void expect_refused(strata_mesh *m, const char *why)
{
  int ret = strata_mesh_commit(m);
  CHECK_EQ(ret, STRATA_EINVAL);
  if (!strstr(strata_error_message(), why)) {
    fprintf(stderr, "rank %d: '%s' lacks '%s'\n", my_rank(), strata_error_message(), why);
    CHECK(0);
  }
  CHECK_EQ(strata_mesh_begin(m), 0);
}

static void check_bad_input(void)
{
  strata_mesh_params mp;
  strata_mesh_params_init(&mp);
  mp.block_cells = CELLS;
  mp.max_level = 3;
  mp.nfields = FIELDS;
  strata_mesh *m = NULL;
  CHECK_EQ(strata_mesh_create(&mp, &m), 0);
  void *ptrs[FIELDS] = {scratch, scratch};
  const int last = num_ranks() - 1;

  uniform(m, 1); /* a leaf and one of its children, on the last rank */
  if (my_rank() == last)
    strata_mesh_add_leaf(m, 2, (int64_t[3]){0, 0, 0}, ptrs);
  expect_refused(m, "overlap");

  uniform(m, 1); /* the same leaf on two ranks (or twice on one) */
  if (my_rank() == last)
    strata_mesh_add_leaf(m, 1, (int64_t[3]){1, 0, 0}, ptrs);
  expect_refused(m, "overlap");

  uniform(m, 1);
  if (my_rank() == 0)
    CHECK_EQ(strata_mesh_add_leaf(m, 1, (int64_t[3]){4, 0, 0}, ptrs), STRATA_EINVAL);
  expect_refused(m, "outside the domain");

  for (int64_t i = 1; i < 8; i++) /* root block 0 missing */
    if (i % num_ranks() == my_rank())
      strata_mesh_add_leaf(m, 0, (int64_t[3]){i % 2, i / 2 % 2, i / 4}, ptrs);
  expect_refused(m, "gap");

  /* Root block 0 at level 3 beside level-1 leaves: 2:1 broken. */
  for (int64_t i = 0; i < 64; i++) {
    const int64_t idx[3] = {i % 4, i / 4 % 4, i / 16};
    if (idx[0] < 2 && idx[1] < 2 && idx[2] < 2)
      continue;
    if (i % num_ranks() == my_rank())
      strata_mesh_add_leaf(m, 1, idx, ptrs);
  }
  for (int64_t i = 0; i < 512 && my_rank() == last; i++) {
    const int64_t idx[3] = {i % 8, i / 8 % 8, i / 64};
    strata_mesh_add_leaf(m, 3, idx, ptrs);
  }
  expect_refused(m, "2:1");

  uniform(m, 1); /* one rank forgets a field */
  if (my_rank() == last)
    CHECK_EQ(strata_mesh_add_leaf(m, 2, (int64_t[3]){7, 7, 7}, (void *[FIELDS]){scratch, NULL}),
             STRATA_EINVAL);
  expect_refused(m, "has no field 1");

  uniform(m, 1); /* and the mesh still serves a good description */
  CHECK_EQ(strata_mesh_commit(m), 0);
  CHECK_EQ(strata_mesh_destroy(m), 0);

  mp.upper[1] = my_rank() == last ? 2 : 1; /* ranks that disagree on the domain */
  mp.root[1] = my_rank() == last ? 4 : 2;
  m = NULL;
  int ret = strata_mesh_create(&mp, &m);
  CHECK_EQ(ret, num_ranks() > 1 ? STRATA_EINVAL : 0);
  if (num_ranks() > 1)
    CHECK(m == NULL && strstr(strata_error_message(), "different domains") != NULL);
  strata_mesh_destroy(m);
  mp.upper[1] = 1, mp.root[1] = 2;
  mp.upper[2] = 3; /* blocks that are not cubes */
  CHECK_EQ(strata_mesh_create(&mp, &m), STRATA_EINVAL);
  CHECK(strstr(strata_error_message(), "cubes") != NULL);
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  strata_model *model = NULL; /* the analytic blob detector: it marks every dense region */
  CHECK(argc == 2);
  CHECK_EQ(argc == 2 ? strata_model_load(argv[1], &model) : STRATA_EINVAL, 0);
  check_same_as_octree(model);
  check_box(model);
  check_next_step(model);
  check_bad_input();
  strata_model_destroy(model);
  strata_finalize();
  return check_status();
}
