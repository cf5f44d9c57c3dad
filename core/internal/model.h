/* The inference domain's internal interface (core/model: models, bubbles,
 * .npy files), shared with amr/'s inference method. Not installed. */
#ifndef STRATA_INTERNAL_MODEL_H
#define STRATA_INTERNAL_MODEL_H

#include <starpu.h>
#include <stdint.h>

#include <strata/array.h>
#include <strata/model.h>

/* 0 when the model accepts arrays of extent n, else STRATA_EINVAL with
 * the reason. */
int strata__model_check_extent(const strata_model *m, int64_t n);

/* One model task on float32 vectors in [C n^3] (R) and out [K n^3] (W),
 * extent n already checked. */
int strata__model_submit_handles(strata_model *m, int64_t n, starpu_data_handle_t in,
                                 starpu_data_handle_t out);

/* StarPU's measured time of one task of m at extent n on worker
 * `workerid` (seconds), NAN when it has none, INFINITY when the worker
 * cannot run m. */
double strata__model_expected(const strata_model *m, int64_t n, int workerid);

/* CPU time its CPU tasks have taken so far in this process (seconds). */
double strata__model_cpu_seconds(const strata_model *m);

/* The stored rows of a bubble table with `values` value columns (at most
 * `capacity`) into `out`; returns their number, *found (may be NULL) gets
 * how many were found. */
int64_t strata__bubble_rows(const double *table, int64_t capacity, int values, strata_bubble *out,
                            int64_t *found);

/* A float32 `.npy` file read whole: shape and malloc'd data (free it). */
int strata__npy_read_f32(const char *path, int *ndim, int64_t *shape, float **data);

#endif
