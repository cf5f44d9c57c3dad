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
 * With --octree the same leaves and fields are Strata's own hierarchy
 * (strata/amr.h, its structure on p4est) instead of the application's
 * mesh: the root grid must then be a cube (ranks * per_rank = m^3), each
 * rank flags only the leaves p4est gave it, and the JSON adds what a rank
 * holds of the octree (strata_amr_get_footprint()). p4est cuts the Morton
 * order into equal counts of leaves, so a rank's leaves need not be one
 * root block; a clump is scored by the rank that owns the leaf holding its
 * centre.
 *
 *   bench_infer_weak [--rounds R] [--quick] [--octree]
 *     (--quick: one root block per rank, else 4)
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

enum { BLOCK_CELLS = 8, MAX_LEVEL = 3, GHOSTS = 1, SIDE = BLOCK_CELLS + 2 * GHOSTS };
/* How near a particle must be to a clump's centre to find it (root-block units). */
static const double found_within = INFER_CLUMP_FOUND_WITHIN / (BLOCK_CELLS << MAX_LEVEL);
/* The blocks of the mesh's and the octree's parameters alike. */
#define SAME_BLOCKS(params)                                                                        \
  ((params).block_cells = BLOCK_CELLS, (params).ghost_depth = GHOSTS,                              \
   (params).max_level = MAX_LEVEL, (params).dtype = STRATA_FLOAT32)

