/* Sharded linear layer y = x w + bias against one BLAS call on the whole
 * problem, in the same run: 1 to 16 shards along the batch, the sharding
 * the cost model chooses, and the single call with OpenBLAS threaded over
 * as many threads as StarPU has workers (and with one thread). Medians of
 * the rounds; JSON on stdout.
 *   bench_sharded [--rounds R] [--quick]   (--quick: a small problem) */
#include <cblas.h>
#include <string.h>

#include <strata/starpu.h>
#include <strata/strata.h>

#include "bench_util.h"

static strata_array *make(int64_t rows, int64_t cols, float value)
{
  strata_array *a;
  int64_t shape[2] = {rows, cols};
  if (strata_array_create(cols ? 2 : 1, shape, STRATA_FLOAT32, &a))
    exit(1);
  float *p;
  strata_array_acquire(a, STRATA_WRITE, (void **)&p);
  for (int64_t i = 0; i < strata_array_nelems(a); i++)
    p[i] = value * (float)((i % 17) - 8);
  strata_array_release(a);
  return a;
}

/* One sharded run, to completion. */
static double time_sharded(const strata_shard_op *op, const strata_sharding *s, strata_array *y)
{
  double t0 = bench_now();
  if (strata_launch_sharded(op, s, 0))
    exit(1);
  strata_array_acquire(y, STRATA_READ, NULL);
  double t = bench_now() - t0;
  strata_array_release(y);
  return t;
}

/* The single call: bias rows, then one sgemm on `threads` threads. */
static double time_blas(strata_array *x, strata_array *w, strata_array *bias, strata_array *y,
                        int64_t rows, int64_t inner, int64_t cols, int threads)
{
  float *px, *pw, *pb, *py;
  strata_array_acquire(x, STRATA_READ, (void **)&px);
  strata_array_acquire(w, STRATA_READ, (void **)&pw);
  strata_array_acquire(bias, STRATA_READ, (void **)&pb);
  strata_array_acquire(y, STRATA_WRITE, (void **)&py);
  openblas_set_num_threads(threads);
  starpu_pause(); /* idle StarPU workers would compete with OpenBLAS's threads */
  double t0 = bench_now();
  for (int64_t r = 0; r < rows; r++)
    memcpy(py + r * cols, pb, (size_t)cols * sizeof *py);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)cols, (int)inner, 1.0f, px,
              (int)inner, pw, (int)cols, 1.0f, py, (int)cols);
  double t = bench_now() - t0;
  starpu_resume();
  openblas_set_num_threads(1);
  strata_array_release(x);
  strata_array_release(w);
  strata_array_release(bias);
  strata_array_release(y);
  return t;
}

/* Median seconds of `rounds` runs after one warm-up; fn(ctx) runs once. */
static double median_of(int rounds, double (*fn)(void *), void *ctx)
{
  double *t = malloc((size_t)rounds * sizeof *t);
  fn(ctx);
  for (int r = 0; r < rounds; r++)
    t[r] = fn(ctx);
  double m = bench_median(t, rounds);
  free(t);
  return m;
}

struct job {
  strata_shard_op op;
  strata_sharding sharding;
  strata_array *x, *w, *bias, *y;
  int64_t rows, inner, cols;
  int threads;
};

static double run_sharded(void *ctx)
{
  struct job *j = ctx;
  return time_sharded(&j->op, &j->sharding, j->y);
}

static double run_blas(void *ctx)
{
  struct job *j = ctx;
  return time_blas(j->x, j->w, j->bias, j->y, j->rows, j->inner, j->cols, j->threads);
}

int main(int argc, char **argv)
{
  int rounds = 5, quick = 0;
  if (bench_options(argc, argv, "bench_sharded", &rounds, &quick))
    return 2;
  if (strata_init(&argc, &argv, NULL))
    return 1;
  struct job j = {
      .rows = quick ? 256 : 4096, .inner = quick ? 128 : 1024, .cols = quick ? 128 : 1024};
  j.x = make(j.rows, j.inner, 0.01f);
  j.w = make(j.inner, j.cols, 0.02f);
  j.bias = make(j.cols, 0, 0.5f);
  j.y = make(j.rows, j.cols, 0);
  if (strata_shard_op_linear(j.x, j.w, j.bias, j.y, &j.op))
    return 1;
  int workers = (int)starpu_worker_get_count();
  double flops = 2.0 * (double)j.rows * (double)j.inner * (double)j.cols;

  j.threads = workers;
  double blas = median_of(rounds, run_blas, &j);
  j.threads = 1;
  double blas1 = median_of(rounds, run_blas, &j);

  cJSON *root = cJSON_CreateObject(), *runs = cJSON_AddArrayToObject(root, "shards");
  cJSON_AddStringToObject(root, "benchmark", "sharded linear layer vs one BLAS call");
  cJSON *problem = cJSON_AddObjectToObject(root, "problem");
  cJSON_AddNumberToObject(problem, "batch", (double)j.rows);
  cJSON_AddNumberToObject(problem, "in", (double)j.inner);
  cJSON_AddNumberToObject(problem, "out", (double)j.cols);
  cJSON_AddNumberToObject(root, "workers", workers);
  cJSON_AddNumberToObject(root, "rounds", rounds);
  cJSON_AddNumberToObject(root, "blas_threads_s", blas);
  cJSON_AddNumberToObject(root, "blas_threads_gflops", flops / blas * 1e-9);
  cJSON_AddNumberToObject(root, "blas_1thread_s", blas1);
  for (int64_t n = 1; n <= 16; n++) {
    j.sharding = (strata_sharding){2, {n, 1}};
    double t = median_of(rounds, run_sharded, &j);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "shards", (double)n);
    cJSON_AddNumberToObject(o, "seconds", t);
    cJSON_AddNumberToObject(o, "ratio_vs_blas", blas / t);
    cJSON_AddItemToArray(runs, o);
  }
  strata_shard_cost cost;
  if (strata_shard_choose(&j.op, NULL, &j.sharding, &cost))
    return 1;
  double t = median_of(rounds, run_sharded, &j);
  cJSON *chosen = cJSON_AddObjectToObject(root, "chosen");
  cJSON_AddNumberToObject(chosen, "batch_chunks", (double)j.sharding.counts[0]);
  cJSON_AddNumberToObject(chosen, "out_chunks", (double)j.sharding.counts[1]);
  cJSON_AddNumberToObject(chosen, "predicted_s", cost.seconds);
  cJSON_AddNumberToObject(chosen, "seconds", t);
  cJSON_AddNumberToObject(chosen, "gflops", flops / t * 1e-9);
  cJSON_AddNumberToObject(chosen, "ratio_vs_blas", blas / t);
  cJSON_AddNumberToObject(chosen, "ratio_vs_blas_1thread", blas1 / t);
  bench_print_json(root);
  strata_array_destroy(j.x);
  strata_array_destroy(j.w);
  strata_array_destroy(j.bias);
  strata_array_destroy(j.y);
  strata_finalize();
  return 0;
}
