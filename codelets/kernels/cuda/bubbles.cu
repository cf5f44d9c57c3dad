// Bubble extraction on the GPU, with the CPU kernel's results and order:
// labels converge to the smallest cell index of each 26-connected component
// (min-label propagation with pointer jumping), per-root sums by atomics,
// and an ordered compaction of the roots in one block. Then the links
// between neighbouring maps' border faces, one thread per slot.
#include <cuda_runtime.h>

#include "launch.cuh"

#include "../bubble_kernels.h"

namespace
{

using strata_cuda::blocks_for;
using strata_cuda::kThreads;

constexpr int kScanThreads = 1024;

// Scratch layout: per cell mass, px, py, pz, then `values` sums of p v
// (double), cells (u64), label (int32), peak bits (int); then one change
// flag.
struct Scratch {
  int32_t *label;
  double *mass, *px, *py, *pz, *value;
  int *peak;
  unsigned long long *cells;
  int *changed;
};

Scratch carve(void *base, int64_t vol, int values)
{
  char *p = static_cast<char *>(base);
  Scratch s;
  s.mass = reinterpret_cast<double *>(p);
  s.px = s.mass + vol;
  s.py = s.px + vol;
  s.pz = s.py + vol;
  s.value = s.pz + vol;
  s.cells = reinterpret_cast<unsigned long long *>(s.value + values * vol);
  s.label = reinterpret_cast<int32_t *>(s.cells + vol);
  s.peak = reinterpret_cast<int *>(s.label + vol);
  s.changed = s.peak + vol;
  return s;
}

__global__ void init_kernel(const float *prob, int64_t vol, float threshold, int values, Scratch s)
{
  STRATA_GRID_LOOP(i, vol)
  {
    s.label[i] = prob[i] > threshold ? (int32_t)i : -1;
    s.mass[i] = s.px[i] = s.py[i] = s.pz[i] = 0.0;
    for (int k = 0; k < values; k++)
      s.value[k * vol + i] = 0.0;
    s.peak[i] = 0;
    s.cells[i] = 0;
  }
}

__global__ void propagate_kernel(int64_t n, Scratch s)
{
  STRATA_GRID_LOOP(i, n * n * n)
  {
    int32_t own = s.label[i];
    if (own < 0)
      continue;
    int64_t x = i % n, y = i / n % n, z = i / (n * n);
    int32_t best = own;
    for (int dz = -1; dz <= 1; dz++)
      for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
          int64_t zz = z + dz, yy = y + dy, xx = x + dx;
          if (zz < 0 || zz >= n || yy < 0 || yy >= n || xx < 0 || xx >= n)
            continue;
          int32_t l = s.label[(zz * n + yy) * n + xx];
          if (l >= 0 && l < best)
            best = l;
        }
    if (best < own) {
      atomicMin(&s.label[own], best); // the old root joins too
      atomicMin(&s.label[i], best);
      *s.changed = 1;
    }
  }
}

__global__ void jump_kernel(int64_t vol, Scratch s)
{
  STRATA_GRID_LOOP(i, vol)
  {
    int32_t l = s.label[i];
    if (l >= 0) {
      int32_t r = s.label[l];
      while (r != l) { // labels only decrease along the chain
        l = r;
        r = s.label[l];
      }
      s.label[i] = l;
    }
  }
}

__global__ void accumulate_kernel(const float *map, int64_t n, struct strata__bubble_params p,
                                  Scratch s)
{
  const int64_t vol = n * n * n;
  const float *prob = map + p.probability * vol;
  STRATA_GRID_LOOP(i, vol)
  {
    int32_t r = s.label[i];
    if (r < 0)
      continue;
    double w = prob[i];
    for (int k = 0; k < p.values; k++)
      atomicAdd(&s.value[k * vol + r], w * map[p.value_channel[k] * vol + i]);
    atomicAdd(&s.mass[r], w);
    atomicAdd(&s.px[r], w * ((double)(i % n) + 0.5));
    atomicAdd(&s.py[r], w * ((double)(i / n % n) + 0.5));
    atomicAdd(&s.pz[r], w * ((double)(i / (n * n)) + 0.5));
    atomicMax(&s.peak[r], __float_as_int(prob[i])); // p > 0: int order is float order
    atomicAdd(&s.cells[r], 1ull);
  }
}

// The six border faces of the root labels, one thread per face cell.
__global__ void faces_kernel(int64_t n, Scratch s, int32_t *faces)
{
  STRATA_GRID_LOOP(f, 6 * n * n)
  {
    int64_t u = f % n, v = f / n % n;
    int axis = (int)(f / (2 * n * n)), side = (int)(f / (n * n) % 2);
    faces[f] = s.label[strata__bubble_face_to_map(n, axis, side, u, v)];
  }
}

// Faces of the present neighbours, by direction (NULL: absent).
struct Neighbours {
  const int32_t *faces[STRATA__BUBBLE_DIRECTIONS];
  int64_t offset[STRATA__BUBBLE_DIRECTIONS + 1];
};

__global__ void links_kernel(int64_t n, const int32_t *a, Neighbours nb, int32_t *links)
{
  STRATA_GRID_LOOP(slot, nb.offset[STRATA__BUBBLE_DIRECTIONS])
  {
    int k = 0;
    while (slot >= nb.offset[k + 1])
      k++;
    int32_t *pair = links + 2 * slot;
    if (!nb.faces[k]) {
      pair[0] = pair[1] = -1;
      continue;
    }
    int d[3];
    strata__bubble_direction(k, d);
    strata__bubble_link_slot(n, d, slot - nb.offset[k], a, nb.faces[k], pair);
  }
}

