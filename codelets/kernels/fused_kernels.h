/* Fused elementwise groups as a program: the group's members evaluated per
 * output element in registers, each with the per-element semantics of the
 * unfused kernels (ndarray_scalar.h), so the results are those of the
 * generated C kernels and of node-by-node execution. The CPU version runs
 * groups when no kernel can be generated; the CUDA version runs them on
 * GPUs. No StarPU, no Strata runtime. */
#ifndef STRATA_FUSED_KERNELS_H
#define STRATA_FUSED_KERNELS_H

#include "ndarray_scalar.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STRATA__FUSED_MAXLEAVES  8  /* at least STARPU_NMAXBUFS - 1 */
#define STRATA__FUSED_MAXMEMBERS 32 /* the program fits in a CUDA launch */

/* Operand sources: leaf l (>= 0), or the value of member m (-1 - m). */
struct strata__fused_member {
  struct strata__ew_op op;
  int32_t src[STRATA__EW_MAXOPS]; /* per array operand */
};

struct strata__fused_program {
  int32_t ndim, nleaves, nmembers;
  int64_t shape[STRATA__ND_MAXDIMS]; /* the result's (the last member's) */
  int32_t leaf_dtype[STRATA__FUSED_MAXLEAVES];
  /* element strides of each leaf over the result's index space (0 on
   * broadcast dimensions) */
  int64_t leaf_stride[STRATA__FUSED_MAXLEAVES][STRATA__ND_MAXDIMS];
  struct strata__fused_member member[STRATA__FUSED_MAXMEMBERS];
};

/* Result element i (row-major over shape): the members in order, the
 * last one stored into out[i - first] (out: the result from element
 * `first` on). */
STRATA__ELEM void strata__fused_element(const struct strata__fused_program *p,
                                        const void *const *leaf, void *out, int64_t i,
                                        int64_t first)
{
  int64_t leaf_off[STRATA__FUSED_MAXLEAVES] = {0}, rest = i;
  for (int d = p->ndim - 1; d >= 0; d--) {
    int64_t q = rest % p->shape[d];
    rest /= p->shape[d];
    for (int l = 0; l < p->nleaves; l++)
      leaf_off[l] += q * p->leaf_stride[l][d];
  }
  int64_t value[STRATA__FUSED_MAXMEMBERS]; /* member values in their dtype, 8 bytes each */
  for (int m = 0; m < p->nmembers; m++) {
    const struct strata__fused_member *mb = &p->member[m];
    const void *in[STRATA__EW_MAXOPS] = {0, 0, 0};
    int64_t off[STRATA__EW_MAXOPS] = {0, 0, 0};
    for (int k = 0; k < mb->op.nops - (mb->op.scalar_at >= 0); k++) {
      int32_t s = mb->src[k];
      in[k] = s >= 0 ? leaf[s] : (const void *)&value[-1 - s];
      off[k] = s >= 0 ? leaf_off[s] : 0;
    }
    if (m + 1 < p->nmembers)
      strata__ew_op_element(&mb->op, in, off, &value[m], 0);
    else
      strata__ew_op_element(&mb->op, in, off, out, i - first);
  }
}

/* Result elements [lo, hi) on the CPU; out points at element lo. */
void strata__fused_cpu(const struct strata__fused_program *p, const void *const *leaves, void *out,
                       int64_t lo, int64_t hi);

/* The same with CUDA, asynchronous on `stream` (a cudaStream_t); device
 * pointers. 0, or a nonzero cudaError_t when the launch failed. */
int strata__fused_cuda(const struct strata__fused_program *p, const void *const *leaves, void *out,
                       void *stream);

#ifdef __cplusplus
}
#endif
#endif
