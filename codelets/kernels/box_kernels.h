/* Pure kernels on boxes of dense row-major tensors: copy a box between two
 * tensors, merge one into another, fill a buffer with a value. The region
 * codelets (gather, scatter, scatter-merge) of sharded execution use them.
 * No StarPU, no Strata runtime. */
#ifndef STRATA_BOX_KERNELS_H
#define STRATA_BOX_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <strata/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A box of `extent` cells at `start` in a row-major tensor of `shape`
 * (ndim entries each; ndim <= 8). */
struct strata__box {
  int64_t shape[8], start[8];
};

/* One 2-D slab of a box move: `rows` rows of `row_elems` elements, at
 * element offsets dst_off / src_off, consecutive rows `dst_pitch` /
 * `src_pitch` elements apart. */
struct strata__slab {
  int64_t dst_off, src_off, dst_pitch, src_pitch, rows, row_elems;
};

/* Calls fn once per slab of moving a box of `extent` from `src` to `dst`
 * (the last two dimensions form the slabs: few calls, large rows). */
void strata__box_slabs(int ndim, const int64_t *extent, const struct strata__box *dst,
                       const struct strata__box *src,
                       void (*fn)(void *ctx, const struct strata__slab *s), void *ctx);

/* dst box = src box, elements of elem bytes. */
void strata__box_copy_cpu(int ndim, const int64_t *extent, size_t elem, void *dst,
                          const struct strata__box *dst_box, const void *src,
                          const struct strata__box *src_box);

/* dst box = dst box op src box; both of type `dtype`, which must be the
 * merge result type of (op, dtype). */
void strata__box_merge_cpu(int ndim, const int64_t *extent, strata_op op, strata_dtype dtype,
                           void *dst, const struct strata__box *dst_box, const void *src,
                           const struct strata__box *src_box);

/* n elements of elem bytes (elem <= 16) set to `value`. */
void strata__fill_cpu(void *dst, int64_t n, size_t elem, const void *value);

/* CUDA versions (device pointers), asynchronous on `stream`. Return 0 or a
 * nonzero cudaError_t. The CUDA merge goes row by row. */
int strata__box_copy_cuda(int ndim, const int64_t *extent, size_t elem, void *dst,
                          const struct strata__box *dst_box, const void *src,
                          const struct strata__box *src_box, void *stream);
int strata__box_merge_cuda(int ndim, const int64_t *extent, strata_op op, strata_dtype dtype,
                           void *dst, const struct strata__box *dst_box, const void *src,
                           const struct strata__box *src_box, void *stream);
int strata__fill_cuda(void *dst, int64_t n, size_t elem, const void *value, void *stream);

#ifdef __cplusplus
}
#endif
#endif
