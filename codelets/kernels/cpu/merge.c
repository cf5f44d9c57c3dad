/* Element-wise merge kernels for every (operator, element type) pair.
 * Compiled with -fwrapv: integer SUM and PROD wrap around like numpy. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../merge_kernels.h"

/* Element types that support arithmetic (every type but bool). */
#define NUMERIC_TYPES(X)                                                                           \
  X(STRATA_INT8, int8_t)                                                                           \
  X(STRATA_UINT8, uint8_t)                                                                         \
  X(STRATA_INT32, int32_t)                                                                         \
  X(STRATA_INT64, int64_t)                                                                         \
  X(STRATA_FLOAT32, float)                                                                         \
  X(STRATA_FLOAT64, double)

#define ALL_TYPES(X) X(STRATA_BOOL, uint8_t) NUMERIC_TYPES(X)

static int is_float(strata_dtype t) { return t == STRATA_FLOAT32 || t == STRATA_FLOAT64; }

int strata__merge_result_dtype(strata_op op, strata_dtype in)
{
  if ((unsigned)op >= STRATA_NOPS || (unsigned)in >= STRATA_NDTYPES)
    return -1;
  switch (op) {
  case STRATA_SUM: return in == STRATA_BOOL ? STRATA_INT64 : (int)in;
  case STRATA_LAND:
  case STRATA_LOR: return STRATA_BOOL;
  case STRATA_BAND:
  case STRATA_BOR: return (in == STRATA_BOOL || is_float(in)) ? -1 : (int)in;
  default: /* PROD, MIN, MAX */ return in == STRATA_BOOL ? -1 : (int)in;
  }
}

/* Identity of MIN is the largest value of the type, of MAX the smallest. */
#define DEFINE_IDENTITY(T, LOWEST, HIGHEST)                                                        \
  static void identity_##T(strata_op op, T *v)                                                     \
  {                                                                                                \
    switch (op) {                                                                                  \
    case STRATA_PROD: *v = (T)1; break;                                                            \
    case STRATA_MIN: *v = HIGHEST; break;                                                          \
    case STRATA_MAX: *v = LOWEST; break;                                                           \
    case STRATA_BAND: *v = (T) ~(T)0; break;                                                       \
    default: *v = (T)0; break; /* SUM, BOR */                                                      \
    }                                                                                              \
  }
DEFINE_IDENTITY(int8_t, INT8_MIN, INT8_MAX)
DEFINE_IDENTITY(uint8_t, 0, UINT8_MAX)
DEFINE_IDENTITY(int32_t, INT32_MIN, INT32_MAX)
DEFINE_IDENTITY(int64_t, INT64_MIN, INT64_MAX)

static void identity_float(strata_op op, float *v)
{
  *v = op == STRATA_PROD ? 1.0f : op == STRATA_MIN ? INFINITY : op == STRATA_MAX ? -INFINITY : 0.0f;
}

static void identity_double(strata_op op, double *v)
{
  *v = op == STRATA_PROD ? 1.0 : op == STRATA_MIN ? INFINITY : op == STRATA_MAX ? -INFINITY : 0.0;
}

void strata__merge_identity(strata_op op, strata_dtype result, void *value)
{
  if (result == STRATA_BOOL) {
    *(uint8_t *)value = op == STRATA_LAND;
    return;
  }
  switch (result) {
#define CASE(E, T)                                                                                 \
  case E: {                                                                                        \
    T v;                                                                                           \
    identity_##T(op, &v);                                                                          \
    memcpy(value, &v, sizeof v);                                                                   \
    break;                                                                                         \
  }
    CASE(STRATA_INT8, int8_t)
    CASE(STRATA_UINT8, uint8_t)
    CASE(STRATA_INT32, int32_t)
    CASE(STRATA_INT64, int64_t)
    CASE(STRATA_FLOAT32, float)
    CASE(STRATA_FLOAT64, double)
#undef CASE
  default: break;
  }
}

void strata__merge_fill_identity_cpu(strata_op op, strata_dtype result, void *dst, size_t n)
{
  unsigned char one[8];
  size_t size = strata_dtype_size(result);
  strata__merge_identity(op, result, one);
  for (size_t i = 0; i < n; i++)
    memcpy((unsigned char *)dst + i * size, one, size);
}

