/* AMR test problems: the cosmology-like log-normal density, and problems
 * (linear, Gaussian blobs, sampled cosmology) that fill a hierarchy. */
#include <fftw3.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <strata/amr.h>
#include <strata/error.h>

#include "amr_internal.h"
#include "internal/runtime.h"

static const double pi = 3.14159265358979323846;

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
  return sqrt(-2.0 * log(u)) * cos(2.0 * pi * v);
}

struct strata_cosmology_field {
  int64_t n;
  double mean, deviation; /* of g, which keeps the inverse FFT's scale */
  double g[];             /* n^3, x fastest */
};

static const strata_cosmology_params *or_defaults(const strata_cosmology_params *p,
                                                  strata_cosmology_params *defaults)
{
  if (!p)
    strata_cosmology_params_init(defaults);
  return p ? p : defaults;
}

static int valid_sigma(double sigma) { return sigma > 0 && isfinite(sigma); }

static int valid_spectrum(int64_t n, const strata_cosmology_params *p)
{
  return n >= 2 && n <= 1024 && p->cutoff >= 0 && isfinite(p->spectral_index);
}

/* White noise shaped by sqrt(P(k)) in Fourier space: the Gaussian field
 * before its log-normal transform. */
static int gaussian_field(const strata_cosmology_params *p, struct strata_cosmology_field *f)
{
  const int64_t n = f->n, vol = n * n * n, nk = n / 2 + 1;
  double *g = f->g;
  fftw_complex *modes = fftw_malloc((size_t)(n * n * nk) * sizeof *modes);
  if (!modes)
    return STRATA_ENOMEM;
  for (int64_t i = 0; i < vol; i++)
    g[i] = normal(p->seed, (uint64_t)i);
  /* sqrt(P(k)) = k^(index/2) exp(-(k cutoff)^2 / 2) depends on the integer
   * |k|^2 only: one value per |k|^2, not one pow and exp per mode. */
  const int64_t half = n / 2, most = 3 * half * half;
  double *amp = malloc((size_t)(most + 1) * sizeof *amp), kf = 2.0 * pi / (double)n;
  if (!amp) {
    fftw_free(modes);
    return STRATA_ENOMEM;
  }
  for (int64_t k2 = 0; k2 <= most; k2++) {
    double k = kf * sqrt((double)k2);
    amp[k2] = k > 0 ? pow(k, p->spectral_index / 2) * exp(-0.5 * pow(k * p->cutoff, 2)) : 0;
  }
  /* Estimate plans: deterministic, unlike measured ones. */
  fftw_plan fwd = fftw_plan_dft_r2c_3d((int)n, (int)n, (int)n, g, modes, FFTW_ESTIMATE);
  fftw_plan inv = fftw_plan_dft_c2r_3d((int)n, (int)n, (int)n, modes, g, FFTW_ESTIMATE);
  fftw_execute(fwd);
  for (int64_t z = 0; z < n; z++)
    for (int64_t y = 0; y < n; y++)
      for (int64_t x = 0; x < nk; x++) {
        int64_t kz = z <= half ? z : z - n, ky = y <= half ? y : y - n;
        double a = amp[kz * kz + ky * ky + x * x];
        fftw_complex *m = &modes[(z * n + y) * nk + x];
        (*m)[0] *= a;
        (*m)[1] *= a;
      }
  free(amp);
  fftw_execute(inv);
  fftw_destroy_plan(fwd);
  fftw_destroy_plan(inv);
  fftw_free(modes);
  double mean = 0, var = 0;
  for (int64_t i = 0; i < vol; i++)
    mean += g[i];
  mean /= (double)vol;
  for (int64_t i = 0; i < vol; i++)
    var += (g[i] - mean) * (g[i] - mean);
  f->mean = mean;
  f->deviation = sqrt(var / (double)vol);
  return 0;
}

int strata_cosmology_field_create(int64_t n, const strata_cosmology_params *p,
                                  strata_cosmology_field **out)
{
  strata__clear_error();
  strata_cosmology_params defaults;
  p = or_defaults(p, &defaults);
  if (out)
    *out = NULL;
  if (!out || !valid_spectrum(n, p))
    return STRATA_EINVAL;
  strata_cosmology_field *f = malloc(sizeof *f + (size_t)(n * n * n) * sizeof(double));
  if (!f)
    return STRATA_ENOMEM;
  f->n = n;
  int ret = gaussian_field(p, f);
  if (ret) {
    free(f);
    return ret;
  }
  *out = f;
  return 0;
}

