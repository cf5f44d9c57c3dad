/* The CPU network kernels against naive direct references: conv3d for
 * kernel sizes 1-5 (odd and even), dilations 1-2, 1-3 channels, with and
 * without bias, with im2col space for one plane or the whole volume; the
 * U-Net of cnn_reference.h, which uses every layer type; and 2x2x2 max
 * pooling (its own row loop) on even and odd extents with NaNs, which win.
 * Tolerance: 1e-4 relative (float32 sums of up to a few hundred terms);
 * pooling exact. */
#include "check.h"
#include "cnn_reference.h"

static void check_conv(int cin, int cout, int k, int d, int64_t n, int with_bias, size_t col)
{
  int64_t v = n * n * n;
  float *in = malloc((size_t)(cin * v) * 4), *w = malloc((size_t)(cout * cin * k * k * k) * 4);
  float *b = malloc((size_t)cout * 4), *got = malloc((size_t)(cout * v) * 4);
  float *want = malloc((size_t)(cout * v) * 4);
  size_t col_floats = col ? col : (size_t)(cin * k * k * k * n * n);
  float *scratch = malloc(((size_t)(cin * k * k * k) * (size_t)v + 1) * 4);
  ref_random(in, cin * v, 1);
  ref_random(w, cout * cin * k * k * k, 2);
  ref_random(b, cout, 3);
  strata__conv3d_cpu(in, cin, n, w, with_bias ? b : NULL, cout, k, d, got, scratch, col_floats);
  ref_conv3d(in, cin, n, w, with_bias ? b : NULL, cout, k, d, want);
  double err = ref_max_error(got, want, cout * v);
  if (err > 1e-4)
    fprintf(stderr, "conv3d cin %d cout %d k %d d %d n %lld: error %g\n", cin, cout, k, d,
            (long long)n, err);
  CHECK(err <= 1e-4);
  free(in), free(w), free(b), free(got), free(want), free(scratch);
}

/* A network of one 2x2x2 stride-2 max pooling of 2 channels on n^3, with
 * a NaN in one window, against the largest of each window's 8 inputs. */
static void check_halving(int64_t n)
{
  struct strata__layer L = ref_layer(STRATA__LAYER_MAXPOOL, -1, -1, 2, 0, 0, 0, -1, 0);
  strata__pool_halving(&L);
  const struct strata__network net = {&L, 1, 2, NULL};
  const int64_t m = n / 2, v = n * n * n;
  float *in = malloc((size_t)(2 * v) * 4), *got = malloc((size_t)(2 * m * m * m) * 4);
  float *scratch = malloc(strata__cnn_scratch_floats(&net, n) * 4 + 4);
  ref_random(in, 2 * v, 5);
  in[v + (2 * n + 3) * n + 2] = NAN; /* channel 1, cell (x 2, y 3, z 2): output (1, 1, 1) */
  strata__cnn_forward_cpu(&net, NULL, in, n, got, scratch);
  int64_t wrong = 0;
  for (int64_t c = 0; c < 2; c++)
    for (int64_t z = 0; z < m; z++)
      for (int64_t y = 0; y < m; y++)
        for (int64_t x = 0; x < m; x++) {
          float want = -INFINITY;
          int nan = 0;
          for (int k = 0; k < 8; k++) {
            float a = in[c * v + ((2 * z + k / 4) * n + 2 * y + k / 2 % 2) * n + 2 * x + k % 2];
            nan |= a != a;
            want = a > want ? a : want;
          }
          float g = got[((c * m + z) * m + y) * m + x];
          wrong += nan ? g == g : g != want;
        }
  if (wrong)
    fprintf(stderr, "2x2x2 max pooling on %lld^3: %lld wrong cells\n", (long long)n,
            (long long)wrong);
  CHECK_EQ(wrong, 0);
  free(in), free(got), free(scratch);
}

int main(void)
{
  check_halving(8);
  check_halving(7);
  for (int k = 1; k <= 5; k++)
    for (int d = 1; d <= 2; d++)
      for (int cin = 1; cin <= 3; cin += 2)
        for (int cout = 1; cout <= 4; cout += 3) {
          check_conv(cin, cout, k, d, 7, (k + cout) % 2, 0);
          check_conv(cin, cout, k, d, 6, 1, 1); /* one plane per im2col slab */
        }
  check_conv(2, 2, 1, 1, 9, 1, 0); /* tiny pointwise: direct loops */
  check_conv(4, 3, 1, 1, 9, 0, 0); /* pointwise through SGEMM */

  struct strata__layer L[UNET_LAYERS];
  float *w;
  int64_t nw, n = 8, v = n * n * n;
  struct strata__network net = ref_unet(L, &w, &nw);
  float *in = malloc((size_t)(2 * v) * 4), *got = malloc((size_t)(2 * v) * 4);
  float *want = malloc((size_t)(2 * v) * 4);
  float *scratch = malloc(strata__cnn_scratch_floats(&net, n) * 4);
  ref_random(in, 2 * v, 11);
  strata__cnn_forward_cpu(&net, w, in, n, got, scratch);
  ref_unet_forward(w, in, n, want);
  double err = ref_max_error(got, want, 2 * v);
  fprintf(stderr, "U-Net forward: max relative error %g\n", err);
  CHECK(err <= 1e-4);
  /* multiply-adds: conv layers only */
  double flops = 2.0 * (3.0 * 54 * v + 4.0 * 81 * (v / 8) + 2.0 * 7 * v);
  CHECK(fabs(strata__cnn_flops(&net, n) - flops) < 1);
  free(w), free(in), free(got), free(want), free(scratch);
  return check_status();
}
