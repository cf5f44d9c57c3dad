/* Global indexer: the design document's Take and Put examples on 3 ranks
 * with their exact values, then randomized cases on any number of ranks
 * against a serial reference that every rank rebuilds from the seeds
 * (repeated indices, empty ranks and empty lists, count 1 to 3, every
 * reduction and type, last and first writer, preallocated and allocated),
 * and errors agreed across ranks. */
#include <math.h>
#include <string.h>

#include "gindexer_scenario.h"

/* global-indexer.md, 3 ranks: distri [0, 2, 4, 5]; P0 takes [4, 0], P1
 * [1, 3], P2 [0]; buffers of 2 ints per index. */
static void check_design_examples(void)
{
  const int64_t distrib[4] = {0, 2, 4, 5};
  const int64_t idx[3][2] = {{4, 0}, {1, 3}, {0}}, nidx[3] = {2, 2, 1};
  const int64_t dist_data[3][4] = {{3, 5, 5, 7}, {11, 13, 17, 19}, {29, 31}};
  const int64_t taken[3][4] = {{29, 31, 3, 5}, {5, 7, 17, 19}, {3, 5}};
  const int64_t put_last[3][4] = {{-3, -5, 5, 7}, {0, 0, 17, 19}, {29, 31}};
  const int64_t put_max[3][4] = {{3, 5, 5, 7}, {0, 0, 17, 19}, {29, 31}};
  int64_t dn = distrib[rank + 1] - distrib[rank];
  strata_gindexer *gi;
  CHECK_EQ(strata_gindexer_create(strata_comm(), distrib, idx[rank], nidx[rank], &gi), 0);
  CHECK_EQ(strata_gindexer_dist_size(gi), dn);
  int64_t access[2];
  CHECK_EQ(strata_gindexer_access_counts(gi, access), 0);
  const int64_t want_access[3][2] = {{2, 1}, {0, 1}, {1}};
  for (int i = 0; i < dn; i++)
    CHECK_EQ(access[i], want_access[rank][i]);

  strata_array *dist = from_int64(dist_data[rank], 2 * dn), *extr = NULL;
  CHECK_EQ(strata_gindexer_take(gi, dist, 2, &extr), 0);
  expect_int64(extr, taken[rank], 2 * nidx[rank], "Take");
  if (rank == 2) { /* P2 negates its values: the write priority shows */
    int64_t *p = acquire(extr, STRATA_READWRITE);
    p[0] = -p[0];
    p[1] = -p[1];
    strata_array_release(extr);
  }
  int64_t zeros[4] = {0};
  strata_array *fresh = from_int64(zeros, 2 * dn);
  CHECK_EQ(strata_gindexer_put(gi, extr, 2, STRATA_PUT_LAST, STRATA_SUM, &fresh), 0);
  expect_int64(fresh, put_last[rank], 2 * dn, "Put");
  strata_array_destroy(fresh);
  fresh = from_int64(zeros, 2 * dn);
  CHECK_EQ(strata_gindexer_put(gi, extr, 2, STRATA_PUT_REDUCE, STRATA_MAX, &fresh), 0);
  expect_int64(fresh, put_max[rank], 2 * dn, "Put MAX");
  strata_array_destroy(fresh);
  /* First writer: index 0 keeps P0's 3, 5 (P2 wrote -3, -5 later). */
  fresh = from_int64(zeros, 2 * dn);
  CHECK_EQ(strata_gindexer_put(gi, extr, 2, STRATA_PUT_FIRST, STRATA_SUM, &fresh), 0);
  expect_int64(fresh, put_max[rank], 2 * dn, "Put first");
  strata_array_destroy(fresh);
  strata_array_destroy(dist);
  strata_array_destroy(extr);
  strata_gindexer_destroy(gi);
}

/* A small integer for (rank, position, component), valid for `op`. */
static double value_of(const struct scenario *s, int r, int64_t p, int64_t c, int op, int dtype)
{
  uint64_t h = mix(s->seed ^ ((uint64_t)r << 40) ^ ((uint64_t)p << 8) ^ (uint64_t)c);
  if (dtype == STRATA_BOOL)
    return (double)(h % 2);
  if (op == STRATA_PROD)
    return h % 2 ? 1 : -1;
  if (op == STRATA_BAND || op == STRATA_BOR || dtype == STRATA_UINT8)
    return (double)(h % 100);
  return (double)(h % 19) - 9;
}

static double combine(int op, double a, double b)
{
  switch (op) {
  case STRATA_SUM: return a + b;
  case STRATA_PROD: return a * b;
  case STRATA_MIN: return b < a ? b : a;
  case STRATA_MAX: return b > a ? b : a;
  case STRATA_LAND: return a != 0 && b != 0;
  case STRATA_LOR: return a != 0 || b != 0;
  case STRATA_BAND: return (double)((int64_t)a & (int64_t)b);
  default: return (double)((int64_t)a | (int64_t)b);
  }
}

