/* Pure kernels of the inference-array method: the evaluation criterion
 * into a block's mask and the marking of bubbles into a leaf. No StarPU, no Strata runtime.
 *
 * Masks are uint8 cubes, x fastest. Block fields are cubes of
 * cells + 2 ghost values per axis, x fastest, float32 or float64. Bubble
 * tables have the layout of bubble_kernels.h: row 0 holds the number
 * found, then up to `capacity` rows of strata__bubble_columns() doubles. */
#ifndef STRATA_INFER_KERNELS_H
#define STRATA_INFER_KERNELS_H

#include <stdint.h>

#include "host_device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* mask[c] = 1 when some interior cell of the part c of the block (the
 * block split into `mask` parts per axis) exceeds threshold * reference,
 * where reference is the mean over the interior (local_mean) or the
 * given `reference`; else 0. */
struct strata__infer_criterion {
  int is_double;
  int ghost;
  int64_t cells; /* interior cells per axis */
  int64_t mask;  /* mask cells per axis, divides cells */
  int local_mean;
  double threshold, reference;
};

/* The bubbles of one inference array's table, clipped to the array's box
 * [array_lo, array_hi): the leaf's cells whose centres lie inside a
 * clipped bubble become 1 in the marker field (when there is one), and
 * the bubbles that reach the leaf's box are appended to the leaf's list
 * (row 0 counts them all, `list_capacity` rows are kept). */
struct strata__infer_mark {
  int is_double;
  int ghost;
  int64_t cells;      /* interior cells per axis of the leaf */
  double lower[3], h; /* lower corner of the leaf's interior, cell edge */
  double array_lo[3], array_hi[3];
  int64_t columns;        /* doubles per row of the table and the list */
  int64_t table_offset;   /* doubles before the table in its buffer */
  int64_t table_capacity; /* rows the table holds */
  int64_t list_capacity;  /* rows the list holds */
};

void strata__infer_criterion_cpu(const struct strata__infer_criterion *c, const void *field,
                                 uint8_t *mask);
/* `field` may be NULL (no marker field). */
void strata__infer_mark_cpu(const struct strata__infer_mark *m, const double *table, double *list,
                            void *field);

/* Whether the bubble (centre, radius) clipped to the array box reaches the
 * box [lo, hi) (a positive-volume overlap): shared by both implementations. */
STRATA__HOST_DEVICE static inline int
strata__infer_bubble_reaches(const struct strata__infer_mark *m, const double centre[3],
                             double radius, const double lo[3], const double hi[3])
{
  double d2 = 0;
  for (int a = 0; a < 3; a++) {
    double l = lo[a] > m->array_lo[a] ? lo[a] : m->array_lo[a];
    double u = hi[a] < m->array_hi[a] ? hi[a] : m->array_hi[a];
    if (l >= u)
      return 0;
    double p = centre[a] < l ? l : centre[a] > u ? u : centre[a];
    d2 += (p - centre[a]) * (p - centre[a]);
  }
  return d2 < radius * radius;
}

/* CUDA versions, asynchronous on `stream`; 0 or a cudaError_t. */
int strata__infer_criterion_cuda(const struct strata__infer_criterion *c, const void *field,
                                 uint8_t *mask, void *stream);
int strata__infer_mark_cuda(const struct strata__infer_mark *m, const double *table, double *list,
                            void *field, void *stream);

#ifdef __cplusplus
}
#endif
#endif
