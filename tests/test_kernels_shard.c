/* Box kernels (copy, merge, fill) against element-by-element references on
 * boxes of 0 to 4 dimensions, and the example-op kernels against direct
 * sums: the linear layer (OpenBLAS) and the convolution window with its
 * offsets into a larger, clipped or shifted input buffer. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "kernels/box_kernels.h"
#include "kernels/shard_ops_kernels.h"

static int64_t offset_of(int ndim, const int64_t *shape, const int64_t *start, const int64_t *at)
{
  int64_t off = 0;
  for (int d = 0; d < ndim; d++)
    off = off * shape[d] + start[d] + at[d];
  return off;
}

/* Every cell of the box, by coordinates. */
static void check_box(int ndim, const int64_t *extent, const struct strata__box *dst,
                      const struct strata__box *src)
{
  int64_t dn = 1, sn = 1, cells = 1;
  for (int d = 0; d < ndim; d++) {
    dn *= dst->shape[d];
    sn *= src->shape[d];
    cells *= extent[d];
  }
  int32_t *s = malloc((size_t)sn * 4), *got = malloc((size_t)dn * 4),
          *want = malloc((size_t)dn * 4), *merged = malloc((size_t)dn * 4);
  for (int64_t i = 0; i < sn; i++)
    s[i] = (int32_t)(i * 7 + 3);
  for (int64_t i = 0; i < dn; i++)
    got[i] = want[i] = merged[i] = -(int32_t)i;
  for (int64_t c = 0; c < cells; c++) {
    int64_t at[8], rest = c;
    for (int d = ndim - 1; d >= 0; d--) {
      at[d] = rest % extent[d];
      rest /= extent[d];
    }
    want[offset_of(ndim, dst->shape, dst->start, at)] =
        s[offset_of(ndim, src->shape, src->start, at)];
  }
  strata__box_copy_cpu(ndim, extent, 4, got, dst, s, src);
  CHECK(memcmp(got, want, (size_t)dn * 4) == 0);
  /* MAX of -i and a non-negative source is the copy. */
  strata__box_merge_cpu(ndim, extent, STRATA_MAX, STRATA_INT32, merged, dst, s, src);
  CHECK(memcmp(merged, want, (size_t)dn * 4) == 0);
  free(s);
  free(got);
  free(want);
  free(merged);
}

static void check_boxes(void)
{
  check_box(0, NULL, &(struct strata__box){{0}, {0}}, &(struct strata__box){{0}, {0}});
  check_box(1, (int64_t[]){5}, &(struct strata__box){{9}, {2}}, &(struct strata__box){{7}, {1}});
  check_box(2, (int64_t[]){3, 4}, &(struct strata__box){{5, 6}, {1, 2}},
            &(struct strata__box){{4, 9}, {0, 5}});
  check_box(3, (int64_t[]){2, 3, 4}, &(struct strata__box){{3, 5, 6}, {1, 1, 2}},
            &(struct strata__box){{2, 4, 9}, {0, 1, 5}});
  check_box(4, (int64_t[]){2, 1, 3, 2}, &(struct strata__box){{3, 2, 5, 4}, {1, 1, 2, 1}},
            &(struct strata__box){{2, 3, 3, 2}, {0, 2, 0, 0}});
  check_box(2, (int64_t[]){0, 4}, &(struct strata__box){{5, 6}, {1, 2}},
            &(struct strata__box){{4, 9}, {0, 5}}); /* empty: nothing moves */
  double v = 2.5, d[7];
  strata__fill_cpu(d, 7, sizeof v, &v);
  for (int i = 0; i < 7; i++)
    CHECK(d[i] == 2.5);
}

static void check_linear(void)
{
  enum { R = 5, K = 7, C = 3 };
  float x[R * K], w[K * C], bias[C], y[R * C];
  for (int i = 0; i < R * K; i++)
    x[i] = (float)(i % 5) - 2;
  for (int i = 0; i < K * C; i++)
    w[i] = (float)(i % 3) * 0.5f;
  for (int i = 0; i < C; i++)
    bias[i] = (float)i;
  strata__linear_cpu(R, K, C, x, w, bias, y);
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) {
      double acc = bias[c];
      for (int k = 0; k < K; k++)
        acc += x[r * K + k] * w[k * C + c];
      CHECK(fabs(y[r * C + c] - acc) < 1e-5);
    }
}

/* The convolution reads x at (i + a + off_h, j + b + off_w); cells outside
 * the buffer count as 0. */
static void check_conv2d(void)
{
  float x[6 * 7], k[3 * 2], y[4 * 5];
  for (int i = 0; i < 42; i++)
    x[i] = (float)((i * 5) % 11) - 5;
  for (int i = 0; i < 6; i++)
    k[i] = (float)i - 2.5f;
  const int64_t offs[][2] = {{0, 0}, {-1, 2}, {3, -2}};
  for (int o = 0; o < 3; o++) {
    struct strata__conv2d_shape s = {4, 5, 6, 7, 3, 2, offs[o][0], offs[o][1]};
    strata__conv2d_cpu(&s, x, k, y);
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 5; j++) {
        float acc = 0;
        for (int a = 0; a < 3; a++)
          for (int b = 0; b < 2; b++) {
            int p = i + a + (int)s.off_h, q = j + b + (int)s.off_w;
            if (p >= 0 && p < 6 && q >= 0 && q < 7)
              acc += k[a * 2 + b] * x[p * 7 + q];
          }
        CHECK(y[i * 5 + j] == acc);
      }
  }
  float xs[2 * 3 * 2] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, ys[4] = {1, 1, 1, 1};
  strata__axial_sum_cpu(2, 3, 2, xs, ys);
  CHECK(ys[0] == 10 && ys[1] == 13 && ys[2] == 28 && ys[3] == 31);
}

int main(void)
{
  check_boxes();
  check_linear();
  check_conv2d();
  return check_status();
}
