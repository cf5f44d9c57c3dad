// AMR kernels on the GPU, with the same arithmetic as ../cpu/amr.c
// (prolongation blends the coarse cells in the same order: z, y, then x;
// restriction adds in the same grouping), so CPU and GPU agree bit for
// bit. A 3-D grid (32 x 8 threads over x and y, blocks over z) gives each
// thread its cells without 64-bit divisions, which bounded the kernels by
// instruction issue (prolongation at 0.1 x a device copy on an H200); a
// prolongation thread walks a row, its y and z work done once; a family is
// one launch.
#include <cstdint>
#include <cuda_runtime.h>

#include "../amr_kernels.h"
#include "launch.cuh"

namespace
{

using strata_cuda::blocks_for;
using strata_cuda::kThreads;

constexpr int kTx = 32, kTy = 8; // threads of a block along x and y
constexpr int64_t kMaxGrid = 65535;

__device__ void prolong_weights(int64_t q, int factor, int64_t *c, double *t)
{
  *c = strata__amr_prolong_cell(q, factor);
  const int64_t rem = 2 * q + 1 - factor - 2 * (int64_t)factor * *c;
  *t = factor == 2 ? (double)rem * 0.25 : (double)rem / (double)(2 * factor);
}

// Destination cell (cx, cy, cz) of copy or restriction x.
template <typename T, typename TD>
__device__ void xfer_cell(const strata__amr_xfer &x, TD *dst, const T *src, int64_t cx, int64_t cy,
                          int64_t cz)
{
  TD *d = dst + ((x.dst_start[2] + cz) * x.dst_dims[1] + x.dst_start[1] + cy) * x.dst_dims[0] +
          x.dst_start[0] + cx;
  const int64_t sy = x.src_dims[0], sz = x.src_dims[0] * x.src_dims[1];
  if (x.kind == STRATA__AMR_COPY) {
    *d = (TD)src[(x.src_start[2] + cz) * sz + (x.src_start[1] + cy) * sy + x.src_start[0] + cx];
  } else if (x.kind == STRATA__AMR_RESTRICT) {
    const int f = x.factor, fy = x.dim >= 2 ? f : 1, fz = x.dim >= 3 ? f : 1;
    const T *r = src + (x.src_start[2] + fz * cz) * sz + (x.src_start[1] + fy * cy) * sy +
                 x.src_start[0] + f * cx;
    T sum = 0;
    if (f == 2) { /* the CPU's grouping: pairs along x, then the rows */
      const T *r01 = fy > 1 ? r + sy : r, *r10 = fz > 1 ? r + sz : r;
      const T *r11 = fz > 1 ? r01 + sz : r01;
      const T k01 = fy > 1, k10 = fz > 1, k11 = fy > 1 && fz > 1;
      sum =
          r[0] + r[1] + k01 * (r01[0] + r01[1]) + k10 * (r10[0] + r10[1]) + k11 * (r11[0] + r11[1]);
    } else
      for (int jz = 0; jz < fz; jz++)
        for (int jy = 0; jy < fy; jy++)
          for (int jx = 0; jx < f; jx++)
            sum += r[jz * sz + jy * sy + jx];
    *d = (TD)(sum * (T)(1.0 / ((double)f * fy * fz)));
  }
}

// Fine cells cx0, cx0 + step, ... of row (cy, cz) of prolongation x: the
// row's coarse rows and weights once, then per cell its x weights.
template <typename T, typename TD>
__device__ void prolong_row(const strata__amr_xfer &x, TD *dst, const T *src, int64_t cx0,
                            int64_t step, int64_t cy, int64_t cz)
{
  TD *d = dst + ((x.dst_start[2] + cz) * x.dst_dims[1] + x.dst_start[1] + cy) * x.dst_dims[0] +
          x.dst_start[0];
  const int64_t sy = x.src_dims[0], sz = x.src_dims[0] * x.src_dims[1];
  int64_t c1 = 0, c2 = 0, c0;
  double t1 = 0, t2 = 0, t0;
  if (x.dim >= 2)
    prolong_weights(x.src_start[1] + cy, x.factor, &c1, &t1);
  if (x.dim >= 3)
    prolong_weights(x.src_start[2] + cz, x.factor, &c2, &t2);
  const T *r00 = src + c2 * sz + c1 * sy;
  const T *r01 = t1 > 0 ? r00 + sy : r00, *r10 = t2 > 0 ? r00 + sz : r00;
  const T *r11 = t2 > 0 ? r01 + sz : r01;
  const T w00 = (T)((1 - t2) * (1 - t1)), w01 = (T)((1 - t2) * t1);
  const T w10 = (T)(t2 * (1 - t1)), w11 = (T)(t2 * t1);
  for (int64_t cx = cx0; cx < x.count[0]; cx += step) {
    prolong_weights(x.src_start[0] + cx, x.factor, &c0, &t0);
    const T lo = w00 * r00[c0] + w01 * r01[c0] + w10 * r10[c0] + w11 * r11[c0];
    const T hi = w00 * r00[c0 + 1] + w01 * r01[c0 + 1] + w10 * r10[c0 + 1] + w11 * r11[c0 + 1];
    const T tx = (T)t0;
    d[cx] = (TD)((1 - tx) * lo + tx * hi);
  }
}

// The cells of x whose z lies in blocks zblock, zblock + zblocks, ...
template <typename T, typename TD>
__device__ void xfer_cells(const strata__amr_xfer &x, TD *dst, const T *src, int64_t zblock,
                           int64_t zblocks)
{
  const int64_t cx0 = blockIdx.x * kTx + threadIdx.x, step = gridDim.x * kTx;
  for (int64_t cz = zblock; cz < x.count[2]; cz += zblocks)
    for (int64_t cy = blockIdx.y * kTy + threadIdx.y; cy < x.count[1]; cy += gridDim.y * kTy)
      if (x.kind == STRATA__AMR_PROLONG)
        prolong_row(x, dst, src, cx0, step, cy, cz);
      else
        for (int64_t cx = cx0; cx < x.count[0]; cx += step)
          xfer_cell(x, dst, src, cx, cy, cz);
}

template <typename T, typename TD>
__global__ void xfer_kernel(strata__amr_xfer x, TD *dst, const T *src)
{
  xfer_cells(x, dst, src, blockIdx.z, gridDim.z);
}

// A family's arrays, already offset: the parent's and each child's.
struct family_arrays {
  void *parent;
  void *children[8];
};

// Blocks along z: zblocks for each child in turn.
template <typename T, typename TD>
__global__ void family_kernel(const __grid_constant__ strata__amr_family f, family_arrays a,
                              unsigned zblocks)
{
  const unsigned o = blockIdx.z / zblocks;
  const strata__amr_xfer &x = f.x[o];
  if (x.kind == STRATA__AMR_RESTRICT)
    xfer_cells(x, static_cast<TD *>(a.parent), static_cast<const T *>(a.children[o]),
               blockIdx.z % zblocks, zblocks);
  else
    xfer_cells(x, static_cast<TD *>(a.children[o]), static_cast<const T *>(a.parent),
               blockIdx.z % zblocks, zblocks);
}

// Blocks over x and y for count[0] x count[1] cells, at most kMaxGrid along
// y; a prolongation's rows have one block along x, whose threads each take
// several cells of a row.
dim3 plane_grid(const strata__amr_xfer &x)
{
  const int64_t *count = x.count;
  const int64_t bx = x.kind == STRATA__AMR_PROLONG ? 1 : (count[0] + kTx - 1) / kTx,
                by = (count[1] + kTy - 1) / kTy;
  return dim3((unsigned)(bx > 0 ? bx : 1),
              (unsigned)(by < kMaxGrid ? (by > 0 ? by : 1) : kMaxGrid));
}

unsigned z_blocks(int64_t count, int64_t most)
{
  return (unsigned)(count < most ? (count > 0 ? count : 1) : most);
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
  dim3 grid = plane_grid(*x);
  grid.z = z_blocks(x->count[2], kMaxGrid);
  STRATA_LAUNCH(grid, dim3(kTx, kTy), (cudaStream_t)stream, xfer_kernel<T, TD>)
  (*x, (TD *)dst + x->dst_offset, (const T *)src + x->src_offset);
  return (int)cudaGetLastError();
}

// One launch for the whole family: its children are alike (same kind,
// types and counts), as strata__amr_family_xfer makes them.
template <typename T, typename TD>
int family(const strata__amr_family *f, void *parent, void *const children[], void *stream)
{
  family_arrays a = {};
  const strata__amr_xfer *x0 = &f->x[0];
  const int restrict_ = x0->kind == STRATA__AMR_RESTRICT;
  a.parent =
      restrict_ ? (void *)((TD *)parent + x0->dst_offset) : (void *)((T *)parent + x0->src_offset);
  for (int o = 0; o < f->nchildren; o++)
    a.children[o] = restrict_ ? (void *)((T *)children[o] + f->x[o].src_offset)
                              : (void *)((TD *)children[o] + f->x[o].dst_offset);
  dim3 grid = plane_grid(*x0);
  const unsigned zblocks = z_blocks(x0->count[2], kMaxGrid / f->nchildren);
  grid.z = zblocks * (unsigned)f->nchildren;
  STRATA_LAUNCH(grid, dim3(kTx, kTy), (cudaStream_t)stream, family_kernel<T, TD>)
  (*f, a, zblocks);
  return (int)cudaGetLastError();
}

// Same kind, types and counts, and the same offset into the parent (the
// family kernel applies the first child's).
int alike(const strata__amr_xfer *a, const strata__amr_xfer *b)
{
  const int restrict_ = a->kind == STRATA__AMR_RESTRICT;
  return a->kind == b->kind && a->is_double == b->is_double && a->dst_float == b->dst_float &&
         a->count[0] == b->count[0] && a->count[1] == b->count[1] && a->count[2] == b->count[2] &&
         (restrict_ ? a->dst_offset == b->dst_offset : a->src_offset == b->src_offset);
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
  int same = f->nchildren >= 1 && f->x[0].kind != STRATA__AMR_COPY;
  for (int o = 1; o < f->nchildren && same; o++)
    same = alike(&f->x[0], &f->x[o]);
  if (same) {
    const strata__amr_xfer *x = &f->x[0];
    if (x->is_double && x->dst_float)
      return family<double, float>(f, parent, children, stream);
    return x->is_double ? family<double, double>(f, parent, children, stream)
                        : family<float, float>(f, parent, children, stream);
  }
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
