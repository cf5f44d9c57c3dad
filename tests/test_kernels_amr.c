/* The pure AMR kernels, without StarPU: the 1-D prolongation example,
 * conservation of restriction, exactness of prolongation and boundary
 * extrapolation on linear fields in 1, 2 and 3-D, region copies, and the
 * SIMD variants against the baseline code. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/amr_kernels.h"

/* A linear field a + b.x at the centre of cell i of an array whose cell 0
 * has its low corner at `corner` (cell width h). */
static double linear(int dim, const int64_t i[3], const double corner[3], double h)
{
  static const double coef[4] = {0.5, 1.25, -0.75, 2.0};
  double v = coef[0];
  for (int d = 0; d < dim; d++)
    v += coef[d + 1] * (corner[d] + ((double)i[d] + 0.5) * h);
  return v;
}

static int64_t cells(const int64_t dims[3]) { return dims[0] * dims[1] * dims[2]; }

static void test_prolong_1d_example(void)
{
  const double coarse[4] = {0, 4, 8, 12}; /* ghost, interior, interior, ghost */
  double fine[4] = {0};
  struct strata__amr_xfer x = {.kind = STRATA__AMR_PROLONG,
                               .dim = 1,
                               .factor = 2,
                               .is_double = 1,
                               .count = {4, 1, 1},
                               .dst_dims = {4, 1, 1},
                               .src_dims = {4, 1, 1},
                               .src_start = {2, 0, 0}};
  strata__amr_xfer_cpu(&x, fine, coarse);
  const double want[4] = {3, 5, 7, 9};
  for (int i = 0; i < 4; i++)
    CHECK(fine[i] == want[i]);
}

/* Restriction of random data by factor f: the coarse sum times f^dim is the
 * fine sum, and each coarse cell is the mean of its children. */
static void test_restrict_conserves(int dim, int f, int is_double)
{
  int64_t n = 8, fd[3] = {1, 1, 1}, cd[3] = {1, 1, 1}, cnt[3] = {1, 1, 1};
  for (int d = 0; d < dim; d++) {
    fd[d] = n * f;
    cd[d] = n + 2; /* a one-cell border around the written region */
    cnt[d] = n;
  }
  size_t es = is_double ? 8 : 4;
  void *fine = malloc((size_t)cells(fd) * es), *coarse = calloc((size_t)cells(cd), es);
  double fine_sum = 0;
  srand(7);
  for (int64_t i = 0; i < cells(fd); i++) {
    double v = (double)rand() / RAND_MAX;
    if (is_double)
      ((double *)fine)[i] = v;
    else
      ((float *)fine)[i] = (float)v;
    fine_sum += is_double ? v : (double)(float)v;
  }
  struct strata__amr_xfer x = {
      .kind = STRATA__AMR_RESTRICT, .dim = dim, .factor = f, .is_double = is_double};
  for (int d = 0; d < 3; d++) {
    x.count[d] = cnt[d];
    x.dst_dims[d] = cd[d];
    x.dst_start[d] = d < dim ? 1 : 0;
    x.src_dims[d] = fd[d];
  }
  strata__amr_xfer_cpu(&x, coarse, fine);
  double coarse_sum = 0, vol = pow(f, dim);
  for (int64_t i = 0; i < cells(cd); i++)
    coarse_sum += is_double ? ((double *)coarse)[i] : (double)((float *)coarse)[i];
  double tol = is_double ? 1e-12 : 1e-5;
  CHECK(fabs(coarse_sum * vol - fine_sum) <= tol * fine_sum);
  /* Cell (1,1,1) of the written region against its children. */
  double child = 0;
  int64_t jy_n = dim >= 2 ? f : 1, jz_n = dim >= 3 ? f : 1;
  for (int64_t jz = 0; jz < jz_n; jz++)
    for (int64_t jy = 0; jy < jy_n; jy++)
      for (int64_t jx = 0; jx < f; jx++) {
        int64_t at = ((dim >= 3 ? f + jz : 0) * fd[1] + (dim >= 2 ? f + jy : 0)) * fd[0] + f + jx;
        child += is_double ? ((double *)fine)[at] : (double)((float *)fine)[at];
      }
  int64_t c = ((dim >= 3 ? 2 : 0) * cd[1] + (dim >= 2 ? 2 : 0)) * cd[0] + 2;
  double got = is_double ? ((double *)coarse)[c] : (double)((float *)coarse)[c];
  CHECK(fabs(got - child / vol) <= tol);
  /* The border is untouched. */
  CHECK(is_double ? ((double *)coarse)[0] == 0 : ((float *)coarse)[0] == 0);
  free(fine);
  free(coarse);
}

