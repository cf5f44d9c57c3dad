/* Pure kernels of bubble extraction: threshold a probability map
 * [n, n, n], 26-connected components, and per component the
 * probability-weighted centre and the equivalent-sphere radius; and the
 * links between the components of neighbouring maps, from which bubbles
 * that straddle maps are joined. */
#ifndef STRATA_BUBBLE_KERNELS_H
#define STRATA_BUBBLE_KERNELS_H

#include <math.h>
#include <stdint.h>

#include "host_device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most value channels a map carries beside its probability. */
enum { STRATA__BUBBLE_MAX_VALUES = 16 };

/* The map is `channels` channels of n^3 floats (a model's outputs): the
 * probability is channel `probability`, and each bubble gets the
 * probability-weighted mean of channels value_channel[0 ... values) (the
 * regression outputs of a model). */
struct strata__bubble_params {
  float threshold;   /* cells with p > threshold belong to bubbles */
  int64_t min_cells; /* smaller components are dropped */
  double origin[3];  /* domain coordinates of the array's corner (x, y, z) */
  double cell_size;  /* edge of one cell in domain units */
  int channels;      /* of the map, >= 1 */
  int probability;   /* its channel */
  int values;        /* 0 ... STRATA__BUBBLE_MAX_VALUES */
  int value_channel[STRATA__BUBBLE_MAX_VALUES];
};

/* One row of a bubble table (all float64): centre x, y, z, radius,
 * mass (sum of p), peak p, cells, the index of its first cell in scan
 * order (z, y, x), which names the component in the border faces, then
 * the probability-weighted mean of each value channel. */
enum {
  STRATA__BUBBLE_X,
  STRATA__BUBBLE_Y,
  STRATA__BUBBLE_Z,
  STRATA__BUBBLE_RADIUS,
  STRATA__BUBBLE_MASS,
  STRATA__BUBBLE_PEAK,
  STRATA__BUBBLE_CELLS,
  STRATA__BUBBLE_FIRST,
  STRATA__BUBBLE_FIELDS
};

/* A table is 1 + capacity rows of strata__bubble_columns(values) doubles:
 * row 0 holds the number of bubbles found, rows 1.. the first `capacity`
 * of them in the order of their first cell (z, y, x scan order). */
STRATA__HOST_DEVICE static inline int64_t strata__bubble_columns(int values)
{
  return STRATA__BUBBLE_FIELDS + values;
}

/* Radius of the sphere of `cells` cells of edge `cell_size`. */
STRATA__HOST_DEVICE static inline double strata__bubble_radius(double cells, double cell_size)
{
  return cbrt(3.0 * cells / (4.0 * 3.14159265358979323846)) * cell_size;
}

/* Border faces of a map, 6 n^2 int32 (NULL: not written): face 2a + s is
 * the low (s = 0) or high (s = 1) side of axis a (x, y, z); its cell (u, v)
 * is at u + n v, u along the lower of the two other axes, v the higher.
 * A cell holds the first-cell index of its component, -1 below threshold,
 * whether or not the component is kept. */
STRATA__HOST_DEVICE static inline int64_t strata__bubble_face_cell(int64_t n, int axis, int side,
                                                                   int64_t u, int64_t v)
{
  return ((int64_t)(2 * axis + side) * n + v) * n + u;
}

/* The map's cell (z, y, x scan index) at (u, v) of face 2 axis + side. */
STRATA__HOST_DEVICE static inline int64_t strata__bubble_face_to_map(int64_t n, int axis, int side,
                                                                     int64_t u, int64_t v)
{
  int64_t c[3];
  c[axis] = side ? n - 1 : 0;
  c[axis == 0 ? 1 : 0] = u;
  c[axis == 2 ? 1 : 2] = v;
  return (c[2] * n + c[1]) * n + c[0];
}

/* CPU extraction from a map of p->channels channels, with `scratch` of
 * strata__bubbles_cpu_scratch_bytes(n) bytes (it allocates nothing). */
uint64_t strata__bubbles_cpu_scratch_bytes(int64_t n);
void strata__bubbles_cpu(const float *map, int64_t n, const struct strata__bubble_params *p,
                         void *scratch, double *table, int64_t capacity, int32_t *faces);

/* ---- links between neighbouring maps ---- */

/* The 13 forward neighbour directions (dx, dy, dz): the half of the 26
 * whose last nonzero component is positive, so that each pair of maps is
 * linked once, from the map behind; strata__bubble_direction() gives the
 * k-th in the order dz, dy, dx = -1..1. */
enum { STRATA__BUBBLE_DIRECTIONS = 13 };

