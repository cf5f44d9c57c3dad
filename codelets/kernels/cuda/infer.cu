// Inference-array kernels on the GPU (see ../infer_kernels.h), with the
// CPU version's arithmetic: the criterion's block mean is a one-block
// shared-memory reduction, marking is one thread per cell, the bubble list
// is appended by one thread so that its order is the table's order.
#include <cstdint>
#include <cuda_runtime.h>

#include "../bubble_kernels.h"
#include "../infer_kernels.h"
#include "launch.cuh"

namespace
{

using strata_cuda::blocks_for;
using strata_cuda::kThreads;

__device__ double cell(const void *field, int is_double, int64_t side, int ghost, int64_t i)
{
  const int64_t n = side - 2 * ghost;
  const int64_t x = i % n, y = i / n % n, z = i / (n * n);
  const int64_t at = ((z + ghost) * side + y + ghost) * side + x + ghost;
  return is_double ? ((const double *)field)[at] : ((const float *)field)[at];
}

// One block of kThreads threads: zero the mask, reduce the mean, mark.
__global__ void criterion_kernel(strata__infer_criterion c, const void *field, uint8_t *mask)
{
  __shared__ double partial[kThreads];
  const int64_t n = c.cells, side = n + 2 * c.ghost, cells = n * n * n, part = n / c.mask;
  for (int64_t i = threadIdx.x; i < c.mask * c.mask * c.mask; i += blockDim.x)
    mask[i] = 0;
  double reference = c.reference;
  if (c.local_mean) {
    double sum = 0;
    for (int64_t i = threadIdx.x; i < cells; i += blockDim.x)
      sum += cell(field, c.is_double, side, c.ghost, i);
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if ((int)threadIdx.x < s)
        partial[threadIdx.x] += partial[threadIdx.x + s];
      __syncthreads();
    }
    reference = partial[0] / (double)cells;
  }
  __syncthreads();
  const double limit = c.threshold * reference;
  for (int64_t i = threadIdx.x; i < cells; i += blockDim.x)
    if (cell(field, c.is_double, side, c.ghost, i) > limit) {
      const int64_t x = i % n, y = i / n % n, z = i / (n * n);
      mask[((z / part) * c.mask + y / part) * c.mask + x / part] = 1;
    }
}

__device__ int64_t stored_rows(const strata__infer_mark &m, const double *table)
{
  const int64_t found = (int64_t)table[0];
  return found < m.table_capacity ? found : m.table_capacity;
}

__device__ void leaf_box(const strata__infer_mark &m, double lo[3], double hi[3])
{
  for (int a = 0; a < 3; a++) {
    lo[a] = m.lower[a];
    hi[a] = m.lower[a] + (double)m.cells * m.h;
  }
}

__global__ void list_kernel(strata__infer_mark m, const double *table, double *list)
{
  double lo[3], hi[3];
  leaf_box(m, lo, hi);
  for (int64_t b = 0; b < stored_rows(m, table); b++) {
    const double *row = table + (1 + b) * m.columns;
    if (!strata__infer_bubble_reaches(&m, row + STRATA__BUBBLE_X, row[STRATA__BUBBLE_RADIUS], lo,
                                      hi))
      continue;
    const int64_t slot = (int64_t)list[0];
    if (slot < m.list_capacity)
      for (int64_t k = 0; k < m.columns; k++)
        list[(1 + slot) * m.columns + k] = row[k];
    list[0] = (double)(slot + 1);
  }
}

__global__ void mark_kernel(strata__infer_mark m, const double *table, void *field)
{
  const int64_t n = m.cells, side = n + 2 * m.ghost;
  STRATA_GRID_LOOP(i, n * n * n)
  {
    const int64_t x = i % n, y = i / n % n, z = i / (n * n);
    const double p[3] = {m.lower[0] + ((double)x + 0.5) * m.h, m.lower[1] + ((double)y + 0.5) * m.h,
                         m.lower[2] + ((double)z + 0.5) * m.h};
    int inside = 1;
    for (int a = 0; a < 3; a++)
      inside &= p[a] >= m.array_lo[a] && p[a] < m.array_hi[a];
    if (!inside)
      continue;
    for (int64_t b = 0; b < stored_rows(m, table); b++) {
      const double *row = table + (1 + b) * m.columns;
      double d2 = 0;
      for (int a = 0; a < 3; a++)
        d2 += (p[a] - row[a]) * (p[a] - row[a]);
      if (d2 <= row[STRATA__BUBBLE_RADIUS] * row[STRATA__BUBBLE_RADIUS]) {
        const int64_t at = ((z + m.ghost) * side + y + m.ghost) * side + x + m.ghost;
        if (m.is_double)
          ((double *)field)[at] = 1;
        else
          ((float *)field)[at] = 1;
        break;
      }
    }
  }
}

} // namespace

extern "C" int strata__infer_criterion_cuda(const strata__infer_criterion *c, const void *field,
                                            uint8_t *mask, void *stream)
{
  STRATA_LAUNCH(1, kThreads, (cudaStream_t)stream, criterion_kernel)(*c, field, mask);
  return (int)cudaGetLastError();
}

extern "C" int strata__infer_mark_cuda(const strata__infer_mark *m, const double *table,
                                       double *list, void *field, void *stream)
{
  table += m->table_offset;
  STRATA_LAUNCH(1, 1, (cudaStream_t)stream, list_kernel)(*m, table, list);
  int err = (int)cudaGetLastError();
  if (err || !field)
    return err;
  STRATA_LAUNCH(blocks_for(m->cells * m->cells * m->cells), kThreads, (cudaStream_t)stream,
                mark_kernel)
  (*m, table, field);
  return (int)cudaGetLastError();
}
