/* Kernels of the example sharded operations: strata_shard_cpu_fn /
 * strata_shard_cuda_fn wrappers that read the shard's regions and call the
 * pure kernels of kernels/shard_ops_kernels.h. */
#include "shard_ops.h"
#include "kernels/shard_ops_kernels.h"

static int64_t extent(const strata_shard *s, int t, int d)
{
  return s->region[t].end[d] - s->region[t].start[d];
}

/* Tensors: x [B, I], w [I, O], bias [O], y [B, O]. */
static void linear_cpu(const strata_shard *s, void *const *b, const void *arg)
{
  (void)arg;
  strata__linear_cpu(extent(s, 3, 0), extent(s, 0, 1), extent(s, 3, 1), b[0], b[1], b[2], b[3]);
}

/* Tensors: x [H, W], kernel [KH, KW], y [H, W]; y (i, j) reads x from
 * (i - KH/2, j - KW/2), so the offset into x's buffer follows from the
 * two regions. */
static struct strata__conv2d_shape conv2d_shape(const strata_shard *s)
{
  int64_t kh = extent(s, 1, 0), kw = extent(s, 1, 1);
  return (struct strata__conv2d_shape){
      .yh = extent(s, 2, 0),
      .yw = extent(s, 2, 1),
      .xh = extent(s, 0, 0),
      .xw = extent(s, 0, 1),
      .kh = kh,
      .kw = kw,
      .off_h = s->region[2].start[0] - kh / 2 - s->region[0].start[0],
      .off_w = s->region[2].start[1] - kw / 2 - s->region[0].start[1]};
}

static void conv2d_cpu(const strata_shard *s, void *const *b, const void *arg)
{
  (void)arg;
  struct strata__conv2d_shape shape = conv2d_shape(s);
  strata__conv2d_cpu(&shape, b[0], b[1], b[2]);
}

/* Tensors: x, y (x without `axis`); x's region as [outer, len, inner]. */
static void axial_dims(const strata_shard *s, const void *arg, int64_t *outer, int64_t *len,
                       int64_t *inner)
{
  int axis = *(const int *)arg;
  *outer = *inner = 1;
  for (int d = 0; d < s->region[0].ndim; d++) {
    if (d < axis)
      *outer *= extent(s, 0, d);
    else if (d > axis)
      *inner *= extent(s, 0, d);
  }
  *len = extent(s, 0, axis);
}

static void axial_sum_cpu(const strata_shard *s, void *const *b, const void *arg)
{
  int64_t outer, len, inner;
  axial_dims(s, arg, &outer, &len, &inner);
  strata__axial_sum_cpu(outer, len, inner, b[0], b[1]);
}

/* Tensors: x [B, N], v [N] (all of it), y [B, N]. */
static void broadcast_add_cpu(const strata_shard *s, void *const *b, const void *arg)
{
  (void)arg;
  strata__broadcast_add_cpu(extent(s, 2, 0), extent(s, 2, 1), b[0],
                            (const float *)b[1] + s->region[2].start[1], b[2]);
}

#if STRATA__USE_CUDA
static int linear_cuda(const strata_shard *s, void *const *b, const void *arg, void *stream,
                       void *cublas)
{
  (void)arg;
  return strata__linear_cuda(extent(s, 3, 0), extent(s, 0, 1), extent(s, 3, 1), b[0], b[1], b[2],
                             b[3], cublas, stream);
}

static int conv2d_cuda(const strata_shard *s, void *const *b, const void *arg, void *stream,
                       void *cublas)
{
  (void)arg;
  (void)cublas;
  struct strata__conv2d_shape shape = conv2d_shape(s);
  return strata__conv2d_cuda(&shape, b[0], b[1], b[2], stream);
}

static int axial_sum_cuda(const strata_shard *s, void *const *b, const void *arg, void *stream,
                          void *cublas)
{
  (void)cublas;
  int64_t outer, len, inner;
  axial_dims(s, arg, &outer, &len, &inner);
  return strata__axial_sum_cuda(outer, len, inner, b[0], b[1], stream);
}

static int broadcast_add_cuda(const strata_shard *s, void *const *b, const void *arg, void *stream,
                              void *cublas)
{
  (void)arg;
  (void)cublas;
  return strata__broadcast_add_cuda(extent(s, 2, 0), extent(s, 2, 1), b[0],
                                    (const float *)b[1] + s->region[2].start[1], b[2], stream);
}
#define OP_CUDA(fn) fn
#else
#define OP_CUDA(fn) NULL
#endif

const struct strata__shard_kernels strata__linear_kernels = {linear_cpu, OP_CUDA(linear_cuda)};
const struct strata__shard_kernels strata__conv2d_kernels = {conv2d_cpu, OP_CUDA(conv2d_cuda)};
const struct strata__shard_kernels strata__axial_sum_kernels = {axial_sum_cpu,
                                                                OP_CUDA(axial_sum_cuda)};
const struct strata__shard_kernels strata__broadcast_add_kernels = {broadcast_add_cpu,
                                                                    OP_CUDA(broadcast_add_cuda)};
