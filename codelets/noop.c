/* The empty codelet. */
#include "codelets.h"

static void noop_cpu(void *buffers[], void *cl_arg)
{
  (void)buffers;
  (void)cl_arg;
}

/* No performance model on purpose: it does no work, and its history would
 * only add bookkeeping to every synchronisation point. */
struct starpu_codelet strata__noop_cl = {
    .name = "strata_noop",
    .color = 0x969696,
    .cpu_funcs = {noop_cpu},
    .cpu_funcs_name = {"noop_cpu"},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
};
