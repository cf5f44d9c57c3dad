/* AMR test problems: the cosmology-like log-normal density. */
#include <fftw3.h>
#include <math.h>
#include <stdlib.h>

#include <strata/amr.h>
#include <strata/error.h>

void strata_cosmology_params_init(strata_cosmology_params *p)
{
  if (p)
    *p = (strata_cosmology_params){.seed = 1, .spectral_index = -2.0, .sigma = 1.0, .cutoff = 1.0};
}

/* splitmix64 of (seed, cell): counter-based, so any subset of cells can be
 * generated independently. */
static uint64_t mix(uint64_t x)
{
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* Standard normal deviate of cell i (Box-Muller on two uniform draws). */
static double normal(uint64_t seed, uint64_t i)
{
  uint64_t a = mix(seed ^ mix(2 * i)), b = mix(seed ^ mix(2 * i + 1));
  double u = ((double)(a >> 11) + 0.5) / 9007199254740992.0;
  double v = (double)(b >> 11) / 9007199254740992.0;
  return sqrt(-2.0 * log(u)) * cos(2.0 * 3.14159265358979323846 * v);
}

int strata_cosmology_density(int64_t n, const strata_cosmology_params *p, double *rho)
{
  strata_cosmology_params defaults;
  if (!p) {
    strata_cosmology_params_init(&defaults);
    p = &defaults;
  }
  if (n < 2 || n > 1024 || !rho || !(p->sigma > 0) || !(p->cutoff >= 0) ||
      !isfinite(p->spectral_index))
    return STRATA_EINVAL;
  int64_t vol = n * n * n, nk = n / 2 + 1;
  fftw_complex *modes = fftw_malloc((size_t)(n * n * nk) * sizeof *modes);
  if (!modes)
    return STRATA_ENOMEM;
  for (int64_t i = 0; i < vol; i++)
    rho[i] = normal(p->seed, (uint64_t)i);
  /* Estimate plans: deterministic, unlike measured ones. */
  fftw_plan fwd = fftw_plan_dft_r2c_3d((int)n, (int)n, (int)n, rho, modes, FFTW_ESTIMATE);
  fftw_plan inv = fftw_plan_dft_c2r_3d((int)n, (int)n, (int)n, modes, rho, FFTW_ESTIMATE);
  fftw_execute(fwd);
  /* Shape white noise by sqrt(P(k)) = k^(index/2) exp(-(k cutoff)^2 / 2). */
  double kf = 2.0 * 3.14159265358979323846 / (double)n;
  for (int64_t z = 0; z < n; z++)
    for (int64_t y = 0; y < n; y++)
      for (int64_t x = 0; x < nk; x++) {
        double kz = (double)(z <= n / 2 ? z : z - n), ky = (double)(y <= n / 2 ? y : y - n);
        double k = kf * sqrt(kz * kz + ky * ky + (double)(x * x));
        double amp = k > 0 ? pow(k, p->spectral_index / 2) * exp(-0.5 * pow(k * p->cutoff, 2)) : 0;
        fftw_complex *m = &modes[(z * n + y) * nk + x];
        (*m)[0] *= amp;
        (*m)[1] *= amp;
      }
  fftw_execute(inv);
  fftw_destroy_plan(fwd);
  fftw_destroy_plan(inv);
  fftw_free(modes);
  double mean = 0, var = 0;
  for (int64_t i = 0; i < vol; i++)
    mean += rho[i];
  mean /= (double)vol;
  for (int64_t i = 0; i < vol; i++)
    var += (rho[i] - mean) * (rho[i] - mean);
  double scale = p->sigma / sqrt(var / (double)vol), total = 0;
  for (int64_t i = 0; i < vol; i++) {
    rho[i] = exp((rho[i] - mean) * scale - 0.5 * p->sigma * p->sigma);
    total += rho[i];
  }
  for (int64_t i = 0; i < vol; i++)
    rho[i] *= (double)vol / total;
  return 0;
}
