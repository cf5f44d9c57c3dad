/* CPU kernels of the array operations (ndarray_kernels.h). Multi-index
 * loops walk the outer dimensions with a counter and run the innermost one
 * as a plain loop. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "../ndarray_kernels.h"
#include "../ndarray_scalar.h"

static int64_t product(const int64_t *shape, int ndim)
{
  int64_t n = 1;
  for (int d = 0; d < ndim; d++)
    n *= shape[d];
  return n;
}

/* Advance the multi-index idx over shape[0..ndim) (last dimension fastest)
 * and the offsets of `nbuf` buffers with strides stride[b][d]. */
static void advance(int ndim, const int64_t *shape, int64_t *idx, int nbuf,
                    const int64_t (*stride)[STRATA__ND_MAXDIMS], int64_t *off)
{
  for (int d = ndim - 1; d >= 0; d--) {
    idx[d]++;
    for (int b = 0; b < nbuf; b++)
      off[b] += stride[b][d];
    if (idx[d] < shape[d])
      return;
    for (int b = 0; b < nbuf; b++)
      off[b] -= stride[b][d] * shape[d];
    idx[d] = 0;
  }
}

/* float32 operands and result computed in double (correctly rounded for
 * + - * / and sqrt): the common case without per-element type dispatch. */
static int all_float32(const struct strata__ew_args *a)
{
  int narrays = a->nops - (a->scalar_at >= 0);
  if (a->exact_int || a->out_dtype != STRATA_FLOAT32 || a->fn == STRATA_FN_WHERE)
    return 0;
  for (int k = 0; k < narrays; k++)
    if (a->in_dtype[k] != STRATA_FLOAT32)
      return 0;
  return 1;
}

/* A contiguous float32 row gets one loop per function, with the function a
 * constant: the compiler folds strata__apply_d's switch and vectorises the
 * loop (a switch per element took 2.5x NumPy's time on 10^7 floats). The
 * same function, so the same bits. A and B: the operands of element j. */
#define ROW_CASE(FN, A, B)                                                                         \
  case FN:                                                                                         \
    for (int64_t j = 0; j < len; j++)                                                              \
      out[j] = (float)strata__apply_d(FN, A, B, 0);                                                \
    return 1
#define ARITH_ROWS(A, B)                                                                           \
  switch (fn) {                                                                                    \
    ROW_CASE(STRATA_FN_ADD, A, B);                                                                 \
    ROW_CASE(STRATA_FN_SUB, A, B);                                                                 \
    ROW_CASE(STRATA_FN_MUL, A, B);                                                                 \
    ROW_CASE(STRATA_FN_DIV, A, B);                                                                 \
  default: return 0;                                                                               \
  }

/* A contiguous float32 row of -x, |x|, sqrt or + - * / (x and y the array
 * operands, s the scalar at scalar_at); 0 for other functions. */
static int contiguous_row_f32(int fn, int nops, float *out, const float *x, const float *y,
                              double s, int scalar_at, int64_t len)
{
  if (nops == 1) {
    switch (fn) {
      ROW_CASE(STRATA_FN_NEG, x[j], 0);
      ROW_CASE(STRATA_FN_ABS, x[j], 0);
    /* sqrtf rounds as sqrt in double then to float does (the bits the
     * kernel test checks), on 4 floats at once instead of 2 doubles */
    case STRATA_FN_SQRT:
      for (int64_t j = 0; j < len; j++)
        out[j] = sqrtf(x[j]);
      return 1;
    default: return 0;
    }
  }
  if (scalar_at == 0)
    ARITH_ROWS(s, x[j])
  if (scalar_at == 1)
    ARITH_ROWS(x[j], s)
  ARITH_ROWS(x[j], y[j])
}

static void ew_row_f32(const struct strata__ew_args *a, float *out, const void *const *in,
                       const int64_t *off, const int64_t *step, int64_t len)
{
  const float *x = (const float *)in[0] + off[0];
  const float *y = a->nops == 2 && a->scalar_at < 0 ? (const float *)in[1] + off[1] : NULL;
  int contiguous = step[0] == 1 && (!y || step[1] == 1);
  if (contiguous && a->nops <= 2 &&
      contiguous_row_f32(a->fn, a->nops, out, x, y, a->scalar, a->scalar_at, len))
    return;
  if (a->nops == 1) {
    for (int64_t j = 0; j < len; j++)
      out[j] = (float)strata__apply_d(a->fn, x[j * step[0]], 0, 0);
  } else if (a->scalar_at == 0) {
    for (int64_t j = 0; j < len; j++)
      out[j] = (float)strata__apply_d(a->fn, a->scalar, x[j * step[0]], 0);
  } else if (a->scalar_at == 1) {
    for (int64_t j = 0; j < len; j++)
      out[j] = (float)strata__apply_d(a->fn, x[j * step[0]], a->scalar, 0);
  } else {
    for (int64_t j = 0; j < len; j++)
      out[j] = (float)strata__apply_d(a->fn, x[j * step[0]], y[j * step[1]], 0);
  }
}

