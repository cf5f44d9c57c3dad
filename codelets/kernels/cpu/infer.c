/* Inference-array kernels on the CPU (see ../infer_kernels.h). */
#include <math.h>
#include <string.h>

#include "../bubble_kernels.h"
#include "../infer_kernels.h"

/* Interior cell (i, j, k) of a block field as a double. */
static inline double cell(const void *field, int is_double, int64_t side, int ghost, int64_t i,
                          int64_t j, int64_t k)
{
  int64_t at = ((k + ghost) * side + j + ghost) * side + i + ghost;
  return is_double ? ((const double *)field)[at] : ((const float *)field)[at];
}

void strata__infer_criterion_cpu(const struct strata__infer_criterion *c, const void *field,
                                 uint8_t *mask)
{
  const int64_t n = c->cells, side = n + 2 * c->ghost, part = n / c->mask;
  double reference = c->reference;
  if (c->local_mean) {
    double sum = 0;
    for (int64_t k = 0; k < n; k++)
      for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < n; i++)
          sum += cell(field, c->is_double, side, c->ghost, i, j, k);
    reference = sum / (double)(n * n * n);
  }
  const double limit = c->threshold * reference;
  memset(mask, 0, (size_t)(c->mask * c->mask * c->mask));
  for (int64_t k = 0; k < n; k++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++)
        if (cell(field, c->is_double, side, c->ghost, i, j, k) > limit)
          mask[((k / part) * c->mask + j / part) * c->mask + i / part] = 1;
}

void strata__infer_mark_cpu(const struct strata__infer_mark *m, const double *table, double *list,
                            void *field)
{
  table += m->table_offset;
  const int64_t found = (int64_t)table[0];
  const int64_t rows = found < m->table_capacity ? found : m->table_capacity;
  const int64_t n = m->cells, side = n + 2 * m->ghost;
  double hi[3];
  for (int a = 0; a < 3; a++)
    hi[a] = m->lower[a] + (double)n * m->h;
  for (int64_t b = 0; b < rows; b++) {
    const double *row = table + (1 + b) * m->columns;
    const double *centre = row + STRATA__BUBBLE_X, r = row[STRATA__BUBBLE_RADIUS];
    if (!strata__infer_bubble_reaches(m, centre, r, m->lower, hi))
      continue;
    int64_t slot = (int64_t)list[0];
    if (slot < m->list_capacity)
      memcpy(list + (1 + slot) * m->columns, row, sizeof(double) * (size_t)m->columns);
    list[0] = (double)(slot + 1);
    if (!field)
      continue;
    int64_t from[3], to[3]; /* the cells around the sphere's bounding box */
    for (int a = 0; a < 3; a++) {
      double lo = floor((centre[a] - r - m->lower[a]) / m->h),
             up = ceil((centre[a] + r - m->lower[a]) / m->h);
      from[a] = lo > 0 ? (int64_t)lo : 0;
      to[a] = up < (double)n ? (int64_t)up + 1 : n;
      if (to[a] > n)
        to[a] = n;
    }
    for (int64_t k = from[2]; k < to[2]; k++)
      for (int64_t j = from[1]; j < to[1]; j++)
        for (int64_t i = from[0]; i < to[0]; i++) {
          const double p[3] = {m->lower[0] + ((double)i + 0.5) * m->h,
                               m->lower[1] + ((double)j + 0.5) * m->h,
                               m->lower[2] + ((double)k + 0.5) * m->h};
          double d2 = 0;
          int inside = 1;
          for (int a = 0; a < 3; a++) {
            inside &= p[a] >= m->array_lo[a] && p[a] < m->array_hi[a];
            d2 += (p[a] - centre[a]) * (p[a] - centre[a]);
          }
          if (!inside || d2 > r * r)
            continue;
          int64_t at = ((k + m->ghost) * side + j + m->ghost) * side + i + m->ghost;
          if (m->is_double)
            ((double *)field)[at] = 1;
          else
            ((float *)field)[at] = 1;
        }
  }
}