void strata_cosmology_field_destroy(strata_cosmology_field *f) { free(f); }

/* rho = exp(delta - sigma^2 / 2) for delta the field scaled to a standard
 * deviation of sigma, then rescaled to a mean of exactly 1. */
static void lognormal(const strata_cosmology_field *f, double sigma, double *rho)
{
  const int64_t vol = f->n * f->n * f->n;
  double scale = sigma / f->deviation, total = 0;
  for (int64_t i = 0; i < vol; i++) {
    rho[i] = exp((f->g[i] - f->mean) * scale - 0.5 * sigma * sigma);
    total += rho[i];
  }
  for (int64_t i = 0; i < vol; i++)
    rho[i] *= (double)vol / total;
}

int strata_cosmology_density(int64_t n, const strata_cosmology_params *p, double *rho)
{
  strata__clear_error();
  strata_cosmology_params defaults;
  p = or_defaults(p, &defaults);
  if (!rho || !valid_sigma(p->sigma))
    return STRATA_EINVAL;
  strata_cosmology_field *f = NULL;
  int ret = strata_cosmology_field_create(n, p, &f);
  if (!ret)
    lognormal(f, p->sigma, rho);
  strata_cosmology_field_destroy(f);
  return ret;
}

/* ---- test problems on the hierarchy ---- */

static int make_problem(strata_amr_problem_fn fn, void *ctx, void *owned, strata_amr_problem **out)
{
  strata_amr_problem *p = malloc(sizeof *p);
  if (!p) {
    free(owned);
    return STRATA_ENOMEM;
  }
  *p = (strata_amr_problem){fn, ctx, owned, NULL};
  *out = p;
  return 0;
}

void strata_amr_problem_destroy(strata_amr_problem *problem)
{
  if (!problem)
    return;
  /* Fill tasks may still call it: freeing right after strata_amr_fill()
   * is the natural thing to write. */
  if (!strata__check_ready())
    starpu_task_wait_for_all();
  strata_amr_problem_destroy(problem->base);
  free(problem->owned);
  free(problem);
}

int strata_amr_problem_custom(strata_amr_problem_fn fn, void *ctx, strata_amr_problem **out)
{
  strata__clear_error();
  if (!fn || !out)
    return STRATA_EINVAL;
  return make_problem(fn, ctx, NULL, out);
}

int strata_amr_problem_eval(const strata_amr_problem *problem, int field, const double centre[3],
                            double h, int64_t n, double *out)
{
  strata__clear_error();
  if (!problem || !centre || !out || field < 0 || field >= STRATA_AMR_MAX_FIELDS || n < 0)
    return STRATA_EINVAL;
  problem->fn(problem->ctx, field, centre, h, n, out);
  return 0;
}

static void linear_fn(void *ctx, int field, const double centre[3], double h, int64_t n,
                      double *out)
{
  (void)field;
  const double *c = ctx;
  double base = c[0] + c[1] * centre[0] + c[2] * centre[1] + c[3] * centre[2];
  for (int64_t i = 0; i < n; i++)
    out[i] = base + c[1] * (double)i * h;
}

int strata_amr_problem_linear(const double c[4], strata_amr_problem **out)
{
  strata__clear_error();
  if (!c || !out)
    return STRATA_EINVAL;
  for (int i = 0; i < 4; i++)
    if (!isfinite(c[i]))
      return STRATA_EINVAL;
  double *copy = malloc(4 * sizeof *copy);
  if (!copy)
    return STRATA_ENOMEM;
  memcpy(copy, c, 4 * sizeof *copy);
  return make_problem(linear_fn, copy, copy, out);
}

struct blobs {
  int n;
  double *centre, *sigma, *amplitude;
};

/* Periodic distance along one axis of the unit domain. */
static double wrap(double d)
{
  d = fabs(d);
  return d > 0.5 ? 1 - d : d;
}

