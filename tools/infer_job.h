/* The inference main job, shared by `strata infer` and bench_infer: the
 * cosmology test problem on an AMR hierarchy, evolved between cycles by
 * letting its structure grow (the log-density's standard deviation rises
 * each cycle, as collapse sharpens peaks), re-adapted, then one cycle of
 * the inference method. */
#ifndef STRATA_TOOLS_INFER_JOB_H
#define STRATA_TOOLS_INFER_JOB_H

#include <strata/strata.h>

struct infer_job {
  int root_blocks, block_cells, max_level;
  int level_base, level_array, level_infer;
  int64_t grid; /* cosmology generation grid per axis */
  uint64_t seed;
  double sigma;           /* log-density standard deviation at cycle 0 */
  double growth;          /* relative growth of sigma per cycle */
  int period;             /* > 0: the evolution restarts every `period` cycles */
  int clumps;             /* collapsed clumps planted in the field (fixed over cycles) */
  double threshold;       /* criterion: density > threshold * block mean */
  const char *model_path; /* NULL: the default model */
  const char *probability_output, *value_outputs; /* strata_infer_params' (NULL: defaults) */
  const char *input; /* NULL: the cosmology problem; else a saved hierarchy */
  strata_infer_placement placement;
};

/* Enzo-E's inference test: 32^3 root cells as 2^3 blocks of 16^3, levels
 * to 5, arrays on level 4 at the resolution of level 5 (32^3 cells). */
void infer_job_defaults(struct infer_job *job);

struct infer_run {
  strata_amr *amr;
  strata_model *model;
  strata_amr_criterion refine;
  strata_cosmology_field *field; /* the job's Gaussian field (NULL with an input file) */
  /* The job->clumps planted clumps as strata_amr_problem_add_clumps takes
   * them, in one allocation from clump_centre (NULL: none). */
  double *clump_centre, *clump_width, *clump_mass;
  const struct infer_job *job;
};

/* The widths of the planted clumps, in cells of level_infer, and their
 * masses, in root cells' mean masses: compact enough to be bubbles of a
 * few dozen cells in an array, massive enough that mass refinement takes
 * them to level_infer and that they fire the method's criterion. */
#define INFER_CLUMP_WIDTH_MIN 1.2
#define INFER_CLUMP_WIDTH_MAX 2.0
#define INFER_CLUMP_MASS_MIN  8.0
#define INFER_CLUMP_MASS_MAX  24.0
/* A bubble finds a clump whose centre lies within this many cells of
 * level_infer of its own. */
#define INFER_CLUMP_FOUND_WITHIN 2.5

/* Uniform in [0, 1) from the n-th draw of a splitmix64 stream: the same
 * clumps on every rank. */
double infer_job_uniform(uint64_t seed, uint64_t n);

/* Field indices of the hierarchy. */
enum { INFER_DENSITY, INFER_STARS };

/* The geometric conditions of the method on the job's hierarchy, before
 * anything is built (strata_infer_check_geometry): 0 or STRATA_EINVAL. */
int infer_job_check(const struct infer_job *job);

/* Build the hierarchy for cycle 0, or load job->input (collective). */
int infer_job_setup(const struct infer_job *job, struct infer_run *run);

/* Evolve the field to `cycle` (> 0) and adapt the hierarchy (collective;
 * not for a loaded hierarchy). */
int infer_job_evolve(struct infer_run *run, int cycle);

/* The cosmology field of `cycle` with the planted clumps (destroy it after use). */
int infer_job_problem(const struct infer_run *run, int cycle, strata_amr_problem **problem);

/* The job's method parameters, with its model. */
void infer_job_params(const struct infer_run *run, int bulk_synchronous, strata_infer_params *ip);

/* An inference method on the run's hierarchy (bulk-synchronous or not). */
int infer_job_method(struct infer_run *run, int bulk_synchronous, strata_infer **inf);

void infer_job_teardown(struct infer_run *run);

/* Planted clumps found by the cycle's bubbles: a bubble finds the nearest
 * unfound clump whose centre lies within 2.5 cells of level_infer of its
 * own (periodic distance); `bubbles` counts the bubbles, `found` the
 * clumps found. Not collective: every rank holds the bubbles. */
int infer_job_score(const struct infer_run *run, strata_infer *inf, int64_t *bubbles,
                    int64_t *found);

#endif
