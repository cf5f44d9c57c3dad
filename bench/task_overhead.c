/* Task overhead: N empty tasks submitted through Strata's insert path
 * (strata__submit) against bare starpu_task_insert() of the same codelet,
 * in the same run, under several schedulers; independent tasks and a chain
 * on one handle. Batches of the two paths alternate; each round gives a
 * paired ratio, and the median of those ratios is reported (it cancels the
 * drift of a noisy shared machine). Prints JSON: medians of microseconds
 * per task end to end and of the submission loop alone, and the ratios
 * Strata / bare (target <= 1.10). Two more comparisons time short graphs
 * of SHORT_GRAPH tasks: waited for by strata_wait_all() against bare
 * starpu_task_wait_for_all(), and, chained on one array, read with
 * strata_array_acquire() against bare starpu_data_acquire(). Last, what
 * StarPU charges per handle (handles_per_task: 1 to 576 handles a task).
 *
 *   task_overhead [--tasks N] [--rounds R] [--scheds eager,lws,dmda]
 */
#include <cjson/cJSON.h>
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata/starpu.h>
#include <strata/strata.h>

#include "bench_util.h"

#include "codelets.h"

enum { SHORT_GRAPH = 8 }; /* tasks in a short graph */

struct timing {
  double total_us, submit_us; /* per task: end to end, and submission alone */
  double wait_us;             /* the whole batch: from the last submission to the end of the wait */
};

/* How a batch is waited for: every task, or the last value of the array. */
enum waiter { WAIT_ALL, ACQUIRE };

/* How a batch is submitted and waited for: Strata's insert path or bare
 * starpu_task_insert(); Strata's waits (which poll before they sleep:
 * strata_wait_all(), strata_array_acquire()) or bare StarPU's. */
struct path {
  int strata_insert, strata_wait;
  enum waiter waiter;
};

/* One batch of n tasks; `chained` puts every task on a's handle in RW
 * mode. */
static struct timing batch(struct path p, int chained, int n, strata_array *a)
{
  enum starpu_data_access_mode rw = STARPU_RW;
  starpu_data_handle_t h = strata_array_handle(a);
  double t0 = bench_now();
  for (int i = 0; i < n; i++) {
    int ret;
    if (p.strata_insert)
      ret = strata__submit(&strata__noop_cl, NULL, 0, chained, &h, &rw);
    else if (chained)
      ret = starpu_task_insert(&strata__noop_cl.cl, STARPU_RW, h, 0);
    else
      ret = starpu_task_insert(&strata__noop_cl.cl, 0);
    if (ret) {
      fprintf(stderr, "task_overhead: submission failed (%d)\n", ret);
      exit(1);
    }
  }
  double t1 = bench_now();
  if (p.waiter == ACQUIRE && p.strata_wait) {
    strata_array_acquire(a, STRATA_READ, NULL);
    strata_array_release(a);
  } else if (p.waiter == ACQUIRE) {
    starpu_data_acquire(h, STARPU_R);
    starpu_data_release(h);
  } else if (p.strata_wait) {
    strata_wait_all();
  } else {
    starpu_task_wait_for_all();
  }
  double t2 = bench_now();
  return (struct timing){(t2 - t0) * 1e6 / n, (t1 - t0) * 1e6 / n, (t2 - t1) * 1e6};
}

/* Per round, one batch of each path in alternating order (against drift):
 * a JSON row with the medians and the median paired ratio Strata / bare,
 * and the median and 99th percentile of each path's wait (the latency a
 * caller sees once it has submitted the batch). */
