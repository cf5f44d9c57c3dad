/* The empty codelet. */
#include "codelets.h"

static void noop_cpu(void *buffers[], void *cl_arg)
{
  (void)buffers;
  (void)cl_arg;
}

struct starpu_codelet strata__noop_cl = {
    .name = "strata_noop",
    .cpu_funcs = {noop_cpu},
    .cpu_funcs_name = {"noop_cpu"},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
};
