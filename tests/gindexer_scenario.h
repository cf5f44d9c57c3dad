/* Helpers shared by the global indexer tests: array I/O, a hash, and
 * random scenarios (distribution, per-rank requests) that every rank
 * rebuilds from the seed, so each can compute the serial reference. */
#ifndef STRATA_TEST_GINDEXER_SCENARIO_H
#define STRATA_TEST_GINDEXER_SCENARIO_H

#include <string.h>

#include "check.h"
#include "merge_reference.h"

static int rank, size;

static void *acquire(strata_array *a, strata_access mode)
{
  void *p = NULL;
  CHECK_EQ(strata_array_acquire(a, mode, &p), 0);
  return p;
}

/* A new 1-D array of n elements of type t copied from v. */
static strata_array *from_data(const void *v, int64_t n, strata_dtype t)
{
  strata_array *a;
  CHECK_EQ(strata_array_create(1, &n, t, &a), 0);
  void *p = acquire(a, STRATA_WRITE);
  if (n > 0)
    memcpy(p, v, (size_t)n * strata_dtype_size(t));
  strata_array_release(a);
  return a;
}

/* a holds exactly the n elements of type t at want. */
static void expect_data(strata_array *a, const void *want, int64_t n, strata_dtype t,
                        const char *what)
{
  CHECK_EQ(strata_array_nelems(a), n);
  const void *p = acquire(a, STRATA_READ);
  for (int64_t i = 0; i < n && i < strata_array_nelems(a); i++)
    if (ref_get(t, p, (size_t)i) != ref_get(t, want, (size_t)i)) {
      fprintf(stderr, "rank %d %s[%lld]: %g, want %g\n", rank, what, (long long)i,
              ref_get(t, p, (size_t)i), ref_get(t, want, (size_t)i));
      check_failures++;
      break;
    }
  strata_array_release(a);
}

static strata_array *from_int64(const int64_t *v, int64_t n)
{
  return from_data(v, n, STRATA_INT64);
}

static void expect_int64(strata_array *a, const int64_t *want, int64_t n, const char *what)
{
  expect_data(a, want, n, STRATA_INT64, what);
}

static uint64_t mix(uint64_t x)
{
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

struct scenario {
  uint64_t seed;
  int64_t n, count;
  int64_t distrib[17];
  int64_t nidx[16];
};

static void make_scenario(struct scenario *s, uint64_t seed)
{
  s->seed = seed;
  s->n = (int64_t)(mix(seed) % 40);
  s->count = 1 + (int64_t)(mix(seed + 1) % 3);
  /* Random cut points, some ranks empty. */
  s->distrib[0] = 0;
  for (int r = 1; r < size; r++) {
    int64_t c = s->n ? (int64_t)(mix(seed * 31 + (uint64_t)r) % (uint64_t)(s->n + 1)) : 0;
    s->distrib[r] = c;
  }
  s->distrib[size] = s->n;
  for (int r = 1; r < size; r++) /* sort the cuts */
    for (int q = r; q > 1 && s->distrib[q - 1] > s->distrib[q]; q--) {
      int64_t t = s->distrib[q];
      s->distrib[q] = s->distrib[q - 1];
      s->distrib[q - 1] = t;
    }
  for (int r = 0; r < size; r++)
    s->nidx[r] = s->n ? (int64_t)(mix(seed * 7 + (uint64_t)r) % 25) : 0;
}

static int64_t idx_of(const struct scenario *s, int r, int64_t p)
{
  return (int64_t)(mix(s->seed * 1000003 + (uint64_t)r * 7919 + (uint64_t)p) % (uint64_t)s->n);
}

static void set(void *p, int dtype, int64_t i, double v)
{
  switch (dtype) {
  case STRATA_BOOL: ((uint8_t *)p)[i] = v != 0; break;
  case STRATA_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
  case STRATA_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
  case STRATA_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
  case STRATA_INT64: ((int64_t *)p)[i] = v >= 0x1p63 ? INT64_MAX : (int64_t)v; break;
  case STRATA_FLOAT32: ((float *)p)[i] = (float)v; break;
  default: ((double *)p)[i] = v;
  }
}

/* Randomized exchanges checked against the serial reference (reported). */
static int64_t random_exchanges;

/* A global indexer test: the design document's examples on 3 ranks, the
 * random cases (24 seeds, or argv[1]), then the error cases. */
static int gindexer_test_main(int argc, char **argv, void (*design)(void), void (*random)(int),
                              void (*errors)(void))
{
  check_init(&argc, &argv);
  rank = strata_rank();
  size = strata_size();
  if (size > 16) { /* the scenarios hold 16 ranks */
    strata_finalize();
    return 77;
  }
  if (size == 3)
    design();
  int seeds = argc > 1 ? atoi(argv[1]) : 24;
  random(seeds);
  if (rank == 0)
    printf("%lld randomized exchanges (%d seeds) checked against the serial reference on %d "
           "rank(s)\n",
           (long long)random_exchanges, seeds, size);
  errors();
  strata_finalize();
  if (check_failures)
    fprintf(stderr, "rank %d: %d checks failed\n", rank, check_failures);
  return check_failures ? 1 : 0;
}

#endif
