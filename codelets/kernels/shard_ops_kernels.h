/* Pure kernels of the example sharded operations (float32, dense row-major
 * region buffers, see include/strata/shard.h). No StarPU, no runtime. */
#ifndef STRATA_SHARD_OPS_KERNELS_H
#define STRATA_SHARD_OPS_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y [rows, cols] = x [rows, k] . w [k, cols] + bias [cols] (OpenBLAS). */
void strata__linear_cpu(int64_t rows, int64_t k, int64_t cols, const float *x, const float *w,
                        const float *bias, float *y);

/* A 2-D convolution window: y [yh, yw] cell (i, j) = sum over (a, b) of
 * kernel [kh, kw] (a, b) * x (i + a + off_h, j + b + off_w), where x is a
 * [xh, xw] buffer and cells outside it count as 0. */
struct strata__conv2d_shape {
  int64_t yh, yw, xh, xw, kh, kw, off_h, off_w;
};
void strata__conv2d_cpu(const struct strata__conv2d_shape *s, const float *x, const float *kernel,
                        float *y);

/* y [outer, inner] += sum over the middle axis of x [outer, len, inner]. */
void strata__axial_sum_cpu(int64_t outer, int64_t len, int64_t inner, const float *x, float *y);

/* y [rows, cols] = x [rows, cols] + v [cols] (v broadcast over rows). */
void strata__broadcast_add_cpu(int64_t rows, int64_t cols, const float *x, const float *v,
                               float *y);

/* CUDA versions (device pointers), asynchronous on `stream`; the linear
 * layer uses the cuBLAS handle `cublas` (bound to that stream). Return 0
 * or a nonzero CUDA / cuBLAS status. */
int strata__linear_cuda(int64_t rows, int64_t k, int64_t cols, const float *x, const float *w,
                        const float *bias, float *y, void *cublas, void *stream);
int strata__conv2d_cuda(const struct strata__conv2d_shape *s, const float *x, const float *kernel,
                        float *y, void *stream);
int strata__axial_sum_cuda(int64_t outer, int64_t len, int64_t inner, const float *x, float *y,
                           void *stream);
int strata__broadcast_add_cuda(int64_t rows, int64_t cols, const float *x, const float *v, float *y,
                               void *stream);

#ifdef __cplusplus
}
#endif
#endif
