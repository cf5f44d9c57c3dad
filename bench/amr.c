/* AMR transfer benchmark: restriction (2x2x2 mean) and prolongation (linear,
 * one ghost layer) on float64 cubes of n^3 fine cells, n = 64, 128, 256.
 * Each is timed as one plain kernel call on the whole cube and as StarPU
 * tasks over 32^3-cell blocks (one task per block, blocks registered as
 * separate handles like AMR leaves), against memcpy moving the same traffic
 * (bytes read + written) in the same run. Kernels and memcpy run on one
 * thread before StarPU starts; run with STARPU_NCPU=1 to compare the tasks
 * like for like.
 * Targets: kernel >= 0.6 x memcpy, tasks >= 0.8 x kernel. Prints JSON
 * with medians over the rounds.
 *
 *   bench_amr [--rounds R] [--quick]   (--quick: n = 32, to check it runs)
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata/strata.h>

#include "bench_util.h"
#include "codelets.h"
#include "kernels/amr_kernels.h"

enum { BLOCK = 32 };

/* A transfer between two cubes: restriction of fine n^3 into coarse
 * (n/2)^3, or prolongation of coarse (n/2 + 2)^3 (one ghost layer) into
 * fine n^3. */
static struct strata__amr_xfer cube_xfer(int kind, int64_t n)
{
  struct strata__amr_xfer x = {.kind = kind, .dim = 3, .factor = 2, .is_double = 1};
  for (int a = 0; a < 3; a++) {
    if (kind == STRATA__AMR_RESTRICT) {
      x.count[a] = x.dst_dims[a] = n / 2;
      x.src_dims[a] = n;
    } else {
      x.count[a] = x.dst_dims[a] = n;
      x.src_dims[a] = n / 2 + 2;
      x.src_start[a] = 2; /* fine offset of the interior from the ghost corner */
    }
  }
  return x;
}

static int64_t cube(int64_t n) { return n * n * n; }

static double *filled(int64_t count)
{
  double *a = malloc((size_t)count * sizeof *a);
  for (int64_t i = 0; i < count; i++)
    a[i] = (double)(i % 1009) * 0.001;
  return a;
}

/* Seconds of one kernel call on the whole cube (median). */
static double time_kernel(const struct strata__amr_xfer *x, int rounds)
{
  int64_t nsrc = x->src_dims[0] * x->src_dims[1] * x->src_dims[2];
  int64_t ndst = x->dst_dims[0] * x->dst_dims[1] * x->dst_dims[2];
  double *src = filled(nsrc), *dst = filled(ndst), *t = malloc((size_t)rounds * sizeof *t);
  strata__amr_xfer_cpu(x, dst, src); /* first touch */
  for (int r = 0; r < rounds; r++) {
    double t0 = bench_now();
    strata__amr_xfer_cpu(x, dst, src);
    t[r] = bench_now() - t0;
  }
  double m = bench_median(t, rounds);
  free(src);
  free(dst);
  free(t);
  return m;
}

static double time_memcpy(int64_t bytes, int rounds)
{
  char *a = malloc((size_t)bytes), *b = malloc((size_t)bytes);
  memset(a, 1, (size_t)bytes);
  memset(b, 2, (size_t)bytes);
  double *t = malloc((size_t)rounds * sizeof *t);
  for (int r = 0; r < rounds; r++) {
    double t0 = bench_now();
    memcpy(b, a, (size_t)bytes);
    t[r] = bench_now() - t0;
    a[r % bytes] = b[(r * 7) % bytes]; /* keep the copies alive */
  }
  double m = bench_median(t, rounds);
  free(a);
  free(b);
  free(t);
  return m;
}

/* Seconds for one task per BLOCK^3 block over the cube (median), blocks as
 * separate handles. */
