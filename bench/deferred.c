/* Deferred compute overhead: chains of N elementwise nodes (alternately
 * y * 0.5 and y + 1) on float32 arrays, run eagerly (the baseline, two
 * ways: freeing intermediates as it goes, or keeping them all; ratios are
 * against the faster), recorded (per-node recording cost), computed lazily,
 * and exported then replayed. Medians over rounds; every result is checked
 * against the eager one. */
#include <math.h>
#include <string.h>

#include <strata/strata.h>

#include "bench_util.h"

static int step(strata_context *ctx, int i, strata_array *y, strata_array **out)
{
  return i % 2 ? strata_binary_scalar(ctx, STRATA_FN_ADD, y, strata_float(1), 0, out)
               : strata_binary_scalar(ctx, STRATA_FN_MUL, y, strata_float(0.5), 0, out);
}

/* First plus last element: reading waits for the chain. */
static double probe(strata_array *a)
{
  float *p;
  if (strata_array_acquire(a, STRATA_READ, (void **)&p) != 0)
    return NAN;
  double v = p[0] + p[strata_array_nelems(a) - 1];
  strata_array_release(a);
  return v;
}

/* Eager chain freeing each intermediate once its reader is submitted
 * (destroying waits for the readers: the chain runs one node at a time). */
static double eager_free(strata_array *x, int nodes, double *check)
{
  double t0 = bench_now();
  strata_array *y = x;
  for (int i = 0; i < nodes && y; i++) {
    strata_array *next = NULL;
    step(NULL, i, y, &next);
    if (y != x)
      strata_array_destroy(y);
    y = next;
  }
  *check = probe(y);
  double t = bench_now() - t0;
  strata_array_destroy(y);
  return t;
}

/* Eager chain keeping every intermediate until the end: no waits, but one
 * new array (fresh memory) per node. */
static double eager_keep(strata_array *x, int nodes, double *check)
{
  strata_array **ys = calloc((size_t)nodes + 1, sizeof *ys);
  double t0 = bench_now();
  strata_array *y = x;
  for (int i = 0; i < nodes && y; i++) {
    step(NULL, i, y, &ys[i]);
    y = ys[i];
  }
  *check = probe(y);
  double t = bench_now() - t0;
  for (int i = 0; i < nodes; i++)
    strata_array_destroy(ys[i]);
  free(ys);
  return t;
}

/* Record a chain (intermediates released as they go); *last is its end. */
static double record(strata_context *ctx, strata_array *x, int nodes, strata_array **last)
{
  double t0 = bench_now();
  strata_deferred_begin(ctx, 1);
  strata_array *y = x;
  for (int i = 0; i < nodes; i++) {
    strata_array *next = NULL;
    step(ctx, i, y, &next);
    if (y != x)
      strata_array_destroy(y);
    y = next;
  }
  strata_deferred_end(ctx);
  *last = y;
  return bench_now() - t0;
}

int main(int argc, char **argv)
{
  int rounds = 3, quick = 0;
  if (bench_options(argc, argv, "bench_deferred", &rounds, &quick))
    return 2;
  if (strata_init(&argc, &argv, NULL) != 0)
    return 1;
  int64_t n = quick ? 100000 : 1000000;
  const int sizes[] = {10, 100, 1000};
  int nsizes = quick ? 2 : 3, failures = 0;
  strata_array *x;
  strata_full(NULL, 1, &n, STRATA_FLOAT32, 3, &x);
  strata_context *ctx;
  strata_context_create(&ctx);
  cJSON *root = cJSON_CreateObject(), *results = cJSON_CreateArray();
  cJSON_AddStringToObject(root, "benchmark", "deferred");
  cJSON_AddNumberToObject(root, "elements", (double)n);
  cJSON_AddNumberToObject(root, "rounds", rounds);
  for (int s = 0; s < nsizes; s++) {
    int nodes = sizes[s];
    double *t_keep = calloc((size_t)rounds, sizeof(double) * 7);
    double *t_eager = t_keep + rounds, *t_record = t_eager + rounds, *t_lazy = t_record + rounds,
           *t_export = t_lazy + rounds, *t_replay = t_export + rounds, *t_rerun = t_replay + rounds;
    for (int r = 0; r < rounds; r++) {
      double want, got_keep, got_lazy, got_replay, got_rerun;
      t_eager[r] = eager_free(x, nodes, &want);
      t_keep[r] = eager_keep(x, nodes, &got_keep);
      strata_array *last, *out = NULL;
      t_record[r] = record(ctx, x, nodes, &last);
      double t0 = bench_now();
      got_lazy = probe(last);
      t_lazy[r] = bench_now() - t0;
      strata_graph *g = NULL;
      t0 = bench_now();
      strata_graph_export(1, &x, NULL, 1, &last, NULL, &g);
      t_export[r] = bench_now() - t0;
      t0 = bench_now();
      strata_graph_run(g, &x, &out);
      got_replay = out ? probe(out) : NAN;
      t_replay[r] = bench_now() - t0;
      strata_array_destroy(out);
      out = NULL;
      t0 = bench_now();
      strata_graph_run(g, &x, &out);
      got_rerun = out ? probe(out) : NAN;
      t_rerun[r] = bench_now() - t0;
      failures += got_keep != want || got_lazy != want || got_replay != want || got_rerun != want;
      strata_array_destroy(out);
      strata_array_destroy(last);
      strata_graph_destroy(g);
      strata_graph_clear(ctx);
    }
    double eager_free_s = bench_median(t_eager, rounds),
           eager_keep_s = bench_median(t_keep, rounds);
    double eager_s = eager_free_s < eager_keep_s ? eager_free_s : eager_keep_s;
    double record_s = bench_median(t_record, rounds);
    double lazy_s = bench_median(t_lazy, rounds), export_s = bench_median(t_export, rounds);
    double replay_s = bench_median(t_replay, rounds), rerun_s = bench_median(t_rerun, rounds);
    cJSON *row = cJSON_CreateObject();
    cJSON_AddNumberToObject(row, "nodes", nodes);
    cJSON_AddNumberToObject(row, "eager_free_s", eager_free_s);
    cJSON_AddNumberToObject(row, "eager_keep_s", eager_keep_s);
    cJSON_AddNumberToObject(row, "eager_per_node_us", 1e6 * eager_s / nodes);
    cJSON_AddNumberToObject(row, "record_s", record_s);
    cJSON_AddNumberToObject(row, "record_per_node_us", 1e6 * record_s / nodes);
    cJSON_AddNumberToObject(row, "lazy_compute_s", lazy_s);
    cJSON_AddNumberToObject(row, "export_s", export_s);
    cJSON_AddNumberToObject(row, "replay_s", replay_s);
    cJSON_AddNumberToObject(row, "replay_per_node_us", 1e6 * replay_s / nodes);
    cJSON_AddNumberToObject(row, "rerun_s", rerun_s);
    cJSON_AddNumberToObject(row, "lazy_over_eager", (record_s + lazy_s) / eager_s);
    cJSON_AddNumberToObject(row, "replay_over_eager", replay_s / eager_s);
    cJSON_AddNumberToObject(row, "rerun_over_eager", rerun_s / eager_s);
    cJSON_AddItemToArray(results, row);
    free(t_keep);
  }
  cJSON_AddItemToObject(root, "results", results);
  cJSON_AddBoolToObject(root, "results_match_eager", failures == 0);
  bench_print_json(root);
  strata_context_destroy(ctx);
  strata_array_destroy(x);
  strata_finalize();
  return failures ? 1 : 0;
}
