/* The cosmology-like density: bit-for-bit determinism, mean exactly 1,
 * standard deviation of the log density equal to sigma, and the measured
 * power-spectrum slope of the log density close to the requested index. */
#include <fftw3.h>
#include <math.h>
#include <string.h>

#include "check.h"

/* Mean power of the log density's modes with |k| (in units of the
 * fundamental) in [k - 0.5, k + 0.5). */
static double shell_power(const double *rho, int64_t n, double k)
{
  int64_t nk = n / 2 + 1;
  double *logd = fftw_malloc((size_t)(n * n * n) * sizeof *logd);
  fftw_complex *m = fftw_malloc((size_t)(n * n * nk) * sizeof *m);
  for (int64_t i = 0; i < n * n * n; i++)
    logd[i] = log(rho[i]);
  fftw_plan plan = fftw_plan_dft_r2c_3d((int)n, (int)n, (int)n, logd, m, FFTW_ESTIMATE);
  fftw_execute(plan);
  double sum = 0;
  int64_t count = 0;
  for (int64_t z = 0; z < n; z++)
    for (int64_t y = 0; y < n; y++)
      for (int64_t x = 0; x < nk; x++) {
        double kz = (double)(z <= n / 2 ? z : z - n), ky = (double)(y <= n / 2 ? y : y - n);
        double kk = sqrt(kz * kz + ky * ky + (double)(x * x));
        if (kk >= k - 0.5 && kk < k + 0.5) {
          const double *c = m[(z * n + y) * nk + x];
          sum += c[0] * c[0] + c[1] * c[1];
          count++;
        }
      }
  fftw_destroy_plan(plan);
  fftw_free(m);
  fftw_free(logd);
  return sum / (double)count;
}

/* Clumps on a zero background: their cell means hold each clump's mass on
 * grids of any resolution, coarse cells included (so mass refinement finds
 * them), across a periodic face too; a fine cell at the centre reads the
 * peak density; bad input is refused, and the background freed with it. */
static void check_clumps(void)
{
  const double zero[4] = {0}, centre[6] = {0.999, 0.25, 0.5, 0.3, 0.7, 0.001},
               width[2] = {1.0 / 512, 1.0 / 300}, mass[2] = {1e-4, 3e-5};
  strata_amr_problem *bg = NULL, *clumps = NULL;
  CHECK_EQ(strata_amr_problem_linear(zero, &bg), 0);
  CHECK_EQ(strata_amr_problem_add_clumps(bg, 2, centre, width, mass, &clumps), 0);
  for (int64_t n = 16; n <= 256; n *= 4) {
    double h = 1.0 / (double)n, sum = 0, *row = malloc((size_t)n * sizeof *row);
    for (int64_t z = 0; z < n; z++)
      for (int64_t y = 0; y < n; y++) {
        double at[3] = {h / 2, ((double)y + 0.5) * h, ((double)z + 0.5) * h};
        CHECK_EQ(strata_amr_problem_eval(clumps, 0, at, h, n, row), 0);
        for (int64_t x = 0; x < n; x++)
          sum += row[x] * h * h * h;
      }
    printf("clumps on %lld^3 cells: mass %.9g (planted %.9g)\n", (long long)n, sum,
           mass[0] + mass[1]);
    CHECK(fabs(sum - (mass[0] + mass[1])) <= 1e-6 * (mass[0] + mass[1]));
    free(row);
  }
  double peak = mass[0] / (pow(2 * 3.14159265358979323846, 1.5) * pow(width[0], 3)), v = 0;
  CHECK_EQ(strata_amr_problem_eval(clumps, 0, centre, width[0] / 100, 1, &v), 0);
  CHECK(fabs(v - peak) <= 1e-3 * peak);
  strata_amr_problem_destroy(clumps);

  const double bad_width[2] = {0, 0.6}, bad_mass[1] = {-1};
  for (int k = 0; k < 3; k++) {
    strata_amr_problem *out = NULL;
    CHECK_EQ(strata_amr_problem_linear(zero, &bg), 0);
    CHECK_EQ(strata_amr_problem_add_clumps(bg, 1, centre, k < 2 ? &bad_width[k] : width,
                                           k < 2 ? mass : bad_mass, &out),
             STRATA_EINVAL); /* bg is freed: the sanitizer leg finds a leak */
    CHECK(out == NULL);
  }
  CHECK_EQ(strata_amr_problem_add_clumps(NULL, 0, NULL, NULL, NULL, &clumps), STRATA_EINVAL);
}

