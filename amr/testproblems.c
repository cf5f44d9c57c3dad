/* AMR test problems: the cosmology-like log-normal density, and problems
 * (linear, Gaussian blobs, sampled cosmology) that fill a hierarchy. */
#ifndef _GNU_SOURCE /* SMPI's compiler wrapper may define it */
#define _GNU_SOURCE /* dladdr */
#endif
#include <dlfcn.h>
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
  int64_t z0, z1;         /* the planes held here: all of them, or this rank's slab */
  int64_t brick;          /* distributed: cells per brick edge; slabs are whole layers of bricks */
  int distributed;        /* made by strata_cosmology_field_create_distributed() */
  double mean, deviation; /* of g over the whole grid, which keeps the inverse FFT's scale */
  double g[];             /* (z1 - z0) n^2, x fastest */
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

/* ---- the field in slabs of planes ----
 * Whole or distributed, the field is made the same way, plane by plane
 * and line by line, so that its values do not depend on the number of
 * ranks: a 2-D FFT of each z plane, a 1-D FFT along z of each (ky, kx)
 * line, and back; sums go plane by plane, then over the planes in order.
 * A distributed field keeps whole layers of bricks on each rank and moves
 * rows between ranks with the exchange layer's records. */

/* [*lo, *hi) of `count` items split evenly over `size` ranks, rank r's. */
static void share_of(int64_t count, int size, int r, int64_t *lo, int64_t *hi)
{
  *lo = count * r / size;
  *hi = count * (r + 1) / size;
}

/* The rank whose share of `count` items holds item i. */
static int owner_of(int64_t count, int size, int64_t i)
{
  int r = (int)(i * size / count);
  while (r > 0 && count * r / size > i)
    r--;
  while (r + 1 < size && count * (r + 1) / size <= i)
    r++;
  return r;
}

/* Layers of bricks along z (the last one thinner where brick does not
 * divide n); a whole field is one brick. */
static int64_t layers(const struct strata_cosmology_field *f)
{
  return (f->n + f->brick - 1) / f->brick;
}

/* Rank r's planes [*z0, *z1) of a grid of n planes in layers of `brick`
 * over `size` ranks: whole layers, the last one cut at n. */
static void slab_of(int64_t n, int64_t brick, int size, int r, int64_t *z0, int64_t *z1)
{
  share_of((n + brick - 1) / brick, size, r, z0, z1);
  *z0 = *z0 * brick < n ? *z0 * brick : n;
  *z1 = *z1 * brick < n ? *z1 * brick : n;
}

/* Records to their ranks (MPI_COMM_NULL: to this one, as they are). */
static int move_records(MPI_Comm comm, int64_t *records, const int *dest, int64_t n, int width,
                        int64_t **recv, int64_t *nrecv)
{
  if (comm == MPI_COMM_NULL) {
    *recv = records;
    *nrecv = n;
    return 0;
  }
  int ret = strata__exchange_records(comm, 0, records, dest, n, width, recv, nrecv, NULL);
  free(records);
  return ret;
}

/* Every rank's sums[z] of its planes, on every rank (a whole field: as
 * they are). Collective over comm. */
static int gather_plane_sums(const struct strata_cosmology_field *f, MPI_Comm comm, double *sums)
{
  if (comm == MPI_COMM_NULL)
    return 0;
  const int64_t n = f->n;
  int size;
  MPI_Comm_size(comm, &size);
  int *counts = malloc((size_t)size * sizeof *counts),
      *displs = malloc((size_t)size * sizeof *displs);
  int ret = strata__agree_on(comm, counts && displs ? 0 : STRATA_ENOMEM, NULL, 0);
  for (int r = 0; !ret && r < size; r++) {
    int64_t lo, hi;
    slab_of(n, f->brick, size, r, &lo, &hi);
    displs[r] = (int)lo;
    counts[r] = (int)(hi - lo);
  }
  if (!ret && MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DOUBLE, sums, counts, displs, MPI_DOUBLE, comm) !=
                  MPI_SUCCESS)
    ret = STRATA_EMPI;
  free(counts);
  free(displs);
  return ret;
}

/* Each plane's sum of g, or of its squared deviation from the mean, in
 * sums[z], for every rank's planes. */
static int plane_sums(const struct strata_cosmology_field *f, MPI_Comm comm, int squared,
                      double *sums)
{
  const int64_t area = f->n * f->n;
  for (int64_t z = f->z0; z < f->z1; z++) {
    const double *g = f->g + (z - f->z0) * area;
    double s = 0;
    for (int64_t i = 0; i < area; i++)
      s += squared ? (g[i] - f->mean) * (g[i] - f->mean) : g[i];
    sums[z] = s;
  }
  return gather_plane_sums(f, comm, sums);
}

