/* Pure kernels of the array operations (deferred compute): elementwise
 * functions with broadcasting, strided copies, reductions, fills,
 * triangles, matrix products, take and flatnonzero. Arrays are contiguous
 * row-major buffers; views and broadcasting are expressed as element
 * strides. No StarPU here. */
#ifndef STRATA_NDARRAY_KERNELS_H
#define STRATA_NDARRAY_KERNELS_H

#include <stdint.h>

#include <strata/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STRATA__ND_MAXDIMS 8
#define STRATA__EW_MAXOPS  3

/* An elementwise function over up to three operands, one of which may be a
 * scalar. Values are computed in int64 (`exact_int`: integer and bool
 * results of integer operands) or in double, then stored as out_dtype. */
struct strata__ew_args {
  int32_t fn;        /* strata_fn (elementwise) or STRATA__FN_COPY */
  int32_t nops;      /* operands, scalar included */
  int32_t scalar_at; /* operand position of the scalar, -1: none */
  int32_t exact_int;
  int32_t ndim;
  int32_t out_dtype;
  int32_t in_dtype[STRATA__EW_MAXOPS]; /* per array operand, in order */
  double scalar;
  int64_t shape[STRATA__ND_MAXDIMS]; /* output shape */
  /* Element strides of each array operand over the output's index space
   * (0 on broadcast dimensions). */
  int64_t stride[STRATA__EW_MAXOPS][STRATA__ND_MAXDIMS];
};

/* One elementwise function on its operands' dtypes: the part of
 * strata__ew_args that does not depend on positions (fused kernels). */
struct strata__ew_op {
  int32_t fn, nops, scalar_at, exact_int, out_dtype;
  int32_t in_dtype[STRATA__EW_MAXOPS];
  double scalar;
};

/* The identity function: astype and copies. */
#define STRATA__FN_COPY (-1)

void strata__ew_cpu(const struct strata__ew_args *a, void *out, const void *const *in);

/* dst[dst_offset + sum i_d dst_stride_d] = src[src_offset + sum i_d src_stride_d]
 * over `shape`, elements of `elem` bytes (1, 2, 4 or 8). */
struct strata__view_args {
  int32_t ndim;
  int32_t elem;
  int64_t src_offset, dst_offset;
  int64_t shape[STRATA__ND_MAXDIMS];
  int64_t src_stride[STRATA__ND_MAXDIMS];
  int64_t dst_stride[STRATA__ND_MAXDIMS];
};

void strata__view_cpu(const struct strata__view_args *a, void *dst, const void *src);

/* out[k] = fn over r of in[sum k_d keep_stride_d + sum r_d red_stride_d],
 * k over keep_shape (row-major), r over red_shape; fn is STRATA_FN_SUM,
 * PROD, MIN, MAX or MEAN. */
struct strata__reduce_args {
  int32_t fn;
  int32_t in_dtype, out_dtype;
  int32_t exact_int;
  int32_t nkeep, nred;
  int64_t keep_shape[STRATA__ND_MAXDIMS], keep_stride[STRATA__ND_MAXDIMS];
  int64_t red_shape[STRATA__ND_MAXDIMS], red_stride[STRATA__ND_MAXDIMS];
};

void strata__reduce_cpu(const struct strata__reduce_args *a, void *out, const void *in);

/* out[i] = start + i * step converted to dtype, i < n. */
struct strata__affine_fill_args {
  int32_t dtype;
  double start, step;
  int64_t n;
};

void strata__affine_fill_cpu(const struct strata__affine_fill_args *a, void *out);

/* Lower (upper = 0: keep j - i <= k) or upper (keep j - i >= k) triangle of
 * `batch` matrices rows x cols; other elements are zero. */
struct strata__tri_args {
  int32_t elem;
  int32_t upper;
  int64_t k, batch, rows, cols;
};

void strata__tri_cpu(const struct strata__tri_args *a, void *out, const void *in);

/* c[b] = a[b] @ b[b] for `batch` products of m x k by k x n matrices;
 * a_step/b_step: elements between consecutive batch matrices (0: the same
 * matrix for all). float32/float64 go through BLAS, other types are
 * computed in int64 (bool: logical or of ands). */
struct strata__matmul_args {
  int32_t dtype;
  int64_t m, k, n, batch;
  int64_t a_step, b_step;
};

void strata__matmul_cpu(const struct strata__matmul_args *a, void *c, const void *x, const void *y);

/* out[o, j, i] = in[o, idx[j], i] with in [outer, len, inner], idx of nidx
 * int32 or int64 entries; out-of-range indices wrap (mode 0) or clip
 * (mode 1). len > 0 unless nidx == 0. */
struct strata__take_args {
  int32_t elem;
  int32_t idx_dtype;
  int32_t mode;
  int64_t outer, len, inner, nidx;
};

void strata__take_cpu(const struct strata__take_args *a, void *out, const void *in,
                      const void *idx);

/* Number of nonzero elements of in (n elements of dtype). */
int64_t strata__count_nonzero_cpu(int32_t dtype, int64_t n, const void *in);

/* Positions of the nonzero elements of in, increasing. */
void strata__flatnonzero_cpu(int32_t dtype, int64_t n, const void *in, int64_t *out);

/* CUDA versions on `stream`; return 0 or a cudaError_t / cublasStatus_t. */
int strata__ew_cuda(const struct strata__ew_args *a, void *out, const void *const *in,
                    void *stream);
int strata__view_cuda(const struct strata__view_args *a, void *dst, const void *src, void *stream);
int strata__reduce_cuda(const struct strata__reduce_args *a, void *out, const void *in,
                        void *stream);
int strata__affine_fill_cuda(const struct strata__affine_fill_args *a, void *out, void *stream);
int strata__tri_cuda(const struct strata__tri_args *a, void *out, const void *in, void *stream);
int strata__matmul_cuda(const struct strata__matmul_args *a, void *c, const void *x, const void *y,
                        void *cublas, void *stream);
int strata__take_cuda(const struct strata__take_args *a, void *out, const void *in, const void *idx,
                      void *stream);
int strata__count_nonzero_cuda(int32_t dtype, int64_t n, const void *in, int64_t *count,
                               void *stream);
int strata__flatnonzero_cuda(int32_t dtype, int64_t n, const void *in, int64_t *out, void *stream);

#ifdef __cplusplus
}
#endif
#endif