/* dst row map[k] = dst row map[k] OP src row k for k < nsrc, in that
 * order; rows of n elements, dst of type TD, src of type TS. Single
 * elements (reductions of scattered values) skip the vector loop's set-up.
 * The destination row STRATA__SCATTER_AHEAD merges ahead is prefetched. */
#define LOOP(TD, TS, EXPR)                                                                         \
  do {                                                                                             \
    for (int64_t k = 0; k < nsrc; k++) {                                                           \
      if (k + STRATA__SCATTER_AHEAD < nsrc)                                                        \
        __builtin_prefetch((TD *)dst + (size_t)map[k + STRATA__SCATTER_AHEAD] * n, 1);             \
      TD *restrict d = (TD *)dst + (size_t)map[k] * n;                                             \
      const TS *restrict s = (const TS *)src + (size_t)k * n;                                      \
      if (n == 1) {                                                                                \
        TD a = d[0];                                                                               \
        TS b = s[0];                                                                               \
        d[0] = (TD)(EXPR);                                                                         \
        continue;                                                                                  \
      }                                                                                            \
      for (size_t e = 0; e < n; e++) {                                                             \
        TD a = d[e];                                                                               \
        TS b = s[e];                                                                               \
        d[e] = (TD)(EXPR);                                                                         \
      }                                                                                            \
    }                                                                                              \
  } while (0)

/* NaN-propagating minimum and maximum (b != b only for NaN). */
#define MIN_EXPR ((b < a || b != b) ? b : a)
#define MAX_EXPR ((b > a || b != b) ? b : a)

static void merge_logical(strata_op op, strata_dtype src_dtype, void *dst, const void *src,
                          size_t n, int64_t nsrc, const int64_t *map)
{
  switch (src_dtype) {
#define CASE(E, T)                                                                                 \
  case E:                                                                                          \
    if (op == STRATA_LAND)                                                                         \
      LOOP(uint8_t, T, a &&b != 0);                                                                \
    else                                                                                           \
      LOOP(uint8_t, T, a || b != 0);                                                               \
    break;
    ALL_TYPES(CASE)
#undef CASE
  default: break;
  }
}

void strata__merge_cpu(strata_op op, strata_dtype src_dtype, void *dst, const void *src, size_t n)
{
  static const int64_t first = 0;
  strata__merge_scatter_cpu(op, src_dtype, dst, src, n, 1, &first);
}

void strata__merge_scatter_cpu(strata_op op, strata_dtype src_dtype, void *dst, const void *src,
                               size_t n, int64_t nsrc, const int64_t *map)
{
  if (op == STRATA_LAND || op == STRATA_LOR) {
    merge_logical(op, src_dtype, dst, src, n, nsrc, map);
    return;
  }
  if (src_dtype == STRATA_BOOL) { /* only SUM is allowed: bool counts into int64 */
    LOOP(int64_t, uint8_t, a + b);
    return;
  }
  switch (src_dtype) {
#define CASE(E, T)                                                                                 \
  case E:                                                                                          \
    switch (op) {                                                                                  \
    case STRATA_SUM: LOOP(T, T, a + b); break;                                                     \
    case STRATA_PROD: LOOP(T, T, a *b); break;                                                     \
    case STRATA_MIN: LOOP(T, T, MIN_EXPR); break;                                                  \
    case STRATA_MAX: LOOP(T, T, MAX_EXPR); break;                                                  \
    default: break;                                                                                \
    }                                                                                              \
    break;
    NUMERIC_TYPES(CASE)
#undef CASE
  default: break;
  }
  if (op == STRATA_BAND || op == STRATA_BOR) {
    switch (src_dtype) {
#define CASE(E, T)                                                                                 \
  case E:                                                                                          \
    if (op == STRATA_BAND)                                                                         \
      LOOP(T, T, a &b);                                                                            \
    else                                                                                           \
      LOOP(T, T, a | b);                                                                           \
    break;
      CASE(STRATA_INT8, int8_t)
      CASE(STRATA_UINT8, uint8_t)
      CASE(STRATA_INT32, int32_t)
      CASE(STRATA_INT64, int64_t)
#undef CASE
    default: break;
    }
  }
}
