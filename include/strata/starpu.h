/** @file starpu.h
 *  @brief Interoperability with StarPU: the data handle behind an array, for
 *  applications that submit their own StarPU tasks on Strata data. */
#ifndef STRATA_STARPU_INTEROP_H
#define STRATA_STARPU_INTEROP_H

#include <starpu.h>

#include <strata/array.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @brief The StarPU handle of @p a (a vector of nelems elements of the
 *  array's type), or NULL for a NULL array. Strata keeps ownership: do not
 *  unregister it. */
starpu_data_handle_t strata_array_handle(const strata_array *a);

#ifdef __cplusplus
}
#endif
#endif