static double time_tasks(int kind, int64_t n, int rounds)
{
  int64_t nb = cube(n / BLOCK);
  struct strata__amr_xfer x = cube_xfer(kind, BLOCK);
  int64_t nsrc = x.src_dims[0] * x.src_dims[1] * x.src_dims[2];
  int64_t ndst = x.dst_dims[0] * x.dst_dims[1] * x.dst_dims[2];
  double **bufs = malloc((size_t)(2 * nb) * sizeof *bufs);
  starpu_data_handle_t *h = malloc((size_t)(2 * nb) * sizeof *h);
  for (int64_t i = 0; i < nb; i++) {
    bufs[2 * i] = filled(nsrc);
    bufs[2 * i + 1] = filled(ndst);
    starpu_vector_data_register(&h[2 * i], STARPU_MAIN_RAM, (uintptr_t)bufs[2 * i], (uint32_t)nsrc,
                                sizeof(double));
    starpu_vector_data_register(&h[2 * i + 1], STARPU_MAIN_RAM, (uintptr_t)bufs[2 * i + 1],
                                (uint32_t)ndst, sizeof(double));
  }
  double *t = malloc((size_t)(rounds + 1) * sizeof *t);
  for (int r = 0; r <= rounds; r++) { /* round 0 warms up */
    double t0 = bench_now();
    for (int64_t i = 0; i < nb; i++)
      if (strata__amr_xfer_submit(MPI_COMM_NULL, h[2 * i], h[2 * i + 1], &x) != 0)
        fprintf(stderr, "bench_amr: submission failed\n");
    starpu_task_wait_for_all();
    t[r] = bench_now() - t0;
  }
  double m = bench_median(t + 1, rounds);
  for (int64_t i = 0; i < 2 * nb; i++) {
    starpu_data_unregister(h[i]);
    free(bufs[i]);
  }
  free(bufs);
  free(h);
  free(t);
  return m;
}

/* Plain timings of one case, taken before StarPU starts: its workers and
 * the StarPU-MPI progress thread spin, and would share the cores with the
 * kernel and memcpy. */
struct plain {
  int kind;
  int64_t n, bytes;
  double kernel, copy;
};

static struct plain time_plain(int kind, int64_t n, int rounds)
{
  struct strata__amr_xfer x = cube_xfer(kind, n);
  int64_t nsrc = x.src_dims[0] * x.src_dims[1] * x.src_dims[2];
  int64_t bytes = (nsrc + cube(x.dst_dims[0])) * (int64_t)sizeof(double);
  return (struct plain){kind, n, bytes, time_kernel(&x, rounds), time_memcpy(bytes / 2, rounds)};
}

static cJSON *bench_case(const struct plain *c, int rounds)
{
  double tt = time_tasks(c->kind, c->n, rounds), b = (double)c->bytes;
  cJSON *row = cJSON_CreateObject();
  cJSON_AddStringToObject(row, "op", c->kind == STRATA__AMR_RESTRICT ? "restrict" : "prolong");
  cJSON_AddNumberToObject(row, "n", (double)c->n);
  cJSON_AddNumberToObject(row, "traffic_bytes", b);
  cJSON_AddNumberToObject(row, "kernel_gbs", b / c->kernel * 1e-9);
  cJSON_AddNumberToObject(row, "memcpy_gbs", b / c->copy * 1e-9);
  cJSON_AddNumberToObject(row, "tasks_gbs", b / tt * 1e-9);
  cJSON_AddNumberToObject(row, "kernel_vs_memcpy", c->copy / c->kernel);
  cJSON_AddNumberToObject(row, "tasks_vs_kernel", c->kernel / tt);
  return row;
}

int main(int argc, char **argv)
{
  int rounds = 7, quick = 0;
  if (bench_options(argc, argv, "bench_amr", &rounds, &quick))
    return 2;
  const int64_t sizes[] = {64, 128, 256};
  struct plain cases[6];
  int ncases = 0;
  for (int k = 0; k < (quick ? 1 : 3); k++)
    for (int kind = STRATA__AMR_RESTRICT; kind <= STRATA__AMR_PROLONG; kind++)
      cases[ncases++] = time_plain(kind, quick ? 32 : sizes[k], rounds);
  int ret = strata_init(NULL, NULL, NULL);
  if (ret) {
    fprintf(stderr, "bench_amr: %s\n", strata_strerror(ret));
    return ret == STRATA_ENODEV ? 77 : 1;
  }
  cJSON *root = cJSON_CreateObject(), *rows = cJSON_AddArrayToObject(root, "cases");
  cJSON_AddStringToObject(root, "benchmark", "amr");
  cJSON_AddNumberToObject(root, "rounds", rounds);
  cJSON_AddNumberToObject(root, "workers", starpu_worker_get_count());
  cJSON_AddNumberToObject(root, "block", BLOCK);
  for (int k = 0; k < ncases; k++)
    cJSON_AddItemToArray(rows, bench_case(&cases[k], rounds));
  bench_print_json(root);
  strata_finalize();
  return 0;
}
