/* Pure AMR kernels: region copy, restriction, prolongation and boundary
 * extrapolation between boxes of cells. No StarPU, no Strata runtime.
 *
 * Arrays are 1-, 2- or 3-D, x fastest; unused dimensions have extent 1.
 * A transfer writes `count` cells of the destination, starting at cell
 * `dst_start` of the destination array, from the source array:
 *   copy:     dst[dst_start + i] = src[src_start + i]
 *   restrict: dst[dst_start + i] = mean of the factor^dim source cells
 *             src[src_start + factor * i + j], j in [0, factor)^dim
 *   prolong:  fine cell i sits at fine offset q = src_start + i from the
 *             low corner of source (coarse) cell 0, so its centre is at
 *             p = (q + 1/2) / factor - 1/2 in coarse cell units; the value
 *             is linear in each axis between coarse cells floor(p) and
 *             floor(p) + 1 (weights 3/4 and 1/4 for factor 2). It reads one
 *             coarse cell beyond the covered ones: a ghost layer.
 * The arrays may start inside larger buffers (dst_offset, src_offset: the
 * halo exchange packs several blocks into one message).
 * With dst_float, float64 sources are written to a float32 destination
 * (computed in float64, rounded once).
 * Callers check that every cell read and written lies inside its array. */
#ifndef STRATA_AMR_KERNELS_H
#define STRATA_AMR_KERNELS_H

#include <stdint.h>

#include "host_device.h"

#ifdef __cplusplus
extern "C" {
#endif

enum strata__amr_kind { STRATA__AMR_COPY, STRATA__AMR_RESTRICT, STRATA__AMR_PROLONG };

/* Prolongation: fine offset q (see below) lies between coarse cells c and
 * c + 1 with c = floor((2q + 1 - factor) / (2 factor)); shared by the
 * kernels and by callers that need the coarse cells a transfer reads. */
STRATA__HOST_DEVICE static inline int64_t strata__amr_prolong_cell(int64_t q, int factor)
{
  if (factor == 2) /* the common case, without a division: floor((q - 1) / 2) */
    return (q - 1) >> 1;
  const int64_t num = 2 * q + 1 - factor, den = 2 * (int64_t)factor;
  return num >= 0 ? num / den : -((-num + den - 1) / den);
}

struct strata__amr_xfer {
  int kind;             /* enum strata__amr_kind */
  int dim;              /* 1, 2 or 3 */
  int factor;           /* resolution ratio (1 for copies) */
  int is_double;        /* float64 (1) or float32 (0) source elements */
  int dst_float;        /* the destination is float32 even when the source is float64 */
  int64_t count[3];     /* destination cells written per axis */
  int64_t dst_dims[3];  /* destination array extents */
  int64_t dst_start[3]; /* first destination cell written */
  int64_t src_dims[3];  /* source array extents */
  int64_t src_start[3]; /* first source cell (copy, restrict); fine offset q (prolong) */
  int64_t dst_offset;   /* elements before the destination array in its buffer */
  int64_t src_offset;   /* elements before the source array in its buffer */
};

/* The factor-2 transfer between a parent block and its child `octant`
 * (bit a set: the upper half along axis a), both arrays of m^dim interior
 * cells with `ghost` layers: the child's interior prolonged from the parent
 * (which reads one parent ghost layer, so ghost >= 1), or the child's
 * interior restricted into the parent's octant. C only (designated
 * initialisers), not for nvcc or C++. */
#ifndef __cplusplus
static inline struct strata__amr_xfer
strata__amr_family_xfer(int kind, int dim, int64_t m, int64_t ghost, int octant, int is_double)
{
  struct strata__amr_xfer x = {.kind = kind, .dim = dim, .factor = 2, .is_double = is_double};
  for (int a = 0; a < 3; a++) {
    const int used = a < dim, half = (octant >> a) & 1;
    x.count[a] = !used ? 1 : kind == STRATA__AMR_PROLONG ? m : m / 2;
    x.dst_dims[a] = x.src_dims[a] = used ? m + 2 * ghost : 1;
    if (!used)
      continue;
    x.dst_start[a] = kind == STRATA__AMR_PROLONG ? ghost : ghost + half * m / 2;
    x.src_start[a] = kind == STRATA__AMR_PROLONG ? 2 * ghost + half * m : ghost;
  }
  return x;
}
#endif

/* The transfers between a parent block and its children (at most 8, all
 * restrictions or all prolongations): x[o] between the parent and child o,
 * from the child into the parent or the other way round. */
struct strata__amr_family {
  int nchildren;
  struct strata__amr_xfer x[8];
};

/* Linear extrapolation of the `ghost` outermost layers of a block array of
 * extents `dims` on the faces flagged in `faces` (bit 2a: low side of axis
 * a, bit 2a+1: high side): ghost cell k layers out = v0 + k (v0 - v1) from
 * the two nearest interior cells, axis by axis over the whole extended
 * range, so edges and corners come out right too. Exact for linear data. */
struct strata__amr_boundary {
  int dim, ghost, is_double, faces;
  int64_t dims[3];
};

void strata__amr_xfer_cpu(const struct strata__amr_xfer *x, void *dst, const void *src);
/* The same at SIMD level `simd` (0: the baseline code; on x86-64 1: AVX2,
 * 2: AVX-512), or the best this CPU has when it has less; all levels give
 * the same bits. The best level this CPU has: 0 where there are no SIMD
 * variants. */
void strata__amr_xfer_cpu_isa(const struct strata__amr_xfer *x, void *dst, const void *src,
                              int simd);
int strata__amr_simd_available(void);
/* All transfers of family f, children[o] the array of child o. Two
 * children side by side along x (x[o + 1] continues the rows of x[o], with
 * arrays shaped alike, as strata__amr_family_xfer makes them for octants
 * 2k and 2k + 1) go as one transfer of rows twice as long: a prolongation
 * blends each coarse row once for both, and either kind pays its per-row
 * costs half as often, which matters on blocks a few tens of cells wide.
 * The same bits as the transfers one by one. */
void strata__amr_family_cpu(const struct strata__amr_family *f, void *parent,
                            void *const children[]);
void strata__amr_family_cpu_isa(const struct strata__amr_family *f, void *parent,
                                void *const children[], int simd);
void strata__amr_boundary_cpu(const struct strata__amr_boundary *b, void *data);

/* CUDA versions, asynchronous on `stream` (a cudaStream_t). Return 0, or a
 * nonzero cudaError_t when the launch failed. */
int strata__amr_xfer_cuda(const struct strata__amr_xfer *x, void *dst, const void *src,
                          void *stream);
int strata__amr_family_cuda(const struct strata__amr_family *f, void *parent,
                            void *const children[], void *stream);
int strata__amr_boundary_cuda(const struct strata__amr_boundary *b, void *data, void *stream);

#ifdef __cplusplus
}
#endif
#endif
