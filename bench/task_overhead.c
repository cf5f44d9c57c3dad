/* Task overhead: N empty tasks submitted through Strata's insert path
 * (strata__submit) against bare starpu_task_insert() of the same codelet,
 * in the same run, under several schedulers; independent tasks and a chain
 * on one handle. Prints JSON: median microseconds per task and the ratio
 * Strata / bare (target <= 1.10).
 *
 *   task_overhead [--tasks N] [--rounds R] [--scheds eager,lws,dmda]
 */
#include <cjson/cJSON.h>
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <strata/starpu.h>
#include <strata/strata.h>

#include "codelets.h"

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Microseconds per task for one batch of n tasks; `chained` puts every task
 * on the same handle in RW mode. */
static double batch(int strata_path, int chained, int n, starpu_data_handle_t h)
{
  enum starpu_data_access_mode rw = STARPU_RW;
  double t0 = now();
  for (int i = 0; i < n; i++) {
    int ret;
    if (strata_path)
      ret = strata__submit(&strata__noop_cl, NULL, 0, chained, &h, &rw);
    else if (chained)
      ret = starpu_task_insert(&strata__noop_cl, STARPU_RW, h, 0);
    else
      ret = starpu_task_insert(&strata__noop_cl, 0);
    if (ret) {
      fprintf(stderr, "task_overhead: submission failed (%d)\n", ret);
      exit(1);
    }
  }
  starpu_task_wait_for_all();
  return (now() - t0) * 1e6 / n;
}

static int usage(void)
{
  fputs("usage: task_overhead [--tasks N] [--rounds R] [--scheds s1,s2,...]\n"
        "  --tasks N   tasks per batch (default 20000)\n"
        "  --rounds R  batches per variant; medians are reported (default 7)\n"
        "  --scheds    StarPU schedulers to compare (default eager,lws,dmda)\n",
        stderr);
  return 2;
}

int main(int argc, char **argv)
{
  int tasks = 20000, rounds = 7;
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
  cJSON *root = cJSON_CreateObject(), *results = cJSON_AddArrayToObject(root, "results");
  cJSON_AddStringToObject(root, "benchmark", "task_overhead");
  cJSON_AddNumberToObject(root, "tasks", tasks);
  cJSON_AddNumberToObject(root, "rounds", rounds);
  double worst = 0;
  double *bare = malloc((size_t)rounds * sizeof *bare);
  double *mine = malloc((size_t)rounds * sizeof *mine);
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
    starpu_data_handle_t h = strata_array_handle(a);
    for (int chained = 0; chained < 2; chained++) {
      batch(0, chained, tasks / 10 + 1, h); /* warm up */
      for (int r = 0; r < rounds; r++) {
        int strata_first = r % 2; /* alternate the order against drift */
        mine[r] = strata_first ? batch(1, chained, tasks, h) : 0;
        bare[r] = batch(0, chained, tasks, h);
        if (!strata_first)
          mine[r] = batch(1, chained, tasks, h);
      }
      double b = median(bare, rounds), s = median(mine, rounds);
      cJSON *row = cJSON_CreateObject();
      cJSON_AddStringToObject(row, "scheduler", sched);
      cJSON_AddStringToObject(row, "pattern", chained ? "chain_on_one_handle" : "independent");
      cJSON_AddNumberToObject(row, "workers", starpu_worker_get_count());
      cJSON_AddNumberToObject(row, "bare_us_per_task", b);
      cJSON_AddNumberToObject(row, "strata_us_per_task", s);
      cJSON_AddNumberToObject(row, "ratio", s / b);
      cJSON_AddItemToArray(results, row);
      if (s / b > worst)
        worst = s / b;
    }
    strata_array_destroy(a);
    strata_finalize();
  }
  cJSON_AddNumberToObject(root, "worst_ratio", worst);
  cJSON_AddNumberToObject(root, "target_ratio", 1.10);
  char *text = cJSON_Print(root);
  puts(text);
  free(text);
  cJSON_Delete(root);
  free(bare);
  free(mine);
  MPI_Finalize();
  return 0;
}
