/* Reductions over axes (sum, prod, min, max, mean): input (R), result (W). */
#include "reduce.h"

STRATA__IN_OUT_WRAPPERS(reduce)

STRATA__CODELET(reduce_cl, "strata_reduce", 0x6baed6, reduce_cpu, reduce_cuda,
                strata__arg_footprint, NULL, .nbuffers = 2, .modes = {STARPU_R, STARPU_W});

int strata__reduce_submit(const struct strata__reduce_args *a, starpu_data_handle_t in,
                          starpu_data_handle_t out)
{
  starpu_data_handle_t h[2] = {in, out};
  return strata__submit_copy_arg(&reduce_cl, a, sizeof *a, 2, h, NULL);
}
