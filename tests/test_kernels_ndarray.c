/* CPU kernels of the array operations alone, without StarPU: float32 rows
 * of + - * /, -x, |x| and sqrt bit for bit against double arithmetic, known answers
 * for broadcasting with a leading scalar, a strided copy into an offset
 * destination, a reduction over two axes, take with both modes, triangles,
 * an integer matrix product and flatnonzero. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "kernels/ndarray_kernels.h"

static void check_elementwise(void)
{
  /* out [2, 3] = 10 - a [2, 1] (int32, scalar first), computed in int64 */
  int32_t a[2] = {1, -4}, out[6];
  struct strata__ew_args e = {.fn = STRATA_FN_SUB,
                              .nops = 2,
                              .scalar_at = 0,
                              .exact_int = 1,
                              .ndim = 2,
                              .out_dtype = STRATA_INT32,
                              .in_dtype = {STRATA_INT32},
                              .scalar = 10,
                              .shape = {2, 3},
                              .stride = {{1, 0}}};
  const void *in[1] = {a};
  strata__ew_cpu(&e, out, in);
  const int32_t want[6] = {9, 9, 9, 14, 14, 14};
  CHECK(memcmp(out, want, sizeof want) == 0);
}

/* The reference result of a op b for float32 operands: computed in double,
 * rounded once. */
static float reference(strata_fn fn, double a, double b)
{
  switch (fn) {
  case STRATA_FN_ADD: return (float)(a + b);
  case STRATA_FN_SUB: return (float)(a - b);
  case STRATA_FN_MUL: return (float)(a * b);
  default: return (float)(a / b);
  }
}

/* float32 + - * / on rows of 37 (no whole number of SIMD vectors),
 * contiguous (the vectorised loops) and with a stride of 2, the scalar
 * first, second or absent, against the reference, bit for bit. The scalar
 * 0.1 has no float32 value: computing in float would differ. */
static void check_float32_rows(void)
{
  enum { N = 37 };
  float x[2 * N], y[2 * N], out[N];
  for (int i = 0; i < 2 * N; i++) {
    x[i] = (float)(i * 1.37 - 20);
    y[i] = (float)(3.1 - i * 0.71);
  }
  x[4] = 0.0f / 0.0f, y[6] = 1.0f / 0.0f, y[8] = 0;
  const strata_fn fns[4] = {STRATA_FN_ADD, STRATA_FN_SUB, STRATA_FN_MUL, STRATA_FN_DIV};
  const double s = 0.1;
  int float_differs = 0;
  for (int f = 0; f < 4; f++)
    for (int scalar_at = -1; scalar_at <= 1; scalar_at++)
      for (int step = 1; step <= 2; step++) {
        struct strata__ew_args e = {.fn = fns[f],
                                    .nops = 2,
                                    .scalar_at = scalar_at,
                                    .ndim = 1,
                                    .out_dtype = STRATA_FLOAT32,
                                    .in_dtype = {STRATA_FLOAT32, STRATA_FLOAT32},
                                    .scalar = s,
                                    .shape = {N},
                                    .stride = {{step}, {step}}};
        const void *in[2] = {x, y};
        strata__ew_cpu(&e, out, in);
        for (int j = 0; j < N; j++) {
          double a = x[j * step], b = scalar_at < 0 ? y[j * step] : s;
          float want = scalar_at == 0 ? reference(fns[f], s, a) : reference(fns[f], a, b);
          CHECK(memcmp(&out[j], &want, sizeof want) == 0);
          if (scalar_at == 1 && fns[f] == STRATA_FN_MUL)
            float_differs |= want != x[j * step] * (float)s;
        }
      }
  CHECK(float_differs);
  /* -x, |x| and sqrt(x) (a NaN below 0), contiguous */
  const strata_fn unary[3] = {STRATA_FN_NEG, STRATA_FN_ABS, STRATA_FN_SQRT};
  for (int f = 0; f < 3; f++) {
    struct strata__ew_args e = {.fn = unary[f],
                                .nops = 1,
                                .scalar_at = -1,
                                .ndim = 1,
                                .out_dtype = STRATA_FLOAT32,
                                .in_dtype = {STRATA_FLOAT32},
                                .shape = {N},
                                .stride = {{1}}};
    const void *in[1] = {x};
    strata__ew_cpu(&e, out, in);
    for (int j = 0; j < N; j++) {
      double a = x[j];
      float want = (float)(f == 0 ? -a : f == 1 ? fabs(a) : sqrt(a));
      CHECK(memcmp(&out[j], &want, sizeof want) == 0 || (isnan(want) && isnan(out[j])));
    }
  }
}

