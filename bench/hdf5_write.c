/* HDF5 output benchmark: the same hierarchy written by parallel HDF5 (every
 * rank writes its own leaves' blocks through MPI-IO) and by the serial
 * library (the blocks gathered to rank 0, which writes the file: what a
 * code without parallel HDF5 does, and Strata's serial build). The
 * hierarchy is `strata infer`'s at Enzo-E's inference-test size (2^3 root
 * blocks of 16^3 cells, levels to 5, the cosmology problem on a 128^3 grid,
 * seed 2026, sigma 1.5, mass criterion 1: 1,072 leaves), with two float64
 * fields (a 67 MiB file), or `--scale 2`: a 256^3 grid and twice the root
 * blocks per axis. The two ways alternate round by round; each time is
 * the slowest rank's, from the call to the renamed file. Also rank 0's peak
 * resident memory after one parallel write, then after one serial write
 * (the peak only grows, so the second says what the gather adds).
 * `serial_over_parallel` is the median of paired per-round ratios (> 1:
 * parallel is faster).
 *
 *   mpiexec -n R bench_hdf5_write [--rounds R] [--quick] [--dir DIR]
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <strata/strata.h>

#include "bench_util.h"
#include "strata_build_config.h"

static double peak_rss_mib(void)
{
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss / 1024.0 : -1.0;
}

/* One write in the given way; the slowest rank's seconds, or -1. */
static double timed_write(strata_amr *amr, const char *path, const char *mode)
{
  setenv("STRATA_HDF5_WRITE", mode, 1);
  MPI_Barrier(strata_comm());
  double t0 = bench_now();
  int ret = strata_amr_write_hdf5(amr, path);
  double t = bench_now() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, strata_comm());
  if (ret) {
    if (strata_rank() == 0)
      fprintf(stderr, "bench_hdf5_write: %s write failed: %s\n", mode, strata_error_message());
    return -1.0;
  }
  return t;
}

static cJSON *summary(double *v, int n)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "median_s", bench_median(v, n));
  cJSON_AddNumberToObject(o, "min_s", v[0]);
  cJSON_AddNumberToObject(o, "max_s", v[n - 1]);
  return o;
}

int main(int argc, char **argv)
{
  int rounds = 5, quick = 0, scale = 1;
  const char *dir = ".";
  char *rest[8] = {argv[0]};
  int nrest = 1;
  for (int i = 1; i < argc; i++) { /* --dir and --scale here, the rest as usual */
    if (!strcmp(argv[i], "--dir") && i + 1 < argc)
      dir = argv[++i];
    else if (!strcmp(argv[i], "--scale") && i + 1 < argc)
      scale = atoi(argv[++i]);
    else if (nrest < 8)
      rest[nrest++] = argv[i];
    else
      return 2;
  }
  if (scale < 1 || scale > 2 || bench_options(nrest, rest, "bench_hdf5_write", &rounds, &quick)) {
    fprintf(stderr, "       (and --dir DIR, --scale 1|2)\n");
    return 2;
  }
  if (strata_init(&argc, &argv, NULL) != 0)
    return 1;
  const int rank = strata_rank(), size = strata_size();
  strata_cosmology_params cp;
  strata_cosmology_params_init(&cp);
  cp.seed = 2026;
  cp.sigma = 1.5;
  strata_amr_problem *problem = NULL;
  strata_amr_params p;
  strata_amr_params_init(&p);
  p.block_cells = quick ? 8 : 16;
  p.root_blocks = 2 * scale;
  p.max_level = quick ? 3 : 5;
  p.nfields = 2;
  p.field_names[1] = "tracer";
  strata_amr *amr = NULL;
  strata_amr_criterion c;
  strata_amr_criterion_init(&c);
  c.kind = STRATA_AMR_MASS;
  c.min_refine = 1;
  int ret = strata_amr_problem_cosmology(quick ? 32 : 128 * scale, &cp, &problem);
  if (!ret)
    ret = strata_amr_create(&p, &amr);
  if (!ret)
    ret = strata_amr_build(amr, problem, &c);
  char path[4096];
  snprintf(path, sizeof path, "%s/bench_hdf5_write_%d.h5", dir, size);
  double *parallel = calloc((size_t)rounds, sizeof *parallel);
  double *serial = calloc((size_t)rounds, sizeof *serial);
  double *ratio = calloc((size_t)rounds, sizeof *ratio);
  double rss_parallel = -1, rss_serial = -1;
  if (!ret && STRATA_HDF5_PARALLEL) {
    ret = timed_write(amr, path, "parallel") < 0;
    rss_parallel = peak_rss_mib();
    ret = ret || timed_write(amr, path, "serial") < 0;
    rss_serial = peak_rss_mib();
    for (int r = 0; r < rounds && !ret; r++) {
      int first_parallel = r % 2 == 0; /* alternate which goes first */
      double a = timed_write(amr, path, first_parallel ? "parallel" : "serial");
      double b = timed_write(amr, path, first_parallel ? "serial" : "parallel");
      parallel[r] = first_parallel ? a : b;
      serial[r] = first_parallel ? b : a;
      ret = parallel[r] < 0 || serial[r] < 0;
      ratio[r] = ret ? 0 : serial[r] / parallel[r];
    }
  }
  if (rank == 0) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "benchmark", "hdf5_write");
    cJSON_AddNumberToObject(root, "ranks", size);
    cJSON_AddNumberToObject(root, "leaves", amr ? (double)strata_amr_num_leaves(amr) : 0);
    cJSON_AddBoolToObject(root, "parallel_hdf5", STRATA_HDF5_PARALLEL);
    cJSON_AddNumberToObject(root, "rounds", rounds);
    if (!ret && STRATA_HDF5_PARALLEL) {
      FILE *f = fopen(path, "rb");
      long bytes = f && !fseek(f, 0, SEEK_END) ? ftell(f) : -1;
      if (f)
        fclose(f);
      cJSON_AddNumberToObject(root, "file_mib", (double)bytes / (1 << 20));
      cJSON_AddItemToObject(root, "parallel", summary(parallel, rounds));
      cJSON_AddItemToObject(root, "serial", summary(serial, rounds));
      cJSON_AddNumberToObject(root, "serial_over_parallel", bench_median(ratio, rounds));
      cJSON_AddNumberToObject(root, "rank0_peak_rss_mib_after_parallel", rss_parallel);
      cJSON_AddNumberToObject(root, "rank0_peak_rss_mib_after_serial", rss_serial);
    }
    bench_print_json(root);
  }
  if (rank == 0)
    unlink(path);
  free(parallel);
  free(serial);
  free(ratio);
  if (amr)
    strata_amr_destroy(amr);
  strata_amr_problem_destroy(problem);
  strata_finalize();
  return ret ? 1 : 0;
}