int main(void)
{
  check_clumps();
  int64_t n = 32, vol = n * n * n;
  double *a = malloc((size_t)vol * sizeof *a), *b = malloc((size_t)vol * sizeof *b);
  strata_cosmology_params p;
  strata_cosmology_params_init(&p);
  p.seed = 42;
  CHECK_EQ(strata_cosmology_density(n, &p, a), 0);
  CHECK_EQ(strata_cosmology_density(n, &p, b), 0);
  CHECK(memcmp(a, b, (size_t)vol * sizeof *a) == 0);
  p.seed = 43;
  CHECK_EQ(strata_cosmology_density(n, &p, b), 0);
  CHECK(memcmp(a, b, (size_t)vol * sizeof *a) != 0);

  double mean = 0, lmean = 0, lvar = 0, peak = 0;
  for (int64_t i = 0; i < vol; i++) {
    mean += a[i];
    lmean += log(a[i]);
    peak = a[i] > peak ? a[i] : peak;
  }
  mean /= (double)vol;
  lmean /= (double)vol;
  for (int64_t i = 0; i < vol; i++)
    lvar += pow(log(a[i]) - lmean, 2);
  CHECK(fabs(mean - 1.0) < 1e-12);
  CHECK(fabs(sqrt(lvar / (double)vol) - 1.0) < 1e-9);
  CHECK(peak > 10); /* log-normal with sigma 1: rare high peaks */

  /* Slope: P(4) / P(2) = 2^index exp(-(k4^2 - k2^2) kf^2 cutoff^2) for the log
   * density (cutoff 0 here, index -2: ratio 1/4). Shells hold ~100 to ~400
   * modes: 25 % tolerance. */
  p.seed = 7;
  p.cutoff = 0;
  CHECK_EQ(strata_cosmology_density(n, &p, a), 0);
  double ratio = shell_power(a, n, 4) / shell_power(a, n, 2);
  fprintf(stderr, "P(4)/P(2) = %.3f (expected 0.25)\n", ratio);
  CHECK(fabs(ratio - 0.25) < 0.25 * 0.25);

  /* A field made once gives, at every sigma, the values of a problem made
   * from scratch, bit for bit (a job's cycles reuse one field). */
  strata_cosmology_field *field = NULL;
  p.seed = 5;
  CHECK_EQ(strata_cosmology_field_create(n, &p, &field), 0);
  const double centre[3] = {0.013, 0.37, 0.81}, sigmas[] = {0.35, 1.5, 2.25};
  for (int k = 0; k < 3; k++) {
    strata_amr_problem *once = NULL, *fresh = NULL;
    p.sigma = sigmas[k];
    CHECK_EQ(strata_amr_problem_cosmology_field(field, sigmas[k], &once), 0);
    CHECK_EQ(strata_amr_problem_cosmology(n, &p, &fresh), 0);
    CHECK_EQ(strata_amr_problem_eval(once, 0, centre, 1.0 / 97, vol, a), 0);
    CHECK_EQ(strata_amr_problem_eval(fresh, 0, centre, 1.0 / 97, vol, b), 0);
    CHECK(memcmp(a, b, (size_t)vol * sizeof *a) == 0);
    strata_amr_problem_destroy(once);
    strata_amr_problem_destroy(fresh);
  }
  strata_amr_problem *none = NULL;
  CHECK_EQ(strata_amr_problem_cosmology_field(field, 0, &none), STRATA_EINVAL);
  CHECK_EQ(strata_amr_problem_cosmology_field(field, INFINITY, &none), STRATA_EINVAL);
  CHECK_EQ(strata_amr_problem_cosmology_field(NULL, 1, &none), STRATA_EINVAL);
  CHECK(none == NULL);
  strata_cosmology_field_destroy(field);
  strata_cosmology_field_destroy(NULL);
  CHECK_EQ(strata_cosmology_field_create(1, NULL, &field), STRATA_EINVAL);
  CHECK_EQ(strata_cosmology_field_create(n, NULL, NULL), STRATA_EINVAL);

  p.sigma = 0;
  CHECK_EQ(strata_cosmology_density(n, &p, a), STRATA_EINVAL);
  p.sigma = INFINITY;
  CHECK_EQ(strata_cosmology_density(n, &p, a), STRATA_EINVAL);
  CHECK_EQ(strata_cosmology_density(1, NULL, a), STRATA_EINVAL);
  CHECK_EQ(strata_cosmology_density(n, NULL, NULL), STRATA_EINVAL);
  free(a);
  free(b);
  return check_status();
}