/* Prolongation of a linear field from a ghosted coarse block of n^dim cells
 * (ghost g) to the whole fine interior (factor 2: weights 3/4, 1/4; factor
 * 4: 7/8, 5/8...). */
static void test_prolong_linear(int dim, int f, int is_double, int64_t n)
{
  const int64_t g = 1;
  const double hc = 1.0 / (double)n, hf = hc / f;
  int64_t cd[3] = {1, 1, 1}, fd[3] = {1, 1, 1};
  double ccorner[3] = {0}, fcorner[3] = {0};
  for (int d = 0; d < dim; d++) {
    cd[d] = n + 2 * g;
    fd[d] = n * f;
    ccorner[d] = -(double)g * hc;
  }
  size_t es = is_double ? 8 : 4;
  void *coarse = malloc((size_t)cells(cd) * es), *fine = malloc((size_t)cells(fd) * es);
  int64_t i[3];
  for (i[2] = 0; i[2] < cd[2]; i[2]++)
    for (i[1] = 0; i[1] < cd[1]; i[1]++)
      for (i[0] = 0; i[0] < cd[0]; i[0]++) {
        double v = linear(dim, i, ccorner, hc);
        int64_t at = (i[2] * cd[1] + i[1]) * cd[0] + i[0];
        if (is_double)
          ((double *)coarse)[at] = v;
        else
          ((float *)coarse)[at] = (float)v;
      }
  struct strata__amr_xfer x = {
      .kind = STRATA__AMR_PROLONG, .dim = dim, .factor = f, .is_double = is_double};
  for (int d = 0; d < 3; d++) {
    x.count[d] = fd[d];
    x.dst_dims[d] = fd[d];
    x.src_dims[d] = cd[d];
    x.src_start[d] = d < dim ? g * f : 0;
  }
  strata__amr_xfer_cpu(&x, fine, coarse);
  double worst = 0;
  for (i[2] = 0; i[2] < fd[2]; i[2]++)
    for (i[1] = 0; i[1] < fd[1]; i[1]++)
      for (i[0] = 0; i[0] < fd[0]; i[0]++) {
        int64_t at = (i[2] * fd[1] + i[1]) * fd[0] + i[0];
        double got = is_double ? ((double *)fine)[at] : (double)((float *)fine)[at];
        worst = fmax(worst, fabs(got - linear(dim, i, fcorner, hf)));
      }
  CHECK(worst <= (is_double ? 1e-13 : 2e-6));
  if (worst > (is_double ? 1e-13 : 2e-6))
    fprintf(stderr, "prolong dim %d factor %d double %d: error %g\n", dim, f, is_double, worst);
  free(coarse);
  free(fine);
}

/* A ghosted block filled with a linear field in its interior only; the
 * boundary kernel on all faces must reproduce the field everywhere. */
static void test_boundary_linear(int dim, int ghost, int is_double)
{
  const int64_t n = 5;
  int64_t dims[3] = {1, 1, 1};
  double corner[3] = {0};
  for (int d = 0; d < dim; d++) {
    dims[d] = n + 2 * ghost;
    corner[d] = -ghost * 0.1;
  }
  size_t es = is_double ? 8 : 4;
  void *v = calloc((size_t)cells(dims), es);
  int64_t i[3];
  for (i[2] = 0; i[2] < dims[2]; i[2]++)
    for (i[1] = 0; i[1] < dims[1]; i[1]++)
      for (i[0] = 0; i[0] < dims[0]; i[0]++) {
        int interior = 1;
        for (int d = 0; d < dim; d++)
          interior &= i[d] >= ghost && i[d] < n + ghost;
        int64_t at = (i[2] * dims[1] + i[1]) * dims[0] + i[0];
        double val = interior ? linear(dim, i, corner, 0.1) : -99;
        if (is_double)
          ((double *)v)[at] = val;
        else
          ((float *)v)[at] = (float)val;
      }
  struct strata__amr_boundary b = {.dim = dim,
                                   .ghost = ghost,
                                   .is_double = is_double,
                                   .faces = (1 << (2 * dim)) - 1,
                                   .dims = {dims[0], dims[1], dims[2]}};
  strata__amr_boundary_cpu(&b, v);
  double worst = 0;
  for (i[2] = 0; i[2] < dims[2]; i[2]++)
    for (i[1] = 0; i[1] < dims[1]; i[1]++)
      for (i[0] = 0; i[0] < dims[0]; i[0]++) {
        int64_t at = (i[2] * dims[1] + i[1]) * dims[0] + i[0];
        double got = is_double ? ((double *)v)[at] : (double)((float *)v)[at];
        worst = fmax(worst, fabs(got - linear(dim, i, corner, 0.1)));
      }
  CHECK(worst <= (is_double ? 1e-12 : 1e-5));
  free(v);
}

