/* The empty codelet. */
#include "codelets.h"

static void noop_cpu(void *buffers[], void *cl_arg)
{
  (void)buffers;
  (void)cl_arg;
}

/* No performance model on purpose: it does no work, and its history would
 * only add bookkeeping to every synchronisation point. */
struct strata__codelet strata__noop_cl = {
    .cl =
        STRATA__CODELET_INIT("strata_noop", 0x969696, noop_cpu, NULL, NULL,
                             .cpu_funcs_name = {"noop_cpu"}, .nbuffers = STARPU_VARIABLE_NBUFFERS)};