static double sum_in_order(const double *sums, int64_t n)
{
  double total = 0;
  for (int64_t z = 0; z < n; z++)
    total += sums[z];
  return total;
}

/* sqrt(P(k)) = k^(index/2) exp(-(k cutoff)^2 / 2) depends on the integer
 * |k|^2 only: one value per |k|^2, not one pow and exp per mode. */
static double *spectrum_amplitudes(int64_t n, const strata_cosmology_params *p)
{
  const int64_t half = n / 2, most = 3 * half * half;
  double *amp = malloc((size_t)(most + 1) * sizeof *amp), kf = 2.0 * pi / (double)n;
  for (int64_t k2 = 0; amp && k2 <= most; k2++) {
    double k = kf * sqrt((double)k2);
    amp[k2] = k > 0 ? pow(k, p->spectral_index / 2) * exp(-0.5 * pow(k * p->cutoff, 2)) : 0;
  }
  return amp;
}

/* Signed wave number of index i of n. */
static int64_t wave(int64_t i, int64_t n) { return i <= n / 2 ? i : i - n; }

/* The z lines of rows [y0, y1) (line[(y - y0) nk + kx][z]), each taken
 * along z, shaped by the spectrum, and back. */
static int shape_lines(fftw_complex *line, int64_t y0, int64_t y1, int64_t n, const double *amp)
{
  const int64_t nk = n / 2 + 1;
  fftw_complex *scratch = fftw_malloc((size_t)n * sizeof *scratch);
  if (!scratch)
    return STRATA_ENOMEM;
  /* Estimate plans: deterministic, unlike measured ones. */
  fftw_plan fwd = fftw_plan_dft_1d((int)n, scratch, scratch, FFTW_FORWARD, FFTW_ESTIMATE);
  fftw_plan inv = fftw_plan_dft_1d((int)n, scratch, scratch, FFTW_BACKWARD, FFTW_ESTIMATE);
  for (int64_t y = y0; y < y1; y++)
    for (int64_t x = 0; x < nk; x++) {
      fftw_complex *l = line + ((y - y0) * nk + x) * n;
      memcpy(scratch, l, (size_t)n * sizeof *scratch);
      fftw_execute(fwd);
      const int64_t ky = wave(y, n);
      for (int64_t z = 0; z < n; z++) {
        const int64_t kz = wave(z, n);
        double a = amp[kz * kz + ky * ky + x * x];
        scratch[z][0] *= a;
        scratch[z][1] *= a;
      }
      fftw_execute(inv);
      memcpy(l, scratch, (size_t)n * sizeof *scratch);
    }
  fftw_destroy_plan(fwd);
  fftw_destroy_plan(inv);
  fftw_free(scratch);
  return 0;
}

enum { ROW_HEAD = 2 }; /* a row's record: z, ky, then nk complex values */

/* The 2-D transforms of the local planes, as records of rows to the ranks
 * that take them along z (rows shared out evenly). */
static int planes_to_rows(struct strata_cosmology_field *f, MPI_Comm comm, int size,
                          fftw_plan plane_fwd, double *rs, fftw_complex *cs, int64_t **rec,
                          int **dest)
{
  const int64_t n = f->n, nk = n / 2 + 1, width = ROW_HEAD + 2 * nk, nrows = (f->z1 - f->z0) * n;
  *rec = malloc((size_t)(nrows * width + 1) * sizeof **rec);
  *dest = malloc((size_t)(nrows + 1) * sizeof **dest);
  int local = *rec && *dest ? 0 : STRATA_ENOMEM;
  int ret = strata__agree_on(comm, local, NULL, 0);
  for (int64_t z = f->z0; !ret && z < f->z1; z++) {
    memcpy(rs, f->g + (z - f->z0) * n * n, (size_t)(n * n) * sizeof *rs);
    fftw_execute(plane_fwd);
    for (int64_t y = 0; y < n; y++) {
      int64_t k = (z - f->z0) * n + y, *r = *rec + k * width;
      r[0] = z, r[1] = y;
      memcpy(r + ROW_HEAD, cs + y * nk, (size_t)nk * sizeof *cs);
      (*dest)[k] = owner_of(n, size, y);
    }
  }
  return ret;
}

/* Planes [z0, z1) of the Gaussian field: white noise shaped by sqrt(P(k))
 * in Fourier space; comm MPI_COMM_NULL: every plane here. */