static cJSON *compare(const char *sched, const char *pattern, struct path bare_path,
                      struct path strata_path, int chained, int n, int rounds, strata_array *a,
                      double *ratio_out)
{
  double *t = malloc((size_t)(8 * rounds) * sizeof *t);
  double *bare_wait = t + 6 * rounds, *mine_wait = t + 7 * rounds;
  double *bare = t, *mine = t + rounds, *bare_sub = t + 2 * rounds, *mine_sub = t + 3 * rounds;
  double *ratio = t + 4 * rounds, *ratio_sub = t + 5 * rounds;
  batch(bare_path, chained, n / 10 + 1, a); /* warm up */
  for (int r = 0; r < rounds; r++) {
    int strata_first = r % 2;
    struct timing first = batch(strata_first ? strata_path : bare_path, chained, n, a);
    struct timing second = batch(strata_first ? bare_path : strata_path, chained, n, a);
    struct timing b = strata_first ? second : first, s = strata_first ? first : second;
    bare[r] = b.total_us, mine[r] = s.total_us;
    bare_sub[r] = b.submit_us, mine_sub[r] = s.submit_us;
    ratio[r] = s.total_us / b.total_us;
    ratio_sub[r] = s.submit_us / b.submit_us;
    bare_wait[r] = b.wait_us, mine_wait[r] = s.wait_us;
  }
  cJSON *row = cJSON_CreateObject();
  cJSON_AddStringToObject(row, "scheduler", sched);
  cJSON_AddStringToObject(row, "pattern", pattern);
  cJSON_AddNumberToObject(row, "tasks_per_batch", n);
  cJSON_AddNumberToObject(row, "workers", starpu_worker_get_count());
  cJSON_AddNumberToObject(row, "bare_us_per_task", bench_median(bare, rounds));
  cJSON_AddNumberToObject(row, "strata_us_per_task", bench_median(mine, rounds));
  cJSON_AddNumberToObject(row, "ratio", *ratio_out = bench_median(ratio, rounds));
  cJSON_AddNumberToObject(row, "bare_submit_us_per_task", bench_median(bare_sub, rounds));
  cJSON_AddNumberToObject(row, "strata_submit_us_per_task", bench_median(mine_sub, rounds));
  cJSON_AddNumberToObject(row, "submit_ratio", bench_median(ratio_sub, rounds));
  cJSON_AddNumberToObject(row, "bare_wait_us_median", bench_median(bare_wait, rounds));
  cJSON_AddNumberToObject(row, "bare_wait_us_p99", bench_percentile(bare_wait, rounds, 0.99));
  cJSON_AddNumberToObject(row, "strata_wait_us_median", bench_median(mine_wait, rounds));
  cJSON_AddNumberToObject(row, "strata_wait_us_p99", bench_percentile(mine_wait, rounds, 0.99));
  free(t);
  return row;
}

/* What StarPU itself charges per handle: batches of empty tasks on k
 * distinct handles each (the first written, the others read; k = 9 is an
 * AMR family, more is what a task over many blocks would carry), bare
 * StarPU, waited for as a whole. Medians of microseconds per task and per
 * handle over the rounds. */
static void handle_sweep(const char *sched, int rounds, cJSON *rows)
{
  enum { MOST = 576, TASK_HANDLES = 9 * MOST };
  static double cells[MOST];
  starpu_data_handle_t *h = malloc(MOST * sizeof *h);
  struct starpu_data_descr *d = malloc(MOST * sizeof *d);
  double *t = malloc((size_t)rounds * sizeof *t);
  for (int i = 0; i < MOST; i++)
    starpu_vector_data_register(&h[i], STARPU_MAIN_RAM, (uintptr_t)&cells[i], 1, sizeof *cells);
  const int counts[] = {1, 9, 72, MOST};
  for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
    const int k = counts[c], ntasks = TASK_HANDLES / k;
    for (int r = -1; r < rounds; r++) { /* round -1 warms up */
      double t0 = bench_now();
      for (int i = 0; i < ntasks; i++) {
        for (int j = 0; j < k; j++)
          d[j] = (struct starpu_data_descr){h[(i * k + j) % MOST], j ? STARPU_R : STARPU_RW};
        if (starpu_task_insert(&strata__noop_cl.cl, STARPU_DATA_MODE_ARRAY, d, k, 0) != 0) {
          fprintf(stderr, "task_overhead: submission failed\n");
          exit(1);
        }
      }
      starpu_task_wait_for_all();
      if (r >= 0)
        t[r] = (bench_now() - t0) * 1e6 / ntasks;
    }
    double per_task = bench_median(t, rounds);
    cJSON *row = cJSON_CreateObject();
    cJSON_AddStringToObject(row, "scheduler", sched);
    cJSON_AddNumberToObject(row, "handles", k);
    cJSON_AddNumberToObject(row, "tasks_per_batch", ntasks);
    cJSON_AddNumberToObject(row, "bare_us_per_task", per_task);
    cJSON_AddNumberToObject(row, "bare_us_per_handle", per_task / k);
    cJSON_AddItemToArray(rows, row);
  }
  for (int i = 0; i < MOST; i++)
    starpu_data_unregister(h[i]);
  free(h);
  free(d);
  free(t);
}

