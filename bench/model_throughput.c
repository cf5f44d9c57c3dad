/* A model file's (ONNX or JSON) inference throughput as Strata tasks: each rank keeps
 * --arrays input arrays of extent --extent in flight per round (one model
 * task each, spread over its StarPU workers), waits, and the round's time
 * is the slowest rank's. Prints JSON: seconds per round (median, min, max)
 * and arrays per second over all ranks. bench/model_vs_torch.py runs it
 * beside PyTorch on the same model.
 *
 *   bench_model_throughput FILE [--extent N] [--arrays A] [--rounds R]
 */
#include <cjson/cJSON.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata/strata.h>

#include "bench_util.h"

int main(int argc, char **argv)
{
  int rounds = 5, arrays = 1;
  long extent = 64;
  const char *path = argc > 1 ? argv[1] : NULL;
  for (int i = 2; i + 1 < argc; i += 2) {
    long v = atol(argv[i + 1]);
    if (strcmp(argv[i], "--extent") == 0 && v >= 4 && v <= 512)
      extent = v;
    else if (strcmp(argv[i], "--arrays") == 0 && v >= 1 && v <= 64)
      arrays = (int)v;
    else if (strcmp(argv[i], "--rounds") == 0 && v >= 1 && v <= 1000)
      rounds = (int)v;
    else
      path = NULL;
  }
  if (!path || argc % 2 != 0) {
    fprintf(stderr, "usage: bench_model_throughput FILE [--extent N] [--arrays A] [--rounds R]\n");
    return 2;
  }
  int ret = strata_init(&argc, &argv, NULL);
  if (ret) {
    fprintf(stderr, "bench_model_throughput: %s\n", strata_strerror(ret));
    return ret == STRATA_ENODEV ? 77 : 1;
  }
  strata_model *m;
  if ((ret = strata_model_load(path, &m))) {
    fprintf(stderr, "bench_model_throughput: %s\n", strata_error_message());
    strata_finalize();
    return 1;
  }
  int in_c, out_c;
  strata_model_describe(m, &in_c, &out_c, NULL);
  strata_array *in[64], *out[64];
  int64_t ishape[4] = {in_c, extent, extent, extent}, oshape[4] = {out_c, extent, extent, extent};
  for (int a = 0; a < arrays; a++) {
    strata_array_create(4, ishape, STRATA_FLOAT32, &in[a]);
    strata_array_create(4, oshape, STRATA_FLOAT32, &out[a]);
    float *p;
    strata_array_acquire(in[a], STRATA_WRITE, (void **)&p);
    for (int64_t i = 0; i < in_c * extent * extent * extent; i++)
      p[i] = (float)((i * 2654435761u + (uint64_t)a) % 1000) / 500.0f - 1.0f;
    strata_array_release(in[a]);
  }
  double *t = malloc((size_t)rounds * sizeof *t);
  for (int r = -1; r < rounds; r++) { /* round -1 warms up: scratch, history */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = bench_now();
    for (int a = 0; a < arrays; a++)
      strata_model_apply(m, in[a], out[a]);
    strata_wait_all();
    double mine = bench_now() - t0, slowest;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (r >= 0)
      t[r] = slowest;
  }
  double lo = t[0], hi = t[0];
  for (int r = 1; r < rounds; r++)
    lo = t[r] < lo ? t[r] : lo, hi = t[r] > hi ? t[r] : hi;
  double median = bench_median(t, rounds);
  if (strata_rank() == 0) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "benchmark", "model_throughput");
    cJSON_AddStringToObject(root, "model", strata_model_name(m));
    cJSON_AddNumberToObject(root, "extent", (double)extent);
    cJSON_AddNumberToObject(root, "ranks", strata_size());
    cJSON_AddNumberToObject(root, "arrays_per_rank", arrays);
    cJSON_AddNumberToObject(root, "rounds", rounds);
    cJSON_AddNumberToObject(root, "round_seconds_median", median);
    cJSON_AddNumberToObject(root, "round_seconds_min", lo);
    cJSON_AddNumberToObject(root, "round_seconds_max", hi);
    cJSON_AddNumberToObject(root, "arrays_per_second", strata_size() * arrays / median);
    bench_print_json(root);
  }
  for (int a = 0; a < arrays; a++)
    strata_array_destroy(in[a]), strata_array_destroy(out[a]);
  free(t);
  strata_model_destroy(m);
  strata_finalize();
  return 0;
}