static int gaussian_field(const strata_cosmology_params *p, MPI_Comm comm,
                          struct strata_cosmology_field *f)
{
  const int64_t n = f->n, nk = n / 2 + 1, width = ROW_HEAD + 2 * nk;
  int rank = 0, size = 1;
  if (comm != MPI_COMM_NULL) {
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
  }
  for (int64_t z = f->z0; z < f->z1; z++)
    for (int64_t i = 0; i < n * n; i++)
      f->g[(z - f->z0) * n * n + i] = normal(p->seed, (uint64_t)(z * n * n + i));
  int64_t y0, y1;
  share_of(n, size, rank, &y0, &y1);
  /* One rank moves its records to itself without messages. */
  MPI_Comm moves = size > 1 ? comm : MPI_COMM_NULL;
  double *amp = spectrum_amplitudes(n, p), *rs = fftw_malloc((size_t)(n * n) * sizeof *rs);
  fftw_complex *cs = fftw_malloc((size_t)(n * nk) * sizeof *cs);
  fftw_complex *line = malloc((size_t)((y1 - y0) * nk * n + 1) * sizeof *line);
  int local = amp && rs && cs && line ? 0 : STRATA_ENOMEM;
  int ret = strata__agree_on(comm, local, NULL, 0);
  fftw_plan plane_fwd = NULL, plane_inv = NULL;
  if (!ret) {
    plane_fwd = fftw_plan_dft_r2c_2d((int)n, (int)n, rs, cs, FFTW_ESTIMATE);
    plane_inv = fftw_plan_dft_c2r_2d((int)n, (int)n, cs, rs, FFTW_ESTIMATE);
  }
  int64_t *rec = NULL, *got = NULL, ngot = 0;
  int *dest = NULL;
  /* Planes to rows, each row's z line transformed and shaped, back to planes. */
  if (!ret)
    ret = planes_to_rows(f, comm, size, plane_fwd, rs, cs, &rec, &dest);
  if (!ret)
    ret = move_records(moves, rec, dest, (f->z1 - f->z0) * n, (int)width, &got, &ngot);
  else
    free(rec);
  rec = NULL;
  for (int64_t k = 0; !ret && k < ngot; k++) {
    const int64_t *r = got + k * width, z = r[0], y = r[1];
    for (int64_t x = 0; x < nk; x++)
      memcpy(line + ((y - y0) * nk + x) * n + z, (const double *)(r + ROW_HEAD) + 2 * x,
             sizeof *line);
  }
  if (!ret) {
    local = shape_lines(line, y0, y1, n, amp);
    ret = strata__agree_on(comm, local, NULL, 0);
  }
  /* The rows back to the ranks of their planes, in the same records. */
  free(dest);
  dest = ret ? NULL : malloc((size_t)(ngot + 1) * sizeof *dest);
  if (!ret) {
    local = dest ? 0 : STRATA_ENOMEM;
    ret = strata__agree_on(comm, local, NULL, 0);
  }
  for (int64_t k = 0; !ret && k < ngot; k++) {
    int64_t *r = got + k * width;
    const int64_t z = r[0], y = r[1];
    for (int64_t x = 0; x < nk; x++)
      memcpy((double *)(r + ROW_HEAD) + 2 * x, line + ((y - y0) * nk + x) * n + z, sizeof *line);
    dest[k] = owner_of(layers(f), size, z / f->brick);
  }
  if (!ret)
    ret = move_records(moves, got, dest, ngot, (int)width, &rec, &ngot);
  else
    free(got);
  got = NULL;
  /* Each plane's rows in place, then its inverse 2-D transform. */
  int64_t *at = ret ? NULL : malloc((size_t)(ngot + 1) * sizeof *at);
  if (!ret && !at)
    ret = STRATA_ENOMEM; /* agreed below */
  for (int64_t k = 0; !ret && k < ngot; k++)
    at[(rec[k * width] - f->z0) * n + rec[k * width + 1]] = k;
  for (int64_t z = f->z0; !ret && z < f->z1; z++) {
    for (int64_t y = 0; y < n; y++)
      memcpy(cs + y * nk, rec + at[(z - f->z0) * n + y] * width + ROW_HEAD,
             (size_t)nk * sizeof *cs);
    fftw_execute(plane_inv);
    memcpy(f->g + (z - f->z0) * n * n, rs, (size_t)(n * n) * sizeof *rs);
  }
  if (plane_fwd)
    fftw_destroy_plan(plane_fwd);
  if (plane_inv)
    fftw_destroy_plan(plane_inv);
  free(at), free(rec), free(dest), free(amp), free(line);
  fftw_free(rs), fftw_free(cs);
  return strata__agree_on(comm, ret, NULL, 0);
}