static int usage(void)
{
  fputs("usage: task_overhead [--tasks N] [--rounds R] [--scheds s1,s2,...]\n"
        "  --tasks N   tasks per batch (default 10000)\n"
        "  --rounds R  batches per path and variant; medians are reported (default 21)\n"
        "  --scheds    StarPU schedulers to compare (default eager,lws,dmda)\n",
        stderr);
  return 2;
}

int main(int argc, char **argv)
{
  int tasks = 10000, rounds = 21;
  char scheds[256] = "eager,lws,dmda";
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--tasks") == 0 && i + 1 < argc)
      tasks = atoi(argv[++i]);
    else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else if (strcmp(argv[i], "--scheds") == 0 && i + 1 < argc)
      snprintf(scheds, sizeof scheds, "%s", argv[++i]);
    else
      return usage();
  }
  if (tasks < 1 || rounds < 1)
    return usage();

  int provided; /* the benchmark owns MPI so that Strata can restart per scheduler */
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  cJSON *root = cJSON_CreateObject(), *results = cJSON_AddArrayToObject(root, "results"),
        *handles = cJSON_AddArrayToObject(root, "handles_per_task");
  cJSON_AddStringToObject(root, "benchmark", "task_overhead");
  cJSON_AddNumberToObject(root, "tasks", tasks);
  cJSON_AddNumberToObject(root, "rounds", rounds);
  double worst = 0, q;
  const struct path bare = {0, 0, WAIT_ALL}, strata_insert = {1, 0, WAIT_ALL},
                    strata_wait = {0, 1, WAIT_ALL}, bare_acquire = {0, 0, ACQUIRE},
                    strata_acquire = {0, 1, ACQUIRE};
  for (char *sched = strtok(scheds, ","); sched; sched = strtok(NULL, ",")) {
    setenv("STARPU_SCHED", sched, 1);
    int ret = strata_init(&argc, &argv, NULL);
    if (ret) {
      fprintf(stderr, "task_overhead: %s\n", strata_strerror(ret));
      MPI_Finalize();
      return ret == STRATA_ENODEV ? 77 : 1;
    }
    int64_t one = 1;
    strata_array *a;
    strata_array_create(1, &one, STRATA_FLOAT64, &a);
    const char *patterns[] = {"independent", "chain_on_one_handle"};
    for (int chained = 0; chained < 2; chained++) {
      cJSON_AddItemToArray(results, compare(sched, patterns[chained], bare, strata_insert, chained,
                                            tasks, rounds, a, &q));
      worst = q > worst ? q : worst;
    }
    /* A short graph, where the waiting thread's wake-up is a large part of
     * the time: the same insert path, waited for by each waiter. */
    cJSON_AddItemToArray(results, compare(sched, "short_graph_wait", bare, strata_wait, 0,
                                          SHORT_GRAPH, 10 * rounds, a, &q));
    worst = q > worst ? q : worst;
    /* The same, chained on one array whose value is then read. */
    cJSON_AddItemToArray(results, compare(sched, "short_graph_acquire", bare_acquire,
                                          strata_acquire, 1, SHORT_GRAPH, 10 * rounds, a, &q));
    worst = q > worst ? q : worst;
    handle_sweep(sched, rounds, handles);
    strata_array_destroy(a);
    strata_finalize();
  }
  cJSON_AddNumberToObject(root, "worst_ratio", worst);
  cJSON_AddNumberToObject(root, "target_ratio", 1.10);
  bench_print_json(root);
  MPI_Finalize();
  return 0;
}
