/* Inference-array benchmark: the main job's cycle (Enzo-E's inference test
 * sizes, cosmology problem) as a task graph against the same phases
 * separated by global barriers (--bulk-synchronous), in the same run on the
 * same hierarchy, alternating round by round; and the same cycle through
 * the mesh interface (strata/mesh.h) on blocks that the application owns,
 * as p4est's quadrants hold them: each rank describes its own leaves (the
 * octree's distribution), with copies of their fields. Every method is
 * warmed up once (performance models, level arrays), then every round
 * reuses the level array, as steady cycles do. Run it under mpiexec for 1,
 * 2 and 4 ranks. Targets: task graph >= 1.3x faster than bulk-synchronous
 * on 2 ranks; the mesh's cycle <= 1.05x the octree's. Prints JSON (rank 0)
 * with medians over the rounds.
 *
 * How much any schedule could gain: StarPU's profiling counters give each
 * rank's worker time executing tasks during a cycle. Both modes run the
 * same tasks on the same workers, so no schedule ends before the busiest
 * rank's executing time per worker; `speedup_bound` is the bulk-synchronous
 * cycle over the smaller of that time in the two modes (tasks run longer
 * when they share cores with more threads), the most any overlap can give,
 * and `bulk_idle` the share of the bulk-synchronous cycle the busiest
 * rank's workers idled.
 *
 * What a rank holds and sends per cycle, which must grow with its share
 * of the level array and not with the whole (docs/scaling.md):
 * `element_handles_max_per_rank` and `messages_per_rank` (task graph),
 * `elements_known_max_per_rank` (its part of the agreed level array) and
 * `join_bytes_max_per_rank` (the bubble join's parts and links that cross
 * its borders); and of the octree, `octree_nodes_max_per_rank` and
 * `octree_bytes_max_per_rank` (its own leaves, the ghost layer, their
 * ancestors and p4est's share: strata_amr_get_footprint()).
 *
 *   bench_infer [--rounds R] [--quick]   (--quick: fewer arrays)
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include <strata/mesh.h>
#include <strata/starpu.h>

#include "bench_starpu.h"
#include "bench_util.h"
#include "infer_job.h"
#include "p4est_mesh.h"

/* Medians of each phase, of the total and of the time until
 * strata_infer_submit() returned, over the rounds, as JSON. */
static cJSON *summary(double (*t)[STRATA_INFER_PHASES + 2], int rounds)
{
  cJSON *o = cJSON_CreateObject();
  double *v = malloc((size_t)rounds * sizeof *v);
  for (int k = 0; k <= STRATA_INFER_PHASES + 1; k++) {
    for (int r = 0; r < rounds; r++)
      v[r] = t[r][k];
    cJSON_AddNumberToObject(o,
                            k < STRATA_INFER_PHASES    ? strata_infer_phase_name(k)
                            : k == STRATA_INFER_PHASES ? "total"
                                                       : "submit",
                            bench_median(v, rounds));
  }
  free(v);
  return o;
}

static void record(const strata_infer_stats *st, double *row)
{
  for (int k = 0; k < STRATA_INFER_PHASES; k++)
    row[k] = st->seconds[k];
  row[STRATA_INFER_PHASES] = st->total;
  row[STRATA_INFER_PHASES + 1] = st->submit_seconds; /* the caller's share of the cycle */
}

/* The application's copy of the hierarchy: this rank's leaves, each
 * field in a block of its own memory, described to a mesh. */
struct app_mesh {
  strata_mesh *mesh;
  int nfields;
  int64_t n; /* this rank's leaves */
  strata_amr_block *leaves;
  void **blocks; /* per leaf and field */
};

/* This rank's leaves described anew (what an application does after it
 * re-meshes): seconds taken, the slowest rank's; negative on failure. */
static double app_mesh_describe(struct app_mesh *app)
{
  MPI_Barrier(strata_comm());
  double t0 = bench_now();
  int ret = strata_mesh_begin(app->mesh);
  for (int64_t i = 0; i < app->n && !ret; i++)
    ret = strata_mesh_add_leaf(app->mesh, app->leaves[i].level, app->leaves[i].index,
                               app->blocks + i * app->nfields);
  int commit = strata_mesh_commit(app->mesh);
  double t = bench_now() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, strata_comm());
  return ret || commit ? -1 : t;
}

