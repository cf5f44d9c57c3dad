// Box moves on the GPU: pitched 2-D copies per slab, the merge row by row
// through the element-wise merge kernels, a fill kernel for padding.
#include <cstdint>
#include <cstring>
#include <cuda_runtime.h>

#include "../box_kernels.h"
#include "../merge_kernels.h"
#include "launch.cuh"

namespace
{

// What a slab callback needs: the buffers, the operator and type of a
// merge, the stream, and the first error.
struct SlabCtx {
  size_t elem;
  char *dst;
  const char *src;
  strata_op op;
  strata_dtype dtype;
  cudaStream_t stream;
  int err;
};

void copy_slab(void *ctx, const strata__slab *s)
{
  auto *c = static_cast<SlabCtx *>(ctx);
  if (c->err)
    return;
  c->err = cudaMemcpy2DAsync(c->dst + s->dst_off * c->elem, s->dst_pitch * c->elem,
                             c->src + s->src_off * c->elem, s->src_pitch * c->elem,
                             s->row_elems * c->elem, s->rows, cudaMemcpyDeviceToDevice, c->stream);
}

void merge_slab(void *ctx, const strata__slab *s)
{
  auto *c = static_cast<SlabCtx *>(ctx);
  for (int64_t r = 0; r < s->rows && !c->err; r++)
    c->err = strata__merge_cuda(c->op, c->dtype, c->dst + (s->dst_off + r * s->dst_pitch) * c->elem,
                                c->src + (s->src_off + r * s->src_pitch) * c->elem, s->row_elems,
                                c->stream);
}

struct Value {
  unsigned char bytes[16];
};

__global__ void fill_kernel(unsigned char *dst, int64_t n, unsigned elem, Value v)
{
  STRATA_GRID_LOOP(i, n)
  {
    for (unsigned b = 0; b < elem; b++)
      dst[i * elem + b] = v.bytes[b];
  }
}

} // namespace

extern "C" int strata__box_copy_cuda(int ndim, const int64_t *extent, size_t elem, void *dst,
                                     const strata__box *dst_box, const void *src,
                                     const strata__box *src_box, void *stream)
{
  SlabCtx c{elem,       static_cast<char *>(dst), static_cast<const char *>(src),
            STRATA_SUM, STRATA_FLOAT32,           static_cast<cudaStream_t>(stream),
            0};
  strata__box_slabs(ndim, extent, dst_box, src_box, copy_slab, &c);
  return c.err;
}

extern "C" int strata__box_merge_cuda(int ndim, const int64_t *extent, strata_op op,
                                      strata_dtype dtype, void *dst, const strata__box *dst_box,
                                      const void *src, const strata__box *src_box, void *stream)
{
  SlabCtx c{strata_dtype_size(dtype),
            static_cast<char *>(dst),
            static_cast<const char *>(src),
            op,
            dtype,
            static_cast<cudaStream_t>(stream),
            0};
  strata__box_slabs(ndim, extent, dst_box, src_box, merge_slab, &c);
  return c.err;
}

extern "C" int strata__fill_cuda(void *dst, int64_t n, size_t elem, const void *value, void *stream)
{
  if (n == 0)
    return 0;
  Value v{};
  std::memcpy(v.bytes, value, elem);
  STRATA_LAUNCH(strata_cuda::blocks_for(n), strata_cuda::kThreads,
                static_cast<cudaStream_t>(stream), fill_kernel)
  (static_cast<unsigned char *>(dst), n, static_cast<unsigned>(elem), v);
  return cudaGetLastError();
}
