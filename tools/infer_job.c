/* The inference main job (see infer_job.h). */
#include "infer_job.h"

#include <math.h>
#include <stdlib.h>

void infer_job_defaults(struct infer_job *job)
{
  strata_infer_params ip; /* the levels and the criterion: the library's defaults */
  strata_infer_params_init(&ip);
  *job = (struct infer_job){.root_blocks = 2,
                            .block_cells = 16,
                            .max_level = 5,
                            .level_base = ip.level_base,
                            .level_array = ip.level_array,
                            .level_infer = ip.level_infer,
                            .grid = 128,
                            .seed = 2026,
                            .sigma = 1.5,
                            .growth = 0.05,
                            .clumps = 32,
                            .threshold = ip.overdensity_threshold,
                            .placement = STRATA_INFER_PLACE_CURVE};
}

/* Cells per axis of the whole domain at `level`. */
static double cells_at(const struct infer_job *job, int level)
{
  return (double)job->root_blocks * job->block_cells * ldexp(1, level);
}

double infer_job_uniform(uint64_t seed, uint64_t n)
{
  uint64_t x = seed + (n + 1) * 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return (double)(x >> 11) / 9007199254740992.0;
}

/* Periodic distance between two points of the unit domain. */
static double periodic_distance(const double *a, const double *b)
{
  double d2 = 0;
  for (int k = 0; k < 3; k++) {
    double d = fabs(a[k] - b[k]);
    d = fmin(d, 1 - d);
    d2 += d * d;
  }
  return sqrt(d2);
}

/* The clumps: uniform centres at least 10 cells of level_infer apart,
 * widths and masses uniform in their ranges (infer_job.h). */
static int plant_clumps(const struct infer_job *job, struct infer_run *run)
{
  const int n = job->clumps;
  if (n == 0)
    return 0;
  double *c = malloc((size_t)n * 5 * sizeof *c);
  if (!c)
    return STRATA_ENOMEM;
  run->clump_centre = c;
  run->clump_width = c + 3 * n;
  run->clump_mass = run->clump_width + n;
  const double h = 1 / cells_at(job, job->level_infer), root = 1 / cells_at(job, 0);
  uint64_t draw = 0, seed = job->seed ^ 0x636c756d70ull; /* "clump" */
  for (int k = 0; k < n; k++) {
    double *ck = c + 3 * k;
    int apart = 0;
    for (int tries = 0; !apart && tries < 1000; tries++) {
      for (int a = 0; a < 3; a++)
        ck[a] = infer_job_uniform(seed, draw++);
      apart = 1;
      for (int j = 0; apart && j < k; j++)
        apart = periodic_distance(ck, c + 3 * j) >= 10 * h;
    }
    double w = infer_job_uniform(seed, draw++), m = infer_job_uniform(seed, draw++);
    run->clump_width[k] =
        h * (INFER_CLUMP_WIDTH_MIN + w * (INFER_CLUMP_WIDTH_MAX - INFER_CLUMP_WIDTH_MIN));
    run->clump_mass[k] = root * root * root *
                         (INFER_CLUMP_MASS_MIN + m * (INFER_CLUMP_MASS_MAX - INFER_CLUMP_MASS_MIN));
  }
  return 0;
}

int infer_job_problem(const struct infer_run *run, int cycle, strata_amr_problem **problem)
{
  const struct infer_job *job = run->job;
  int step = job->period > 0 ? cycle % job->period : cycle;
  strata_amr_problem *background = NULL;
  int ret = strata_amr_problem_cosmology_field(run->field, job->sigma * (1 + job->growth * step),
                                               &background);
  if (ret || !run->clump_centre) {
    *problem = background;
    return ret;
  }
  return strata_amr_problem_add_clumps(background, job->clumps, run->clump_centre, run->clump_width,
                                       run->clump_mass, problem);
}

int infer_job_score(const struct infer_run *run, strata_infer *inf, int64_t *bubbles,
                    int64_t *found)
{
  strata_bubble *b = NULL;
  int64_t n = 0;
  *bubbles = *found = 0;
  int ret = strata_infer_bubbles(inf, &b, NULL, &n);
  char *taken = ret ? NULL : calloc((size_t)run->job->clumps + 1, 1);
  if (!ret && !taken)
    ret = STRATA_ENOMEM;
  const double radius = INFER_CLUMP_FOUND_WITHIN / cells_at(run->job, run->job->level_infer);
  for (int64_t i = 0; !ret && i < n; i++) {
    int nearest = -1;
    double best = radius;
    for (int k = 0; k < run->job->clumps; k++) {
      double d = periodic_distance(b[i].center, run->clump_centre + 3 * k);
      if (!taken[k] && d <= best)
        best = d, nearest = k;
    }
    if (nearest >= 0)
      taken[nearest] = 1, ++*found;
  }
  *bubbles = n;
  free(taken);
  free(b);
  return ret;
}

