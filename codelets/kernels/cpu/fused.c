/* Fused groups run as programs on the CPU (fused_kernels.h). */
#include "../fused_kernels.h"

void strata__fused_cpu(const struct strata__fused_program *p, const void *const *leaves, void *out,
                       int64_t lo, int64_t hi)
{
  for (int64_t i = lo; i < hi; i++)
    strata__fused_element(p, leaves, out, i, lo);
}
