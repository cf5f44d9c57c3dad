/* Weak scaling of the inference cycle with nothing global: the mesh is the
 * application's, as a p4est code holds it after partitioning. Each rank
 * makes only its own root blocks (a fixed number per rank, one clump
 * planted in each), refines them around the clumps, fills its leaves and
 * describes them (strata/mesh.h); no rank ever holds a list of all leaves,
 * all clumps or all root blocks. The cycle (the task graph) is timed
 * against the same phases separated by global barriers
 * (--bulk-synchronous), in the same run on the same mesh, alternating
 * round by round, after one warm-up cycle each.
 *
 * What a rank holds and sends must not grow with the whole mesh; the JSON
 * (rank 0) gives the most on any rank of each: its leaves and the bytes of
 * their fields, the element handles it registered, the level-array entries
 * it knows, the bubble join's bytes it received, and the point-to-point
 * messages of the cycle per rank, beside the totals; with STARPU_PROFILING=1
 * also the busiest worker's time executing tasks. The clumps found are
 * scored locally too: a rank's clumps lie in its own root blocks, and each
 * bubble goes to the leaf holding its centre.
 *
 * The mesh: root blocks of 8^3 cells, ranks * per_rank of them on a
 * periodic root grid as cubic as the count allows, rank r owning the
 * per_rank blocks from r * per_rank in x-fastest order. A block of level l
 * (edge h = 2^-l root blocks) is refined, up to level 3, when a clump lies
 * within h of it in the max-norm, which keeps neighbours across faces,
 * edges and corners within one level of each other (2:1): a leaf B and a
 * refined block A of level l + 1 beside it have d(B) <= d(A) + h/2 < h.
 * Arrays on level 2 at the resolution of level 3 (16^3 cells), the
 * criterion from level 1; the default model.
 *
 *   bench_infer_weak [--rounds R] [--quick]   (--quick: one root block per
 *                                              rank, else 4)
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include <mpi.h>
#include <strata/mesh.h>
#include <strata/strata.h>

#include "bench_starpu.h"
#include "bench_util.h"
#include "infer_job.h"

enum { BLOCK_CELLS = 8, MAX_LEVEL = 3, GHOSTS = 1 };

struct weak_mesh {
  int64_t dims[3];         /* root blocks per axis */
  int64_t first, per_rank; /* this rank's root blocks, in x-fastest order */
  int64_t n, cap;          /* leaves */
  strata_amr_block *leaves;
  float **blocks; /* one field each, ghosts included */
  strata_mesh *mesh;
};

/* Draw k of a root block: the job's stream (tools/infer_job.h), 8 draws a
 * block, the same on every rank. */
static double draw(int64_t block, int k)
{
  return infer_job_uniform(0, (uint64_t)block * 8 + (uint64_t)k);
}

/* The factors of n, as equal as n allows, largest first: the root grid. */
static void root_dims(int64_t n, int64_t dims[3])
{
  dims[2] = 1;
  for (int64_t d = 1; d * d * d <= n; d++)
    if (n % d == 0)
      dims[2] = d;
  const int64_t rest = n / dims[2];
  dims[1] = 1;
  for (int64_t d = 1; d * d <= rest; d++)
    if (rest % d == 0)
      dims[1] = d;
  dims[0] = rest / dims[1];
}

/* A clump of the root grid, named by a root block's position that may lie
 * outside the grid (a periodic image): its centre (root-block units, the
 * image's), width and mass (domain units: a root block holds mass 1). */
struct clump {
  double centre[3], width, mass;
};