/* The field's mean and standard deviation over the whole grid. */
static int field_moments(struct strata_cosmology_field *f, MPI_Comm comm)
{
  const int64_t n = f->n;
  const double vol = (double)(n * n * n);
  double *sums = malloc((size_t)n * sizeof *sums);
  int ret = strata__agree_on(comm, sums ? 0 : STRATA_ENOMEM, NULL, 0);
  if (!ret)
    ret = plane_sums(f, comm, 0, sums);
  if (!ret) {
    f->mean = sum_in_order(sums, n) / vol;
    ret = plane_sums(f, comm, 1, sums);
  }
  if (!ret)
    f->deviation = sqrt(sum_in_order(sums, n) / vol);
  free(sums);
  return ret;
}

/* A field of n^3 cells: whole here (comm MPI_COMM_NULL), or in slabs of
 * whole brick layers over comm's ranks. */
static int field_create(int64_t n, const strata_cosmology_params *p, MPI_Comm comm,
                        strata_cosmology_field **out)
{
  int rank = 0, size = 1;
  int64_t brick = n, z0 = 0, z1 = n;
  if (comm != MPI_COMM_NULL) {
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    /* Bricks of 8 cells or more, at most about 64 along an axis. */
    for (brick = 8; (n + brick - 1) / brick > 64;)
      brick *= 2;
    slab_of(n, brick, size, rank, &z0, &z1);
  }
  strata_cosmology_field *f = malloc(sizeof *f + (size_t)((z1 - z0) * n * n + 1) * sizeof(double));
  int ret = strata__agree_on(comm, f ? 0 : STRATA_ENOMEM, NULL, 0);
  if (ret) {
    free(f);
    return ret;
  }
  *f = (struct strata_cosmology_field){n, z0, z1, brick, comm != MPI_COMM_NULL, 0, 0};
  ret = gaussian_field(p, comm, f);
  if (!ret)
    ret = field_moments(f, comm);
  if (ret) {
    free(f);
    return ret;
  }
  *out = f;
  return 0;
}

/* Either creation: the arguments checked (agreed over the ranks for a
 * distributed field), then the field made. */
static int checked_create(int64_t n, const strata_cosmology_params *p, int distributed,
                          strata_cosmology_field **out)
{
  strata__clear_error();
  strata_cosmology_params defaults;
  p = or_defaults(p, &defaults);
  if (out)
    *out = NULL;
  int local = distributed ? strata__check_ready() : 0;
  if (!local && (!out || !valid_spectrum(n, p)))
    local = strata__fail(STRATA_EINVAL, "cosmology field: n from 2 to 1024, a finite spectrum");
  int ret = distributed ? strata__agree(local, NULL, 0) : local;
  if (ret)
    return local ? local : ret;
  return field_create(n, p, distributed ? strata__coll_comm() : MPI_COMM_NULL, out);
}

int strata_cosmology_field_create(int64_t n, const strata_cosmology_params *p,
                                  strata_cosmology_field **out)
{
  return checked_create(n, p, 0, out);
}

int strata_cosmology_field_create_distributed(int64_t n, const strata_cosmology_params *p,
                                              strata_cosmology_field **out)
{
  return checked_create(n, p, 1, out);
}

int strata_cosmology_field_planes(const strata_cosmology_field *f, int64_t *z0, int64_t *z1)
{
  strata__clear_error();
  if (!f || !z0 || !z1)
    return STRATA_EINVAL;
  *z0 = f->z0;
  *z1 = f->z1;
  return 0;
}

void strata_cosmology_field_destroy(strata_cosmology_field *f) { free(f); }

/* rho = exp(delta - sigma^2 / 2) for delta the field scaled to a standard
 * deviation of sigma, then rescaled to a mean of exactly 1 over every
 * rank's planes: into out plane after plane, or (bricks given) into the
 * bricks of a distributed field's slab, brick^3 values each, x fastest,
 * the padding of cut bricks zero, bricks[id] set to each. Those serve the
 * rank's own fills without a copy and other ranks' with one memcpy.
 * Collective over comm. */
