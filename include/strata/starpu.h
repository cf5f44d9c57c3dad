/** @file starpu.h
 *  @brief Interoperability with StarPU: the data handle behind an array, for
 *  applications that submit their own StarPU tasks on Strata data. */
#ifndef STRATA_STARPU_INTEROP_H
#define STRATA_STARPU_INTEROP_H

#include <starpu.h>

#include <strata/array.h>

/* Declared in strata/amr.h; only pointers are used here. */
typedef struct strata_amr strata_amr;
typedef struct strata_amr_block strata_amr_block;

#ifdef __cplusplus
extern "C" {
#endif
/* The library exports what its public headers declare, and nothing else. */
#pragma GCC visibility push(default)

/** @brief The StarPU handle of @p a (a vector of nelems elements of the
 *  array's type), or NULL for a NULL array. Strata keeps ownership: do not
 *  unregister it. */
starpu_data_handle_t strata_array_handle(const strata_array *a);

/** @brief The StarPU handle of field @p field of leaf @p b (a vector of the
 *  whole ghosted block, registered with StarPU-MPI on strata_comm(), owner
 *  the leaf's rank), or NULL when @p b is not a leaf this rank knows (its
 *  own, or of its ghost layer: strata_amr_block_query()). A rank holds the
 *  handles of its own leaves; for a ghost leaf the first call registers its
 *  handles on this rank. Valid until the leaf is removed or moved by an
 *  adaptation; Strata keeps ownership. */
starpu_data_handle_t strata_amr_field_handle(const strata_amr *amr, const strata_amr_block *b,
                                             int field);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
