/** @file array.h
 *  @brief n-dimensional arrays backed by StarPU data handles. */
#ifndef STRATA_ARRAY_H
#define STRATA_ARRAY_H

#include <stdint.h>

#include <strata/types.h>

#ifdef __cplusplus
extern "C" {
#endif
/* The library exports what its public headers declare, and nothing else. */
#pragma GCC visibility push(default)

/** Maximum number of dimensions of an array. */
#define STRATA_MAX_DIMS 8

/** An n-dimensional array (row-major) registered as a StarPU data handle.
 *  Tasks that use it are ordered by StarPU's data dependencies. */
typedef struct strata_array strata_array;

/** @brief Create an array that owns its memory (allocated with starpu_malloc,
 *  pinned for GPU transfers, contents uninitialised).
 *  @param ndim number of dimensions, 0 (a scalar) to STRATA_MAX_DIMS.
 *  @param shape @p ndim non-negative extents (may be NULL when ndim is 0).
 *  @param dtype element type.
 *  @param out receives the array.
 *  @return 0; STRATA_EINVAL for a bad shape or type, a NULL pointer or a size
 *          that overflows; STRATA_ENOMEM; STRATA_ESTATE before strata_init. */
int strata_array_create(int ndim, const int64_t *shape, strata_dtype dtype, strata_array **out);

/** @brief Create an array over memory the application owns. The memory must
 *  stay valid until strata_array_destroy() returns, and must not be touched
 *  by the application except between strata_array_acquire() and
 *  strata_array_release(). Same errors as strata_array_create(). */
int strata_array_wrap(void *data, int ndim, const int64_t *shape, strata_dtype dtype,
                      strata_array **out);

/** @brief Destroy an array: waits for the tasks that use it, brings its data
 *  back to host memory (for wrapped arrays), frees what Strata allocated.
 *  NULL is accepted. @return 0, or STRATA_ESTATE if it is still acquired. */
int strata_array_destroy(strata_array *a);

/** @brief Give the host access to the array's data: waits for the tasks that
 *  write it (and, with STRATA_WRITE/READWRITE, those that read it) and
 *  fetches the newest copy. Tasks submitted meanwhile wait for the release.
 *  Like strata_wait_all(), it polls for strata_config::wait_spin_us before
 *  it sleeps.
 *  @param a the array.  @param mode access mode.
 *  @param data receives the host pointer (may be NULL).
 *  @return 0; STRATA_EINVAL; STRATA_ESTATE if already acquired. */
int strata_array_acquire(strata_array *a, strata_access mode, void **data);

/** @brief End host access started by strata_array_acquire().
 *  @return 0, or STRATA_ESTATE if the array is not acquired. */
int strata_array_release(strata_array *a);

/** @brief Number of dimensions, or STRATA_EINVAL for NULL. */
int strata_array_ndim(const strata_array *a);

/** @brief Copy the extents into @p shape (ndim entries). @return 0 or STRATA_EINVAL. */
int strata_array_shape(const strata_array *a, int64_t *shape);

/** @brief Element type, or STRATA_EINVAL for NULL. */
int strata_array_dtype(const strata_array *a);

/** @brief Number of elements (product of the extents; 1 for ndim 0), or STRATA_EINVAL. */
int64_t strata_array_nelems(const strata_array *a);

/** @brief Size of the data in bytes, or STRATA_EINVAL. */
int64_t strata_array_nbytes(const strata_array *a);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