static int lognormal_into(const strata_cosmology_field *f, MPI_Comm comm, double sigma, double *out,
                          double **bricks)
{
  const int64_t n = f->n, area = n * n, b = f->brick, nb = layers(f), first = f->z0 / b;
  const int64_t nbricks = (f->z1 - f->z0 + b - 1) / b * nb * nb;
  const int64_t held = bricks ? nbricks * b * b * b : (f->z1 - f->z0) * area;
  const double scale = sigma / f->deviation, offset = 0.5 * sigma * sigma;
  double *sums = malloc((size_t)n * sizeof *sums);
  int ret = strata__agree_on(comm, sums ? 0 : STRATA_ENOMEM, NULL, 0);
  if (ret) {
    free(sums);
    return ret;
  }
  if (bricks) {
    memset(out, 0, (size_t)held * sizeof *out);
    for (int64_t k = 0; k < nbricks; k++)
      bricks[first * nb * nb + k] = out + k * b * b * b;
  }
  /* exp once per cell, summed plane by plane in x-fastest order. */
  for (int64_t z = f->z0; z < f->z1; z++) {
    double s = 0;
    for (int64_t y = 0; y < n; y++) {
      const double *g = f->g + ((z - f->z0) * n + y) * n;
      for (int64_t x0 = 0; x0 < n; x0 += bricks ? b : n) {
        const int64_t seg = !bricks ? n : x0 + b <= n ? b : n - x0;
        double *d = !bricks
                        ? out + (z - f->z0) * area + y * n
                        : bricks[((z / b) * nb + y / b) * nb + x0 / b] + ((z % b) * b + y % b) * b;
        for (int64_t i = 0; i < seg; i++) {
          d[i] = exp((g[x0 + i] - f->mean) * scale - offset);
          s += d[i];
        }
      }
    }
    sums[z] = s;
  }
  ret = gather_plane_sums(f, comm, sums);
  const double factor = ret ? 0 : (double)(n * n * n) / sum_in_order(sums, n);
  for (int64_t i = 0; !ret && i < held; i++)
    out[i] *= factor;
  free(sums);
  return ret;
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
    ret = lognormal_into(f, MPI_COMM_NULL, p->sigma, rho, NULL);
  strata_cosmology_field_destroy(f);
  return ret;
}

/* ---- test problems on the hierarchy ---- */

/* The problems' kinds, for their cost keys. */
enum { CUSTOM = 1, LINEAR, BLOBS, CLUMPS, COSMOLOGY };

static uint32_t cost_key(uint32_t kind, uint32_t count)
{
  return starpu_hash_crc32c_be(count, kind);
}

static int make_problem(strata_amr_problem_fn fn, void *ctx, void *owned, uint32_t key,
                        strata_amr_problem **out)
{
  strata_amr_problem *p = malloc(sizeof *p);
  if (!p) {
    free(owned);
    return STRATA_ENOMEM;
  }
  *p = (strata_amr_problem){.fn = fn, .ctx = ctx, .owned = owned, .cost_key = key};
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
  if (problem->release)
    problem->release(problem->owned);
  else
    free(problem->owned);
  free(problem);
}

/* A user function's cost key: the name of the object that holds it and its
 * offset there, the same in every run of one build (its address is not),
 * so that the problems of different functions are modeled apart. */
static uint32_t function_key(strata_amr_problem_fn fn)
{
  void *address;
  memcpy(&address, &fn, sizeof address);
  Dl_info info;
  if (!dladdr(address, &info) || !info.dli_fname)
    return CUSTOM; /* a static executable: one key for every function */
  const char *name = strrchr(info.dli_fname, '/');
  const uint32_t object = starpu_hash_crc32c_string(name ? name + 1 : info.dli_fname, CUSTOM);
  return starpu_hash_crc32c_be((uint32_t)((uintptr_t)address - (uintptr_t)info.dli_fbase), object);
}

int strata_amr_problem_custom(strata_amr_problem_fn fn, void *ctx, strata_amr_problem **out)
{
  strata__clear_error();
  if (!fn || !out)
    return STRATA_EINVAL;
  return make_problem(fn, ctx, NULL, function_key(fn), out);
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
  return make_problem(linear_fn, copy, copy, LINEAR, out);
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
  return make_problem(blobs_fn, b, b, cost_key(BLOBS, (uint32_t)n), out);
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
  int ret = make_problem(clumps_fn, c, c,
                         starpu_hash_crc32c_be(base->cost_key, cost_key(CLUMPS, (uint32_t)n)), out);
  if (ret)
    strata_amr_problem_destroy(base);
  else
    (*out)->base = base;
  return ret;
}

/* The log-normal density sampled by trilinear interpolation, held in
 * bricks of brick^3 grid cells: a whole field is one brick; a distributed
 * one keeps this rank's slab of planes to serve the bricks other ranks ask
 * for, and fetches those its leaves need before each fill (prepare). */
struct sampled {
  int64_t n, brick, nb; /* grid cells per axis, per brick edge, bricks per axis */
  int shift;            /* cell >> shift: its brick; cell & mask: its place there */
  int64_t mask;
  int64_t z0, z1;  /* distributed: the planes of `slab` */
  int size;        /* distributed: the ranks the slabs are spread over */
  double *slab;    /* distributed: this rank's planes of the density, brick by brick */
  double **bricks; /* nb^3 slots, each published once filled; NULL: not here */
};

