/* Model benchmark: conv3d (im2col + SGEMM) GFLOP/s against one OpenBLAS
 * SGEMM of the equivalent matrix sizes (M = out channels, N = n^3,
 * K = in channels * k^3) in the same run, both single-threaded as inside a
 * StarPU worker (target ratio >= 0.5). That shape is the convolution's own,
 * GEMV-like for few channels, so each row also gives a square SGEMM of the
 * same FLOPs (ratio_vs_square: how far the convolution is from what the
 * core computes at a good shape). And the default model's inference time
 * per 64^3 array, as a Strata task. Prints JSON with medians.
 *
 *   bench_model [--rounds R] [--quick]   (--quick: extents of 16, to check it runs)
 */
#include <cblas.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata/strata.h>

#include "bench_util.h"

#include "kernels/cnn_kernels.h"

static float *filled(size_t count)
{
  float *a = malloc(count * sizeof *a);
  for (size_t i = 0; i < count; i++)
    a[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
  return a;
}

static cJSON *bench_conv(int cin, int cout, int k, int64_t n, int rounds)
{
  int64_t vol = n * n * n, rows = (int64_t)cin * k * k * k;
  size_t col_floats = (size_t)4 << 20; /* as the network runner's slabs */
  float *in = filled((size_t)(cin * vol)), *w = filled((size_t)(cout * rows));
  float *out = malloc((size_t)(cout * vol) * sizeof *out), *col = malloc(col_floats * sizeof *col);
  float *b = filled((size_t)(rows * vol));
  double *tc = malloc((size_t)rounds * sizeof *tc), *tg = malloc((size_t)rounds * sizeof *tg),
         *ts = malloc((size_t)rounds * sizeof *ts);
  /* The square SGEMM of (about) the same FLOPs, at least 64 and at most 2048 wide. */
  int sq = 64;
  while (sq < 2048 && 2.0 * sq * sq * sq < 2.0 * cout * (double)rows * (double)vol)
    sq *= 2;
  float *sa = filled((size_t)sq * sq), *sb = filled((size_t)sq * sq),
        *sc = malloc((size_t)sq * sq * sizeof *sc);
  for (int r = 0; r < rounds; r++) {
    double t0 = bench_now();
    strata__conv3d_cpu(in, cin, n, w, NULL, cout, k, 1, out, col, col_floats);
    double t1 = bench_now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, cout, (int)vol, (int)rows, 1.0f, w,
                (int)rows, b, (int)vol, 0.0f, out, (int)vol);
    double t2 = bench_now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, sq, sq, sq, 1.0f, sa, sq, sb, sq, 0.0f,
                sc, sq);
    tc[r] = t1 - t0;
    tg[r] = t2 - t1;
    ts[r] = bench_now() - t2;
  }
  double flops = 2.0 * cout * (double)rows * (double)vol;
  double conv = flops / bench_median(tc, rounds) * 1e-9,
         gemm = flops / bench_median(tg, rounds) * 1e-9;
  cJSON *row = cJSON_CreateObject();
  cJSON_AddNumberToObject(row, "in_channels", cin);
  cJSON_AddNumberToObject(row, "out_channels", cout);
  cJSON_AddNumberToObject(row, "kernel", k);
  cJSON_AddNumberToObject(row, "n", (double)n);
  cJSON_AddNumberToObject(row, "conv3d_gflops", conv);
  cJSON_AddNumberToObject(row, "sgemm_gflops", gemm);
  cJSON_AddNumberToObject(row, "ratio", conv / gemm);
  const double square = 2.0 * sq * sq * (double)sq / bench_median(ts, rounds) * 1e-9;
  cJSON_AddNumberToObject(row, "square_sgemm_n", sq);
  cJSON_AddNumberToObject(row, "square_sgemm_gflops", square);
  cJSON_AddNumberToObject(row, "ratio_vs_square", conv / square);
  free(in), free(w), free(out), free(col), free(b), free(tc), free(tg), free(ts);
  free(sa), free(sb), free(sc);
  return row;
}

/* Default model on a 64^3 density array, one task per inference. */
static cJSON *bench_inference(int rounds)
{
  strata_model *m;
  if (strata_model_load_default(&m)) {
    fprintf(stderr, "bench_model: %s\n", strata_error_message());
    return cJSON_CreateNull();
  }
  int64_t shape[4] = {1, 64, 64, 64};
  strata_array *rho, *prob;
  strata_array_create(4, shape, STRATA_FLOAT32, &rho);
  strata_array_create(4, shape, STRATA_FLOAT32, &prob);
  float *p;
  strata_array_acquire(rho, STRATA_WRITE, (void **)&p);
  for (int64_t i = 0; i < 64 * 64 * 64; i++)
    p[i] = 1.0f + (float)(i % 7) * 0.1f;
  strata_array_release(rho);
  double *t = malloc((size_t)rounds * sizeof *t);
  strata_model_apply(m, rho, prob); /* warm up: scratch allocation */
  strata_wait_all();
  for (int r = 0; r < rounds; r++) {
    double t0 = bench_now();
    strata_model_apply(m, rho, prob);
    strata_wait_all();
    t[r] = bench_now() - t0;
  }
  cJSON *row = cJSON_CreateObject();
  cJSON_AddStringToObject(row, "model", strata_model_name(m));
  cJSON_AddNumberToObject(row, "n", 64);
  cJSON_AddNumberToObject(row, "seconds_per_array", bench_median(t, rounds));
  free(t);
  strata_array_destroy(rho);
  strata_array_destroy(prob);
  strata_model_destroy(m);
  return row;
}

int main(int argc, char **argv)
{
  int rounds = 5, quick = 0;
  if (bench_options(argc, argv, "bench_model", &rounds, &quick))
    return 2;
  if (rounds < 1)
    return 2;
  int ret = strata_init(&argc, &argv, NULL);
  if (ret) {
    fprintf(stderr, "bench_model: %s\n", strata_strerror(ret));
    return ret == STRATA_ENODEV ? 77 : 1;
  }
  openblas_set_num_threads(1);
  cJSON *root = cJSON_CreateObject(), *convs = cJSON_AddArrayToObject(root, "conv3d");
  cJSON_AddStringToObject(root, "benchmark", "model");
  cJSON_AddNumberToObject(root, "rounds", rounds);
  const int configs[][4] = {{1, 1, 7, 64}, {8, 8, 3, 64}, {16, 16, 3, 64}, {32, 32, 3, 32}};
  double worst = 1e9;
  for (size_t c = 0; c < sizeof configs / sizeof *configs; c++) {
    cJSON *row =
        bench_conv(configs[c][0], configs[c][1], configs[c][2], quick ? 16 : configs[c][3], rounds);
    double ratio = cJSON_GetObjectItem(row, "ratio")->valuedouble;
    worst = ratio < worst ? ratio : worst;
    cJSON_AddItemToArray(convs, row);
  }
  cJSON_AddNumberToObject(root, "worst_ratio", worst);
  cJSON_AddNumberToObject(root, "target_ratio", 0.5);
  cJSON_AddItemToObject(root, "inference", bench_inference(rounds));
  bench_print_json(root);
  strata_finalize();
  return 0;
}
