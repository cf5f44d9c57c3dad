/* AMR transfer benchmark: restriction (2x2x2 mean) and prolongation (linear,
 * one ghost layer) on float64 cubes of n^3 fine cells, n = 64, 128, 256.
 * Each is timed as one plain kernel call on the whole cube and as StarPU
 * tasks the way the AMR hierarchy submits them when it coarsens or refines:
 * one task per family, a parent block and its eight children, 32^3-cell
 * blocks with one ghost layer registered as separate handles like AMR
 * leaves; (n/64)^3 tasks per round. Both
 * against memcpy moving the same traffic (bytes read + written) in the same
 * run. Kernels and memcpy alternate on one thread before StarPU starts; each
 * round of tasks follows one plain kernel call and is waited for with
 * strata_wait_all(). Buffers are 64-byte aligned, like StarPU's under
 * Strata. Run with STARPU_NCPU=1 to compare the tasks like for like.
 * Targets: kernel >= 0.6 x memcpy, tasks >= 0.8 x kernel. The pair is
 * also timed from memory, after writing twice the last-level cache
 * (kernel_vs_memcpy_cold): where every buffer fits in the cache, the warm
 * pair only measures the cache. Also the tasks against the same family
 * kernels called directly on blocks like theirs (tasks_vs_direct: what
 * StarPU costs), and plain loops touching every fine cell of the blocks
 * against the same over the cube, from memory (blocks_vs_cube_touch: what
 * the blocks' layout allows tasks_vs_kernel). Prints JSON with medians
 * over the rounds; the ratios are medians of paired per-round ratios.
 *
 *   bench_amr [--rounds R] [--quick]   (--quick: n = 64 only, to check it runs)
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata/strata.h>

#include "amr_cases.h"
#include "bench_util.h"
#include "codelets.h"

/* On a cache line, like the buffers StarPU allocates under Strata. */
static void *aligned(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

/* Writing twice the last-level cache's size, and at least 256 MiB, evicts
 * the buffers timed next (sysfs's size of cpu0's highest cache). A VM's
 * sysfs may show less L3 than the host has: on an AMD EPYC VM reporting
 * 32 MiB, a 1.2 MB memcpy kept getting slower up to 256 MiB written. */
static size_t evict_bytes(void)
{
  size_t largest = 0;
  for (int index = 0; index < 8; index++) {
    char path[96], unit = 0;
    unsigned long size = 0;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
    FILE *f = fopen(path, "r");
    if (!f)
      break;
    if (fscanf(f, "%lu%c", &size, &unit) >= 1) {
      size_t bytes = unit == 'K' ? size << 10 : unit == 'M' ? size << 20 : size;
      largest = bytes > largest ? bytes : largest;
    }
    fclose(f);
  }
  const size_t floor_bytes = (size_t)256 << 20;
  return 2 * largest > floor_bytes ? 2 * largest : floor_bytes;
}

/* One ordinary store per cache line of a buffer allocated once and kept
 * until the process exits: glibc's memset of this size streams past the caches with
 * non-temporal stores and evicts nothing (measured: a memcpy after a
 * 64 MiB memset ran as fast as with no eviction). */
static void evict(int round)
{
  static char *buffer;
  static size_t bytes;
  if (!buffer) {
    bytes = evict_bytes();
    buffer = aligned(bytes);
  }
  for (size_t i = 0; buffer && i < bytes; i += 64)
    ((volatile char *)buffer)[i] = (char)round;
}

static double *filled(int64_t count)
{
  double *a = aligned((size_t)count * sizeof *a);
  fill_pattern(a, count);
  return a;
}

/* Plain timings of one case, taken before StarPU starts: its workers and
 * the StarPU-MPI progress thread spin, and would share the cores with the
 * kernel and memcpy. Kernel and memcpy alternate round by round; each round
 * gives a paired ratio, whose median cancels the drift of a shared machine. */
static struct plain time_plain(int kind, int64_t n, int rounds)
{
  struct strata__amr_xfer x = cube_xfer(kind, n);
  int64_t nsrc = cells(x.src_dims), ndst = cells(x.dst_dims);
  struct plain p = {kind, n, (nsrc + ndst) * (int64_t)sizeof(double), 0, 0, 0, 0};
  size_t half = (size_t)p.bytes / 2; /* memcpy reads and writes half the traffic each */
  double *src = filled(nsrc), *dst = filled(ndst);
  char *a = aligned(half), *b = aligned(half);
  memset(a, 1, half);
  memset(b, 2, half);
  double *t = malloc((size_t)(4 * rounds) * sizeof *t), *tk = t, *tc = t + rounds,
         *ratio = t + 2 * rounds, *cold = t + 3 * rounds;
  strata__amr_xfer_cpu(&x, dst, src); /* first touch */
  for (int r = 0; r < rounds; r++) {
    double t0 = bench_now();
    strata__amr_xfer_cpu(&x, dst, src);
    double t1 = bench_now();
    memcpy(b, a, half);
    double t2 = bench_now();
    a[(size_t)r % half] = b[(size_t)r * 7 % half]; /* keep the copies alive */
    tk[r] = t1 - t0;
    tc[r] = t2 - t1;
    ratio[r] = tc[r] / tk[r];
  }
  /* The same pairs, each from memory rather than from the caches; after
   * the warm ones, which the evictions would leave cold. */
  for (int r = 0; r < rounds; r++) {
    evict(r);
    double t0 = bench_now();
    strata__amr_xfer_cpu(&x, dst, src);
    double t1 = bench_now();
    evict(r + 1);
    double t2 = bench_now();
    memcpy(b, a, half);
    cold[r] = (bench_now() - t2) / (t1 - t0);
  }
  p.kernel = bench_median(tk, rounds);
  p.copy = bench_median(tc, rounds);
  p.ratio = bench_median(ratio, rounds);
  p.cold_ratio = bench_median(cold, rounds);
  free(src);
  free(dst);
  free(a);
  free(b);
  free(t);
  return p;
}

/* What the data's layout alone costs: every fine cell the transfer moves
 * touched once (written when prolonging, read when restricting), in the
 * cube's rows or in the blocks' interiors, the children of a pair row by
 * row as the family kernel goes. Each touch asks for the row TOUCH_AHEAD
 * rows on (stride cells further), as the kernels ask for theirs: on an AMD
 * EPYC VM that took plain stores into the blocks from 0.62-0.65x to
 * 0.67-0.75x the cube's rate. Reads fold the bits with XOR, which
 * vectorises (a floating-point sum would wait on each add). Returns the
 * fold, to keep the reads. */
enum { TOUCH_AHEAD = 8 };

static uint64_t touch_row(int kind, double *row, int64_t len, int64_t stride, double value)
{
  const int prolong = kind == STRATA__AMR_PROLONG;
  const char *ahead = (const char *)(row + TOUCH_AHEAD * stride);
  for (int64_t k = 0; k < len * (int64_t)sizeof *row; k += 64)
    if (prolong)
      __builtin_prefetch(ahead + k, 1, 3);
    else
      __builtin_prefetch(ahead + k, 0, 3);
  uint64_t fold = 0;
  if (prolong)
    for (int64_t i = 0; i < len; i++)
      row[i] = value;
  else
    for (int64_t i = 0; i < len; i++) {
      uint64_t bits;
      memcpy(&bits, &row[i], sizeof bits);
      fold ^= bits;
    }
  return fold;
}

static uint64_t touch_cube(int kind, double *fine, int64_t n, double value)
{
  uint64_t fold = 0;
  for (int64_t row = 0; row < n * n; row++)
    fold ^= touch_row(kind, fine + row * n, n, n, value);
  return fold;
}

static uint64_t touch_families(int kind, double **bufs, int64_t nfam, double value)
{
  const int64_t side = BLOCK + 2 * GHOST;
  uint64_t fold = 0;
  for (int64_t f = 0; f < nfam; f++)
    for (int pair = 0; pair < FAMILY / 2; pair++) {
      double *lo = bufs[f * (1 + FAMILY) + 1 + 2 * pair],
             *hi = bufs[f * (1 + FAMILY) + 2 + 2 * pair];
      for (int64_t z = GHOST; z < GHOST + BLOCK; z++)
        for (int64_t y = GHOST; y < GHOST + BLOCK; y++) {
          const int64_t at = (z * side + y) * side + GHOST;
          fold ^= touch_row(kind, lo + at, BLOCK, side, value) ^
                  touch_row(kind, hi + at, BLOCK, side, value);
        }
    }
  return fold;
}

/* The median over rounds of the time to touch the cube's fine cells over
 * the time to touch the blocks', each from memory: the most the tasks can
 * reach against the kernel if both moved data as fast as plain loops. */
static double layout_floor(int kind, double *cube_fine, int64_t n, double **bufs, int64_t nfam,
                           int rounds)
{
  double *ratio = malloc((size_t)rounds * sizeof *ratio);
  uint64_t fold = 0;
  for (int r = 0; ratio && r < rounds; r++) {
    evict(r);
    double t0 = bench_now();
    fold ^= touch_cube(kind, cube_fine, n, r);
    double t1 = bench_now();
    evict(r + 1);
    double t2 = bench_now();
    fold ^= touch_families(kind, bufs, nfam, r);
    ratio[r] = (t1 - t0) / (bench_now() - t2);
  }
  if (fold == 1) /* keeps the reads */
    fprintf(stderr, "bench_amr: %llu\n", (unsigned long long)fold);
  double median = ratio ? bench_median(ratio, rounds) : NAN;
  free(ratio);
  return median;
}

/* One task per family over the cube, alternating round by round with the
 * plain kernel on the whole cube and with the family kernels called
 * directly over a second set of blocks like the tasks' (both on the main
 * thread, while the idle worker yields its core): medians of the three
 * times and of the paired ratios kernel / tasks and direct / tasks. The
 * first prices blocks and StarPU together against one cube, the second
 * StarPU alone. The kernel here works beside the blocks, whose bytes may
 * push the cube out of the caches that it had to itself in time_plain. */
static struct tasks time_tasks(int kind, int64_t n, int rounds)
{
  const int64_t nfam = cube(n / (2 * BLOCK));
  const struct strata__amr_family fam = block_family(kind);
  struct strata__amr_xfer whole = cube_xfer(kind, n);
  double *cube_src = filled(cells(whole.src_dims)), *cube_dst = filled(cells(whole.dst_dims));
  const int64_t nbufs = nfam * (1 + FAMILY);
  double **bufs = malloc((size_t)nbufs * sizeof *bufs),
         **direct = malloc((size_t)nbufs * sizeof *direct);
  starpu_data_handle_t *h = malloc((size_t)nbufs * sizeof *h); /* parent, then its children */
  for (int64_t i = 0; i < nbufs; i++) {
    bufs[i] = filled(cube(BLOCK + 2 * GHOST));
    direct[i] = filled(cube(BLOCK + 2 * GHOST));
    starpu_vector_data_register(&h[i], STARPU_MAIN_RAM, (uintptr_t)bufs[i],
                                (uint32_t)cube(BLOCK + 2 * GHOST), sizeof(double));
  }
  struct task_rounds times = task_rounds_new(rounds);
  for (int r = -1; r < rounds; r++) { /* round -1 warms up */
    double t0 = bench_now();
    strata__amr_xfer_cpu(&whole, cube_dst, cube_src);
    double t1 = bench_now();
    run_family_tasks(h, nfam, &fam);
    double t2 = bench_now();
    for (int64_t f = 0; f < nfam; f++) {
      double **family = direct + f * (1 + FAMILY);
      strata__amr_family_cpu(&fam, family[0], (void *const *)(family + 1));
    }
    double t3 = bench_now();
    if (r >= 0)
      task_rounds_record(&times, r, t0, t1, t2, t3);
  }
  struct tasks m = task_rounds_medians(&times, nfam);
  m.layout_floor = layout_floor(kind, kind == STRATA__AMR_PROLONG ? cube_dst : cube_src, n, direct,
                                nfam, rounds);
  for (int64_t i = 0; i < nbufs; i++) {
    starpu_data_unregister(h[i]);
    free(bufs[i]);
    free(direct[i]);
  }
  free(bufs);
  free(direct);
  free(h);
  free(cube_src);
  free(cube_dst);
  return m;
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
      cases[ncases++] = time_plain(kind, sizes[k], rounds);
  strata_config cfg;
  strata_config_init(&cfg);
  cfg.yield_when_idle = 1; /* the paired plain kernels run beside the idle worker */
  cfg.ncuda = 0;           /* CPU kernels against CPU tasks (bench_amr_cuda: the GPU) */
  int ret = strata_init(NULL, NULL, &cfg);
  if (ret) {
    fprintf(stderr, "bench_amr: %s\n", strata_strerror(ret));
    return ret == STRATA_ENODEV ? 77 : 1;
  }
  cJSON *root = cJSON_CreateObject(), *rows = cJSON_AddArrayToObject(root, "cases");
  cJSON_AddStringToObject(root, "benchmark", "amr");
  cJSON_AddNumberToObject(root, "rounds", rounds);
  cJSON_AddNumberToObject(root, "workers", starpu_worker_get_count());
  cJSON_AddNumberToObject(root, "block", BLOCK);
  for (int k = 0; k < ncases; k++) {
    struct tasks tt = time_tasks(cases[k].kind, cases[k].n, rounds);
    cJSON_AddItemToArray(rows, amr_case_json(&cases[k], &tt));
  }
  bench_print_json(root);
  strata_finalize();
  return 0;
}