static void blobs_fn(void *ctx, int field, const double centre[3], double h, int64_t n, double *out)
{
  (void)field;
  const struct blobs *b = ctx;
  for (int64_t i = 0; i < n; i++) {
    double v = 1;
    for (int k = 0; k < b->n; k++) {
      double dx = wrap(centre[0] + (double)i * h - b->centre[3 * k]);
      double dy = wrap(centre[1] - b->centre[3 * k + 1]);
      double dz = wrap(centre[2] - b->centre[3 * k + 2]);
      double s = b->sigma[k];
      v += b->amplitude[k] * exp(-(dx * dx + dy * dy + dz * dz) / (2 * s * s));
    }
    out[i] = v;
  }
}

int strata_amr_problem_blobs(int n, const double *centres, const double *sigma,
                             const double *amplitude, strata_amr_problem **out)
{
  strata__clear_error();
  if (n < 0 || n > 1000000 || (n > 0 && (!centres || !sigma || !amplitude)) || !out)
    return STRATA_EINVAL;
  for (int k = 0; k < n; k++)
    if (!(sigma[k] > 0) || !isfinite(amplitude[k]) || !isfinite(centres[3 * k]) ||
        !isfinite(centres[3 * k + 1]) || !isfinite(centres[3 * k + 2]))
      return STRATA_EINVAL;
  /* One allocation: the header, then centres, widths and amplitudes. */
  struct blobs *b = malloc(sizeof *b + (size_t)n * 5 * sizeof(double));
  if (!b)
    return STRATA_ENOMEM;
  b->n = n;
  b->centre = (double *)(b + 1);
  b->sigma = b->centre + 3 * n;
  b->amplitude = b->sigma + n;
  memcpy(b->centre, centres, (size_t)n * 3 * sizeof(double));
  memcpy(b->sigma, sigma, (size_t)n * sizeof(double));
  memcpy(b->amplitude, amplitude, (size_t)n * sizeof(double));
  return make_problem(blobs_fn, b, b, out);
}

struct clumps {
  const strata_amr_problem *base;
  int n;
  double *centre, *sigma, *peak; /* peak: the density at the centre */
};

/* Periodic signed distance a - b along one axis of the unit domain, in [-1/2, 1/2). */
static double signed_wrap(double a, double b)
{
  double d = a - b;
  return d - floor(d + 0.5);
}

/* The mean of exp(-t^2 / (2 s^2)) over the cell [d - h/2, d + h/2]; far
 * from the centre (6 s beyond the cell) it is below 1e-8 and taken as 0. */
static double cell_mean_gauss(double d, double h, double s)
{
  if (fabs(d) > 6 * s + h)
    return 0;
  double r = 1 / (sqrt(2.0) * s);
  return s * sqrt(pi / 2) / h * (erf((d + h / 2) * r) - erf((d - h / 2) * r));
}

static void clumps_fn(void *ctx, int field, const double centre[3], double h, int64_t n,
                      double *out)
{
  const struct clumps *c = ctx;
  c->base->fn(c->base->ctx, field, centre, h, n, out);
  for (int k = 0; k < c->n; k++) {
    const double *ck = c->centre + 3 * (size_t)k;
    double s = c->sigma[k];
    double across = c->peak[k] * cell_mean_gauss(signed_wrap(centre[1], ck[1]), h, s) *
                    cell_mean_gauss(signed_wrap(centre[2], ck[2]), h, s);
    if (across == 0)
      continue;
    for (int64_t i = 0; i < n; i++)
      out[i] += across * cell_mean_gauss(signed_wrap(centre[0] + (double)i * h, ck[0]), h, s);
  }
}

