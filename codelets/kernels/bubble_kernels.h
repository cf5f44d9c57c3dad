/* Pure kernels of bubble extraction: threshold a probability map
 * [n, n, n], 26-connected components, and per component the
 * probability-weighted centre and the equivalent-sphere radius. */
#ifndef STRATA_BUBBLE_KERNELS_H
#define STRATA_BUBBLE_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct strata__bubble_params {
  float threshold;   /* cells with p > threshold belong to bubbles */
  int64_t min_cells; /* smaller components are dropped */
  double origin[3];  /* domain coordinates of the array's corner (x, y, z) */
  double cell_size;  /* edge of one cell in domain units */
};

/* One row of a bubble table (all float64): centre x, y, z, radius,
 * mass (sum of p), peak p, cells. */
enum {
  STRATA__BUBBLE_X,
  STRATA__BUBBLE_Y,
  STRATA__BUBBLE_Z,
  STRATA__BUBBLE_RADIUS,
  STRATA__BUBBLE_MASS,
  STRATA__BUBBLE_PEAK,
  STRATA__BUBBLE_CELLS,
  STRATA__BUBBLE_FIELDS
};

/* A table is 1 + capacity rows of STRATA__BUBBLE_FIELDS doubles: row 0
 * holds the number of bubbles found, rows 1.. the first `capacity` of them
 * in the order of their first cell (z, y, x scan order). */

/* CPU extraction; `labels` is scratch of n^3 int32. */
void strata__bubbles_cpu(const float *prob, int64_t n, const struct strata__bubble_params *p,
                         int32_t *labels, double *table, int64_t capacity);

/* Scratch bytes of the CUDA extraction for extent n. */
uint64_t strata__bubbles_cuda_scratch_bytes(int64_t n);

/* CUDA extraction, asynchronous on `stream`; `table` in device memory. */
int strata__bubbles_cuda(const float *prob, int64_t n, const struct strata__bubble_params *p,
                         void *scratch, double *table, int64_t capacity, void *stream);

#ifdef __cplusplus
}
#endif
#endif