static struct clump clump_of(const struct weak_mesh *wm, const int64_t at[3])
{
  int64_t wrapped[3];
  for (int a = 0; a < 3; a++)
    wrapped[a] = ((at[a] % wm->dims[a]) + wm->dims[a]) % wm->dims[a];
  const int64_t block = (wrapped[2] * wm->dims[1] + wrapped[1]) * wm->dims[0] + wrapped[0];
  /* The main job's clumps (widths in cells of the arrays' resolution,
   * masses in its root cells', five levels coarser), as the default model
   * was trained to see them. */
  const double finest = 1.0 / (BLOCK_CELLS << MAX_LEVEL), job_root_cell = 32 * finest;
  struct clump c;
  for (int a = 0; a < 3; a++) /* inside the middle half: its bubble stays in the block */
    c.centre[a] = (double)at[a] + 0.25 + 0.5 * draw(block, a);
  c.width = finest * (INFER_CLUMP_WIDTH_MIN +
                      (INFER_CLUMP_WIDTH_MAX - INFER_CLUMP_WIDTH_MIN) * draw(block, 3));
  c.mass = job_root_cell * job_root_cell * job_root_cell *
           (INFER_CLUMP_MASS_MIN + (INFER_CLUMP_MASS_MAX - INFER_CLUMP_MASS_MIN) * draw(block, 4));
  return c;
}

/* The position of root block r (x-fastest order). */
static void root_at(const struct weak_mesh *wm, int64_t r, int64_t at[3])
{
  at[0] = r % wm->dims[0];
  at[1] = r / wm->dims[0] % wm->dims[1];
  at[2] = r / wm->dims[0] / wm->dims[1];
}

/* The root block holding a block of `level` at `index`. */
static void root_of(const strata_amr_block *b, int64_t root[3])
{
  for (int a = 0; a < 3; a++)
    root[a] = b->index[a] >> b->level;
}

/* The clumps of b's root block and of the 26 around it (periodic images):
 * the only ones within a root block of it. */
static void clumps_around(const struct weak_mesh *wm, const strata_amr_block *b,
                          struct clump out[27])
{
  int64_t root[3];
  root_of(b, root);
  for (int k = 0; k < 27; k++) {
    const int64_t at[3] = {root[0] + k % 3 - 1, root[1] + k / 3 % 3 - 1, root[2] + k / 9 - 1};
    out[k] = clump_of(wm, at);
  }
}

/* Whether a clump lies within the block's edge of it (max-norm distance). */
static int near_clump(const struct weak_mesh *wm, const strata_amr_block *b)
{
  const double h = ldexp(1, -b->level);
  struct clump around[27];
  clumps_around(wm, b, around);
  for (int k = 0; k < 27; k++) {
    double d = 0;
    for (int a = 0; a < 3; a++) {
      const double lo = (double)b->index[a] * h, x = around[k].centre[a];
      d = fmax(d, x < lo ? lo - x : x > lo + h ? x - lo - h : 0);
    }
    if (d < h)
      return 1;
  }
  return 0;
}

static int add_leaf(struct weak_mesh *wm, const strata_amr_block *b)
{
  if (wm->n == wm->cap) {
    const int64_t cap = 2 * wm->cap + 64;
    strata_amr_block *leaves = realloc(wm->leaves, (size_t)cap * sizeof *leaves);
    if (!leaves)
      return STRATA_ENOMEM;
    wm->leaves = leaves;
    float **blocks = realloc(wm->blocks, (size_t)cap * sizeof *blocks);
    if (!blocks)
      return STRATA_ENOMEM;
    wm->blocks = blocks;
    wm->cap = cap;
  }
  wm->leaves[wm->n] = *b;
  wm->blocks[wm->n] = NULL;
  wm->n++;
  return 0;
}

static int refine_root(struct weak_mesh *wm, const strata_amr_block *b)
{
  if (b->level == MAX_LEVEL || !near_clump(wm, b))
    return add_leaf(wm, b);
  for (int octant = 0; octant < 8; octant++) {
    strata_amr_block child = {.level = b->level + 1};
    for (int a = 0; a < 3; a++)
      child.index[a] = 2 * b->index[a] + ((octant >> a) & 1);
    int ret = refine_root(wm, &child);
    if (ret)
      return ret;
  }
  return 0;
}