void strata__ew_cpu(const struct strata__ew_args *a, void *out, const void *const *in)
{
  int64_t n = product(a->shape, a->ndim);
  if (n == 0)
    return;
  int nd = a->ndim, narrays = a->nops - (a->scalar_at >= 0), fast = all_float32(a);
  int64_t len = nd > 0 ? a->shape[nd - 1] : 1;
  int64_t idx[STRATA__ND_MAXDIMS] = {0}, off[STRATA__EW_MAXOPS] = {0}, step[STRATA__EW_MAXOPS];
  for (int k = 0; k < narrays; k++)
    step[k] = nd > 0 ? a->stride[k][nd - 1] : 0;
  for (int64_t base = 0; base < n; base += len) {
    if (fast) {
      ew_row_f32(a, (float *)out + base, in, off, step, len);
    } else {
      int64_t o[STRATA__EW_MAXOPS];
      for (int64_t j = 0; j < len; j++) {
        for (int k = 0; k < narrays; k++)
          o[k] = off[k] + j * step[k];
        strata__ew_element(a, in, o, out, base + j);
      }
    }
    advance(nd - 1, a->shape, idx, narrays, a->stride, off);
  }
}

void strata__view_cpu(const struct strata__view_args *a, void *dst, const void *src)
{
  int64_t n = product(a->shape, a->ndim);
  if (n == 0)
    return;
  int nd = a->ndim;
  int64_t len = nd > 0 ? a->shape[nd - 1] : 1;
  int64_t ss = nd > 0 ? a->src_stride[nd - 1] : 0, ds = nd > 0 ? a->dst_stride[nd - 1] : 0;
  int64_t stride[2][STRATA__ND_MAXDIMS], idx[STRATA__ND_MAXDIMS] = {0};
  int64_t off[2] = {a->src_offset, a->dst_offset};
  memcpy(stride[0], a->src_stride, sizeof stride[0]);
  memcpy(stride[1], a->dst_stride, sizeof stride[1]);
  size_t e = (size_t)a->elem;
  for (int64_t done = 0; done < n; done += len) {
    const char *s = (const char *)src + off[0] * (int64_t)e;
    char *d = (char *)dst + off[1] * (int64_t)e;
    if (ss == 1 && ds == 1)
      memcpy(d, s, (size_t)len * e);
    else if (e == 4)
      for (int64_t j = 0; j < len; j++)
        ((uint32_t *)d)[j * ds] = ((const uint32_t *)s)[j * ss];
    else if (e == 8)
      for (int64_t j = 0; j < len; j++)
        ((uint64_t *)d)[j * ds] = ((const uint64_t *)s)[j * ss];
    else
      for (int64_t j = 0; j < len; j++)
        memcpy(d + j * ds * (int64_t)e, s + j * ss * (int64_t)e, e);
    advance(nd - 1, a->shape, idx, 2, stride, off);
  }
}

void strata__reduce_cpu(const struct strata__reduce_args *a, void *out, const void *in)
{
  int64_t nkeep = product(a->keep_shape, a->nkeep), nred = product(a->red_shape, a->nred);
  int64_t kidx[STRATA__ND_MAXDIMS] = {0}, koff = 0;
  for (int64_t k = 0; k < nkeep; k++) {
    int64_t ridx[STRATA__ND_MAXDIMS] = {0}, roff = 0;
    int64_t acc_i = a->fn == STRATA_FN_PROD;
    double acc_d = a->fn == STRATA_FN_PROD;
    for (int64_t r = 0; r < nred; r++) {
      int64_t at = koff + roff;
      if (a->exact_int) {
        int64_t v = strata__load_i(in, a->in_dtype, at);
        acc_i = r == 0 && a->fn != STRATA_FN_SUM && a->fn != STRATA_FN_PROD
                    ? v
                    : strata__apply_i(a->fn == STRATA_FN_SUM    ? STRATA_FN_ADD
                                      : a->fn == STRATA_FN_PROD ? STRATA_FN_MUL
                                      : a->fn == STRATA_FN_MIN  ? STRATA_FN_MINIMUM
                                                                : STRATA_FN_MAXIMUM,
                                      acc_i, v, 0);
      } else {
        double v = strata__load_d(in, a->in_dtype, at);
        acc_d = r == 0 && (a->fn == STRATA_FN_MIN || a->fn == STRATA_FN_MAX)
                    ? v
                    : strata__apply_d(a->fn == STRATA_FN_PROD  ? STRATA_FN_MUL
                                      : a->fn == STRATA_FN_MIN ? STRATA_FN_MINIMUM
                                      : a->fn == STRATA_FN_MAX ? STRATA_FN_MAXIMUM
                                                               : STRATA_FN_ADD,
                                      acc_d, v, 0);
      }
      advance(a->nred, a->red_shape, ridx, 1, &a->red_stride, &roff);
    }
    if (a->exact_int)
      strata__store_i(out, a->out_dtype, k, acc_i);
    else
      strata__store_d(out, a->out_dtype, k, a->fn == STRATA_FN_MEAN ? acc_d / (double)nred : acc_d);
    advance(a->nkeep, a->keep_shape, kidx, 1, &a->keep_stride, &koff);
  }
}