static int app_mesh_make(strata_amr *amr, struct app_mesh *app)
{
  const strata_amr_params *ap = strata_amr_get_params(amr);
  strata_mesh_params mp;
  strata_mesh_params_of_amr(ap, &mp);
  int ret = strata_mesh_create(&mp, &app->mesh);
  const int64_t side = ap->block_cells + 2 * ap->ghost_depth;
  const size_t bytes = (size_t)(side * side * side) * (ap->dtype == STRATA_FLOAT64 ? 8 : 4);
  strata_amr_local_leaves(amr, NULL, 0, &app->n);
  app->nfields = ap->nfields;
  app->leaves = malloc((size_t)(app->n + 1) * sizeof *app->leaves);
  app->blocks = calloc((size_t)(app->n * ap->nfields + 1), sizeof *app->blocks);
  strata_amr_local_leaves(amr, app->leaves, app->n, &app->n);
  for (int64_t i = 0; i < app->n && !ret; i++)
    for (int f = 0; f < ap->nfields; f++) {
      starpu_data_handle_t h = strata_amr_field_handle(amr, &app->leaves[i], f);
      void *block = app->blocks[i * ap->nfields + f] = malloc(bytes);
      starpu_data_acquire(h, STARPU_R);
      memcpy(block, starpu_data_get_local_ptr(h), bytes);
      starpu_data_release(h);
    }
  return ret ? ret : app_mesh_describe(app) < 0 ? STRATA_EINVAL : 0;
}

/* ---- the p4est path: a brick forest refined to the octree's leaves,
 * partitioned by p4est, each quadrant's user data holding its fields
 * (evaluated from the job's problem, ghosts included) ---- */

struct forest {
  p8est_connectivity_t *conn;
  p8est_t *p;
  strata_mesh *mesh;
};

static size_t field_bytes; /* one field of one block */

static void forest_fields(void *user_data, void **out)
{
  for (int f = 0; f < STRATA_AMR_MAX_FIELDS; f++)
    out[f] = (char *)user_data + (size_t)f * field_bytes;
}

/* The octree's blocks that are not leaves, as keys (level, z, y, x),
 * sorted: what the forest refines. */
struct parents {
  int64_t (*key)[4];
  int64_t n;
};

/* Bytewise: an order that sorting and searching agree on. */
static int key_cmp(const void *x, const void *y) { return memcmp(x, y, sizeof(int64_t[4])); }

static void key_of(const strata_amr_block *b, int64_t key[4])
{
  const int64_t k[4] = {b->level, b->index[2], b->index[1], b->index[0]};
  memcpy(key, k, sizeof k);
}

/* Every leaf's ancestors (gathered: collective), sorted and unique. */
static int octree_parents(const strata_amr *amr, struct parents *pa)
{
  int64_t n = 0;
  int ret = strata_amr_leaves(amr, NULL, 0, &n);
  strata_amr_block *leaves = malloc((size_t)(n + 1) * sizeof *leaves);
  const int max_level = strata_amr_get_params(amr)->max_level;
  pa->key = malloc((size_t)(n * max_level + 1) * sizeof *pa->key);
  pa->n = 0;
  if (!ret)
    ret = leaves && pa->key ? strata_amr_leaves(amr, leaves, n, &n) : STRATA_ENOMEM;
  for (int64_t i = 0; !ret && i < n; i++)
    for (strata_amr_block b = leaves[i], up; b.level > 0; b = up) {
      strata_amr_parent(amr, &b, &up);
      key_of(&up, pa->key[pa->n++]);
    }
  qsort(pa->key, (size_t)pa->n, sizeof *pa->key, key_cmp);
  int64_t u = 0;
  for (int64_t i = 0; i < pa->n; i++)
    if (!u || key_cmp(pa->key[u - 1], pa->key[i]))
      memcpy(pa->key[u++], pa->key[i], sizeof *pa->key);
  pa->n = u;
  free(leaves);
  return ret;
}

static int refine_to_octree(p8est_t *p, p4est_topidx_t t, p8est_quadrant_t *q)
{
  const struct parents *pa = p->user_pointer;
  strata_amr_block b = {0};
  int64_t key[4];
  p4est_mesh_name(p, t, q, &b);
  key_of(&b, key);
  return bsearch(key, pa->key, (size_t)pa->n, sizeof *pa->key, key_cmp) != NULL;
}