struct weak_mesh {
  int64_t dims[3];         /* root blocks per axis */
  int64_t first, per_rank; /* this rank's root blocks, in x-fastest order */
  int64_t n, cap;          /* leaves */
  strata_amr_block *leaves;
  float **blocks; /* one field each, ghosts included */
  strata_mesh *mesh;
  /* --octree: the hierarchy instead of the mesh, its fields' problem, and
   * domain units (the unit cube) to root-block units */
  strata_amr *amr;
  strata_amr_problem *problem;
  double scale;
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

/* The max-norm distance from leaf b to point x (root-block units). */
static double leaf_distance(const strata_amr_block *b, const double x[3])
{
  const double h = ldexp(1, -b->level);
  double d = 0;
  for (int a = 0; a < 3; a++) {
    const double lo = (double)b->index[a] * h;
    d = fmax(d, x[a] < lo ? lo - x[a] : x[a] > lo + h ? x[a] - lo - h : 0);
  }
  return d;
}

/* Whether a clump lies within the block's edge of it (max-norm distance). */
static int near_clump(const struct weak_mesh *wm, const strata_amr_block *b)
{
  const double h = ldexp(1, -b->level);
  struct clump around[27];
  clumps_around(wm, b, around);
  for (int k = 0; k < 27; k++)
    if (leaf_distance(b, around[k].centre) < h)
      return 1;
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

/* 1 plus the cell means of the clumps around root block `root` over a box
 * of count[0] x count[1] x count[2] cells (at most SIDE each, x fastest)
 * of width dx, the first from lo (root-block units). */
static void clump_means(const struct weak_mesh *wm, const strata_amr_block *root,
                        const double lo[3], double dx, const int count[3], double *out)
{
  for (int i = 0; i < count[0] * count[1] * count[2]; i++)
    out[i] = 1;
  struct clump around[27];
  clumps_around(wm, root, around);
  for (int c = 0; c < 27; c++) {
    double share[3][SIDE];
    for (int a = 0; a < 3; a++)
      for (int k = 0; k < count[a]; k++) {
        const double from = lo[a] + k * dx;
        share[a][k] = cell_share(from, from + dx, around[c].centre[a], around[c].width);
      }
    for (int z = 0; z < count[2]; z++)
      for (int y = 0; y < count[1]; y++)
        for (int x = 0; x < count[0]; x++)
          out[(z * count[1] + y) * count[0] + x] +=
              around[c].mass * share[0][x] * share[1][y] * share[2][z];
  }
}

/* A leaf's field, ghosts included. */
static void fill_leaf(const struct weak_mesh *wm, const strata_amr_block *b, float *block)
{
  const double dx = ldexp(1, -b->level) / BLOCK_CELLS;
  strata_amr_block root = {.level = 0};
  double lo[3], box[SIDE * SIDE * SIDE];
  for (int a = 0; a < 3; a++) {
    root.index[a] = b->index[a] >> b->level;
    lo[a] = (double)(b->index[a] * BLOCK_CELLS - GHOSTS) * dx;
  }
  clump_means(wm, &root, lo, dx, (const int[3]){SIDE, SIDE, SIDE}, box);
  for (int i = 0; i < SIDE * SIDE * SIDE; i++)
    block[i] = (float)box[i];
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
  for (int64_t i = 0; i < wm->n && !ret; i++) {
    wm->blocks[i] = malloc(SIDE * SIDE * SIDE * sizeof(float));
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
  SAME_BLOCKS(mp);
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

/* The octree's fields (strata_amr_problem_fn): as fill_leaf, n cells
 * along x of one leaf, from the unit cube's coordinates. */
static void octree_cells(void *ctx, int field, const double centre[3], double h, int64_t n,
                         double *out)
{
  (void)field;
  const struct weak_mesh *wm = ctx;
  const double dx = h * wm->scale;
  strata_amr_block root = {.level = 0};
  double lo[3];
  for (int a = 0; a < 3; a++) {
    root.index[a] = (int64_t)floor(centre[a] * wm->scale);
    lo[a] = centre[a] * wm->scale - dx / 2;
  }
  for (int64_t from = 0; from < n; from += SIDE) {
    const int count[3] = {(int)(n - from < SIDE ? n - from : SIDE), 1, 1};
    clump_means(wm, &root, (const double[3]){lo[0] + (double)from * dx, lo[1], lo[2]}, dx, count,
                out + from);
  }
}

/* This rank's leaves of the hierarchy into wm->leaves. */
static int octree_leaves(struct weak_mesh *wm)
{
  int ret = strata_amr_local_leaves(wm->amr, NULL, 0, &wm->n);
  strata_amr_block *leaves = ret ? NULL : realloc(wm->leaves, (size_t)(wm->n + 1) * sizeof *leaves);
  if (!ret && !leaves)
    ret = STRATA_ENOMEM;
  if (!ret) {
    wm->leaves = leaves;
    ret = strata_amr_local_leaves(wm->amr, wm->leaves, wm->n, &wm->n);
  }
  return ret;
}

/* --octree: the root grid as a hierarchy, refined level by level where a
 * clump is near (each rank flags its own leaves), then filled. */
static int weak_octree_make(struct weak_mesh *wm, int64_t per_rank)
{
  wm->per_rank = per_rank;
  root_dims(per_rank * strata_size(), wm->dims);
  if (wm->dims[0] != wm->dims[2] || wm->dims[0] > 1 << 20)
    return STRATA_EINVAL; /* every rank alike */
  wm->scale = (double)wm->dims[0];
  strata_amr_params p;
  strata_amr_params_init(&p);
  p.root_blocks = (int)wm->dims[0];
  SAME_BLOCKS(p);
  int ret = strata_amr_create(&p, &wm->amr);
  if (!ret)
    ret = strata_amr_problem_custom(octree_cells, wm, &wm->problem);
  for (int level = 0; level < MAX_LEVEL && !ret; level++) {
    ret = octree_leaves(wm);
    int8_t *flags = ret ? NULL : malloc((size_t)wm->n + 1);
    for (int64_t i = 0; flags && i < wm->n; i++)
      flags[i] = (int8_t)(wm->leaves[i].level < MAX_LEVEL && near_clump(wm, &wm->leaves[i]));
    /* an allocation that failed here still joins the collective call */
    int adapted = strata_amr_adapt_local(wm->amr, flags, flags ? wm->n : 0, NULL);
    if (!ret)
      ret = flags ? adapted : STRATA_ENOMEM;
    free(flags);
  }
  if (!ret)
    ret = strata_amr_fill(wm->amr, wm->problem);
  if (!ret)
    ret = strata_amr_fill_ghosts(wm->amr);
  return ret ? ret : octree_leaves(wm);
}

static void weak_mesh_free(struct weak_mesh *wm)
{
  strata_amr_destroy(wm->amr);
  strata_amr_problem_destroy(wm->problem);
  strata_mesh_destroy(wm->mesh);
  for (int64_t i = 0; wm->blocks && i < wm->n; i++)
    free(wm->blocks[i]);
  free(wm->blocks);
  free(wm->leaves);
}

/* Whether a particle of leaf b lies within reach of clump c. */
static int leaf_finds(const struct weak_mesh *wm, strata_infer *inf, const strata_amr_block *b,
                      const struct clump *c, int *hit)
{
  strata_bubble *list = NULL;
  int64_t n = 0;
  int ret = strata_infer_leaf_particles(inf, b, &list, &n);
  for (int64_t k = 0; !ret && k < n && !*hit; k++) {
    double d2 = 0;
    for (int a = 0; a < 3; a++) {
      const double d = list[k].center[a] * wm->scale - c->centre[a];
      d2 += d * d;
    }
    *hit = d2 <= found_within * found_within;
  }
  free(list);
  return ret;
}

/* Whether leaf b holds point x (root-block units). */
static int leaf_holds(const strata_amr_block *b, const double x[3])
{
  const double h = ldexp(1, -b->level);
  for (int a = 0; a < 3; a++)
    if (x[a] < (double)b->index[a] * h || x[a] >= (double)(b->index[a] + 1) * h)
      return 0;
  return 1;
}

/* The clumps that a bubble of the last cycle found, scored on this rank
 * from the particles of its own leaves (*scored: how many it scored). On
 * the mesh: the clumps of its root blocks, from their leaves. */
static int mesh_clumps_found(const struct weak_mesh *wm, strata_infer *inf, int64_t *found,
                             int64_t *scored)
{
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
      int ret = leaf_finds(wm, inf, &wm->leaves[i], &c, &hit);
      if (ret)
        return ret;
    }
    *found += hit;
    ++*scored;
  }
  return 0;
}

/* In the octree: the clumps whose centre lies in one of its leaves, from
 * every own leaf within reach (a bubble may lie across a leaf boundary). */
static int octree_clumps_found(const struct weak_mesh *wm, strata_infer *inf, int64_t *found,
                               int64_t *scored)
{
  for (int64_t i = 0; i < wm->n; i++) {
    int64_t root[3];
    root_of(&wm->leaves[i], root);
    const struct clump c = clump_of(wm, root);
    if (!leaf_holds(&wm->leaves[i], c.centre))
      continue;
    int hit = 0;
    for (int64_t j = 0; j < wm->n && !hit; j++) {
      int ret = leaf_distance(&wm->leaves[j], c.centre) <= found_within
                    ? leaf_finds(wm, inf, &wm->leaves[j], &c, &hit)
                    : 0;
      if (ret)
        return ret;
    }
    *found += hit;
    ++*scored;
  }
  return 0;
}

enum { GRAPH, BULK, METHODS };

int main(int argc, char **argv)
{
  int rounds = 5, quick = 0, octree = 0;
  for (int i = 1; i < argc; i++) /* --octree, taken out before the common options */
    if (strcmp(argv[i], "--octree") == 0) {
      memmove(&argv[i], &argv[i + 1], (size_t)(argc - i) * sizeof *argv); /* NULL too */
      argc--;
      octree = 1;
      break;
    }
  if (bench_options(argc, argv, "bench_infer_weak [--octree]", &rounds, &quick))
    return 2;
  if (strata_init(&argc, &argv, NULL))
    return 1;
  /* STARPU_PROFILING=1 adds the busiest worker's time; off by default, as
   * it lengthens the simulated 1-rank cycle by up to a fifth. */
  const int profiling = starpu_profiling_status_get() == STARPU_PROFILING_ENABLE;
  struct weak_mesh wm = {.scale = 1};
  strata_model *model = NULL;
  strata_infer *m[METHODS] = {NULL};
  strata_infer_stats st = {0}, graph = {0};
  const double setup_start = bench_now();
  int ret = octree ? weak_octree_make(&wm, quick ? 1 : 4) : weak_mesh_make(&wm, quick ? 1 : 4);
  if (ret == STRATA_EINVAL && octree && !wm.amr && strata_rank() == 0)
    fprintf(stderr, "bench_infer_weak --octree: the root grid (%lld x %lld x %lld) is not a cube\n",
            (long long)wm.dims[0], (long long)wm.dims[1], (long long)wm.dims[2]);
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
    ret = octree ? strata_infer_create(wm.amr, &ip, &m[k])
                 : strata_infer_create_on_mesh(wm.mesh, &ip, &m[k]);
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
  int64_t found = 0, scored = 0;
  if (!ret)
    ret = (octree ? octree_clumps_found : mesh_clumps_found)(&wm, m[GRAPH], &found, &scored);
  strata_amr_footprint fp = {0};
  if (!ret && octree)
    ret = strata_amr_get_footprint(wm.amr, &fp);
  /* Sums over the ranks, then the most on a rank. */
  int64_t sums[4] = {wm.n, found, wm.per_rank, scored};
  int64_t most[9] = {wm.n,
                     wm.n * SIDE * SIDE * SIDE * (int64_t)sizeof(float),
                     graph.handles_local,
                     graph.elements_known,
                     graph.join_bytes_local,
                     fp.ghost_leaves,
                     fp.nodes,
                     fp.bytes,
                     fp.connectivity_bytes};
  MPI_Allreduce(MPI_IN_PLACE, sums, 4, MPI_INT64_T, MPI_SUM, strata_comm());
  MPI_Allreduce(MPI_IN_PLACE, most, 9, MPI_INT64_T, MPI_MAX, strata_comm());
  if (!ret && strata_rank() == 0) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "benchmark", "infer_weak");
    cJSON_AddStringToObject(root, "leaves_held_by", octree ? "octree" : "mesh");
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
    cJSON_AddBoolToObject(root, "all_clumps_found", sums[1] == sums[2] && sums[3] == sums[2]);
    if (octree) {
      cJSON_AddNumberToObject(root, "octree_ghost_leaves_max_per_rank", (double)most[5]);
      cJSON_AddNumberToObject(root, "octree_nodes_max_per_rank", (double)most[6]);
      cJSON_AddNumberToObject(root, "octree_bytes_max_per_rank", (double)most[7]);
      cJSON_AddNumberToObject(root, "octree_connectivity_bytes", (double)most[8]);
    }
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