int strata_amr_problem_add_clumps(strata_amr_problem *base, int n, const double *centres,
                                  const double *sigma, const double *mass, strata_amr_problem **out)
{
  strata__clear_error();
  if (out)
    *out = NULL;
  int valid = base && out && n >= 0 && n <= 1000000 && (n == 0 || (centres && sigma && mass));
  for (int k = 0; valid && k < n; k++)
    valid = sigma[k] > 0 && sigma[k] <= 0.5 && mass[k] >= 0 && isfinite(mass[k]) &&
            isfinite(centres[3 * k]) && isfinite(centres[3 * k + 1]) &&
            isfinite(centres[3 * k + 2]);
  if (!valid) {
    strata_amr_problem_destroy(base);
    return STRATA_EINVAL;
  }
  /* One allocation: the header, then centres, widths and peak densities. */
  struct clumps *c = malloc(sizeof *c + (size_t)n * 5 * sizeof(double));
  if (!c) {
    strata_amr_problem_destroy(base);
    return STRATA_ENOMEM;
  }
  *c = (struct clumps){.base = base, .n = n};
  c->centre = (double *)(c + 1);
  c->sigma = c->centre + 3 * (size_t)n;
  c->peak = c->sigma + n;
  for (int k = 0; k < n; k++) {
    for (int a = 0; a < 3; a++)
      c->centre[3 * k + a] = centres[3 * k + a] - floor(centres[3 * k + a]);
    c->sigma[k] = sigma[k];
    c->peak[k] = mass[k] / (pow(2 * pi, 1.5) * sigma[k] * sigma[k] * sigma[k]);
  }
  int ret = make_problem(clumps_fn, c, c, out);
  if (ret)
    strata_amr_problem_destroy(base);
  else
    (*out)->base = base;
  return ret;
}

struct sampled {
  int64_t n;
  double rho[]; /* n^3, x fastest */
};

/* Cell c of the periodic generation grid of n cells, and the next one. */
static void periodic_pair(int64_t c, int64_t n, int64_t pair[2])
{
  if (c < 0 || c >= n)
    c = ((c % n) + n) % n;
  pair[0] = c;
  pair[1] = c + 1 == n ? 0 : c + 1;
}

/* Trilinear interpolation of the periodic generation grid, whose cell
 * (i, j, k) has its centre at ((i, j, k) + 1/2) / n. The row's y and z
 * cells and weights are found once; each cell adds its eight corners in
 * the order x, then y, then z, each weight the product wx * wy * wz. */
static void cosmology_fn(void *ctx, int field, const double centre[3], double h, int64_t count,
                         double *out)
{
  (void)field;
  const struct sampled *s = ctx;
  const int64_t n = s->n;
  double w[3][2];
  int64_t c[3][2];
  const double *row[2][2]; /* [z][y] */
  for (int a = 1; a < 3; a++) {
    double p = centre[a] * (double)n - 0.5, f = floor(p);
    w[a][1] = p - f;
    w[a][0] = 1 - w[a][1];
    periodic_pair((int64_t)f, n, c[a]);
  }
  for (int bz = 0; bz < 2; bz++)
    for (int by = 0; by < 2; by++)
      row[bz][by] = s->rho + (c[2][bz] * n + c[1][by]) * n;
  for (int64_t i = 0; i < count; i++) {
    double p = (centre[0] + (double)i * h) * (double)n - 0.5, f = floor(p);
    w[0][1] = p - f;
    w[0][0] = 1 - w[0][1];
    periodic_pair((int64_t)f, n, c[0]);
    double v = 0;
    for (int bz = 0; bz < 2; bz++)
      for (int by = 0; by < 2; by++)
        for (int bx = 0; bx < 2; bx++)
          v += w[0][bx] * w[1][by] * w[2][bz] * row[bz][by][c[0][bx]];
    out[i] = v;
  }
}

int strata_amr_problem_cosmology_field(const strata_cosmology_field *f, double sigma,
                                       strata_amr_problem **out)
{
  strata__clear_error();
  if (!f || !out || !valid_sigma(sigma))
    return STRATA_EINVAL;
  const int64_t n = f->n;
  struct sampled *s = malloc(sizeof *s + (size_t)(n * n * n) * sizeof(double));
  if (!s)
    return STRATA_ENOMEM;
  s->n = n;
  lognormal(f, sigma, s->rho);
  return make_problem(cosmology_fn, s, s, out);
}

int strata_amr_problem_cosmology(int64_t grid, const strata_cosmology_params *p,
                                 strata_amr_problem **out)
{
  strata__clear_error();
  strata_cosmology_params defaults;
  p = or_defaults(p, &defaults);
  if (!out || !valid_sigma(p->sigma))
    return STRATA_EINVAL;
  strata_cosmology_field *f = NULL;
  int ret = strata_cosmology_field_create(grid, p, &f);
  if (!ret)
    ret = strata_amr_problem_cosmology_field(f, p->sigma, out);
  strata_cosmology_field_destroy(f);
  return ret;
}
