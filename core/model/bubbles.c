/* Bubble extraction API over the bubble codelet. */
#include <stdlib.h>

#include "bubbles.h"
#include "codelets.h"
#include "internal/model.h"
#include "internal/runtime.h"
#include "kernels/bubble_kernels.h"

_Static_assert(STRATA_BUBBLE_TABLE_COLUMNS == STRATA__BUBBLE_FIELDS &&
                   STRATA_BUBBLE_MAX_VALUES == STRATA__BUBBLE_MAX_VALUES,
               "bubble table layout");

void strata_bubble_params_init(strata_bubble_params *p)
{
  if (!p)
    return;
  *p = (strata_bubble_params){.threshold = 0.5f, .min_cells = 1, .cell_size = 1.0};
}

int strata_bubbles_submit(strata_array *prob, const strata_bubble_params *p, strata_array *table)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!prob || !p || !table || !(p->cell_size > 0) || p->min_cells < 1)
    return STRATA_EINVAL;
  if (prob->dtype != STRATA_FLOAT32 || table->dtype != STRATA_FLOAT64)
    return STRATA_ETYPE;
  const int channels = prob->ndim == 4 ? (int)prob->shape[0] : 1;
  int64_t n = strata__cube_extent(prob, channels);
  if (n < 1 || channels > 1 + STRATA_BUBBLE_MAX_VALUES || table->ndim != 2 || table->shape[0] < 1 ||
      table->shape[1] != strata__bubble_columns(channels - 1))
    return strata__fail(STRATA_EINVAL,
                        "bubbles: a map [C, N, N, N] of 1 to %d channels and a table "
                        "[1 + capacity, %d + C - 1]",
                        1 + STRATA_BUBBLE_MAX_VALUES, STRATA_BUBBLE_TABLE_COLUMNS);
  if (prob->acquired || table->acquired)
    return strata__array_busy();
  struct strata__bubble_params kp = {.threshold = p->threshold,
                                     .min_cells = p->min_cells,
                                     .origin = {p->origin[0], p->origin[1], p->origin[2]},
                                     .cell_size = p->cell_size,
                                     .channels = channels,
                                     .values = channels - 1};
  for (int k = 0; k < kp.values; k++) /* the probability first, then the values */
    kp.value_channel[k] = 1 + k;
  starpu_data_handle_t scratch =
      strata__scratch_register(strata__bubbles_scratch_bytes(n, kp.values));
  ret = strata__bubbles_submit(prob->handle, table->handle, scratch, NULL, &kp);
  starpu_data_unregister_submit(scratch);
  return ret;
}

int64_t strata__bubble_rows(const double *table, int64_t capacity, int values, strata_bubble *out,
                            int64_t *found)
{
  int64_t total = (int64_t)table[0], stored = total < capacity ? total : capacity;
  for (int64_t b = 0; b < stored; b++) {
    const double *row = table + (1 + b) * strata__bubble_columns(values);
    out[b] = (strata_bubble){
        .center = {row[STRATA__BUBBLE_X], row[STRATA__BUBBLE_Y], row[STRATA__BUBBLE_Z]},
        .radius = row[STRATA__BUBBLE_RADIUS],
        .mass = row[STRATA__BUBBLE_MASS],
        .peak = row[STRATA__BUBBLE_PEAK],
        .cells = (int64_t)row[STRATA__BUBBLE_CELLS],
        .id = (int64_t)row[STRATA__BUBBLE_FIRST],
        .parts = 1,
        .nvalues = values};
    for (int k = 0; k < values; k++)
      out[b].values[k] = row[STRATA__BUBBLE_FIELDS + k];
  }
  if (found)
    *found = total;
  return stored;
}

int strata_bubbles_read(strata_array *table, strata_bubble **list, int64_t *n, int64_t *found)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!table || !list || !n || table->dtype != STRATA_FLOAT64 || table->ndim != 2 ||
      table->shape[1] < STRATA_BUBBLE_TABLE_COLUMNS ||
      table->shape[1] > strata__bubble_columns(STRATA_BUBBLE_MAX_VALUES) || table->shape[0] < 1)
    return STRATA_EINVAL;
  const int values = (int)(table->shape[1] - STRATA_BUBBLE_TABLE_COLUMNS);
  const double *t;
  if ((ret = strata_array_acquire(table, STRATA_READ, (void **)&t)))
    return ret;
  const int64_t capacity = table->shape[0] - 1;
  *list = malloc((size_t)(capacity > 0 ? capacity : 1) * sizeof **list);
  if (!*list) {
    strata_array_release(table);
    return STRATA_ENOMEM;
  }
  *n = strata__bubble_rows(t, capacity, values, *list, found);
  strata_array_release(table);
  return 0;
}
