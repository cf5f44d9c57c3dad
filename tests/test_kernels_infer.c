/* Inference-array kernels alone: the criterion into masks (block mean and
 * fixed reference, ghosts ignored), bubble marking and leaf lists (clipped to the array, list
 * overflow), and float64 sources written to float32 arrays by the
 * transfer kernels (exact on linear data, equal to the float64 result
 * rounded once). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "kernels/amr_kernels.h"
#include "kernels/bubble_kernels.h"
#include "kernels/infer_kernels.h"

enum { M = 8, SIDE = M + 2 };

static int64_t at(int64_t i, int64_t j, int64_t k)
{
  return ((k + 1) * SIDE + j + 1) * SIDE + i + 1;
}

static void check_criterion(void)
{
  double f[SIDE * SIDE * SIDE];
  for (int i = 0; i < SIDE * SIDE * SIDE; i++)
    f[i] = 1000; /* ghosts: never looked at */
  for (int k = 0; k < M; k++)
    for (int j = 0; j < M; j++)
      for (int i = 0; i < M; i++)
        f[at(i, j, k)] = 1;
  f[at(5, 2, 6)] = 10;
  struct strata__infer_criterion c = {
      .is_double = 1, .ghost = 1, .cells = M, .mask = 2, .local_mean = 1, .threshold = 4};
  uint8_t mask[64];
  memset(mask, 7, sizeof mask);
  strata__infer_criterion_cpu(&c, f, mask);
  for (int i = 0; i < 8; i++)
    CHECK_EQ(mask[i], i == 5); /* part (1, 0, 1) */
  c.threshold = 9.9;           /* mean is 521 / 512: 10 > 9.9 * 1.0176 is false */
  strata__infer_criterion_cpu(&c, f, mask);
  CHECK_EQ(mask[5], 0);
  c = (struct strata__infer_criterion){
      .is_double = 1, .ghost = 1, .cells = M, .mask = 1, .threshold = 0.5, .reference = 2};
  strata__infer_criterion_cpu(&c, f, mask);
  CHECK_EQ(mask[0], 1);
  f[at(5, 2, 6)] = 1;
  strata__infer_criterion_cpu(&c, f, mask);
  CHECK_EQ(mask[0], 0); /* 1 > 0.5 * 2 is false */
}

static void check_mark(void)
{
  enum { CAP = 4, COLS = STRATA__BUBBLE_FIELDS + 1 }; /* one value channel */
  double table[(1 + CAP) * COLS] = {0};
  table[0] = 2;
  double *b1 = table + COLS, *b2 = table + 2 * COLS;
  b1[STRATA__BUBBLE_X] = b1[STRATA__BUBBLE_Y] = b1[STRATA__BUBBLE_Z] = 0.25;
  b1[STRATA__BUBBLE_RADIUS] = 0.11; /* reaches the 8 cells around its centre */
  b1[STRATA__BUBBLE_CELLS] = 8;
  b1[STRATA__BUBBLE_FIELDS] = 42; /* its value travels with it */
  b2[STRATA__BUBBLE_X] = b2[STRATA__BUBBLE_Y] = b2[STRATA__BUBBLE_Z] = 0.9;
  b2[STRATA__BUBBLE_RADIUS] = 0.05; /* outside the array: clipped away */
  double field[SIDE * SIDE * SIDE] = {0}, list[(1 + CAP) * COLS] = {0};
  struct strata__infer_mark mk = {.is_double = 1,
                                  .ghost = 1,
                                  .cells = M,
                                  .h = 1.0 / M,
                                  .array_hi = {0.5, 0.5, 0.5},
                                  .columns = COLS,
                                  .table_capacity = CAP,
                                  .list_capacity = CAP};
  strata__infer_mark_cpu(&mk, table, list, field);
  double marked = 0;
  for (int i = 0; i < SIDE * SIDE * SIDE; i++)
    marked += field[i];
  CHECK_EQ(marked, 8);
  CHECK_EQ(field[at(1, 1, 1)] + field[at(2, 2, 2)], 2);
  CHECK_EQ(list[0], 1);
  CHECK(memcmp(list + COLS, b1, sizeof(double) * COLS) == 0);
  /* A full list still counts; no marker field. */
  mk.list_capacity = 1;
  strata__infer_mark_cpu(&mk, table, list, NULL);
  CHECK_EQ(list[0], 2);
  CHECK_EQ(list[2 * COLS + STRATA__BUBBLE_CELLS], 0);
}

/* Linear data, x fastest, on a cube of n cells (ghosts included). */
static void linear(double *v, int64_t n, double h)
{
  for (int64_t k = 0; k < n; k++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++)
        v[(k * n + j) * n + i] = 0.5 + 2 * (i + 0.5) * h - (j + 0.5) * h + 3 * (k + 0.5) * h;
}

static void check_conversion(void)
{
  enum { FINE = 16, COARSE = 6 };
  double src[FINE * FINE * FINE], out64[FINE * FINE * FINE];
  float out32[FINE * FINE * FINE];
  for (int kind = STRATA__AMR_RESTRICT; kind <= STRATA__AMR_PROLONG; kind++) {
    struct strata__amr_xfer x = {.kind = kind, .dim = 3, .factor = 4, .is_double = 1};
    int64_t n = kind == STRATA__AMR_RESTRICT ? FINE : COARSE;
    linear(src, n, kind == STRATA__AMR_RESTRICT ? 0.25 : 1.0); /* the same physical field */
    for (int a = 0; a < 3; a++) {
      x.src_dims[a] = n;
      x.count[a] = x.dst_dims[a] = kind == STRATA__AMR_RESTRICT ? 4 : 16;
      x.src_start[a] = kind == STRATA__AMR_RESTRICT ? 0 : 4; /* skip one coarse ghost */
    }
    strata__amr_xfer_cpu(&x, out64, src);
    x.dst_float = 1;
    strata__amr_xfer_cpu(&x, out32, src);
    const int64_t cells = x.count[0] * x.count[1] * x.count[2];
    const double h = kind == STRATA__AMR_RESTRICT ? 1.0 : 0.25,
                 shift = kind == STRATA__AMR_RESTRICT ? 0 : 1;
    double worst = 0;
    int64_t rounded = 0;
    for (int64_t c = 0; c < cells; c++) {
      int64_t i = c % x.count[0], j = c / x.count[0] % x.count[1],
              k = c / (x.count[0] * x.count[1]);
      double want =
          0.5 + 2 * ((i + 0.5) * h + shift) - ((j + 0.5) * h + shift) + 3 * ((k + 0.5) * h + shift);
      worst = fmax(worst, fabs(out64[c] - want));
      rounded += out32[c] == (float)out64[c];
    }
    CHECK(worst < 1e-12);
    CHECK_EQ(rounded, cells);
  }
}

int main(void)
{
  check_criterion();
  check_mark();
  check_conversion();
  return check_status();
}