/* The mean over [lo, hi) of a unit-mass 1-D Gaussian centred at c. */
static double cell_share(double lo, double hi, double c, double width)
{
  const double s = sqrt(2.0) * width;
  return 0.5 * (erf((hi - c) / s) - erf((lo - c) / s)) / (hi - lo);
}

/* A leaf's field: 1 plus the cell means of the clumps around it, ghosts
 * included. */
static void fill_leaf(const struct weak_mesh *wm, const strata_amr_block *b, float *block)
{
  const int64_t side = BLOCK_CELLS + 2 * GHOSTS;
  const double dx = ldexp(1, -b->level) / BLOCK_CELLS;
  for (int64_t i = 0; i < side * side * side; i++)
    block[i] = 1;
  struct clump around[27];
  clumps_around(wm, b, around);
  for (int c = 0; c < 27; c++) {
    double share[3][BLOCK_CELLS + 2 * GHOSTS];
    for (int a = 0; a < 3; a++)
      for (int64_t k = 0; k < side; k++) {
        const double lo = ((double)(b->index[a] * BLOCK_CELLS + k - GHOSTS)) * dx;
        share[a][k] = cell_share(lo, lo + dx, around[c].centre[a], around[c].width);
      }
    for (int64_t z = 0; z < side; z++)
      for (int64_t y = 0; y < side; y++)
        for (int64_t x = 0; x < side; x++)
          block[(z * side + y) * side + x] +=
              (float)(around[c].mass * share[0][x] * share[1][y] * share[2][z]);
  }
}

/* This rank's root blocks, refined and filled. */
static int weak_mesh_make(struct weak_mesh *wm, int64_t per_rank)
{
  wm->per_rank = per_rank;
  wm->first = per_rank * strata_rank();
  root_dims(per_rank * strata_size(), wm->dims);
  int ret = 0;
  for (int64_t r = wm->first; r < wm->first + per_rank && !ret; r++) {
    strata_amr_block root = {.level = 0};
    root_at(wm, r, root.index);
    ret = refine_root(wm, &root);
  }
  const int64_t side = BLOCK_CELLS + 2 * GHOSTS;
  for (int64_t i = 0; i < wm->n && !ret; i++) {
    wm->blocks[i] = malloc((size_t)(side * side * side) * sizeof(float));
    if (!wm->blocks[i])
      ret = STRATA_ENOMEM;
    else
      fill_leaf(wm, &wm->leaves[i], wm->blocks[i]);
  }
  strata_mesh_params mp;
  strata_mesh_params_init(&mp);
  for (int a = 0; a < 3; a++) {
    mp.root[a] = (int)wm->dims[a];
    mp.upper[a] = (double)wm->dims[a];
  }
  mp.block_cells = BLOCK_CELLS;
  mp.ghost_depth = GHOSTS;
  mp.max_level = MAX_LEVEL;
  mp.dtype = STRATA_FLOAT32;
  /* Every rank creates the mesh, so that an error here reaches all. */
  int made = strata_mesh_create(&mp, &wm->mesh);
  if (!ret)
    ret = made;
  if (!made)
    ret = strata_mesh_begin(wm->mesh);
  for (int64_t i = 0; i < wm->n && !ret; i++)
    ret = strata_mesh_add_leaf(wm->mesh, wm->leaves[i].level, wm->leaves[i].index,
                               (void *const *)&wm->blocks[i]);
  int commit = made ? made : strata_mesh_commit(wm->mesh);
  return ret ? ret : commit;
}

static void weak_mesh_free(struct weak_mesh *wm)
{
  strata_mesh_destroy(wm->mesh);
  for (int64_t i = 0; i < wm->n; i++)
    free(wm->blocks[i]);
  free(wm->blocks);
  free(wm->leaves);
}

/* This rank's clumps that a bubble of the last cycle found (the particles
 * of its own leaves; each bubble finds at most one clump). */
