/** @file error.h
 *  @brief Error codes. Every Strata function returns 0 on success or one of
 *  these negative codes; strata_strerror() describes them. */
#ifndef STRATA_ERROR_H
#define STRATA_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif
/* The library exports what its public headers declare, and nothing else. */
#pragma GCC visibility push(default)

/** Error codes returned (negated) by Strata functions. */
enum strata_error {
  STRATA_OK = 0,           /**< Success. */
  STRATA_EINVAL = -1,      /**< Invalid argument (NULL pointer, bad shape, bad option). */
  STRATA_ERANGE = -2,      /**< Index or value out of range. */
  STRATA_ENOMEM = -3,      /**< Memory allocation failed. */
  STRATA_ETYPE = -4,       /**< Data type not supported by the operation. */
  STRATA_ESTATE = -5,      /**< Call not allowed in the current state (e.g. before strata_init). */
  STRATA_EMPI = -6,        /**< MPI failure or insufficient MPI thread support. */
  STRATA_ESTARPU = -7,     /**< StarPU reported an error. */
  STRATA_EIO = -8,         /**< File input/output or format error. */
  STRATA_ENODEV = -9,      /**< No worker can run the work (e.g. no CPU left for StarPU). */
  STRATA_EINPLACE = -10,   /**< In-place write to an array that has recorded history. */
  STRATA_ENOHISTORY = -11, /**< Graph export: an output has no recorded history. */
  STRATA_EUNBOUND = -12,   /**< Graph export: an output depends on an unlisted, unrecorded array. */
  STRATA_EUNUSED = -13,    /**< Graph export: a listed input reaches no output. */
  STRATA_EREBIND = -14     /**< Graph export: one array bound to two input names. */
};

/** @brief Describe an error code.
 *  @param code a value returned by a Strata function (0 or negative).
 *  @return a static, never NULL, human-readable string ("unknown error" for
 *          codes that Strata does not define). */
const char *strata_strerror(int code);

/** @brief Details of the last error a Strata call reported on this thread
 *  (for example the file and the reason when a model fails to load), or ""
 *  when that call gave none. Valid until the next Strata call on the thread. */
const char *strata_error_message(void);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