/* What the forest's blocks are filled from. */
struct forest_fill {
  const strata_amr_params *ap;
  const strata_amr_problem *problem;
  double *row; /* one row of cells, ghosts included */
};

static void fill_quadrant(void *ctx, p8est_quadrant_t *q, const strata_amr_block *b)
{
  const struct forest_fill *ff = ctx;
  const strata_amr_params *ap = ff->ap;
  const int64_t m = ap->block_cells, g = ap->ghost_depth, side = m + 2 * g;
  const double h = 1.0 / (double)((int64_t)ap->root_blocks << b->level) / (double)m;
  for (int f = 0; f < ap->nfields; f++)
    for (int64_t k = 0; k < side; k++)
      for (int64_t j = 0; j < side; j++) {
        const int64_t cell[3] = {0, j, k};
        double centre[3];
        for (int a = 0; a < 3; a++)
          centre[a] = ((double)(b->index[a] * m + cell[a] - g) + 0.5) * h;
        strata_amr_problem_eval(ff->problem, f, centre, h, side, ff->row);
        char *block = (char *)q->p.user_data + (size_t)f * field_bytes;
        for (int64_t i = 0; i < side; i++) {
          const int64_t at = (k * side + j) * side + i;
          if (ap->dtype == STRATA_FLOAT64)
            ((double *)(void *)block)[at] = ff->row[i];
          else
            ((float *)(void *)block)[at] = (float)ff->row[i];
        }
      }
}

/* The unit-domain boxes of the local quadrants' cells, ghosts included:
 * what the fill samples, for strata_amr_problem_prepare(). */
struct quadrant_boxes {
  const strata_amr_params *ap;
  double *box;
  int64_t n, cap;
};

static void box_quadrant(void *ctx, p8est_quadrant_t *q, const strata_amr_block *b)
{
  (void)q;
  struct quadrant_boxes *qb = ctx;
  if (qb->n == qb->cap) {
    int64_t cap = 2 * qb->cap + 64;
    double *more = realloc(qb->box, (size_t)(6 * cap) * sizeof *more);
    if (!more)
      return; /* counted short: forest_make fails */
    qb->box = more, qb->cap = cap;
  }
  const strata_amr_params *ap = qb->ap;
  const int64_t m = ap->block_cells, g = ap->ghost_depth;
  const double h = 1.0 / (double)((int64_t)ap->root_blocks << b->level) / (double)m;
  double *box = qb->box + 6 * qb->n++;
  for (int a = 0; a < 3; a++) {
    box[a] = (double)(b->index[a] * m - g) * h;
    box[3 + a] = (double)((b->index[a] + 1) * m + g) * h;
  }
}

static int forest_make(struct infer_run *run, struct forest *fo)
{
  const strata_amr_params *ap = strata_amr_get_params(run->amr);
  const int64_t side = ap->block_cells + 2 * ap->ghost_depth;
  field_bytes = (size_t)(side * side * side) * (ap->dtype == STRATA_FLOAT64 ? 8 : 4);
  /* p4est is Strata's too (its octree), registered and quiet since the
   * hierarchy was made */
  const int r = ap->root_blocks, periodic = ap->boundary == STRATA_AMR_PERIODIC;
  struct parents pa;
  int ret = octree_parents(run->amr, &pa);
  fo->conn = p8est_connectivity_new_brick(r, r, r, periodic, periodic, periodic);
  fo->p =
      p8est_new_ext(strata_comm(), fo->conn, 0, 0, 1, field_bytes * (size_t)ap->nfields, NULL, &pa);
  if (!ret)
    p8est_refine(fo->p, 1, refine_to_octree, NULL);
  free(pa.key);
  fo->p->user_pointer = NULL;
  p8est_partition(fo->p, 0, NULL);
  strata_amr_problem *problem = NULL;
  if (!ret)
    ret = infer_job_problem(run, 0, &problem);
  /* A distributed field's problem fetches what the local quadrants need
   * (a rank short of memory passes -1 boxes: every rank gets the error). */
  struct quadrant_boxes qb = {ap, NULL, 0, 0};
  p4est_mesh_each(fo->p, box_quadrant, &qb);
  int local = qb.n == (int64_t)fo->p->local_num_quadrants ? 0 : STRATA_ENOMEM;
  if (!ret)
    ret = strata_amr_problem_prepare(problem, local ? NULL : qb.box, local ? -1 : qb.n);
  free(qb.box);
  struct forest_fill ff = {ap, problem, malloc((size_t)side * sizeof *ff.row)};
  if (!ret && ff.row)
    p4est_mesh_each(fo->p, fill_quadrant, &ff);
  ret = ret ? ret : ff.row ? 0 : STRATA_ENOMEM;
  free(ff.row);
  strata_amr_problem_destroy(problem);
  strata_mesh_params mp;
  strata_mesh_params_of_amr(ap, &mp);
  if (!ret)
    ret = strata_mesh_create(&mp, &fo->mesh);
  return ret ? ret : p4est_mesh_describe(fo->p, fo->mesh, forest_fields);
}

