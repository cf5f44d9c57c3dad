/** @file io.h
 *  @brief Arrays from and to NumPy `.npy` files (format versions 1, 2, 3),
 *  so that data and weights move between Strata and Python; output files
 *  written atomically (every file Strata writes goes through them). */
#ifndef STRATA_IO_H
#define STRATA_IO_H

#include <stdio.h>

#include <strata/array.h>

#ifdef __cplusplus
extern "C" {
#endif
/* The library exports what its public headers declare, and nothing else. */
#pragma GCC visibility push(default)

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
 *  order), atomically (strata_output_begin); waits for the tasks that write
 *  the array.
 *  @return 0, STRATA_EIO or STRATA_EINVAL. */
int strata_npy_save(const char *path, strata_array *a);

/** @brief An output file being written atomically (strata_output_begin). */
typedef struct strata_output strata_output;

/** @brief Check, before any work, that a file can be written at `path`: not
 *  a directory, its directory exists, is writable and is not on a read-only
 *  file system, and, when `bytes_needed` > 0, about that many bytes are free
 *  there. Local to the calling rank; nothing is created.
 *  @return 0; STRATA_EIO with strata_error_message() naming the path and the
 *          cause; STRATA_EINVAL for an empty path. */
int strata_output_check(const char *path, uint64_t bytes_needed);

/** @brief Start writing `path` atomically: create a temporary file beside it
 *  (same directory, so the final rename cannot cross file systems) with the
 *  target's mode, or the umask's for a new file. Write the temporary file
 *  (strata_output_temp_path), then strata_output_commit() or
 *  strata_output_abandon(): until the commit, an existing `path` is untouched,
 *  also when the process is killed (a killed writer leaves its hidden
 *  `.NAME.XXXXXX` file behind, never a truncated `path`).
 *  @return 0, or STRATA_EIO (checks of strata_output_check), STRATA_ENOMEM,
 *          STRATA_EINVAL. */
int strata_output_begin(const char *path, strata_output **out);

/** @brief Where to write the data of `o` (NULL for NULL), for writers that
 *  take a path (HDF5, cairo); stdio writers use strata_output_stream(). */
const char *strata_output_temp_path(const strata_output *o);

/** @brief The temporary file of `o` opened for writing as a binary stdio
 *  stream; NULL (errno set) when it cannot be opened. Hand it, NULL
 *  included, to strata_output_finish(). */
FILE *strata_output_stream(strata_output *o);

/** @brief Close `f` (from strata_output_stream(), or NULL when that failed)
 *  and commit `o`, or abandon it when the open, a write (the stream's error
 *  flag) or the close failed, naming that failure's errno. Frees `o`.
 *  @return as strata_output_commit() / strata_output_abandon(). */
int strata_output_finish(strata_output *o, FILE *f);

/** @brief Flush the written temporary file to disk, rename it over the
 *  target and flush the directory. Frees `o` in every case.
 *  @return 0; STRATA_EIO when the flush or the rename fails (a full disk),
 *          after removing the temporary file: the target is then as before. */
int strata_output_commit(strata_output *o);

/** @brief Give up writing `o`: remove the temporary file and free `o`; the
 *  target is as before. `err` is the errno of the failure (0 if none) for
 *  strata_error_message(), which names the path and says the partial file
 *  was removed.
 *  @return STRATA_EIO (STRATA_EINVAL for NULL). */
int strata_output_abandon(strata_output *o, int err);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