static void test_copy(void)
{
  double src[5 * 4], dst[3 * 3];
  for (int i = 0; i < 20; i++)
    src[i] = i;
  memset(dst, 0, sizeof dst);
  struct strata__amr_xfer x = {.kind = STRATA__AMR_COPY,
                               .dim = 2,
                               .factor = 1,
                               .is_double = 1,
                               .count = {2, 2, 1},
                               .dst_dims = {3, 3, 1},
                               .dst_start = {1, 0, 0},
                               .src_dims = {5, 4, 1},
                               .src_start = {3, 2, 0}};
  strata__amr_xfer_cpu(&x, dst, src);
  const double want[9] = {0, 13, 14, 0, 18, 19, 0, 0, 0};
  for (int i = 0; i < 9; i++)
    CHECK(dst[i] == want[i]);
}

/* Every SIMD level this CPU has (AVX2, AVX-512) against the baseline code
 * on random data, bit for bit, every destination cell written: restriction
 * and prolongation, every type pair, 1-3-D, factors 2 and 4, rows of odd
 * length and fine offsets that start mid-cell. Rows of 37 cells take the
 * prolongation's batched short-row path, rows of 300 (1- and 2-D) its
 * one-row path over two chunks along x. */
static void test_simd_same_bits(void)
{
  if (!strata__amr_simd_available()) {
    fprintf(stderr, "no SIMD variant on this CPU: nothing to compare\n");
    return;
  }
  srand(11);
  for (int types = 0; types < 3; types++) /* f32, f64, f64 -> f32 */
    for (int kind = STRATA__AMR_RESTRICT; kind <= STRATA__AMR_PROLONG; kind++)
      for (int dim = 1; dim <= 3; dim++)
        for (int64_t n = 37; n <= (dim < 3 ? 300 : 37); n += 263)
          for (int f = 2; f <= 4; f += 2)
            for (int start = 0; start < 4; start++) {
              struct strata__amr_xfer x = {.kind = kind,
                                           .dim = dim,
                                           .factor = f,
                                           .is_double = types > 0,
                                           .dst_float = types == 2};
              for (int d = 0; d < 3; d++) {
                int64_t e = d < dim;
                x.count[d] = x.dst_dims[d] = e ? n - start : 1;
                /* Prolongation reads one coarse cell either side: fine offsets
                 * from f on keep the stencil inside the source. */
                x.src_dims[d] = !e ? 1 : kind == STRATA__AMR_RESTRICT ? (n - start) * f : n / f + 4;
                x.src_start[d] = e && kind == STRATA__AMR_PROLONG ? f + start : 0;
              }
              size_t ssize = types > 0 ? 8 : 4, dsize = types == 1 ? 8 : 4;
              int64_t ns = cells(x.src_dims), nd = cells(x.dst_dims);
              /* Different fillers: a cell either variant skipped fails the comparison. */
              unsigned char *src = check_random_values(ns, ssize, -2, 2),
                            *a = malloc((size_t)nd * dsize), *b = malloc((size_t)nd * dsize);
              memset(a, 0xaa, (size_t)nd * dsize);
              strata__amr_xfer_cpu_isa(&x, a, src, 0);
              for (int level = 1; level <= strata__amr_simd_available(); level++) {
                memset(b, 0x55, (size_t)nd * dsize);
                strata__amr_xfer_cpu_isa(&x, b, src, level);
                CHECK(memcmp(a, b, (size_t)nd * dsize) == 0);
              }
              free(src);
              free(a);
              free(b);
            }
}