static void amr_params(const struct infer_job *job, strata_amr_params *p)
{
  strata_amr_params_init(p);
  p->root_blocks = job->root_blocks;
  p->block_cells = job->block_cells;
  p->max_level = job->max_level;
  p->nfields = 2;
  p->field_names[INFER_DENSITY] = "density";
  p->field_names[INFER_STARS] = "star_forming";
}

/* The method's parameters, model and mode left to the caller. */
static void infer_params(const struct infer_job *job, strata_infer_params *ip)
{
  strata_infer_params_init(ip);
  ip->level_base = job->level_base;
  ip->level_array = job->level_array;
  ip->level_infer = job->level_infer;
  ip->overdensity_threshold = job->threshold;
  ip->marker_field = INFER_STARS;
  ip->placement = job->placement;
  ip->probability_output = job->probability_output;
  ip->value_outputs = job->value_outputs;
}

int infer_job_check(const struct infer_job *job)
{
  strata_amr_params p;
  strata_infer_params ip;
  amr_params(job, &p);
  infer_params(job, &ip);
  return strata_infer_check_geometry(&p, &ip);
}

int infer_job_setup(const struct infer_job *job, struct infer_run *run)
{
  *run = (struct infer_run){.job = job};
  strata_amr_params p;
  amr_params(job, &p);
  strata_amr_criterion_init(&run->refine);
  strata_amr_problem *problem = NULL;
  int ret = job->model_path ? strata_model_load(job->model_path, &run->model)
                            : strata_model_load_default(&run->model);
  /* Each rank reads the model itself; what follows is collective, so a
   * rank that could not read it stops every rank (errors are negative). */
  int worst = ret;
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_INT, MPI_MIN, strata_comm());
  ret = ret ? ret : worst;
  if (!ret && job->input)
    return strata_amr_read_hdf5(job->input, &run->amr);
  /* One Gaussian field for every cycle: only its sigma changes. Spread
   * over the ranks: each holds a slab and fetches what its leaves need. */
  strata_cosmology_params cp;
  strata_cosmology_params_init(&cp);
  cp.seed = job->seed;
  if (!ret)
    ret = strata_cosmology_field_create_distributed(job->grid, &cp, &run->field);
  if (!ret)
    ret = plant_clumps(job, run);
  if (!ret)
    ret = strata_amr_create(&p, &run->amr);
  if (!ret)
    ret = infer_job_problem(run, 0, &problem);
  if (!ret)
    ret = strata_amr_build(run->amr, problem, &run->refine);
  strata_amr_problem_destroy(problem);
  return ret;
}

int infer_job_evolve(struct infer_run *run, int cycle)
{
  strata_amr_problem *problem = NULL;
  int ret = infer_job_problem(run, cycle, &problem);
  /* New field, then new refinement with the exact field on the new leaves
   * (no prolongation or restriction that a second fill would overwrite). */
  if (!ret)
    ret = strata_amr_fill(run->amr, problem);
  if (!ret)
    ret = strata_amr_adapt_problem(run->amr, &run->refine, problem, NULL);
  strata_amr_problem_destroy(problem);
  return ret;
}

void infer_job_params(const struct infer_run *run, int bulk_synchronous, strata_infer_params *ip)
{
  infer_params(run->job, ip);
  ip->model = run->model;
  ip->bulk_synchronous = bulk_synchronous;
}

int infer_job_method(struct infer_run *run, int bulk_synchronous, strata_infer **inf)
{
  strata_infer_params ip;
  infer_job_params(run, bulk_synchronous, &ip);
  return strata_infer_create(run->amr, &ip, inf);
}

void infer_job_teardown(struct infer_run *run)
{
  strata_amr_destroy(run->amr);
  strata_model_destroy(run->model);
  strata_cosmology_field_destroy(run->field);
  free(run->clump_centre);
  *run = (struct infer_run){0};
}
