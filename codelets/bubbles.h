/* Bubble extraction: a probability map into a bubble table. Insert functions on StarPU handles
 * (codelets/bubbles.c). */
#ifndef STRATA_CODELETS_BUBBLES_H
#define STRATA_CODELETS_BUBBLES_H

#include "codelets.h"

struct strata__bubble_params;
/* One task: bubble table (W, float64 [1 + capacity, fields]) from a
 * probability map (R, float32 n^3); scratch sized for n. */
int strata__bubbles_submit(starpu_data_handle_t prob, starpu_data_handle_t table,
                           starpu_data_handle_t scratch, const struct strata__bubble_params *p);

/* Scratch bytes of bubble extraction for extent n (the larger of the CPU
 * and CUDA needs). */
uint64_t strata__bubbles_scratch_bytes(int64_t n);

#endif
