/* Bubble extraction on the CPU: union-find over the cells above threshold,
 * linking each to its 13 already-visited neighbours; the root of a
 * component is its first cell in scan order, which fixes the output order.
 * Then the links between neighbouring maps' border faces. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../bubble_kernels.h"

static int32_t find(int32_t *parent, int32_t i)
{
  while (parent[i] != i) {
    parent[i] = parent[parent[i]]; /* path halving */
    i = parent[i];
  }
  return i;
}

static void unite(int32_t *parent, int32_t a, int32_t b)
{
  a = find(parent, a);
  b = find(parent, b);
  if (a < b)
    parent[b] = a;
  else if (b < a)
    parent[a] = b;
}

/* Per component accumulators. */
struct component {
  double mass, px, py, pz, peak;
  int64_t cells, first;
  double value[STRATA__BUBBLE_MAX_VALUES]; /* sums of p v */
};

/* The six border faces of the root labels. */
static void write_faces(const int32_t *labels, int64_t n, int32_t *faces)
{
  for (int axis = 0; axis < 3; axis++)
    for (int side = 0; side < 2; side++)
      for (int64_t v = 0; v < n; v++)
        for (int64_t u = 0; u < n; u++) {
          int64_t c[3];
          c[axis] = side ? n - 1 : 0;
          c[axis == 0 ? 1 : 0] = u;
          c[axis == 2 ? 1 : 2] = v;
          faces[strata__bubble_face_cell(n, axis, side, u, v)] =
              labels[(c[2] * n + c[1]) * n + c[0]];
        }
}

/* At most one component per 2^3 cells (26-connected components are
 * separated by a layer of cells): the scratch holds the labels, then the
 * components, and the kernel allocates nothing. */
static uint64_t labels_bytes(int64_t n) /* rounded up for the components' doubles */
{
  return ((uint64_t)(n * n * n) * sizeof(int32_t) + 7) & ~(uint64_t)7;
}

uint64_t strata__bubbles_cpu_scratch_bytes(int64_t n)
{
  const uint64_t half = (uint64_t)(n + 1) / 2;
  return labels_bytes(n) + half * half * half * sizeof(struct component);
}

void strata__bubbles_cpu(const float *map, int64_t n, const struct strata__bubble_params *p,
                         void *scratch, double *table, int64_t capacity, int32_t *faces)
{
  int32_t *labels = scratch;
  int64_t vol = n * n * n;
  const float *prob = map + p->probability * vol;
  for (int64_t i = 0; i < vol; i++)
    labels[i] = prob[i] > p->threshold ? (int32_t)i : -1;
  /* Half of the 26 neighbours: those before the cell in scan order. */
  for (int64_t z = 0; z < n; z++)
    for (int64_t y = 0; y < n; y++)
      for (int64_t x = 0; x < n; x++) {
        int64_t i = (z * n + y) * n + x;
        if (labels[i] < 0)
          continue;
        for (int dz = -1; dz <= 0; dz++)
          for (int dy = -1; dy <= 1; dy++)
            for (int dx = -1; dx <= 1; dx++) {
              if (dz == 0 && (dy > 0 || (dy == 0 && dx >= 0)))
                continue;
              int64_t zz = z + dz, yy = y + dy, xx = x + dx;
              if (zz < 0 || yy < 0 || yy >= n || xx < 0 || xx >= n)
                continue;
              int64_t j = (zz * n + yy) * n + xx;
              if (labels[j] >= 0)
                unite(labels, (int32_t)i, (int32_t)j);
            }
      }
  for (int64_t i = 0; i < vol; i++) /* every cell now points at its root */
    if (labels[i] >= 0)
      labels[i] = find(labels, (int32_t)i);
  if (faces)
    write_faces(labels, n, faces);
  /* Number the components in scan order (a root comes before its cells):
   * a root's label becomes -(id + 2), its cells then find the id there. */
  struct component *comp = (struct component *)(void *)((char *)scratch + labels_bytes(n));
  int64_t ncomp = 0;
  for (int64_t i = 0; i < vol; i++) {
    if (labels[i] == -1)
      continue;
    int64_t id;
    if (labels[i] == i) {
      id = ncomp++;
      memset(&comp[id], 0, sizeof comp[id]);
      comp[id].first = i;
      labels[i] = (int32_t)(-(id + 2));
    } else {
      id = -(int64_t)labels[labels[i]] - 2;
    }
    double w = prob[i];
    int64_t x = i % n, y = (i / n) % n, z = i / (n * n);
    struct component *c = &comp[id];
    c->mass += w;
    c->px += w * ((double)x + 0.5);
    c->py += w * ((double)y + 0.5);
    c->pz += w * ((double)z + 0.5);
    c->peak = w > c->peak ? w : c->peak;
    c->cells++;
    for (int k = 0; k < p->values; k++)
      c->value[k] += w * map[p->value_channel[k] * vol + i];
  }
  const int64_t columns = strata__bubble_columns(p->values);
  int64_t kept = 0;
  for (int64_t id = 0; id < ncomp; id++) {
    const struct component *c = &comp[id];
    if (c->cells < p->min_cells)
      continue;
    if (kept < capacity) {
      double *row = table + (1 + kept) * columns;
      row[STRATA__BUBBLE_X] = p->origin[0] + c->px / c->mass * p->cell_size;
      row[STRATA__BUBBLE_Y] = p->origin[1] + c->py / c->mass * p->cell_size;
      row[STRATA__BUBBLE_Z] = p->origin[2] + c->pz / c->mass * p->cell_size;
      row[STRATA__BUBBLE_RADIUS] = strata__bubble_radius((double)c->cells, p->cell_size);
      row[STRATA__BUBBLE_MASS] = c->mass;
      row[STRATA__BUBBLE_PEAK] = c->peak;
      row[STRATA__BUBBLE_CELLS] = (double)c->cells;
      row[STRATA__BUBBLE_FIRST] = (double)c->first;
      for (int k = 0; k < p->values; k++)
        row[STRATA__BUBBLE_FIELDS + k] = c->value[k] / c->mass;
    }
    kept++;
  }
  memset(table, 0, (size_t)columns * sizeof *table);
  table[0] = (double)kept;
}

void strata__bubble_links_cpu(const struct strata__bubble_links_params *p, const int32_t *a,
                              const int32_t *const *b, int32_t *links)
{
  int present = 0;
  for (int k = 0; k < STRATA__BUBBLE_DIRECTIONS; k++) {
    int d[3];
    strata__bubble_direction(k, d);
    int64_t offset = strata__bubble_link_offset(p->n, k);
    int64_t slots = strata__bubble_direction_slots(p->n, d);
    const int32_t *faces = p->present[k] ? b[present++] : NULL;
    for (int64_t s = 0; s < slots; s++) {
      int32_t *pair = links + 2 * (offset + s);
      if (faces)
        strata__bubble_link_slot(p->n, d, s, a, faces, pair);
      else
        pair[0] = pair[1] = -1;
    }
  }
}
