/* Gaussian blobs planted in a density cube, and the bubbles a model finds
 * there through strata_model_apply and Strata's bubble extraction: the blob
 * checks of the models (test_model, test_model_trained). */
#ifndef STRATA_TEST_BLOB_FIELD_H
#define STRATA_TEST_BLOB_FIELD_H

#include <math.h>

#include "check.h"

struct blob {
  double c[3], amplitude, sigma; /* centre (x, y, z) in cells, a exp(-r^2 / (2 s^2)) */
};

/* p[(z n + y) n + x] = the background (bg[i], or `base` where bg is NULL)
 * plus every blob, at the cell centres. */
static inline void blob_field(float *p, int64_t n, const double *bg, double base,
                              const struct blob *b, int nblobs)
{
  for (int64_t z = 0; z < n; z++)
    for (int64_t y = 0; y < n; y++)
      for (int64_t x = 0; x < n; x++) {
        int64_t i = (z * n + y) * n + x;
        double v = bg ? bg[i] : base;
        for (int k = 0; k < nblobs; k++) {
          double dx = x + 0.5 - b[k].c[0], dy = y + 0.5 - b[k].c[1], dz = z + 0.5 - b[k].c[2];
          v += b[k].amplitude * exp(-(dx * dx + dy * dy + dz * dz) / (2 * b[k].sigma * b[k].sigma));
        }
        p[i] = (float)v;
      }
}

/* The bubbles of model `m` on the float32 cube `in` [1, n, n, n]
 * (probability > 0.5, at least `min_cells` cells, the first 256): a
 * malloc'd list of *count bubbles. */
static inline strata_bubble *model_bubbles(strata_model *m, strata_array *in, int64_t min_cells,
                                           int64_t *count)
{
  int64_t shape[4], tshape[2] = {257, STRATA_BUBBLE_TABLE_COLUMNS};
  strata_array_shape(in, shape);
  strata_array *prob = NULL, *table = NULL;
  CHECK_EQ(strata_array_create(4, shape, STRATA_FLOAT32, &prob), 0);
  CHECK_EQ(strata_array_create(2, tshape, STRATA_FLOAT64, &table), 0);
  CHECK_EQ(strata_model_apply(m, in, prob), 0);
  strata_bubble_params bp;
  strata_bubble_params_init(&bp);
  bp.min_cells = min_cells;
  CHECK_EQ(strata_bubbles_submit(prob, &bp, table), 0);
  strata_bubble *list = NULL;
  *count = 0;
  CHECK_EQ(strata_bubbles_read(table, &list, count, NULL), 0);
  strata_array_destroy(table);
  strata_array_destroy(prob);
  return list;
}

#endif