static void forest_free(struct forest *fo)
{
  strata_mesh_destroy(fo->mesh);
  if (fo->p)
    p8est_destroy(fo->p);
  if (fo->conn)
    p8est_connectivity_destroy(fo->conn);
}

static void app_mesh_free(struct app_mesh *app)
{
  strata_mesh_destroy(app->mesh);
  for (int64_t i = 0; i < app->n * app->nfields; i++)
    free(app->blocks[i]);
  free(app->blocks);
  free(app->leaves);
}

/* A ratio's median, least and largest over the rounds into `o`. */
static void add_ratio(cJSON *o, const char *name, double *v, int rounds)
{
  double lo = v[0], hi = v[0];
  for (int r = 1; r < rounds; r++)
    lo = fmin(lo, v[r]), hi = fmax(hi, v[r]);
  char key[64];
  snprintf(key, sizeof key, "%s_median", name);
  cJSON_AddNumberToObject(o, key, bench_median(v, rounds));
  snprintf(key, sizeof key, "%s_min", name);
  cJSON_AddNumberToObject(o, key, lo);
  snprintf(key, sizeof key, "%s_max", name);
  cJSON_AddNumberToObject(o, key, hi);
}

/* The methods compared, each run once a round in this order. */
enum { GRAPH, BULK, MESH, P4EST, METHODS };
static const char *const method_names[METHODS] = {"task_graph_s", "bulk_synchronous_s",
                                                  "mesh_interface_s", "p4est_s"};