/* A family's transfers as one call, at every SIMD level, against the
 * transfers one by one with the baseline code, bit for bit, on random
 * data: all 2^dim children in octant order (side-by-side children run as
 * pairs), and in an order where no child continues the one before (as
 * singles). Restriction and prolongation, every type pair, 1-3-D, one and
 * two ghost layers; blocks of 6 and 32 cells, and of 150 in 1- and 2-D,
 * whose paired prolongation rows of 300 fine cells span two chunks with the
 * second child's cells in both. */
static void test_family_same_bits(void)
{
  srand(13);
  for (int types = 0; types < 3; types++) /* f32, f64, f64 -> f32 */
    for (int kind = STRATA__AMR_RESTRICT; kind <= STRATA__AMR_PROLONG; kind++)
      for (int dim = 1; dim <= 3; dim++)
        for (int ghost = 1; ghost <= 2; ghost++)
          for (int size = 0; size < (dim < 3 ? 3 : 2); size++)
            for (int order = 0; order < 2; order++) {
              const int64_t m = (int64_t[]){6, 32, 150}[size];
              const int n = 1 << dim;
              struct strata__amr_family fam = {.nchildren = n};
              for (int o = 0; o < n; o++) {
                /* order 1: octants n-1, ..., 0 */
                fam.x[o] =
                    strata__amr_family_xfer(kind, dim, m, ghost, order ? n - 1 - o : o, types > 0);
                fam.x[o].dst_float = types == 2;
              }
              /* Array 0 the parent, 1 + o child o: the same random start for
               * the reference and the call, so a cell the call skips keeps its
               * start value where the reference wrote one. */
              const int restricting = kind == STRATA__AMR_RESTRICT;
              const size_t wide = types > 0 ? 8 : 4, out = types == 1 ? 8 : 4;
              const int64_t count = cells(fam.x[0].dst_dims);
              size_t bytes[9];
              void *start[9], *want[9], *got[9];
              for (int a = 0; a <= n; a++) {
                const size_t size = (a == 0) == restricting ? out : wide;
                bytes[a] = (size_t)count * size;
                start[a] = check_random_values(count, size, -2, 2);
                want[a] = malloc(bytes[a]);
                got[a] = malloc(bytes[a]);
                memcpy(want[a], start[a], bytes[a]);
              }
              for (int o = 0; o < n; o++)
                if (restricting)
                  strata__amr_xfer_cpu_isa(&fam.x[o], want[0], want[1 + o], 0);
                else
                  strata__amr_xfer_cpu_isa(&fam.x[o], want[1 + o], want[0], 0);
              for (int level = 0; level <= strata__amr_simd_available(); level++) {
                for (int a = 0; a <= n; a++)
                  memcpy(got[a], start[a], bytes[a]);
                strata__amr_family_cpu_isa(&fam, got[0], got + 1, level);
                for (int a = 0; a <= n; a++)
                  CHECK(memcmp(got[a], want[a], bytes[a]) == 0);
              }
              for (int a = 0; a <= n; a++) {
                free(start[a]);
                free(want[a]);
                free(got[a]);
              }
            }
}

int main(void)
{
  test_simd_same_bits();
  test_family_same_bits();
  test_prolong_1d_example();
  test_copy();
  for (int is_double = 0; is_double < 2; is_double++)
    for (int dim = 1; dim <= 3; dim++) {
      test_restrict_conserves(dim, 2, is_double);
      test_restrict_conserves(dim, 4, is_double);
      /* Short rows, blended in batches: 14 fine rows for factor 2, not a
       * whole number of batches. */
      test_prolong_linear(dim, 2, is_double, 7);
      test_prolong_linear(dim, 4, is_double, 7);
      /* Long rows, one at a time: 80 fine cells; 280 for factor 4, more
       * than one chunk along x. */
      test_prolong_linear(dim, 2, is_double, 40);
      if (dim <= 2)
        test_prolong_linear(dim, 4, is_double, 70);
      test_boundary_linear(dim, 1, is_double);
      test_boundary_linear(dim, 3, is_double);
    }
  return check_status();
}
