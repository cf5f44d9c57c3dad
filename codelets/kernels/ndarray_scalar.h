/* Per-element semantics of the array operations, shared by the CPU and CUDA
 * kernels so that both compute the same values: loads and stores of every
 * dtype, conversions, and the elementwise functions in int64 and double. */
#ifndef STRATA_NDARRAY_SCALAR_H
#define STRATA_NDARRAY_SCALAR_H

#include <math.h>
#include <stdint.h>

#include <strata/types.h>

#include "ndarray_kernels.h"

#ifdef __CUDACC__
#define STRATA__ELEM static __host__ __device__ inline
#elif !defined(STRATA__ELEM) /* generated kernels force inlining */
#define STRATA__ELEM static inline
#endif

/* double -> int64 without undefined behaviour: NaN gives 0, values beyond
 * the range saturate. */
STRATA__ELEM int64_t strata__d2i(double v)
{
  if (v != v)
    return 0;
  if (v >= 9223372036854775807.0)
    return INT64_MAX;
  if (v <= -9223372036854775808.0)
    return INT64_MIN;
  return (int64_t)v;
}

STRATA__ELEM int64_t strata__load_i(const void *p, int32_t dt, int64_t i)
{
  switch (dt) {
  case STRATA_BOOL:
  case STRATA_UINT8: return ((const uint8_t *)p)[i];
  case STRATA_INT8: return ((const int8_t *)p)[i];
  case STRATA_INT32: return ((const int32_t *)p)[i];
  case STRATA_INT64: return ((const int64_t *)p)[i];
  case STRATA_FLOAT32: return strata__d2i(((const float *)p)[i]);
  default: return strata__d2i(((const double *)p)[i]);
  }
}

STRATA__ELEM double strata__load_d(const void *p, int32_t dt, int64_t i)
{
  if (dt == STRATA_FLOAT32)
    return ((const float *)p)[i];
  if (dt == STRATA_FLOAT64)
    return ((const double *)p)[i];
  return (double)strata__load_i(p, dt, i);
}

/* Narrowing integer stores wrap (two's complement); bool stores v != 0. */
STRATA__ELEM void strata__store_i(void *p, int32_t dt, int64_t i, int64_t v)
{
  switch (dt) {
  case STRATA_BOOL: ((uint8_t *)p)[i] = v != 0; break;
  case STRATA_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
  case STRATA_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
  case STRATA_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
  case STRATA_INT64: ((int64_t *)p)[i] = v; break;
  case STRATA_FLOAT32: ((float *)p)[i] = (float)v; break;
  default: ((double *)p)[i] = (double)v; break;
  }
}

STRATA__ELEM void strata__store_d(void *p, int32_t dt, int64_t i, double v)
{
  switch (dt) {
  case STRATA_FLOAT32: ((float *)p)[i] = (float)v; break;
  case STRATA_FLOAT64: ((double *)p)[i] = v; break;
  case STRATA_BOOL: ((uint8_t *)p)[i] = v != 0; break;
  default: strata__store_i(p, dt, i, strata__d2i(v)); break;
  }
}

/* Integer power with wrap-around; a negative exponent gives the integer
 * part of 1 / x^-e (0 unless x is 1 or -1). */
STRATA__ELEM int64_t strata__ipow(int64_t x, int64_t e)
{
  if (e < 0)
    return x == 1 ? 1 : x == -1 ? ((e & 1) ? -1 : 1) : 0;
  uint64_t r = 1, b = (uint64_t)x;
  for (uint64_t k = (uint64_t)e; k; k >>= 1) {
    if (k & 1)
      r *= b;
    b *= b;
  }
  return (int64_t)r;
}

