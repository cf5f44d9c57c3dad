/* The inference main job (see infer_job.h). */
#include "infer_job.h"

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
                            .threshold = ip.overdensity_threshold,
                            .placement = STRATA_INFER_PLACE_CURVE};
}

int infer_job_problem(const struct infer_run *run, int cycle, strata_amr_problem **problem)
{
  int step = run->job->period > 0 ? cycle % run->job->period : cycle;
  return strata_amr_problem_cosmology_field(
      run->field, run->job->sigma * (1 + run->job->growth * step), problem);
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
  if (!ret && job->input)
    return strata_amr_read_hdf5(job->input, &run->amr);
  /* One Gaussian field for every cycle: only its sigma changes. */
  strata_cosmology_params cp;
  strata_cosmology_params_init(&cp);
  cp.seed = job->seed;
  if (!ret)
    ret = strata_cosmology_field_create(job->grid, &cp, &run->field);
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
  *run = (struct infer_run){0};
}