int main(int argc, char **argv)
{
  int rounds = 5, quick = 0;
  if (bench_options(argc, argv, "bench_infer", &rounds, &quick))
    return 2;
  if (strata_init(&argc, &argv, NULL))
    return 1;
  starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
  struct infer_job job;
  infer_job_defaults(&job);
  if (quick)
    job.threshold = 64;
  struct infer_run run;
  struct app_mesh app = {0};
  strata_infer *m[METHODS] = {NULL};
  strata_infer_stats st = {0};
  strata_infer_params ip;
  int ret = infer_job_setup(&job, &run);
  infer_job_params(&run, 0, &ip);
  if (!ret)
    ret = infer_job_method(&run, 0, &m[GRAPH]);
  if (!ret)
    ret = infer_job_method(&run, 1, &m[BULK]);
  if (!ret)
    ret = app_mesh_make(run.amr, &app);
  if (!ret)
    ret = strata_infer_create_on_mesh(app.mesh, &ip, &m[MESH]);
  struct forest fo = {0};
  if (!ret)
    ret = forest_make(&run, &fo);
  if (!ret)
    ret = strata_infer_create_on_mesh(fo.mesh, &ip, &m[P4EST]);
  for (int k = 0; k < METHODS && !ret; k++) /* warm-up */
    if (m[k])
      ret = strata_infer_run(m[k], &st);
  double(*t[METHODS])[STRATA_INFER_PHASES + 2];
  for (int k = 0; k < METHODS; k++)
    t[k] = calloc((size_t)rounds, sizeof *t[k]);
  double *ratio = calloc((size_t)rounds, sizeof *ratio);
  double *mesh_ratio = calloc((size_t)rounds, sizeof *mesh_ratio);
  double *p4est_ratio = calloc((size_t)rounds, sizeof *p4est_ratio);
  double *describe = calloc((size_t)rounds, sizeof *describe);
  double *bound = calloc((size_t)rounds, sizeof *bound),
         *idle = calloc((size_t)rounds, sizeof *idle);
  strata_infer_stats graph = {0}; /* the task-graph method's last cycle */
  for (int r = 0; r < rounds && !ret; r++) {
    double busiest[METHODS] = {0};
    for (int k = 0; k < METHODS && !ret; k++) {
      if (!m[k])
        continue;
      if (k == MESH) { /* as after a re-mesh: described again, timed apart */
        describe[r] = app_mesh_describe(&app);
        ret = describe[r] < 0 ? STRATA_EINVAL : 0;
      }
      bench_executing_per_worker(); /* reset */
      if (!ret)
        ret = strata_infer_run(m[k], &st);
      record(&st, t[k][r]);
      if (k == GRAPH)
        graph = st;
      busiest[k] = bench_executing_per_worker();
      MPI_Allreduce(MPI_IN_PLACE, &busiest[k], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    const double bulk = t[BULK][r][STRATA_INFER_PHASES];
    bound[r] = bulk / fmin(busiest[GRAPH], busiest[BULK]);
    idle[r] = 1 - busiest[BULK] / bulk;
    const double octree = t[GRAPH][r][STRATA_INFER_PHASES];
    ratio[r] = t[BULK][r][STRATA_INFER_PHASES] / octree;
    mesh_ratio[r] = t[MESH][r][STRATA_INFER_PHASES] / octree;
    p4est_ratio[r] = t[P4EST][r][STRATA_INFER_PHASES] / octree;
  }
  /* What a rank holds and receives in a cycle, most on a rank: element
   * handles, level-array entries and the bubble join's bytes, none of
   * which grows with the whole level array. */
  strata_amr_footprint fp = {0};
  strata_amr_get_footprint(run.amr, &fp);
  int64_t held_max[5] = {graph.handles_local, graph.elements_known, graph.join_bytes_local,
                         fp.nodes, fp.bytes};
  MPI_Allreduce(MPI_IN_PLACE, held_max, 5, MPI_INT64_T, MPI_MAX, strata_comm());
  if (!ret && strata_rank() == 0) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "benchmark", "infer");
    cJSON_AddNumberToObject(root, "ranks", strata_size());
    cJSON_AddNumberToObject(root, "rounds", rounds);
    cJSON_AddNumberToObject(root, "leaves", (double)strata_amr_num_leaves(run.amr));
    cJSON_AddNumberToObject(root, "elements", (double)st.elements);
    cJSON_AddNumberToObject(root, "elements_max_per_rank", (double)st.elements_max);
    cJSON_AddNumberToObject(root, "bubbles", (double)st.bubbles);
    cJSON_AddNumberToObject(root, "element_handles_max_per_rank", (double)held_max[0]);
    cJSON_AddNumberToObject(root, "elements_known_max_per_rank", (double)held_max[1]);
    cJSON_AddNumberToObject(root, "join_bytes_max_per_rank", (double)held_max[2]);
    cJSON_AddNumberToObject(root, "octree_nodes_max_per_rank", (double)held_max[3]);
    cJSON_AddNumberToObject(root, "octree_bytes_max_per_rank", (double)held_max[4]);
    cJSON_AddNumberToObject(root, "messages_per_rank",
                            (double)graph.messages / (double)strata_size());
    for (int k = 0; k < METHODS; k++)
      if (m[k])
        cJSON_AddItemToObject(root, method_names[k], summary(t[k], rounds));
    cJSON_AddNumberToObject(root, "speedup_median", bench_median(ratio, rounds));
    add_ratio(root, "speedup_bound", bound, rounds);
    cJSON_AddNumberToObject(root, "bulk_idle_median", bench_median(idle, rounds));
    add_ratio(root, "mesh_over_octree", mesh_ratio, rounds);
    if (m[P4EST])
      add_ratio(root, "p4est_over_octree", p4est_ratio, rounds);
    cJSON_AddNumberToObject(root, "mesh_describe_s", bench_median(describe, rounds));
    bench_print_json(root);
  }
  if (ret && strata_rank() == 0)
    fprintf(stderr, "bench_infer: %s %s\n", strata_strerror(ret), strata_error_message());
  for (int k = 0; k < METHODS; k++) {
    free(t[k]);
    strata_infer_destroy(m[k]);
  }
  free(ratio);
  free(mesh_ratio);
  free(p4est_ratio);
  free(describe);
  free(bound);
  free(idle);
  app_mesh_free(&app);
  forest_free(&fo);
  infer_job_teardown(&run);
  strata_finalize();
  return ret ? 1 : 0;
}