STRATA__HOST_DEVICE static inline void strata__bubble_direction(int k, int d[3])
{
  d[0] = d[1] = d[2] = 0;
  for (int dz = -1; dz <= 1; dz++)
    for (int dy = -1; dy <= 1; dy++)
      for (int dx = -1; dx <= 1; dx++)
        if ((dz > 0 || (dz == 0 && (dy > 0 || (dy == 0 && dx > 0)))) && k-- == 0) {
          d[0] = dx, d[1] = dy, d[2] = dz;
          return;
        }
}

/* The links of a map A with its neighbour B in direction d are pairs (a, b)
 * of first-cell indices of components that touch across the shared border:
 * one slot per (cell of A's border, candidate cell of B), (-1, -1) where
 * either is below threshold. A direction with one nonzero component has
 * n^2 cells x 9 candidates, two: n x 3, three: 1 x 1. The slots of the 13
 * directions follow each other in direction order. */
STRATA__HOST_DEVICE static inline int64_t strata__bubble_direction_slots(int64_t n, const int d[3])
{
  int64_t slots = 1;
  for (int a = 0; a < 3; a++)
    slots *= d[a] ? 1 : 3 * n; /* cells along the axis, 3 candidates each */
  return slots;
}

STRATA__HOST_DEVICE static inline int64_t strata__bubble_link_offset(int64_t n, int direction)
{
  int64_t offset = 0;
  for (int k = 0; k < direction; k++) {
    int d[3];
    strata__bubble_direction(k, d);
    offset += strata__bubble_direction_slots(n, d);
  }
  return offset;
}

STRATA__HOST_DEVICE static inline int64_t strata__bubble_link_slots(int64_t n)
{
  return strata__bubble_link_offset(n, STRATA__BUBBLE_DIRECTIONS);
}

/* Slot `s` of direction d between faces `a` and `b` (6 n^2 each): the
 * pair into out[0], out[1]. A's border is its face across the first axis
 * on which d moves; along the two other axes, a cell of that face meets
 * the candidates -1, 0, +1 of B where d is 0 there, else only the cell at
 * the shared edge. */
STRATA__HOST_DEVICE static inline void strata__bubble_link_slot(int64_t n, const int d[3],
                                                                int64_t s, const int32_t *a,
                                                                const int32_t *b, int32_t out[2])
{
  int axis = d[0] ? 0 : d[1] ? 1 : 2;
  int other[2] = {axis == 0 ? 1 : 0, axis == 2 ? 1 : 2};
  int64_t cell[2], cand[2];
  int inside = 1;
  for (int k = 0; k < 2; k++) {
    int e = d[other[k]];
    int64_t ncand = e ? 1 : 3;
    int64_t j = s % ncand;
    s /= ncand;
    int64_t c = e ? (e > 0 ? n - 1 : 0) : s % n;
    s /= e ? 1 : n;
    cell[k] = c;
    cand[k] = e ? (e > 0 ? 0 : n - 1) : c + j - 1;
    inside = inside && cand[k] >= 0 && cand[k] < n;
  }
  int side = d[axis] > 0;
  int32_t la = a[strata__bubble_face_cell(n, axis, side, cell[0], cell[1])];
  int32_t lb = inside ? b[strata__bubble_face_cell(n, axis, !side, cand[0], cand[1])] : -1;
  out[0] = la >= 0 && lb >= 0 ? la : -1;
  out[1] = la >= 0 && lb >= 0 ? lb : -1;
}

/* What a link task knows: the extent and which neighbours exist. */
struct strata__bubble_links_params {
  int64_t n;
  uint8_t present[STRATA__BUBBLE_DIRECTIONS];
};

/* Links of A (faces `a`) with its present neighbours: `b` holds one faces
 * array per present direction, in direction order. `links` gets 2 int32
 * per slot of strata__bubble_link_slots(n); absent directions are (-1, -1). */
void strata__bubble_links_cpu(const struct strata__bubble_links_params *p, const int32_t *a,
                              const int32_t *const *b, int32_t *links);
int strata__bubble_links_cuda(const struct strata__bubble_links_params *p, const int32_t *a,
                              const int32_t *const *b, int32_t *links, void *stream);

/* Scratch bytes of the CUDA extraction for extent n. */
uint64_t strata__bubbles_cuda_scratch_bytes(int64_t n, int values);

/* CUDA extraction, asynchronous on `stream`; `table` in device memory. */
int strata__bubbles_cuda(const float *map, int64_t n, const struct strata__bubble_params *p,
                         void *scratch, double *table, int64_t capacity, int32_t *faces,
                         void *stream);

#ifdef __cplusplus
}
#endif
#endif
