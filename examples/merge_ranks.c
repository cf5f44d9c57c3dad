/* Merge example: every rank accumulates many task contributions into one
 * array (StarPU REDUX), then the ranks' arrays are reduced onto rank 0.
 * Rank 0 checks the result against the closed form and writes it as CSV.
 *
 *   mpiexec -n 2 merge_ranks [--n N] [--tasks K] [--out FILE]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata/strata.h>

static int usage(void)
{
  fputs("usage: merge_ranks [--n N] [--tasks K] [--out FILE]\n"
        "  --n N      elements per array (default 1000)\n"
        "  --tasks K  accumulating tasks per rank (default 200)\n"
        "  --out FILE CSV of the reduced array, written by rank 0 (default merge_result.csv)\n",
        stderr);
  return 2;
}

int main(int argc, char **argv)
{
  int64_t n = 1000;
  int tasks = 200;
  const char *out = "merge_result.csv";
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--n") == 0 && i + 1 < argc)
      n = atoll(argv[++i]);
    else if (strcmp(argv[i], "--tasks") == 0 && i + 1 < argc)
      tasks = atoi(argv[++i]);
    else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
      out = argv[++i];
    else
      return usage();
  }
  if (n < 1 || tasks < 1)
    return usage();

  int ret = strata_init(&argc, &argv, NULL);
  if (ret) {
    fprintf(stderr, "merge_ranks: %s\n", strata_strerror(ret));
    return ret == STRATA_ENODEV ? 77 : 1;
  }
  int rank = strata_rank(), size = strata_size();

  /* Contribution of task t on rank r to element i: (r + 1) * (t + 1) + i. */
  strata_array *acc, **parts = calloc((size_t)tasks, sizeof *parts);
  strata_array_create(1, &n, STRATA_FLOAT64, &acc);
  strata_array_fill_identity(acc, STRATA_SUM);
  for (int t = 0; t < tasks; t++) {
    double *p;
    strata_array_create(1, &n, STRATA_FLOAT64, &parts[t]);
    strata_array_acquire(parts[t], STRATA_WRITE, (void **)&p);
    for (int64_t i = 0; i < n; i++)
      p[i] = (double)(rank + 1) * (t + 1) + (double)i;
    strata_array_release(parts[t]);
    strata_accumulate(acc, parts[t], STRATA_SUM);
  }
  if ((ret = strata_array_reduce(acc, STRATA_SUM, 0)) != 0)
    fprintf(stderr, "merge_ranks: reduce: %s\n", strata_strerror(ret));

  int status = ret ? 1 : 0;
  if (rank == 0 && !ret) {
    const double *r;
    strata_array_acquire(acc, STRATA_READ, (void **)&r);
    double ranks_sum = size * (size + 1) / 2.0, tasks_sum = tasks * (tasks + 1) / 2.0;
    int64_t bad = 0;
    FILE *f = fopen(out, "w");
    if (f)
      fputs("index,value\n", f);
    for (int64_t i = 0; i < n; i++) {
      double expect = ranks_sum * tasks_sum + (double)size * tasks * (double)i;
      bad += r[i] != expect;
      if (f)
        fprintf(f, "%lld,%.17g\n", (long long)i, r[i]);
    }
    strata_array_release(acc);
    if (f)
      fclose(f);
    printf("merge_ranks: %d ranks x %d tasks into %lld elements: %s; result in %s\n", size, tasks,
           (long long)n, bad ? "MISMATCH" : "ok", f ? out : "(not written)");
    status = bad || !f;
  }
  for (int t = 0; t < tasks; t++)
    strata_array_destroy(parts[t]);
  free(parts);
  strata_array_destroy(acc);
  strata_finalize();
  return status;
}