/* Cell c of the periodic generation grid of n cells, and the next one. */
static void periodic_pair(int64_t c, int64_t n, int64_t pair[2])
{
  if (c < 0 || c >= n)
    c = ((c % n) + n) % n;
  pair[0] = c;
  pair[1] = c + 1 == n ? 0 : c + 1;
}

/* Grid cell c's brick along an axis, and its place in the brick. */
static int64_t brick_of(const struct sampled *s, int64_t c) { return c >> s->shift; }
static int64_t place_of(const struct sampled *s, int64_t c) { return c & s->mask; }

/* Trilinear interpolation of the periodic generation grid, whose cell
 * (i, j, k) has its centre at ((i, j, k) + 1/2) / n. The row's y and z
 * cells, weights and bricks are found once, the eight corners each time
 * the x cell changes (NAN where a brick is not here); each cell adds its
 * corners in the order x, then y, then z, each weight the product
 * wx * wy * wz. */
static void cosmology_fn(void *ctx, int field, const double centre[3], double h, int64_t count,
                         double *out)
{
  (void)field;
  const struct sampled *s = ctx;
  const int64_t n = s->n, b = s->brick;
  double w[3][2], corner[2][2][2];                 /* [z][y][x] */
  int64_t c[3][2], cell = 0, slot[2][2], at[2][2]; /* the (z, y) corners' bricks and places */
  int have = 0;                                    /* corners of x cell `cell` */
  /* For each x corner: its brick along x, and the four (z, y) rows there. */
  int64_t row_brick[2] = {-1, -1};
  const double *row[2][2][2]; /* [x corner][z][y], NULL: brick not here */
  for (int a = 1; a < 3; a++) {
    double p = centre[a] * (double)n - 0.5, f = floor(p);
    w[a][1] = p - f;
    w[a][0] = 1 - w[a][1];
    periodic_pair((int64_t)f, n, c[a]);
  }
  for (int bz = 0; bz < 2; bz++)
    for (int by = 0; by < 2; by++) {
      slot[bz][by] = (brick_of(s, c[2][bz]) * s->nb + brick_of(s, c[1][by])) * s->nb;
      at[bz][by] = (place_of(s, c[2][bz]) * b + place_of(s, c[1][by])) * b;
    }
  for (int64_t i = 0; i < count; i++) {
    double p = (centre[0] + (double)i * h) * (double)n - 0.5, f = floor(p);
    w[0][1] = p - f;
    w[0][0] = 1 - w[0][1];
    if (!have || (int64_t)f != cell) {
      cell = (int64_t)f, have = 1;
      periodic_pair(cell, n, c[0]);
      for (int bx = 0; bx < 2; bx++) {
        const int64_t k = brick_of(s, c[0][bx]);
        if (k != row_brick[bx]) { /* a brick along x not seen yet in this row */
          row_brick[bx] = k;
          for (int bz = 0; bz < 2; bz++)
            for (int by = 0; by < 2; by++) {
              const double *brick = __atomic_load_n(&s->bricks[slot[bz][by] + k], __ATOMIC_ACQUIRE);
              row[bx][bz][by] = brick ? brick + at[bz][by] : NULL;
            }
        }
        const int64_t x = place_of(s, c[0][bx]);
        for (int bz = 0; bz < 2; bz++)
          for (int by = 0; by < 2; by++)
            corner[bz][by][bx] = row[bx][bz][by] ? row[bx][bz][by][x] : NAN;
      }
    }
    double v = 0;
    for (int bz = 0; bz < 2; bz++)
      for (int by = 0; by < 2; by++)
        for (int bx = 0; bx < 2; bx++)
          v += w[0][bx] * w[1][by] * w[2][bz] * corner[bz][by][bx];
    out[i] = v;
  }
}

static void release_sampled(void *owned)
{
  struct sampled *s = owned;
  if (!s)
    return;
  /* This rank's own bricks lie in its slab. */
  const int64_t area = s->nb * s->nb, first = s->z0 / s->brick * area;
  const int64_t last = (s->z1 + s->brick - 1) / s->brick * area;
  for (int64_t i = 0; s->bricks && i < area * s->nb; i++)
    if (!s->slab || i < first || i >= last)
      free(s->bricks[i]);
  free(s->bricks);
  free(s->slab);
  free(s);
}

/* Marks in `want` the bricks missing here that sampling inside box needs:
 * along each axis the bricks of the grid cells from the one below the
 * box's lowest centre to the one above its highest, periodically (a box as
 * wide as the domain needs every brick). */
