/* Bubble extraction: a probability map into a bubble table, and the links
 * of a map's components with its neighbours'. Insert functions on StarPU
 * handles (codelets/bubbles.c). */
#ifndef STRATA_CODELETS_BUBBLES_H
#define STRATA_CODELETS_BUBBLES_H

#include "codelets.h"

struct strata__bubble_params;
struct strata__bubble_links_params;

/* One task: bubble table (W, float64 [1 + capacity, columns]) from a
 * probability map with its value channels (R, float32 (1 + values) n^3);
 * scratch sized for n and the values; the border faces
 * (W, int32 6 n^2) too unless `faces` is NULL. */
int strata__bubbles_submit(starpu_data_handle_t prob, starpu_data_handle_t table,
                           starpu_data_handle_t scratch, starpu_data_handle_t faces,
                           const struct strata__bubble_params *p);

/* Scratch bytes of bubble extraction for extent n and `values` value
 * channels (the larger of the CPU and CUDA needs). */
uint64_t strata__bubbles_scratch_bytes(int64_t n, int values);

/* One StarPU-MPI task (every rank of `comm` calls it), on the owner of
 * `links`: the links (W, int32 2 strata__bubble_link_slots(n)) of the map
 * whose border faces are `faces` with its neighbours' faces
 * `neighbours[k]` (R) in the directions k that p->present marks. */
int strata__bubble_links_submit(MPI_Comm comm, starpu_data_handle_t links,
                                starpu_data_handle_t faces, const starpu_data_handle_t *neighbours,
                                const struct strata__bubble_links_params *p);

#endif