/* The identity of op in dtype (the merge tests check those values). */
static double identity_of(int op, int dtype)
{
  unsigned char v[8];
  CHECK_EQ(strata_merge_identity((strata_op)op, (strata_dtype)dtype, v), 0);
  return ref_get((strata_dtype)dtype, v, (size_t)(0));
}

/* want as it reads back once stored in dtype. */
static double stored(double want, int dtype)
{
  unsigned char v[8];
  set(v, dtype, 0, want);
  return ref_get((strata_dtype)dtype, v, (size_t)(0));
}

/* rule: 0 last, 1 first, 2 reduce with op; `allocated`: dist from the call. */
static void check_put(const struct scenario *s, strata_gindexer *gi, int rule, int op, int dtype,
                      int allocated)
{
  int64_t dn = s->distrib[rank + 1] - s->distrib[rank], k = s->count, n = s->nidx[rank];
  strata_array *values, *dist = NULL;
  CHECK_EQ(strata_gindexer_empty_part(gi, k, (strata_dtype)dtype, &values), 0);
  void *pv = acquire(values, STRATA_WRITE);
  for (int64_t p = 0; p < n; p++)
    for (int64_t c = 0; c < k; c++)
      set(pv, dtype, p * k + c, value_of(s, rank, p, c, op, dtype));
  strata_array_release(values);
  double *ref = malloc((size_t)(dn * k + 1) * sizeof *ref);
  char *touched = calloc((size_t)dn + 1, 1);
  for (int64_t i = 0; i < dn * k; i++)
    ref[i] = allocated ? (rule == 2 ? identity_of(op, dtype) : 0) : (double)(i % 3);
  if (!allocated) {
    CHECK_EQ(strata_gindexer_empty_dist(gi, k, (strata_dtype)dtype, &dist), 0);
    void *pd = acquire(dist, STRATA_WRITE);
    for (int64_t i = 0; i < dn * k; i++)
      set(pd, dtype, i, ref[i]);
    strata_array_release(dist);
  }
  for (int r = 0; r < size; r++)
    for (int64_t p = 0; p < s->nidx[r]; p++) {
      int64_t i = idx_of(s, r, p) - s->distrib[rank];
      if (i < 0 || i >= dn || (rule == 1 && touched[i]))
        continue;
      touched[i] = 1;
      for (int64_t c = 0; c < k; c++) {
        double v = value_of(s, r, p, c, op, dtype);
        ref[i * k + c] = rule == 2 ? combine(op, ref[i * k + c], v) : v;
      }
    }
  int ret = strata_gindexer_put(gi, values, k, (strata_put_rule)rule, (strata_op)op, &dist);
  CHECK_EQ(ret, 0);
  if (!ret) {
    const void *pd = acquire(dist, STRATA_READ);
    for (int64_t i = 0; i < dn * k; i++) {
      double want = stored(ref[i], dtype), got = ref_get((strata_dtype)dtype, pd, (size_t)(i));
      if (got != want) {
        fprintf(stderr, "rank %d seed %llu put rule %d op %d dtype %d item %lld: %g want %g\n",
                rank, (unsigned long long)s->seed, rule, op, dtype, (long long)i, got, want);
        check_failures++;
        break;
      }
    }
    strata_array_release(dist);
  }
  strata_array_destroy(values);
  strata_array_destroy(dist);
  free(ref);
  free(touched);
}

static void check_take(const struct scenario *s, strata_gindexer *gi, int dtype, int allocated)
{
  int64_t dn = s->distrib[rank + 1] - s->distrib[rank], k = s->count, n = s->nidx[rank];
  strata_array *dist, *out = NULL;
  CHECK_EQ(strata_gindexer_empty_dist(gi, k, (strata_dtype)dtype, &dist), 0);
  void *pd = acquire(dist, STRATA_WRITE);
  for (int64_t i = 0; i < dn; i++)
    for (int64_t c = 0; c < k; c++)
      set(pd, dtype, i * k + c,
          dtype == STRATA_BOOL ? ((s->distrib[rank] + i) * 3 + c) % 97 != 0
                               : (double)(((s->distrib[rank] + i) * 3 + c) % 97));
  strata_array_release(dist);
  if (!allocated)
    CHECK_EQ(strata_gindexer_empty_part(gi, k, (strata_dtype)dtype, &out), 0);
  CHECK_EQ(strata_gindexer_take(gi, dist, k, &out), 0);
  const void *po = acquire(out, STRATA_READ);
  for (int64_t p = 0; p < n; p++)
    for (int64_t c = 0; c < k; c++) {
      double want = (double)((idx_of(s, rank, p) * 3 + c) % 97);
      if (dtype == STRATA_BOOL)
        want = want != 0;
      if (ref_get((strata_dtype)dtype, po, (size_t)(p * k + c)) != want) {
        fprintf(stderr, "rank %d seed %llu take dtype %d: item %lld\n", rank,
                (unsigned long long)s->seed, dtype, (long long)(p * k + c));
        check_failures++;
        p = n;
        break;
      }
    }
  strata_array_release(out);
  strata_array_destroy(dist);
  strata_array_destroy(out);
}

