/* The CPU network kernels against naive direct references: conv3d for
 * kernel sizes 1-5 (odd and even), dilations 1-2, 1-3 channels, with and
 * without bias, with im2col space for one plane or the whole volume; and
 * the U-Net of cnn_reference.h, which uses every layer type. Tolerance:
 * 1e-4 relative (float32 sums of up to a few hundred terms). */
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

int main(void)
{
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
