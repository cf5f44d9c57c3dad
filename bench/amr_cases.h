/* What bench_amr and bench_amr_cuda share: the cases (restriction and
 * prolongation of n^3 cubes, families of BLOCK^3 blocks), their timings
 * and the JSON row of one case. */
#ifndef STRATA_BENCH_AMR_CASES_H
#define STRATA_BENCH_AMR_CASES_H

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <strata/strata.h>

#include "amr.h"
#include "bench_util.h"
#include "codelets.h"
#include "kernels/amr_kernels.h"

enum { BLOCK = 32, GHOST = 1, FAMILY = 8 };

/* A transfer between two cubes: restriction of fine n^3 into coarse
 * (n/2)^3, or prolongation of coarse (n/2 + 2)^3 (one ghost layer) into
 * fine n^3. */
static inline struct strata__amr_xfer cube_xfer(int kind, int64_t n)
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

static inline int64_t cube(int64_t n) { return n * n * n; }

/* The values every benchmark array starts with (not zeros). */
static inline void fill_pattern(double *a, int64_t count)
{
  for (int64_t i = 0; i < count; i++)
    a[i] = (double)(i % 1009) * 0.001;
}

/* A family of BLOCK^3 blocks as the hierarchy builds it: restriction of
 * the eight children into their parent, or prolongation of the parent
 * into them. */
static inline struct strata__amr_family block_family(int kind)
{
  struct strata__amr_family fam = {.nchildren = FAMILY};
  for (int o = 0; o < FAMILY; o++)
    fam.x[o] = strata__amr_family_xfer(kind, 3, BLOCK, GHOST, o, 1);
  return fam;
}

/* One task per family (h: each parent's handle, then its children's),
 * then wait for them all. */
static inline void run_family_tasks(starpu_data_handle_t *h, int64_t nfam,
                                    const struct strata__amr_family *fam)
{
  for (int64_t f = 0; f < nfam; f++) {
    starpu_data_handle_t *family = h + f * (1 + FAMILY);
    if (strata__amr_family_submit(MPI_COMM_NULL, family[0], family + 1, fam) != 0)
      fprintf(stderr, "bench: family task submission failed\n");
  }
  strata_wait_all();
}

static inline int64_t cells(const int64_t dims[3]) { return dims[0] * dims[1] * dims[2]; }

/* The plain kernel on the whole cube against a copy of the same traffic. */
struct plain {
  int kind;
  int64_t n, bytes;
  double kernel, copy, ratio; /* medians: seconds, seconds, copy / kernel */
  /* copy / kernel with each timed after the caches were emptied (the
   * first touch of an AMR step's blocks); NAN: not measured */
  double cold_ratio;
};

/* One task per family against the whole-cube kernel and against the
 * family kernels called directly: medians of the three times and of the
 * paired ratios kernel / tasks and direct / tasks. */
struct tasks {
  double seconds, kernel, direct, vs_kernel, vs_direct;
  int64_t count;
  /* The time to touch the cube's fine cells over the time to touch the
   * same number in the blocks' interiors, family by family: the most
   * tasks_vs_kernel the block layout allows; NAN: not measured */
  double layout_floor;
};

/* The rounds of time_tasks: per round, the times of the tasks, of the
 * whole-cube kernel and of the direct family calls, and the paired ratios
 * kernel / tasks and direct / tasks (five arrays of n). */
struct task_rounds {
  double *t;
  int n;
};

static inline struct task_rounds task_rounds_new(int n)
{
  return (struct task_rounds){malloc((size_t)(5 * n) * sizeof(double)), n};
}

/* Round r: the kernel ran from t0 to t1, the tasks to t2, the direct calls to t3. */
static inline void task_rounds_record(struct task_rounds *w, int r, double t0, double t1, double t2,
                                      double t3)
{
  double *t = w->t;
  const int n = w->n;
  t[r] = t2 - t1;
  t[n + r] = t1 - t0;
  t[2 * n + r] = t3 - t2;
  t[3 * n + r] = (t1 - t0) / (t2 - t1);
  t[4 * n + r] = (t3 - t2) / (t2 - t1);
}

/* The medians of `count` tasks' rounds; frees the rounds. */
static inline struct tasks task_rounds_medians(struct task_rounds *w, int64_t count)
{
  double *t = w->t;
  const int n = w->n;
  struct tasks m = {bench_median(t, n),
                    bench_median(t + n, n),
                    bench_median(t + 2 * n, n),
                    bench_median(t + 3 * n, n),
                    bench_median(t + 4 * n, n),
                    count,
                    NAN};
  free(t);
  return m;
}

static inline cJSON *amr_case_json(const struct plain *c, const struct tasks *tt)
{
  double b = (double)c->bytes;
  cJSON *row = cJSON_CreateObject();
  cJSON_AddStringToObject(row, "op", c->kind == STRATA__AMR_RESTRICT ? "restrict" : "prolong");
  cJSON_AddNumberToObject(row, "n", (double)c->n);
  cJSON_AddNumberToObject(row, "traffic_bytes", b);
  cJSON_AddNumberToObject(row, "tasks", (double)tt->count);
  cJSON_AddNumberToObject(row, "kernel_gbs", b / c->kernel * 1e-9);
  cJSON_AddNumberToObject(row, "memcpy_gbs", b / c->copy * 1e-9);
  cJSON_AddNumberToObject(row, "tasks_gbs", b / tt->seconds * 1e-9);
  cJSON_AddNumberToObject(row, "kernel_beside_tasks_gbs", b / tt->kernel * 1e-9);
  cJSON_AddNumberToObject(row, "direct_gbs", b / tt->direct * 1e-9);
  cJSON_AddNumberToObject(row, "kernel_vs_memcpy", c->ratio);
  if (c->cold_ratio == c->cold_ratio)
    cJSON_AddNumberToObject(row, "kernel_vs_memcpy_cold", c->cold_ratio);
  cJSON_AddNumberToObject(row, "tasks_vs_kernel", tt->vs_kernel);
  cJSON_AddNumberToObject(row, "tasks_vs_direct", tt->vs_direct);
  if (tt->layout_floor == tt->layout_floor)
    cJSON_AddNumberToObject(row, "blocks_vs_cube_touch", tt->layout_floor);
  return row;
}

#endif
