/** @file io.h
 *  @brief Arrays from and to NumPy `.npy` files (format versions 1, 2, 3),
 *  so that data and weights move between Strata and Python. */
#ifndef STRATA_IO_H
#define STRATA_IO_H

#include <strata/array.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Load a `.npy` file into a new array. Accepted element types:
 *  `b1 i1 u1 i4 i8 f4 f8`, little- or big-endian (converted to the host's
 *  order), C order only.
 *  @return 0; STRATA_EIO when the file cannot be read, is truncated or
 *          malformed; STRATA_ETYPE for an unsupported element type;
 *          STRATA_EINVAL for Fortran order, more than STRATA_MAX_DIMS
 *          dimensions or NULL arguments. strata_error_message() names the
 *          file and the reason. */
int strata_npy_load(const char *path, strata_array **out);

/** @brief Save an array to a `.npy` file (version 1.0, little-endian, C
 *  order); waits for the tasks that write the array.
 *  @return 0, STRATA_EIO or STRATA_EINVAL. */
int strata_npy_save(const char *path, strata_array *a);

#ifdef __cplusplus
}
#endif
#endif
