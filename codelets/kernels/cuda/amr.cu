// AMR kernels on the GPU: one thread per destination cell, the same
// arithmetic as ../cpu/amr.c (prolongation blends the coarse cells in the
// same order: z, y, then x), so CPU and GPU agree to rounding.
#include <cstdint>
#include <cuda_runtime.h>

#include "../amr_kernels.h"
#include "launch.cuh"

namespace
{

using strata_cuda::blocks_for;
using strata_cuda::kThreads;

__device__ void prolong_weights(int64_t q, int factor, int64_t *c, double *t)
{
  int64_t num = 2 * q + 1 - factor;
  *c = strata__amr_prolong_cell(q, factor);
  *t = (double)(num - 2 * (int64_t)factor * *c) / (double)(2 * factor);
}

template <typename T, typename TD>
__global__ void xfer_kernel(strata__amr_xfer x, TD *dst, const T *src)
{
  const int64_t n = x.count[0] * x.count[1] * x.count[2];
  STRATA_GRID_LOOP(i, n)
  {
    const int64_t cx = i % x.count[0], cy = i / x.count[0] % x.count[1],
                  cz = i / (x.count[0] * x.count[1]);
    TD *d = dst + ((x.dst_start[2] + cz) * x.dst_dims[1] + x.dst_start[1] + cy) * x.dst_dims[0] +
            x.dst_start[0] + cx;
    const int64_t sy = x.src_dims[0], sz = x.src_dims[0] * x.src_dims[1];
    if (x.kind == STRATA__AMR_COPY) {
      *d = (TD)src[(x.src_start[2] + cz) * sz + (x.src_start[1] + cy) * sy + x.src_start[0] + cx];
    } else if (x.kind == STRATA__AMR_RESTRICT) {
      const int f = x.factor, fy = x.dim >= 2 ? f : 1, fz = x.dim >= 3 ? f : 1;
      T sum = 0;
      for (int jz = 0; jz < fz; jz++)
        for (int jy = 0; jy < fy; jy++)
          for (int jx = 0; jx < f; jx++)
            sum += src[(x.src_start[2] + fz * cz + jz) * sz + (x.src_start[1] + fy * cy + jy) * sy +
                       x.src_start[0] + f * cx + jx];
      *d = (TD)(sum * (T)(1.0 / ((double)f * fy * fz)));
    } else {
      int64_t c[3] = {0, 0, 0};
      double t[3] = {0, 0, 0};
      for (int a = 0; a < x.dim; a++)
        prolong_weights(x.src_start[a] + (a == 0 ? cx : a == 1 ? cy : cz), x.factor, &c[a], &t[a]);
      const T *r00 = src + c[2] * sz + c[1] * sy;
      const T *r01 = t[1] > 0 ? r00 + sy : r00, *r10 = t[2] > 0 ? r00 + sz : r00;
      const T *r11 = t[2] > 0 ? r01 + sz : r01;
      const T w00 = (T)((1 - t[2]) * (1 - t[1])), w01 = (T)((1 - t[2]) * t[1]);
      const T w10 = (T)(t[2] * (1 - t[1])), w11 = (T)(t[2] * t[1]);
      const T lo = w00 * r00[c[0]] + w01 * r01[c[0]] + w10 * r10[c[0]] + w11 * r11[c[0]];
      const T hi =
          w00 * r00[c[0] + 1] + w01 * r01[c[0] + 1] + w10 * r10[c[0] + 1] + w11 * r11[c[0] + 1];
      const T tx = (T)t[0];
      *d = (TD)((1 - tx) * lo + tx * hi);
    }
  }
}

// One face: every cell of the extended plane extrapolates `ghost` layers.
template <typename T> __global__ void boundary_kernel(strata__amr_boundary b, T *v, int a, int side)
{
  const int64_t stride[3] = {1, b.dims[0], b.dims[0] * b.dims[1]};
  const int p = (a + 1) % 3, q = (a + 2) % 3;
  const int64_t inner = side ? b.dims[a] - b.ghost - 1 : b.ghost;
  const int64_t out = side ? stride[a] : -stride[a];
  STRATA_GRID_LOOP(i, b.dims[p] * b.dims[q])
  {
    T *v0 = v + inner * stride[a] + (i % b.dims[p]) * stride[p] + (i / b.dims[p]) * stride[q];
    const T step = v0[0] - v0[-out];
    for (int k = 1; k <= b.ghost; k++)
      v0[k * out] = v0[0] + (T)k * step;
  }
}

template <typename T, typename TD>
int xfer(const strata__amr_xfer *x, void *dst, const void *src, void *stream)
{
  STRATA_LAUNCH(blocks_for(x->count[0] * x->count[1] * x->count[2]), kThreads, (cudaStream_t)stream,
                xfer_kernel<T, TD>)
  (*x, (TD *)dst + x->dst_offset, (const T *)src + x->src_offset);
  return (int)cudaGetLastError();
}

// Faces in axis order, each after the previous one on the stream: the
// corner cells of an axis pass are corrected by the later passes.
template <typename T> int boundary(const strata__amr_boundary *b, void *data, void *stream)
{
  for (int a = 0; a < b->dim; a++)
    for (int side = 0; side < 2; side++)
      if (b->faces & (1 << (2 * a + side))) {
        int p = (a + 1) % 3, q = (a + 2) % 3;
        STRATA_LAUNCH(blocks_for(b->dims[p] * b->dims[q]), kThreads, (cudaStream_t)stream,
                      boundary_kernel<T>)
        (*b, (T *)data, a, side);
        int err = (int)cudaGetLastError();
        if (err)
          return err;
      }
  return 0;
}

} // namespace

extern "C" int strata__amr_xfer_cuda(const strata__amr_xfer *x, void *dst, const void *src,
                                     void *stream)
{
  if (x->is_double && x->dst_float)
    return xfer<double, float>(x, dst, src, stream);
  return x->is_double ? xfer<double, double>(x, dst, src, stream)
                      : xfer<float, float>(x, dst, src, stream);
}

extern "C" int strata__amr_family_cuda(const strata__amr_family *f, void *parent,
                                       void *const children[], void *stream)
{
  for (int o = 0; o < f->nchildren; o++) {
    const strata__amr_xfer *x = &f->x[o];
    int err = x->kind == STRATA__AMR_RESTRICT
                  ? strata__amr_xfer_cuda(x, parent, children[o], stream)
                  : strata__amr_xfer_cuda(x, children[o], parent, stream);
    if (err)
      return err;
  }
  return 0;
}

extern "C" int strata__amr_boundary_cuda(const strata__amr_boundary *b, void *data, void *stream)
{
  return b->is_double ? boundary<double>(b, data, stream) : boundary<float>(b, data, stream);
}