static int clumps_found(const struct weak_mesh *wm, strata_infer *inf, int64_t *found)
{
  const double within = INFER_CLUMP_FOUND_WITHIN / (BLOCK_CELLS << MAX_LEVEL);
  *found = 0;
  for (int64_t r = wm->first; r < wm->first + wm->per_rank; r++) {
    int64_t at[3];
    root_at(wm, r, at);
    const struct clump c = clump_of(wm, at);
    int hit = 0;
    for (int64_t i = 0; i < wm->n && !hit; i++) {
      int64_t root[3];
      root_of(&wm->leaves[i], root);
      if (root[0] != at[0] || root[1] != at[1] || root[2] != at[2])
        continue;
      strata_bubble *list = NULL;
      int64_t n = 0;
      int ret = strata_infer_leaf_particles(inf, &wm->leaves[i], &list, &n);
      if (ret)
        return ret;
      for (int64_t k = 0; k < n && !hit; k++) {
        double d2 = 0;
        for (int a = 0; a < 3; a++)
          d2 += (list[k].center[a] - c.centre[a]) * (list[k].center[a] - c.centre[a]);
        hit = d2 <= within * within;
      }
      free(list);
    }
    *found += hit;
  }
  return 0;
}

enum { GRAPH, BULK, METHODS };