/* fn on integer operands (wrap-around arithmetic). */
STRATA__ELEM int64_t strata__apply_i(int32_t fn, int64_t x, int64_t y, int64_t z)
{
  switch (fn) {
  case STRATA_FN_NEG: return (int64_t)(0u - (uint64_t)x);
  case STRATA_FN_ABS: return x < 0 ? (int64_t)(0u - (uint64_t)x) : x;
  case STRATA_FN_ADD: return (int64_t)((uint64_t)x + (uint64_t)y);
  case STRATA_FN_SUB: return (int64_t)((uint64_t)x - (uint64_t)y);
  case STRATA_FN_MUL: return (int64_t)((uint64_t)x * (uint64_t)y);
  case STRATA_FN_POW: return strata__ipow(x, y);
  case STRATA_FN_MINIMUM: return x < y ? x : y;
  case STRATA_FN_MAXIMUM: return x > y ? x : y;
  case STRATA_FN_EQ: return x == y;
  case STRATA_FN_NE: return x != y;
  case STRATA_FN_LT: return x < y;
  case STRATA_FN_LE: return x <= y;
  case STRATA_FN_GT: return x > y;
  case STRATA_FN_GE: return x >= y;
  case STRATA_FN_WHERE: return x ? y : z;
  default: return x; /* STRATA__FN_COPY */
  }
}

/* fn on floating-point operands; minimum and maximum propagate NaN. */
STRATA__ELEM double strata__apply_d(int32_t fn, double x, double y, double z)
{
  switch (fn) {
  case STRATA_FN_NEG: return -x;
  case STRATA_FN_ABS: return fabs(x);
  case STRATA_FN_EXP: return exp(x);
  case STRATA_FN_LOG: return log(x);
  case STRATA_FN_SQRT: return sqrt(x);
  case STRATA_FN_ADD: return x + y;
  case STRATA_FN_SUB: return x - y;
  case STRATA_FN_MUL: return x * y;
  case STRATA_FN_DIV: return x / y;
  case STRATA_FN_POW: return pow(x, y);
  case STRATA_FN_MINIMUM: return x != x ? x : y != y ? y : x < y ? x : y;
  case STRATA_FN_MAXIMUM: return x != x ? x : y != y ? y : x > y ? x : y;
  case STRATA_FN_EQ: return x == y;
  case STRATA_FN_NE: return x != y;
  case STRATA_FN_LT: return x < y;
  case STRATA_FN_LE: return x <= y;
  case STRATA_FN_GT: return x > y;
  case STRATA_FN_GE: return x >= y;
  case STRATA_FN_WHERE: return x != 0 ? y : z;
  default: return x; /* STRATA__FN_COPY */
  }
}

/* Output element i of the elementwise operation `op` whose array operands
 * are at offsets off[k] of their buffers. */
STRATA__ELEM void strata__ew_op_element(const struct strata__ew_op *op, const void *const *in,
                                        const int64_t *off, void *out, int64_t i)
{
  double vd[STRATA__EW_MAXOPS] = {0, 0, 0};
  int64_t vi[STRATA__EW_MAXOPS] = {0, 0, 0};
  for (int o = 0, k = 0; o < op->nops; o++) {
    if (o == op->scalar_at) {
      vd[o] = op->scalar;
      vi[o] = strata__d2i(op->scalar);
      continue;
    }
    if (op->fn == STRATA_FN_WHERE && o == 0) /* the condition: nonzero, NaN included */
      vi[o] = vd[o] = strata__load_d(in[k], op->in_dtype[k], off[k]) != 0;
    else if (op->exact_int)
      vi[o] = strata__load_i(in[k], op->in_dtype[k], off[k]);
    else
      vd[o] = strata__load_d(in[k], op->in_dtype[k], off[k]);
    k++;
  }
  if (op->exact_int)
    strata__store_i(out, op->out_dtype, i, strata__apply_i(op->fn, vi[0], vi[1], vi[2]));
  else
    strata__store_d(out, op->out_dtype, i, strata__apply_d(op->fn, vd[0], vd[1], vd[2]));
}

/* The operation of an elementwise call's arguments. */
STRATA__ELEM struct strata__ew_op strata__ew_op_of(const struct strata__ew_args *a)
{
  struct strata__ew_op op = {a->fn,        a->nops, a->scalar_at, a->exact_int,
                             a->out_dtype, {0},     a->scalar};
  for (int k = 0; k < STRATA__EW_MAXOPS; k++)
    op.in_dtype[k] = a->in_dtype[k];
  return op;
}

/* The same for an elementwise call's arguments (inlined: no copy is made). */
STRATA__ELEM void strata__ew_element(const struct strata__ew_args *a, const void *const *in,
                                     const int64_t *off, void *out, int64_t i)
{
  const struct strata__ew_op op = strata__ew_op_of(a);
  strata__ew_op_element(&op, in, off, out, i);
}

#endif
