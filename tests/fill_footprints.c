/* Fill tasks of problems that cost unlike amounts per cell: zeros, a
 * linear field, one and two Gaussian blobs, one clump over the linear
 * field, two user functions, the second also with another context; each
 * problem twice. Run with STARPU_CALIBRATE=1, it leaves their models in
 * STARPU_HOME for count_footprints.sh, which checks that each problem has
 * a footprint of its own, but for the second function's two contexts,
 * which share one, and that a second fill of a problem adds none. */
#include <math.h>

#include <strata/amr.h>

#include "check.h"

static void constant(void *ctx, int field, const double centre[3], double h, int64_t n, double *out)
{
  (void)ctx, (void)field, (void)centre, (void)h;
  for (int64_t i = 0; i < n; i++)
    out[i] = 2.0;
}

/* Costlier per cell than a constant; `ctx` scales it. */
static void waves(void *ctx, int field, const double centre[3], double h, int64_t n, double *out)
{
  const double scale = *(const double *)ctx;
  for (int64_t i = 0; i < n; i++)
    out[i] = scale * sin(centre[0] + (double)i * h) * cos(centre[1] + field) * exp(-centre[2]);
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  strata_amr_params p;
  strata_amr_params_init(&p);
  p.block_cells = 8;
  p.max_level = 1;
  strata_amr *amr = NULL;
  CHECK_EQ(strata_amr_create(&p, &amr), 0); /* the root leaves are zeros */
  const double coefficients[4] = {1, 2, 3, 4}, centres[6] = {0.25, 0.25, 0.25, 0.75, 0.75, 0.75};
  const double sigma[2] = {0.1, 0.1}, amplitude[2] = {1, 2};
  const double scales[2] = {1, 2};
  strata_amr_problem *problems[7] = {NULL}, *base = NULL;
  CHECK_EQ(strata_amr_problem_linear(coefficients, &problems[0]), 0);
  CHECK_EQ(strata_amr_problem_blobs(1, centres, sigma, amplitude, &problems[1]), 0);
  CHECK_EQ(strata_amr_problem_blobs(2, centres, sigma, amplitude, &problems[2]), 0);
  CHECK_EQ(strata_amr_problem_linear(coefficients, &base), 0);
  CHECK_EQ(strata_amr_problem_add_clumps(base, 1, centres, sigma, amplitude, &problems[3]), 0);
  CHECK_EQ(strata_amr_problem_custom(constant, NULL, &problems[4]), 0);
  CHECK_EQ(strata_amr_problem_custom(waves, (void *)&scales[0], &problems[5]), 0);
  CHECK_EQ(strata_amr_problem_custom(waves, (void *)&scales[1], &problems[6]), 0);
  for (int round = 0; round < 2; round++)
    for (int k = 0; k < 7; k++)
      CHECK_EQ(strata_amr_fill(amr, problems[k]), 0);
  for (int k = 0; k < 7; k++)
    strata_amr_problem_destroy(problems[k]);
  CHECK_EQ(strata_amr_destroy(amr), 0);
  strata_finalize();
  return check_status();
}
