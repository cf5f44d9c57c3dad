/* AMR transfers on a GPU, the CUDA counterpart of bench_amr: restriction
 * (2x2x2 mean) and prolongation (linear, one ghost layer) on float64 cubes
 * of n^3 fine cells, n = 64, 128, 256, in device memory.
 *  - plain: the CUDA kernel on the whole cube against cudaMemcpyAsync
 *    (device to device) moving the same traffic, both timed with events
 *    over REPS back-to-back launches on one stream;
 *  - tasks: one StarPU task per family (a parent and its eight 32^3-cell
 *    children with one ghost layer, separate handles like AMR leaves) on
 *    the CUDA worker, data already on the GPU, against the whole-cube
 *    kernel and against the same family kernels launched directly on
 *    device blocks like the tasks' (tasks_vs_direct: what StarPU costs).
 *    Wall clock, each synchronised, alternating round by round.
 * Prints JSON with medians over the rounds; ratios are medians of paired
 * per-round ratios. Exits 77 without a CUDA device or CUDA worker.
 *
 *   bench_amr_cuda [--rounds R] [--quick]   (--quick: n = 64 only)
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include <strata/strata.h>

#include "amr_cases.h"
#include "bench_util.h"
#include "codelets.h"

enum { REPS = 20 }; /* launches per timed round of the plain kernel and copy */

#define CUDA_OK(call) cuda_ok((call), #call)
static void cuda_ok(cudaError_t err, const char *what)
{
  if (err != cudaSuccess) {
    fprintf(stderr, "bench_amr_cuda: %s: %s\n", what, cudaGetErrorString(err));
    exit(1);
  }
}

static void launch_ok(int err)
{
  if (err)
    cuda_ok((cudaError_t)err, "kernel launch");
}

/* count doubles on the device, filled from a host pattern (not zeros). */
static double *device_filled(int64_t count)
{
  double *host = malloc((size_t)count * sizeof *host), *dev;
  fill_pattern(host, count);
  CUDA_OK(cudaMalloc((void **)&dev, (size_t)count * sizeof *dev));
  CUDA_OK(cudaMemcpy(dev, host, (size_t)count * sizeof *dev, cudaMemcpyHostToDevice));
  free(host);
  return dev;
}

static struct plain time_plain(int kind, int64_t n, int rounds, cudaStream_t s)
{
  struct strata__amr_xfer x = cube_xfer(kind, n);
  int64_t nsrc = cells(x.src_dims), ndst = cells(x.dst_dims);
  struct plain p = {kind, n, (nsrc + ndst) * (int64_t)sizeof(double), 0, 0, 0, NAN};
  size_t half = (size_t)p.bytes / 2; /* the copy reads and writes half the traffic each */
  double *src = device_filled(nsrc), *dst = device_filled(ndst);
  void *a, *b;
  CUDA_OK(cudaMalloc(&a, half));
  CUDA_OK(cudaMalloc(&b, half));
  CUDA_OK(cudaMemsetAsync(a, 1, half, s));
  cudaEvent_t e[3];
  for (int k = 0; k < 3; k++)
    CUDA_OK(cudaEventCreate(&e[k]));
  double *t = malloc((size_t)(3 * rounds) * sizeof *t), *tk = t, *tc = t + rounds,
         *ratio = t + 2 * rounds;
  for (int r = -1; r < rounds; r++) { /* round -1 warms up */
    CUDA_OK(cudaEventRecord(e[0], s));
    for (int i = 0; i < REPS; i++)
      launch_ok(strata__amr_xfer_cuda(&x, dst, src, s));
    CUDA_OK(cudaEventRecord(e[1], s));
    for (int i = 0; i < REPS; i++)
      CUDA_OK(cudaMemcpyAsync(b, a, half, cudaMemcpyDeviceToDevice, s));
    CUDA_OK(cudaEventRecord(e[2], s));
    CUDA_OK(cudaEventSynchronize(e[2]));
    float kms, cms;
    CUDA_OK(cudaEventElapsedTime(&kms, e[0], e[1]));
    CUDA_OK(cudaEventElapsedTime(&cms, e[1], e[2]));
    if (r >= 0) {
      tk[r] = 1e-3 * kms / REPS;
      tc[r] = 1e-3 * cms / REPS;
      ratio[r] = tc[r] / tk[r];
    }
  }
  p.kernel = bench_median(tk, rounds);
  p.copy = bench_median(tc, rounds);
  p.ratio = bench_median(ratio, rounds);
  for (int k = 0; k < 3; k++)
    cudaEventDestroy(e[k]);
  cudaFree(src);
  cudaFree(dst);
  cudaFree(a);
  cudaFree(b);
  free(t);
  return p;
}

