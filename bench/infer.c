/* Inference-array benchmark: the main job's cycle (Enzo-E's inference test
 * sizes, cosmology problem) as a task graph against the same phases
 * separated by global barriers (--bulk-synchronous), in the same run on the
 * same hierarchy, alternating round by round. Both methods are warmed up
 * once (performance models, level arrays), then every round reuses the
 * level array, as steady cycles do. Run it under mpiexec for 1, 2 and 4
 * ranks. Target: task graph >= 1.3x faster than bulk-synchronous on 2
 * ranks. Prints JSON (rank 0) with medians over the rounds.
 *
 *   bench_infer [--rounds R] [--quick]   (--quick: fewer arrays)
 */
#include <cjson/cJSON.h>

#include "bench_util.h"
#include "infer_job.h"

/* Medians of each phase, of the total and of the time until
 * strata_infer_submit() returned, over the rounds, as JSON. */
static cJSON *summary(double (*t)[STRATA_INFER_PHASES + 2], int rounds)
{
  cJSON *o = cJSON_CreateObject();
  double *v = malloc((size_t)rounds * sizeof *v);
  for (int k = 0; k <= STRATA_INFER_PHASES + 1; k++) {
    for (int r = 0; r < rounds; r++)
      v[r] = t[r][k];
    cJSON_AddNumberToObject(o,
                            k < STRATA_INFER_PHASES    ? strata_infer_phase_name(k)
                            : k == STRATA_INFER_PHASES ? "total"
                                                       : "submit",
                            bench_median(v, rounds));
  }
  free(v);
  return o;
}

static void record(const strata_infer_stats *st, double *row)
{
  for (int k = 0; k < STRATA_INFER_PHASES; k++)
    row[k] = st->seconds[k];
  row[STRATA_INFER_PHASES] = st->total;
  row[STRATA_INFER_PHASES + 1] = st->submit_seconds; /* the caller's share of the cycle */
}

int main(int argc, char **argv)
{
  int rounds = 5, quick = 0;
  if (bench_options(argc, argv, "bench_infer", &rounds, &quick))
    return 2;
  if (strata_init(&argc, &argv, NULL))
    return 1;
  struct infer_job job;
  infer_job_defaults(&job);
  if (quick)
    job.threshold = 64;
  struct infer_run run;
  strata_infer *graph = NULL, *bulk = NULL;
  strata_infer_stats st = {0};
  int ret = infer_job_setup(&job, &run);
  if (!ret)
    ret = infer_job_method(&run, 0, &graph);
  if (!ret)
    ret = infer_job_method(&run, 1, &bulk);
  if (!ret)
    ret = strata_infer_run(graph, &st);
  if (!ret)
    ret = strata_infer_run(bulk, &st);
  double(*tg)[STRATA_INFER_PHASES + 2] = calloc((size_t)rounds, sizeof *tg);
  double(*tb)[STRATA_INFER_PHASES + 2] = calloc((size_t)rounds, sizeof *tb);
  double *ratio = calloc((size_t)rounds, sizeof *ratio);
  for (int r = 0; r < rounds && !ret; r++) {
    ret = strata_infer_run(graph, &st);
    record(&st, tg[r]);
    if (!ret)
      ret = strata_infer_run(bulk, &st);
    record(&st, tb[r]);
    ratio[r] = tb[r][STRATA_INFER_PHASES] / tg[r][STRATA_INFER_PHASES];
  }
  if (!ret && strata_rank() == 0) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "benchmark", "infer");
    cJSON_AddNumberToObject(root, "ranks", strata_size());
    cJSON_AddNumberToObject(root, "rounds", rounds);
    cJSON_AddNumberToObject(root, "leaves", (double)strata_amr_num_leaves(run.amr));
    cJSON_AddNumberToObject(root, "elements", (double)st.elements);
    cJSON_AddNumberToObject(root, "elements_max_per_rank", (double)st.elements_max);
    cJSON_AddNumberToObject(root, "bubbles", (double)st.bubbles);
    cJSON_AddItemToObject(root, "task_graph_s", summary(tg, rounds));
    cJSON_AddItemToObject(root, "bulk_synchronous_s", summary(tb, rounds));
    cJSON_AddNumberToObject(root, "speedup_median", bench_median(ratio, rounds));
    bench_print_json(root);
  }
  if (ret && strata_rank() == 0)
    fprintf(stderr, "bench_infer: %s %s\n", strata_strerror(ret), strata_error_message());
  free(tg);
  free(tb);
  free(ratio);
  strata_infer_destroy(graph);
  strata_infer_destroy(bulk);
  infer_job_teardown(&run);
  strata_finalize();
  return ret ? 1 : 0;
}