// One block: scan the cells in order and write the kept roots' rows.
__global__ void __launch_bounds__(kScanThreads)
    compact_kernel(int64_t vol, struct strata__bubble_params p, Scratch s, double *table,
                   int64_t capacity)
{
  __shared__ int64_t counts[kScanThreads];
  __shared__ int64_t base;
  if (threadIdx.x == 0)
    base = 0;
  __syncthreads();
  for (int64_t start = 0; start < vol; start += kScanThreads) {
    int64_t i = start + threadIdx.x;
    int keep = i < vol && s.label[i] == i && (int64_t)s.cells[i] >= p.min_cells;
    counts[threadIdx.x] = keep;
    __syncthreads();
    for (int off = 1; off < kScanThreads; off <<= 1) { // inclusive scan
      int64_t v = (int)threadIdx.x >= off ? counts[threadIdx.x - off] : 0;
      __syncthreads();
      counts[threadIdx.x] += v;
      __syncthreads();
    }
    int64_t slot = base + counts[threadIdx.x] - 1;
    if (keep && slot < capacity) {
      double *row = table + (1 + slot) * strata__bubble_columns(p.values);
      double cells = (double)s.cells[i];
      row[STRATA__BUBBLE_X] = p.origin[0] + s.px[i] / s.mass[i] * p.cell_size;
      row[STRATA__BUBBLE_Y] = p.origin[1] + s.py[i] / s.mass[i] * p.cell_size;
      row[STRATA__BUBBLE_Z] = p.origin[2] + s.pz[i] / s.mass[i] * p.cell_size;
      row[STRATA__BUBBLE_RADIUS] = strata__bubble_radius(cells, p.cell_size);
      row[STRATA__BUBBLE_MASS] = s.mass[i];
      row[STRATA__BUBBLE_PEAK] = (double)__int_as_float(s.peak[i]);
      row[STRATA__BUBBLE_CELLS] = cells;
      row[STRATA__BUBBLE_FIRST] = (double)i;
      for (int k = 0; k < p.values; k++)
        row[STRATA__BUBBLE_FIELDS + k] = s.value[k * vol + i] / s.mass[i];
    }
    __syncthreads();
    if (threadIdx.x == kScanThreads - 1)
      base += counts[threadIdx.x];
    __syncthreads();
  }
  if (threadIdx.x < strata__bubble_columns(p.values))
    table[threadIdx.x] = threadIdx.x == 0 ? (double)base : 0.0;
}

} // namespace

extern "C" uint64_t strata__bubbles_cuda_scratch_bytes(int64_t n, int values)
{
  uint64_t vol = (uint64_t)(n * n * n);
  return vol * ((4 + (uint64_t)values) * sizeof(double) + sizeof(unsigned long long) +
                sizeof(int32_t) + sizeof(int)) +
         sizeof(int);
}

extern "C" int strata__bubbles_cuda(const float *map, int64_t n,
                                    const struct strata__bubble_params *p, void *scratch,
                                    double *table, int64_t capacity, int32_t *faces, void *stream)
{
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  int64_t vol = n * n * n;
  Scratch s = carve(scratch, vol, p->values);
  const float *prob = map + p->probability * vol;
  STRATA_LAUNCH(blocks_for(vol), kThreads, st, init_kernel)(prob, vol, p->threshold, p->values, s);
  for (;;) {
    int changed = 0;
    cudaMemsetAsync(s.changed, 0, sizeof(int), st);
    STRATA_LAUNCH(blocks_for(vol), kThreads, st, propagate_kernel)(n, s);
    STRATA_LAUNCH(blocks_for(vol), kThreads, st, jump_kernel)(vol, s);
    cudaMemcpyAsync(&changed, s.changed, sizeof(int), cudaMemcpyDeviceToHost, st);
    cudaError_t err = cudaStreamSynchronize(st);
    if (err != cudaSuccess)
      return (int)err;
    if (!changed)
      break;
  }
  if (faces)
    STRATA_LAUNCH(blocks_for(6 * n * n), kThreads, st, faces_kernel)(n, s, faces);
  STRATA_LAUNCH(blocks_for(vol), kThreads, st, accumulate_kernel)(map, n, *p, s);
  STRATA_LAUNCH(1, kScanThreads, st, compact_kernel)(vol, *p, s, table, capacity);
  return (int)cudaGetLastError();
}

extern "C" int strata__bubble_links_cuda(const struct strata__bubble_links_params *p,
                                         const int32_t *a, const int32_t *const *b, int32_t *links,
                                         void *stream)
{
  Neighbours nb;
  int present = 0;
  for (int k = 0; k <= STRATA__BUBBLE_DIRECTIONS; k++)
    nb.offset[k] = strata__bubble_link_offset(p->n, k);
  for (int k = 0; k < STRATA__BUBBLE_DIRECTIONS; k++)
    nb.faces[k] = p->present[k] ? b[present++] : nullptr;
  int64_t slots = nb.offset[STRATA__BUBBLE_DIRECTIONS];
  STRATA_LAUNCH(blocks_for(slots), kThreads, static_cast<cudaStream_t>(stream), links_kernel)
  (p->n, a, nb, links);
  return (int)cudaGetLastError();
}
