/* Timing helpers shared by the benchmarks. */
#ifndef STRATA_BENCH_UTIL_H
#define STRATA_BENCH_UTIL_H

#include <cjson/cJSON.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* Monotonic time in seconds: under SimGrid, the simulated clock (SMPI's
 * clock_gettime is the host's in the simulated threads that run main()). */
#ifdef STARPU_SIMGRID
#include <starpu.h>
#endif
static inline double bench_now(void)
{
#ifdef STARPU_SIMGRID
  return starpu_timing_now() * 1e-6;
#else
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#endif
}

static inline int bench_cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v). */
static inline double bench_median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The q-quantile of v[0..n) (sorts v): the smallest value that at least
 * q n of the values do not exceed. */
static inline double bench_percentile(double *v, int n, double q)
{
  qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
  int k = (int)(q * n); /* the rank ceil(q n), counted from 1 */
  if ((double)k < q * n)
    k++;
  return v[k < 1 ? 0 : k > n ? n - 1 : k - 1];
}

/* The common options `--rounds R` and `--quick`; 0, or 2 after printing
 * the usage of `name` on an unknown argument. */
static inline int bench_options(int argc, char **argv, const char *name, int *rounds, int *quick)
{
  for (int i = 1; i < argc; i++) {
    char *end = NULL;
    long r = 0;
    if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      r = strtol(argv[++i], &end, 10);
      if (*end == '\0' && r >= 1 && r <= 100000) {
        *rounds = (int)r;
        continue;
      }
    } else if (strcmp(argv[i], "--quick") == 0) {
      *quick = 1;
      continue;
    }
    fprintf(stderr, "usage: %s [--rounds R (1..100000)] [--quick]\n", name);
    return 2;
  }
  return 0;
}

/* How many of the kernel's DAMON threads run (on these VMs, a proactive
 * `pageout` of cold memory, which made the same run 1-5x slower from run to
 * run: docs/scaling.md; `scripts/simulate.sh prepare` stops them). */
static inline int bench_damon_running(void)
{
  glob_t g;
  int running = 0;
  if (glob("/sys/kernel/mm/damon/admin/kdamonds/*/state", 0, NULL, &g) != 0)
    return 0;
  for (size_t i = 0; i < g.gl_pathc; i++) {
    char state[16] = "";
    FILE *f = fopen(g.gl_pathv[i], "r");
    if (f && fgets(state, sizeof state, f) && strncmp(state, "on", 2) == 0)
      running++;
    if (f)
      fclose(f);
  }
  globfree(&g);
  return running;
}

/* Print a benchmark's JSON report on stdout and free it, with what the
 * machine did meanwhile: this process's page faults over the whole run
 * (fresh pages cost as much as some of the work measured), the load
 * average when it ended (other work on a shared machine skews every time)
 * and whether the kernel was paging memory out on its own (DAMON). */
static inline void bench_print_json(cJSON *root)
{
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) == 0) {
    cJSON *faults = cJSON_AddObjectToObject(root, "page_faults");
    cJSON_AddNumberToObject(faults, "minor", (double)ru.ru_minflt);
    cJSON_AddNumberToObject(faults, "major", (double)ru.ru_majflt);
  }
  double load[3];
  FILE *f = fopen("/proc/loadavg", "r");
  int got = f ? fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) : 0;
  if (f)
    fclose(f);
  if (got == 3) {
    cJSON *avg = cJSON_AddObjectToObject(root, "load_average");
    cJSON_AddNumberToObject(avg, "1min", load[0]);
    cJSON_AddNumberToObject(avg, "5min", load[1]);
    cJSON_AddNumberToObject(avg, "15min", load[2]);
  }
  cJSON_AddNumberToObject(root, "damon_threads_running", bench_damon_running());
  char *text = cJSON_Print(root);
  puts(text);
  free(text);
  cJSON_Delete(root);
}

#endif
