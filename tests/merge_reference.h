/* An independent scalar reference for merges, written from the documented
 * rules (strata/merge.h), not from the kernels: integers in int64 arithmetic
 * converted back to the type (two's complement wrap), floats in double
 * rounded to the type, NaN propagating through MIN and MAX. */
#ifndef STRATA_TEST_MERGE_REFERENCE_H
#define STRATA_TEST_MERGE_REFERENCE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata/types.h>

/* Expected result type of (op, in), -1 when the pair is forbidden. */
static inline int ref_result_dtype(strata_op op, strata_dtype in)
{
  static const int8_t table[STRATA_NOPS][STRATA_NDTYPES] = {
      /*           bool  i8  u8  i32  i64  f32  f64 */
      /* SUM  */ {4, 1, 2, 3, 4, 5, 6},
      /* PROD */ {-1, 1, 2, 3, 4, 5, 6},
      /* MIN  */ {-1, 1, 2, 3, 4, 5, 6},
      /* MAX  */ {-1, 1, 2, 3, 4, 5, 6},
      /* LAND */ {0, 0, 0, 0, 0, 0, 0},
      /* LOR  */ {0, 0, 0, 0, 0, 0, 0},
      /* BAND */ {-1, 1, 2, 3, 4, -1, -1},
      /* BOR  */ {-1, 1, 2, 3, 4, -1, -1},
  };
  return table[op][in];
}

static inline int ref_is_float(strata_dtype t)
{
  return t == STRATA_FLOAT32 || t == STRATA_FLOAT64;
}

static inline double ref_get(strata_dtype t, const void *p, size_t i)
{
  switch (t) {
  case STRATA_BOOL:
  case STRATA_UINT8: return ((const uint8_t *)p)[i];
  case STRATA_INT8: return ((const int8_t *)p)[i];
  case STRATA_INT32: return ((const int32_t *)p)[i];
  case STRATA_INT64: return (double)((const int64_t *)p)[i];
  case STRATA_FLOAT32: return ((const float *)p)[i];
  default: return ((const double *)p)[i];
  }
}

static inline int64_t ref_get_int(strata_dtype t, const void *p, size_t i)
{
  return t == STRATA_INT64 ? ((const int64_t *)p)[i] : (int64_t)ref_get(t, p, i);
}

static inline void ref_set(strata_dtype t, void *p, size_t i, double f, int64_t v)
{
  switch (t) {
  case STRATA_BOOL:
  case STRATA_UINT8: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; break;
  case STRATA_INT8: ((int8_t *)p)[i] = (int8_t)(uint8_t)(uint64_t)v; break;
  case STRATA_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
  case STRATA_INT64: ((int64_t *)p)[i] = v; break;
  case STRATA_FLOAT32: ((float *)p)[i] = (float)f; break;
  default: ((double *)p)[i] = f; break;
  }
}

/* dst[i] = dst[i] op src[i], dst of type ref_result_dtype(op, st). */
static inline void ref_merge(strata_op op, strata_dtype st, void *dst, const void *src, size_t n)
{
  strata_dtype dt = (strata_dtype)ref_result_dtype(op, st);
  for (size_t i = 0; i < n; i++) {
    if (op == STRATA_LAND || op == STRATA_LOR) {
      int a = ref_get(dt, dst, i) != 0, b = ref_get(st, src, i) != 0;
      ref_set(dt, dst, i, 0, op == STRATA_LAND ? (a && b) : (a || b));
    } else if (ref_is_float(st)) {
      double a = ref_get(dt, dst, i), b = ref_get(st, src, i), r;
      int nan = isnan(a) || isnan(b);
      switch (op) {
      case STRATA_SUM: r = a + b; break;
      case STRATA_PROD: r = a * b; break;
      case STRATA_MIN: r = nan ? NAN : fmin(a, b); break;
      default: r = nan ? NAN : fmax(a, b); break;
      }
      ref_set(dt, dst, i, r, 0);
    } else {
      int64_t a = ref_get_int(dt, dst, i), b = ref_get_int(st, src, i), r;
      switch (op) {
      case STRATA_SUM: r = (int64_t)((uint64_t)a + (uint64_t)b); break;
      case STRATA_PROD: r = (int64_t)((uint64_t)a * (uint64_t)b); break;
      case STRATA_MIN: r = a < b ? a : b; break;
      case STRATA_MAX: r = a > b ? a : b; break;
      case STRATA_BAND: r = a & b; break;
      default: r = a | b; break;
      }
      ref_set(dt, dst, i, 0, r);
    }
  }
}

/* Bitwise equality, except that any NaN equals any NaN. */
static inline int ref_same(strata_dtype t, const void *a, const void *b, size_t i)
{
  if (ref_is_float(t) && isnan(ref_get(t, a, i)) && isnan(ref_get(t, b, i)))
    return 1;
  size_t s = strata_dtype_size(t);
  return memcmp((const char *)a + i * s, (const char *)b + i * s, s) == 0;
}

/* Deterministic test values for element i of type t, including negative
 * numbers, zeros, values that overflow small integers when combined, and
 * (for floats) NaN and infinities. */
static inline void ref_fill(strata_dtype t, void *p, size_t n, unsigned seed)
{
  for (size_t i = 0; i < n; i++) {
    unsigned h = (unsigned)(i * 2654435761u) ^ (seed * 40503u);
    int64_t v = (int64_t)(h % 241) - 120; /* -120..120: wraps int8 sums */
    if (t == STRATA_BOOL)
      v = h & 1;
    else if (t == STRATA_UINT8)
      v = h % 256;
    double f = (double)v / 4.0;
    if (ref_is_float(t) && h % 97 == 0)
      f = NAN;
    else if (ref_is_float(t) && h % 89 == 0)
      f = (h & 1) ? INFINITY : -INFINITY;
    ref_set(t, p, i, f, v);
  }
}

#endif

/* Apply dst = dst op src with the implementation under test. */
typedef void (*ref_apply_fn)(strata_op op, strata_dtype st, void *dst, const void *src, size_t n);

/* Run every allowed (op, dtype) pair through `apply` on n elements and
 * compare with ref_merge(). Returns the number of mismatching pairs. */
static inline int ref_check_all_pairs(ref_apply_fn apply, size_t n)
{
  int bad_pairs = 0;
  unsigned char *src = malloc(n * 8), *dst = malloc(n * 8), *want = malloc(n * 8);
  for (int op = 0; op < STRATA_NOPS; op++)
    for (int st = 0; st < STRATA_NDTYPES; st++) {
      int dt = ref_result_dtype((strata_op)op, (strata_dtype)st);
      if (dt < 0)
        continue;
      ref_fill((strata_dtype)st, src, n, 1);
      ref_fill((strata_dtype)dt, dst, n, 2);
      memcpy(want, dst, n * 8);
      ref_merge((strata_op)op, (strata_dtype)st, want, src, n);
      apply((strata_op)op, (strata_dtype)st, dst, src, n);
      size_t bad = 0;
      for (size_t i = 0; i < n; i++)
        bad += !ref_same((strata_dtype)dt, dst, want, i);
      if (bad) {
        fprintf(stderr, "merge op %d of dtype %d: %zu of %zu elements differ\n", op, st, bad, n);
        bad_pairs++;
      }
    }
  free(src);
  free(dst);
  free(want);
  return bad_pairs;
}