static void check_view_reduce(void)
{
  /* dst[1 + 3 j + i] = src[i * 2 + j] for a 2 x 2 source: a transpose */
  int64_t src[4] = {1, 2, 3, 4}, dst[8] = {0};
  struct strata__view_args v = {.ndim = 2,
                                .elem = 8,
                                .src_offset = 0,
                                .dst_offset = 1,
                                .shape = {2, 2},
                                .src_stride = {1, 2},
                                .dst_stride = {3, 1}};
  strata__view_cpu(&v, dst, src);
  const int64_t want[8] = {0, 1, 3, 0, 2, 4, 0, 0};
  CHECK(memcmp(dst, want, sizeof want) == 0);
  /* sum over axes 0 and 2 of [2, 2, 2] (0..7): keep axis 1 -> {0+1+4+5, 2+3+6+7} */
  uint8_t x[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  int64_t sum[2];
  struct strata__reduce_args r = {.fn = STRATA_FN_SUM,
                                  .in_dtype = STRATA_UINT8,
                                  .out_dtype = STRATA_INT64,
                                  .exact_int = 1,
                                  .nkeep = 1,
                                  .nred = 2,
                                  .keep_shape = {2},
                                  .keep_stride = {2},
                                  .red_shape = {2, 2},
                                  .red_stride = {4, 1}};
  strata__reduce_cpu(&r, sum, x);
  CHECK_EQ(sum[0], 10);
  CHECK_EQ(sum[1], 18);
}

static void check_take_tri_matmul_nonzero(void)
{
  float x[6] = {0, 1, 2, 3, 4, 5}, out[4];
  int32_t idx[2] = {-1, 9};
  struct strata__take_args t = {
      .elem = 4, .idx_dtype = STRATA_INT32, .mode = 0, .outer = 2, .len = 3, .inner = 1, .nidx = 2};
  strata__take_cpu(&t, out, x, idx); /* wrap: -1 -> 2, 9 -> 0 */
  CHECK(out[0] == 2 && out[1] == 0 && out[2] == 5 && out[3] == 3);
  t.mode = 1; /* clip: -1 -> 0, 9 -> 2 */
  strata__take_cpu(&t, out, x, idx);
  CHECK(out[0] == 0 && out[1] == 2 && out[2] == 3 && out[3] == 5);

  float tri[6];
  struct strata__tri_args ta = {.elem = 4, .upper = 0, .k = 0, .batch = 1, .rows = 2, .cols = 3};
  strata__tri_cpu(&ta, tri, x);
  CHECK(tri[0] == 0 && tri[1] == 0 && tri[2] == 0 && tri[3] == 3 && tri[4] == 4 && tri[5] == 0);

  int8_t a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, c[4];
  struct strata__matmul_args m = {.dtype = STRATA_INT8, .m = 2, .k = 2, .n = 2, .batch = 1};
  strata__matmul_cpu(&m, c, a, b); /* {19, 22, 43, 50}: 43 and 50 fit int8 */
  CHECK(c[0] == 19 && c[1] == 22 && c[2] == 43 && c[3] == 50);

  double z[5] = {0, -1, 0, 0.5, 0};
  int64_t pos[2];
  CHECK_EQ(strata__count_nonzero_cpu(STRATA_FLOAT64, 5, z), 2);
  strata__flatnonzero_cpu(STRATA_FLOAT64, 5, z, pos);
  CHECK(pos[0] == 1 && pos[1] == 3);
}

int main(void)
{
  check_float32_rows();
  check_elementwise();
  check_view_reduce();
  check_take_tri_matmul_nonzero();
  if (check_failures)
    fprintf(stderr, "%d check(s) failed\n", check_failures);
  return check_failures ? 1 : 0;
}