static void wanted_bricks(const struct sampled *s, const double *box, uint8_t *want)
{
  enum { MOST = 128 }; /* bricks per axis: at most 64 */
  uint8_t along[3][MOST] = {{0}};
  for (int a = 0; a < 3; a++) {
    const double shift = floor(box[a]), lo_at = box[a] - shift, hi_at = box[3 + a] - shift;
    if (!(box[3 + a] - box[a] < 1)) {
      memset(along[a], 1, (size_t)s->nb);
      continue;
    }
    const int64_t lo = (int64_t)floor(lo_at * (double)s->n - 0.5);
    const int64_t hi = (int64_t)floor(hi_at * (double)s->n - 0.5) + 1;
    for (int64_t c = lo; c <= hi && c < lo + s->n; c++)
      along[a][((c % s->n + s->n) % s->n) / s->brick] = 1;
  }
  int64_t list[3][MOST], count[3] = {0, 0, 0};
  for (int a = 0; a < 3; a++)
    for (int64_t k = 0; k < s->nb; k++)
      if (along[a][k])
        list[a][count[a]++] = k;
  for (int64_t k = 0; k < count[2]; k++)
    for (int64_t j = 0; j < count[1]; j++)
      for (int64_t i = 0; i < count[0]; i++) {
        const int64_t id = (list[2][k] * s->nb + list[1][j]) * s->nb + list[0][i];
        want[id] |= !s->bricks[id];
      }
}

/* The values of brick id, from this rank's slab, after the id. */
static void pack_brick(const struct sampled *s, int64_t id, int64_t *record)
{
  record[0] = id;
  memcpy(record + 1, s->bricks[id], (size_t)(s->brick * s->brick * s->brick) * sizeof(double));
}

/* Fetch the bricks the boxes need from the ranks whose slabs hold them:
 * one exchange of requests, one of bricks. Collective over comm. */
static int prepare_bricks(void *ctx, MPI_Comm comm, const double *box, int64_t nboxes)
{
  struct sampled *s = ctx;
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int64_t slots = s->nb * s->nb * s->nb, width = 1 + s->brick * s->brick * s->brick;
  uint8_t *want = calloc((size_t)slots, 1);
  int64_t nwant = 0, *ask = NULL, *asked = NULL, nasked = 0, *reply = NULL, *got = NULL, ngot = 0;
  int *dest = NULL;
  int local = want ? 0 : STRATA_ENOMEM;
  if (!local && size != s->size)
    local = strata__fail(STRATA_EINVAL, "cosmology problem: filled on %d ranks, made on %d", size,
                         s->size);
  for (int64_t i = 0; !local && i < nboxes; i++)
    wanted_bricks(s, box + 6 * i, want);
  for (int64_t id = 0; !local && id < slots; id++)
    nwant += want[id];
  ask = local ? NULL : malloc((size_t)(2 * nwant + 1) * sizeof *ask);
  dest = local ? NULL : malloc((size_t)(nwant + 1) * sizeof *dest);
  if (!local && (!ask || !dest))
    local = STRATA_ENOMEM;
  for (int64_t id = 0, k = 0; !local && id < slots; id++)
    if (want[id]) {
      ask[2 * k] = id, ask[2 * k + 1] = rank;
      dest[k++] = owner_of(s->nb, size, id / (s->nb * s->nb));
    }
  free(want);
  int ret = strata__exchange_records(comm, local, ask, dest, nwant, 2, &asked, &nasked, NULL);
  free(ask), free(dest);
  dest = NULL;
  /* Answer: each asked brick from this rank's slab, to the rank that asked. */
  if (!ret) {
    reply = malloc((size_t)(nasked * width + 1) * sizeof *reply);
    dest = malloc((size_t)(nasked + 1) * sizeof *dest);
    ret = strata__agree_on(comm, reply && dest ? 0 : STRATA_ENOMEM, NULL, 0);
  }
  for (int64_t k = 0; !ret && k < nasked; k++) {
    pack_brick(s, asked[2 * k], reply + k * width);
    dest[k] = (int)asked[2 * k + 1];
  }
  if (!ret)
    ret = strata__exchange_records(comm, 0, reply, dest, nasked, (int)width, &got, &ngot, NULL);
  free(asked), free(reply), free(dest);
  local = 0;
  for (int64_t k = 0; !ret && !local && k < ngot; k++) {
    const int64_t *r = got + k * width;
    double *brick = malloc((size_t)(width - 1) * sizeof *brick);
    if (!brick) {
      local = STRATA_ENOMEM;
      break;
    }
    memcpy(brick, r + 1, (size_t)(width - 1) * sizeof *brick);
    /* Fill tasks of earlier fills may be reading other slots meanwhile. */
    __atomic_store_n(&s->bricks[r[0]], brick, __ATOMIC_RELEASE);
  }
  free(got);
  return ret ? ret : strata__agree_on(comm, local, NULL, 0);
}