static struct tasks time_tasks(int kind, int64_t n, int rounds, cudaStream_t s)
{
  const int64_t nfam = cube(n / (2 * BLOCK)), nbufs = nfam * (1 + FAMILY),
                block_cells = cube(BLOCK + 2 * GHOST);
  const struct strata__amr_family fam = block_family(kind);
  struct strata__amr_xfer whole = cube_xfer(kind, n);
  double *cube_src = device_filled(cells(whole.src_dims)),
         *cube_dst = device_filled(cells(whole.dst_dims));
  double **host = malloc((size_t)nbufs * sizeof *host),
         **direct = malloc((size_t)nbufs * sizeof *direct);
  starpu_data_handle_t *h = malloc((size_t)nbufs * sizeof *h); /* parent, then its children */
  for (int64_t i = 0; i < nbufs; i++) {
    host[i] = malloc((size_t)block_cells * sizeof(double));
    fill_pattern(host[i], block_cells);
    direct[i] = device_filled(block_cells);
    starpu_vector_data_register(&h[i], STARPU_MAIN_RAM, (uintptr_t)host[i], (uint32_t)block_cells,
                                sizeof(double));
  }
  struct task_rounds times = task_rounds_new(rounds);
  for (int r = -1; r < rounds; r++) { /* round -1 moves the blocks to the GPU */
    double t0 = bench_now();
    launch_ok(strata__amr_xfer_cuda(&whole, cube_dst, cube_src, s));
    CUDA_OK(cudaStreamSynchronize(s));
    double t1 = bench_now();
    run_family_tasks(h, nfam, &fam);
    double t2 = bench_now();
    for (int64_t f = 0; f < nfam; f++) {
      double **family = direct + f * (1 + FAMILY);
      launch_ok(strata__amr_family_cuda(&fam, family[0], (void *const *)(family + 1), s));
    }
    CUDA_OK(cudaStreamSynchronize(s));
    double t3 = bench_now();
    if (r >= 0)
      task_rounds_record(&times, r, t0, t1, t2, t3);
  }
  struct tasks m = task_rounds_medians(&times, nfam);
  for (int64_t i = 0; i < nbufs; i++) {
    starpu_data_unregister(h[i]);
    free(host[i]);
    cudaFree(direct[i]);
  }
  free(host);
  free(direct);
  free(h);
  cudaFree(cube_src);
  cudaFree(cube_dst);
  return m;
}

int main(int argc, char **argv)
{
  int rounds = 7, quick = 0, ndev = 0;
  if (bench_options(argc, argv, "bench_amr_cuda", &rounds, &quick))
    return 2;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    fprintf(stderr, "bench_amr_cuda: no CUDA device\n");
    return 77;
  }
  strata_config cfg;
  strata_config_init(&cfg);
  cfg.ncpu = 0; /* every task on the CUDA worker */
  cfg.ncuda = 1;
  int ret = strata_init(NULL, NULL, &cfg);
  if (ret || starpu_cuda_worker_get_count() == 0) {
    fprintf(stderr, "bench_amr_cuda: %s\n", ret ? strata_strerror(ret) : "no CUDA worker");
    if (!ret)
      strata_finalize();
    return 77;
  }
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int64_t sizes[] = {64, 128, 256};
  cJSON *root = cJSON_CreateObject(), *rows = cJSON_AddArrayToObject(root, "cases");
  cJSON_AddStringToObject(root, "benchmark", "amr_cuda");
  struct cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  cJSON_AddStringToObject(root, "device", prop.name);
  cJSON_AddNumberToObject(root, "rounds", rounds);
  cJSON_AddNumberToObject(root, "block", BLOCK);
  for (int k = 0; k < (quick ? 1 : 3); k++)
    for (int kind = STRATA__AMR_RESTRICT; kind <= STRATA__AMR_PROLONG; kind++) {
      struct plain p = time_plain(kind, sizes[k], rounds, s);
      struct tasks tt = time_tasks(kind, sizes[k], rounds, s);
      cJSON_AddItemToArray(rows, amr_case_json(&p, &tt));
    }
  bench_print_json(root);
  cudaStreamDestroy(s);
  strata_finalize();
  return 0;
}
