/* Fused groups run as programs on the CPU (fused_kernels.h). */
#include "../fused_kernels.h"

void strata__fused_cpu(const struct strata__fused_program *p, const void *const *leaves, void *out)
{
  int64_t n = 1;
  for (int d = 0; d < p->ndim; d++)
    n *= p->shape[d];
  for (int64_t i = 0; i < n; i++)
    strata__fused_element(p, leaves, out, i);
}