int main(int argc, char **argv)
{
  int rounds = 5, quick = 0;
  if (bench_options(argc, argv, "bench_infer_weak", &rounds, &quick))
    return 2;
  if (strata_init(&argc, &argv, NULL))
    return 1;
  /* STARPU_PROFILING=1 adds the busiest worker's time; off by default, as
   * it lengthens the simulated 1-rank cycle by up to a fifth. */
  const int profiling = starpu_profiling_status_get() == STARPU_PROFILING_ENABLE;
  struct weak_mesh wm = {0};
  strata_model *model = NULL;
  strata_infer *m[METHODS] = {NULL};
  strata_infer_stats st = {0}, graph = {0};
  const double setup_start = bench_now();
  int ret = weak_mesh_make(&wm, quick ? 1 : 4);
  const double describe_s = bench_now() - setup_start;
  if (!ret)
    ret = strata_model_load_default(&model);
  strata_infer_params ip;
  strata_infer_params_init(&ip);
  ip.level_base = 1;
  ip.level_array = 2;
  ip.level_infer = MAX_LEVEL;
  /* A clump holds most of its leaf's mass over a background of 1, so its
   * peak is some 8 times its leaf's mean (the default 32 suits the main
   * job's log-normal voids). */
  ip.overdensity_threshold = 4;
  ip.model = model;
  for (int k = 0; k < METHODS && !ret; k++) {
    ip.bulk_synchronous = k == BULK;
    ret = strata_infer_create_on_mesh(wm.mesh, &ip, &m[k]);
  }
  for (int k = 0; k < METHODS && !ret; k++) /* warm-up */
    ret = strata_infer_run(m[k], &st);
  double *cycle[METHODS], *ratio = calloc((size_t)rounds, sizeof *ratio),
                          *busiest = calloc((size_t)rounds, sizeof *busiest);
  for (int k = 0; k < METHODS; k++)
    cycle[k] = calloc((size_t)rounds, sizeof *cycle[k]);
  for (int r = 0; r < rounds && !ret; r++) {
    for (int k = 0; k < METHODS && !ret; k++) {
      bench_executing_per_worker(); /* reset */
      ret = strata_infer_run(m[k], &st);
      cycle[k][r] = st.total;
      if (k == GRAPH) {
        graph = st;
        busiest[r] = bench_executing_per_worker();
      }
    }
    MPI_Allreduce(MPI_IN_PLACE, &busiest[r], 1, MPI_DOUBLE, MPI_MAX, strata_comm());
    ratio[r] = cycle[BULK][r] / cycle[GRAPH][r];
  }
  int64_t found = 0;
  if (!ret)
    ret = clumps_found(&wm, m[GRAPH], &found);
  /* Sums over the ranks, then the most on a rank. */
  const int64_t side = BLOCK_CELLS + 2 * GHOSTS;
  int64_t sums[3] = {wm.n, found, wm.per_rank};
  int64_t most[5] = {wm.n, wm.n * side * side * side * (int64_t)sizeof(float), graph.handles_local,
                     graph.elements_known, graph.join_bytes_local};
  MPI_Allreduce(MPI_IN_PLACE, sums, 3, MPI_INT64_T, MPI_SUM, strata_comm());
  MPI_Allreduce(MPI_IN_PLACE, most, 5, MPI_INT64_T, MPI_MAX, strata_comm());
  if (!ret && strata_rank() == 0) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "benchmark", "infer_weak");
    cJSON_AddNumberToObject(root, "ranks", strata_size());
    cJSON_AddNumberToObject(root, "rounds", rounds);
    cJSON_AddItemToObject(
        root, "root_blocks",
        cJSON_CreateIntArray((const int[]){(int)wm.dims[0], (int)wm.dims[1], (int)wm.dims[2]}, 3));
    cJSON_AddNumberToObject(root, "leaves", (double)sums[0]);
    cJSON_AddNumberToObject(root, "leaves_max_per_rank", (double)most[0]);
    cJSON_AddNumberToObject(root, "mesh_bytes_max_per_rank", (double)most[1]);
    cJSON_AddNumberToObject(root, "elements", (double)graph.elements);
    cJSON_AddNumberToObject(root, "elements_max_per_rank", (double)graph.elements_max);
    cJSON_AddNumberToObject(root, "element_handles_max_per_rank", (double)most[2]);
    cJSON_AddNumberToObject(root, "elements_known_max_per_rank", (double)most[3]);
    cJSON_AddNumberToObject(root, "join_bytes_max_per_rank", (double)most[4]);
    cJSON_AddNumberToObject(root, "messages_per_rank",
                            (double)graph.messages / (double)strata_size());
    cJSON_AddNumberToObject(root, "clumps", (double)sums[2]);
    cJSON_AddNumberToObject(root, "clumps_found", (double)sums[1]);
    cJSON_AddBoolToObject(root, "all_clumps_found", sums[1] == sums[2]);
    cJSON_AddNumberToObject(root, "bubbles", (double)graph.bubbles);
    cJSON_AddNumberToObject(root, "mesh_make_s", describe_s);
    cJSON_AddNumberToObject(root, "task_graph_s", bench_median(cycle[GRAPH], rounds));
    cJSON *phases = cJSON_AddObjectToObject(root, "task_graph_last_round_s");
    for (int k = 0; k < STRATA_INFER_PHASES; k++)
      cJSON_AddNumberToObject(phases, strata_infer_phase_name(k), graph.seconds[k]);
    cJSON_AddNumberToObject(phases, "submit", graph.submit_seconds);
    if (profiling) /* no schedule ends before its busiest worker: the cycle's floor */
      cJSON_AddNumberToObject(root, "busiest_worker_executing_s", bench_median(busiest, rounds));
    cJSON_AddNumberToObject(root, "bulk_synchronous_s", bench_median(cycle[BULK], rounds));
    cJSON_AddNumberToObject(root, "speedup_median", bench_median(ratio, rounds));
    bench_print_json(root);
  }
  if (ret && strata_rank() == 0)
    fprintf(stderr, "bench_infer_weak: %s %s\n", strata_strerror(ret), strata_error_message());
  for (int k = 0; k < METHODS; k++) {
    free(cycle[k]);
    strata_infer_destroy(m[k]);
  }
  free(ratio);
  free(busiest);
  strata_model_destroy(model);
  weak_mesh_free(&wm);
  strata_finalize();
  return ret ? 1 : 0;
}