void strata__affine_fill_cpu(const struct strata__affine_fill_args *a, void *out)
{
  for (int64_t i = 0; i < a->n; i++)
    strata__store_d(out, a->dtype, i, a->start + (double)i * a->step);
}

void strata__tri_cpu(const struct strata__tri_args *a, void *out, const void *in)
{
  size_t e = (size_t)a->elem;
  for (int64_t m = 0; m < a->batch * a->rows; m++) {
    int64_t i = m % a->rows;
    /* kept columns: [lo, hi) */
    int64_t lo = a->upper ? i + a->k : 0, hi = a->upper ? a->cols : i + a->k + 1;
    lo = lo < 0 ? 0 : lo > a->cols ? a->cols : lo;
    hi = hi < lo ? lo : hi > a->cols ? a->cols : hi;
    char *d = (char *)out + (size_t)(m * a->cols) * e;
    const char *s = (const char *)in + (size_t)(m * a->cols) * e;
    memset(d, 0, (size_t)lo * e);
    memcpy(d + lo * (int64_t)e, s + lo * (int64_t)e, (size_t)(hi - lo) * e);
    memset(d + hi * (int64_t)e, 0, (size_t)(a->cols - hi) * e);
  }
}

void strata__matmul_cpu(const struct strata__matmul_args *a, void *c, const void *x, const void *y)
{
  int64_t m = a->m, k = a->k, n = a->n;
  size_t e = strata_dtype_size((strata_dtype)a->dtype);
  for (int64_t b = 0; b < a->batch; b++) {
    char *cb = (char *)c + (size_t)(b * m * n) * e;
    const char *xb = (const char *)x + (size_t)(b * a->a_step) * e;
    const char *yb = (const char *)y + (size_t)(b * a->b_step) * e;
    if (m * n == 0)
      continue;
    if (k == 0) {
      memset(cb, 0, (size_t)(m * n) * e);
    } else if (a->dtype == STRATA_FLOAT32) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f,
                  (const float *)xb, (int)k, (const float *)yb, (int)n, 0.0f, (float *)cb, (int)n);
    } else if (a->dtype == STRATA_FLOAT64) {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0,
                  (const double *)xb, (int)k, (const double *)yb, (int)n, 0.0, (double *)cb,
                  (int)n);
    } else {
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
          int64_t acc = 0;
          for (int64_t l = 0; l < k; l++)
            acc = strata__apply_i(STRATA_FN_ADD, acc,
                                  strata__apply_i(STRATA_FN_MUL,
                                                  strata__load_i(xb, a->dtype, i * k + l),
                                                  strata__load_i(yb, a->dtype, l * n + j), 0),
                                  0);
          strata__store_i(cb, a->dtype, i * n + j, acc);
        }
    }
  }
}

void strata__take_cpu(const struct strata__take_args *a, void *out, const void *in, const void *idx)
{
  size_t row = (size_t)a->inner * (size_t)a->elem;
  for (int64_t o = 0; o < a->outer; o++)
    for (int64_t j = 0; j < a->nidx; j++) {
      int64_t v = strata__load_i(idx, a->idx_dtype, j);
      if (a->mode == 0)
        v = (v % a->len + a->len) % a->len;
      else
        v = v < 0 ? 0 : v >= a->len ? a->len - 1 : v;
      memcpy((char *)out + (size_t)(o * a->nidx + j) * row,
             (const char *)in + (size_t)(o * a->len + v) * row, row);
    }
}

int64_t strata__count_nonzero_cpu(int32_t dtype, int64_t n, const void *in)
{
  int64_t count = 0;
  for (int64_t i = 0; i < n; i++)
    count += strata__load_d(in, dtype, i) != 0;
  return count;
}

void strata__flatnonzero_cpu(int32_t dtype, int64_t n, const void *in, int64_t *out)
{
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++)
    if (strata__load_d(in, dtype, i) != 0)
      out[k++] = i;
}