int strata__amr_problem_fetches(const strata_amr_problem *problem)
{
  for (const strata_amr_problem *p = problem; p; p = p->base)
    if (p->prepare)
      return 1;
  return 0;
}

int strata__amr_problem_prepare(const strata_amr_problem *problem, MPI_Comm comm, const double *box,
                                int64_t nboxes)
{
  int ret = 0;
  for (const strata_amr_problem *p = problem; p && !ret; p = p->base)
    if (p->prepare)
      ret = p->prepare(p->ctx, comm, box, nboxes);
  return ret;
}

int strata_amr_problem_prepare(const strata_amr_problem *problem, const double *boxes,
                               int64_t nboxes)
{
  strata__clear_error();
  int local = strata__check_ready();
  if (!local && (!problem || nboxes < 0 || (nboxes > 0 && !boxes)))
    local = strata__fail(STRATA_EINVAL, "amr_problem_prepare: no problem, or boxes missing");
  for (int64_t i = 0; !local && i < 6 * nboxes; i++)
    if (!isfinite(boxes[i]))
      local = strata__fail(STRATA_EINVAL, "amr_problem_prepare: box %lld is not finite",
                           (long long)(i / 6));
  int ret = strata__agree(local, NULL, 0);
  if (ret)
    return local ? local : ret;
  return strata__amr_problem_prepare(problem, strata__coll_comm(), boxes, nboxes);
}

/* The density of field f at sigma, as a problem: a whole field's in one
 * brick, a distributed field's slab kept to serve the other ranks. */
static int sampled_create(const strata_cosmology_field *f, double sigma, struct sampled **out)
{
  MPI_Comm comm = f->distributed ? strata__coll_comm() : MPI_COMM_NULL;
  const int64_t n = f->n, nb = layers(f), planes = (f->z1 - f->z0) * n * n;
  struct sampled *s = calloc(1, sizeof *s);
  /* A distributed slab is stored brick by brick (the last layer padded). */
  const int64_t b = f->brick;
  const int64_t held = f->distributed ? (f->z1 - f->z0 + b - 1) / b * nb * nb * b * b * b : planes;
  double *rho = malloc((size_t)(held + 1) * sizeof *rho);
  double **bricks = calloc((size_t)(nb * nb * nb), sizeof *bricks);
  int local = s && rho && bricks ? 0 : STRATA_ENOMEM;
  int ret = strata__agree_on(comm, local, NULL, 0);
  if (!ret)
    ret = lognormal_into(f, comm, sigma, rho, f->distributed ? bricks : NULL);
  if (ret) {
    free(s), free(rho), free(bricks);
    return ret;
  }
  /* Bricks of a power of two cells, or one brick: shifts and masks. */
  int shift = 0;
  while (((int64_t)1 << shift) < f->brick)
    shift++;
  const int whole = !f->distributed;
  *s = (struct sampled){
      n, f->brick, nb,    whole ? 62 : shift, whole ? INT64_MAX : f->brick - 1, f->z0, f->z1,
      1, NULL,     bricks};
  if (f->distributed) {
    MPI_Comm_size(comm, &s->size);
    s->slab = rho;
  } else
    bricks[0] = rho;
  *out = s;
  return 0;
}

int strata_amr_problem_cosmology_field(const strata_cosmology_field *f, double sigma,
                                       strata_amr_problem **out)
{
  strata__clear_error();
  int local = f && out && valid_sigma(sigma) ? 0 : STRATA_EINVAL;
  if (out)
    *out = NULL;
  if (f && f->distributed) { /* collective: agree first */
    int ret = strata__agree(local, NULL, 0);
    if (ret)
      return local ? local : ret;
  } else if (local)
    return local;
  struct sampled *s = NULL;
  int ret = sampled_create(f, sigma, &s);
  if (ret)
    return ret;
  strata_amr_problem *p = malloc(sizeof *p);
  ret = f->distributed ? strata__agree(p ? 0 : STRATA_ENOMEM, NULL, 0) : p ? 0 : STRATA_ENOMEM;
  if (ret) {
    free(p);
    release_sampled(s);
    return ret;
  }
  *p = (strata_amr_problem){.fn = cosmology_fn,
                            .ctx = s,
                            .owned = s,
                            .prepare = f->distributed ? prepare_bricks : NULL,
                            .release = release_sampled,
                            .cost_key = COSMOLOGY};
  *out = p;
  return 0;
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