static void check_random(int seeds)
{
  for (int seed = 1; seed <= seeds; seed++) {
    struct scenario s;
    make_scenario(&s, (uint64_t)seed);
    int64_t *idx = malloc((size_t)(s.nidx[rank] + 1) * sizeof *idx);
    for (int64_t p = 0; p < s.nidx[rank]; p++)
      idx[p] = idx_of(&s, rank, p);
    strata_gindexer *gi;
    CHECK_EQ(strata_gindexer_create(strata_comm(), s.distrib, idx, s.nidx[rank], &gi), 0);
    free(idx);
    int dtype = seed % STRATA_NDTYPES;
    check_take(&s, gi, dtype, seed % 2);
    check_put(&s, gi, 0, STRATA_SUM, dtype, seed % 2);
    check_put(&s, gi, 1, STRATA_SUM, dtype, !(seed % 2));
    random_exchanges += 3;
    for (int op = 0; op < STRATA_NOPS; op++)
      for (int t = 0; t < STRATA_NDTYPES; t++) {
        strata_dtype result;
        if (strata_merge_result_dtype((strata_op)op, (strata_dtype)t, &result) || (int)result != t)
          continue;
        if ((op + t + seed) % 3 == 0) { /* a third of the pairs per seed, all over the seeds */
          check_put(&s, gi, 2, op, t, (op + seed) % 2);
          random_exchanges++;
        }
      }
    strata_gindexer_destroy(gi);
  }
}

static void check_errors(void)
{
  int64_t distrib[17];
  for (int r = 0; r <= size; r++)
    distrib[r] = 2 * r;
  strata_gindexer *gi = NULL;
  /* One rank names an index out of range: every rank gets ERANGE. */
  int64_t idx[1] = {rank == size - 1 ? 2 * size : 0};
  CHECK_EQ(strata_gindexer_create(strata_comm(), distrib, idx, 1, &gi), STRATA_ERANGE);
  /* Distributions that differ between ranks, or decrease. */
  int64_t other[17];
  memcpy(other, distrib, sizeof other);
  if (rank == 0 && size > 1)
    other[1] = 1;
  if (size > 1)
    CHECK_EQ(strata_gindexer_create(strata_comm(), other, NULL, 0, &gi), STRATA_EINVAL);
  other[1] = -1;
  CHECK_EQ(strata_gindexer_create(strata_comm(), other, NULL, 0, &gi), STRATA_EINVAL);
  CHECK_EQ(strata_gindexer_create(strata_comm(), distrib, NULL, 3, &gi), STRATA_EINVAL);
  idx[0] = 1;
  CHECK_EQ(strata_gindexer_create(strata_comm(), distrib, idx, 1, &gi), 0);
  strata_array *dist, *out = NULL, *wrong;
  CHECK_EQ(strata_gindexer_empty_dist(gi, 1, STRATA_FLOAT32, &dist), 0);
  acquire(dist, STRATA_WRITE);
  strata_array_release(dist);
  /* A wrong size on one rank, types that differ, counts that differ. */
  CHECK_EQ(strata_gindexer_take(gi, dist, rank == 0 ? 2 : 1, &out), STRATA_EINVAL);
  int64_t three = 3;
  CHECK_EQ(strata_array_create(1, &three, STRATA_FLOAT32, &wrong), 0);
  CHECK_EQ(strata_gindexer_take(gi, rank == 0 ? wrong : dist, 1, &out), STRATA_EINVAL);
  strata_array *ints;
  CHECK_EQ(strata_gindexer_empty_dist(gi, 1, STRATA_INT32, &ints), 0);
  acquire(ints, STRATA_WRITE);
  strata_array_release(ints);
  if (size > 1)
    CHECK_EQ(strata_gindexer_take(gi, rank == 0 ? ints : dist, 1, &out), STRATA_ETYPE);
  CHECK(out == NULL);
  /* A reduction that does not keep the type. */
  strata_array *vals;
  CHECK_EQ(strata_gindexer_empty_part(gi, 1, STRATA_FLOAT32, &vals), 0);
  acquire(vals, STRATA_WRITE);
  strata_array_release(vals);
  CHECK_EQ(strata_gindexer_put(gi, vals, 1, STRATA_PUT_REDUCE, STRATA_LAND, &dist), STRATA_ETYPE);
  CHECK_EQ(strata_gindexer_take(gi, dist, 1, &out), 0); /* still usable */
  strata_array_destroy(out);
  strata_array_destroy(dist);
  strata_array_destroy(wrong);
  strata_array_destroy(ints);
  strata_array_destroy(vals);
  strata_gindexer_destroy(gi);
}

int main(int argc, char **argv)
{
  return gindexer_test_main(argc, argv, check_design_examples, check_random, check_errors);
}
