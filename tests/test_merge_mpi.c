/* Reduction of one array across ranks (2, 3, 4 ranks): known sums, minima,
 * logical and bitwise results onto every root, REDUX accumulation followed
 * by the cross-rank reduction, reproducible floating-point results, and
 * the same error code on every rank when one rank's arguments are wrong. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "merge_reference.h"

static int rank, size;

static strata_array *filled(int64_t n, strata_dtype t, double (*value)(int r, int64_t i))
{
  strata_array *a;
  CHECK_EQ(strata_array_create(1, &n, t, &a), 0);
  void *p;
  strata_array_acquire(a, STRATA_WRITE, &p);
  for (int64_t i = 0; i < n; i++) {
    double v = value(rank, i);
    ref_set(t, p, (size_t)i, v, (int64_t)v);
  }
  strata_array_release(a);
  return a;
}

static double v_float(int r, int64_t i) { return 0.1 * (r + 1) + 1e-3 * (double)i; }
static double v_int(int r, int64_t i) { return (double)((r + 1) * 1000 + i); }
static double v_max(int r, int64_t i) { return (double)((r * 7 + i) % 11); }
static double v_land(int r, int64_t i) { return !(r == 1 && i % 5 == 0); }
static double v_bor(int r, int64_t i) { return (double)((1 << r) & (i % 16)); }

/* Reduce and return rank root's host copy (NULL elsewhere), caller frees. */
static void *reduced(strata_array *a, strata_op op, int root)
{
  CHECK_EQ(strata_array_reduce(a, op, root), 0);
  if (rank != root)
    return NULL;
  void *p, *copy = malloc((size_t)strata_array_nbytes(a));
  strata_array_acquire(a, STRATA_READ, &p);
  memcpy(copy, p, (size_t)strata_array_nbytes(a));
  strata_array_release(a);
  return copy;
}

static void check_known_results(void)
{
  const int64_t n = 1000;
  for (int root = 0; root < size; root++) {
    strata_array *f = filled(n, STRATA_FLOAT64, v_float), *i = filled(n, STRATA_INT64, v_int);
    strata_array *m = filled(n, STRATA_INT32, v_max), *l = filled(n, STRATA_BOOL, v_land);
    strata_array *b = filled(n, STRATA_UINT8, v_bor);
    double *fr = reduced(f, STRATA_SUM, root);
    int64_t *ir = reduced(i, STRATA_SUM, root);
    int32_t *mr = reduced(m, STRATA_MAX, root);
    uint8_t *lr = reduced(l, STRATA_LAND, root), *br = reduced(b, STRATA_BOR, root);
    if (rank == root) {
      int bad = 0;
      for (int64_t k = 0; k < n; k++) {
        double fsum = 0, mx = -1;
        int64_t isum = 0;
        int land = 1, bor = 0;
        for (int r = 0; r < size; r++) {
          fsum += v_float(r, k);
          isum += (int64_t)v_int(r, k);
          mx = fmax(mx, v_max(r, k));
          land = land && v_land(r, k);
          bor |= (int)v_bor(r, k);
        }
        bad += fabs(fr[k] - fsum) > 1e-12 || ir[k] != isum || mr[k] != (int32_t)mx ||
               lr[k] != land || br[k] != bor;
      }
      CHECK_EQ(bad, 0);
    }
    free(fr), free(ir), free(mr), free(lr), free(br);
    strata_array *all[] = {f, i, m, l, b};
    for (int k = 0; k < 5; k++)
      strata_array_destroy(all[k]);
  }
}

/* The merge order is fixed: two reductions of the same data give the same
 * bits. */
static void check_reproducible(void)
{
  double *first = NULL;
  for (int round = 0; round < 2; round++) {
    strata_array *f = filled(257, STRATA_FLOAT64, v_float);
    double *r = reduced(f, STRATA_SUM, 0);
    if (rank == 0 && round == 0)
      first = r;
    else if (rank == 0) {
      CHECK(memcmp(first, r, 257 * sizeof *r) == 0);
      free(r);
    }
    strata_array_destroy(f);
  }
  free(first);
}

/* Every rank accumulates 300 tasks (REDUX), then the ranks are reduced. */
static void check_redux_then_reduce(void)
{
  int64_t n = 64;
  strata_array *acc, *src[300];
  CHECK_EQ(strata_array_create(1, &n, STRATA_INT64, &acc), 0);
  CHECK_EQ(strata_array_fill_identity(acc, STRATA_SUM), 0);
  for (int t = 0; t < 300; t++) {
    int64_t *p;
    strata_array_create(1, &n, STRATA_INT64, &src[t]);
    strata_array_acquire(src[t], STRATA_WRITE, (void **)&p);
    for (int64_t i = 0; i < n; i++)
      p[i] = (int64_t)(rank + 1) * t + i;
    strata_array_release(src[t]);
    CHECK_EQ(strata_accumulate(acc, src[t], STRATA_SUM), 0);
  }
  int64_t *r = reduced(acc, STRATA_SUM, 0);
  if (rank == 0) {
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
      bad += r[i] != (int64_t)size * (size + 1) / 2 * (299 * 300 / 2) + (int64_t)size * 300 * i;
    CHECK_EQ(bad, 0);
  }
  free(r);
  for (int t = 0; t < 300; t++)
    strata_array_destroy(src[t]);
  strata_array_destroy(acc);
}

/* Bad arguments on one rank only: every rank returns the same code, and a
 * correct reduction still works afterwards. */
static void check_error_agreement(void)
{
  int64_t n = 10, other = 11;
  strata_array *a, *longer, *flags;
  strata_array_create(1, &n, STRATA_INT32, &a);
  strata_array_create(1, &other, STRATA_INT32, &longer);
  strata_array_create(1, &n, STRATA_BOOL, &flags);
  strata_array_fill_identity(a, STRATA_SUM);
  int last = size - 1;
  CHECK_EQ(strata_array_reduce(a, rank == last ? STRATA_MAX : STRATA_SUM, 0), STRATA_EINVAL);
  CHECK_EQ(strata_array_reduce(rank == last ? longer : a, STRATA_SUM, 0), STRATA_EINVAL);
  CHECK_EQ(strata_array_reduce(a, STRATA_SUM, rank == 0 ? size : 0), STRATA_EINVAL);
  CHECK_EQ(strata_array_reduce(a, STRATA_SUM, rank == 1 ? 0 : last), STRATA_EINVAL);
  CHECK_EQ(strata_array_reduce(rank == 1 ? NULL : a, STRATA_SUM, 0), STRATA_EINVAL);
  CHECK_EQ(strata_array_reduce(flags, STRATA_SUM, 0), STRATA_ETYPE); /* bool sums into int64 */
  CHECK_EQ(
      strata_array_reduce(rank == last ? flags : a, rank == last ? STRATA_PROD : STRATA_SUM, 0),
      STRATA_ETYPE);
  strata_array_acquire(a, STRATA_READ, NULL);
  CHECK_EQ(strata_array_reduce(a, STRATA_SUM, 0), STRATA_ESTATE);
  strata_array_release(a);
  int32_t *r = reduced(a, STRATA_SUM, 0);
  free(r);
  strata_array_destroy(a);
  strata_array_destroy(longer);
  strata_array_destroy(flags);
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  rank = strata_rank();
  size = strata_size();
  check_known_results();
  check_reproducible();
  check_redux_then_reduce();
  check_error_agreement();
  strata_finalize();
  return check_status();
}
