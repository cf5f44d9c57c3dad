/* Bubble extraction as tasks: planted spheres are found once each, centres
 * within one cell and radii within 15 %; 26-connectivity joins spheres that
 * touch only at a corner; min-size filter; capacity; domain coordinates;
 * value channels. */
#include <math.h>

#include "check.h"

struct sphere {
  double c[3], r;
};

static strata_array *plant(int64_t n, const struct sphere *s, int count)
{
  strata_array *a;
  int64_t shape[3] = {n, n, n};
  CHECK_EQ(strata_array_create(3, shape, STRATA_FLOAT32, &a), 0);
  float *p;
  strata_array_acquire(a, STRATA_WRITE, (void **)&p);
  for (int64_t z = 0; z < n; z++)
    for (int64_t y = 0; y < n; y++)
      for (int64_t x = 0; x < n; x++) {
        float v = 0.05f; /* background below threshold */
        for (int k = 0; k < count; k++) {
          double dx = x + 0.5 - s[k].c[0], dy = y + 0.5 - s[k].c[1], dz = z + 0.5 - s[k].c[2];
          if (dx * dx + dy * dy + dz * dz <= s[k].r * s[k].r)
            v = 0.9f;
        }
        p[(z * n + y) * n + x] = v;
      }
  strata_array_release(a);
  return a;
}

static strata_bubble *extract(strata_array *prob, const strata_bubble_params *p, int64_t cap,
                              int64_t *n, int64_t *found)
{
  strata_array *table;
  int64_t shape[2] = {1 + cap, STRATA_BUBBLE_TABLE_COLUMNS};
  CHECK_EQ(strata_array_create(2, shape, STRATA_FLOAT64, &table), 0);
  CHECK_EQ(strata_bubbles_submit(prob, p, table), 0);
  strata_bubble *list = NULL;
  CHECK_EQ(strata_bubbles_read(table, &list, n, found), 0);
  strata_array_destroy(table);
  return list;
}

static void check_planted(void)
{
  const struct sphere s[3] = {
      {{12.3, 20.7, 15.1}, 4.0}, {{35.6, 30.2, 33.9}, 6.5}, {{20.0, 38.4, 36.8}, 5.2}};
  strata_array *prob = plant(48, s, 3);
  strata_bubble_params p;
  strata_bubble_params_init(&p);
  int64_t n, found;
  strata_bubble *b = extract(prob, &p, 16, &n, &found);
  CHECK_EQ(n, 3);
  CHECK_EQ(found, 3);
  for (int k = 0; k < 3 && n == 3; k++) {
    /* Output order is the scan order (z, y, x) of each bubble's first cell:
     * lowest z first (15.1 - 4, 33.9 - 6.5, 36.8 - 5.2). */
    const struct sphere *want = &s[k];
    double d = sqrt(pow(b[k].center[0] - want->c[0], 2) + pow(b[k].center[1] - want->c[1], 2) +
                    pow(b[k].center[2] - want->c[2], 2));
    fprintf(stderr, "bubble %d: centre error %.3f cells, radius %.3f (planted %.2f)\n", k, d,
            b[k].radius, want->r);
    CHECK(d <= 1.0);
    CHECK(fabs(b[k].radius - want->r) <= 0.15 * want->r);
    CHECK(fabs(b[k].peak - 0.9) < 1e-6);
    CHECK(fabs(b[k].mass - 0.9 * (double)b[k].cells) < 1e-3 * (double)b[k].cells);
  }
  free(b);

  /* Domain coordinates: origin + index * cell size. */
  p.origin[0] = 100, p.origin[1] = -8, p.origin[2] = 0.5;
  p.cell_size = 0.25;
  b = extract(prob, &p, 16, &n, &found);
  CHECK(n == 3 && fabs(b[0].center[0] - (100 + 0.25 * 12.3)) <= 0.25 &&
        fabs(b[0].center[1] - (-8 + 0.25 * 20.7)) <= 0.25 && fabs(b[0].radius - 1.0) <= 0.15);
  free(b);

  /* Capacity 1: one stored, three found. Min size: the small one goes. */
  strata_bubble_params_init(&p);
  b = extract(prob, &p, 1, &n, &found);
  CHECK(n == 1 && found == 3);
  free(b);
  p.min_cells = 400; /* sphere of radius 4 has ~268 cells, 5.2 ~589, 6.5 ~1150 */
  b = extract(prob, &p, 16, &n, &found);
  CHECK_EQ(n, 2);
  free(b);
  strata_array_destroy(prob);
}

static void check_connectivity(void)
{
  int64_t n = 8, shape[3] = {n, n, n};
  strata_array *prob, *table;
  strata_array_create(3, shape, STRATA_FLOAT32, &prob);
  float *p;
  strata_array_acquire(prob, STRATA_WRITE, (void **)&p);
  for (int64_t i = 0; i < n * n * n; i++)
    p[i] = 0;
  p[(1 * n + 1) * n + 1] = 1; /* two cells touching at a corner only: one bubble */
  p[(2 * n + 2) * n + 2] = 1;
  p[(6 * n + 6) * n + 1] = 1;    /* an isolated cell */
  p[(0 * n + 7) * n + 7] = 0.5f; /* at the threshold: not above it */
  strata_array_release(prob);
  strata_bubble_params bp;
  strata_bubble_params_init(&bp);
  int64_t tshape[2] = {5, STRATA_BUBBLE_TABLE_COLUMNS}, count, found;
  strata_array_create(2, tshape, STRATA_FLOAT64, &table);
  CHECK_EQ(strata_bubbles_submit(prob, &bp, table), 0);
  strata_bubble *b;
  CHECK_EQ(strata_bubbles_read(table, &b, &count, &found), 0);
  CHECK_EQ(count, 2);
  CHECK(count == 2 && b[0].cells == 2 && b[1].cells == 1);
  CHECK(count == 2 && fabs(b[0].center[0] - 2.0) < 1e-9 && fabs(b[1].center[2] - 6.5) < 1e-9);
  free(b);
  /* Errors. */
  int64_t bad_shape[2] = {5, 3};
  strata_array *bad;
  strata_array_create(2, bad_shape, STRATA_FLOAT64, &bad);
  CHECK_EQ(strata_bubbles_submit(prob, &bp, bad), STRATA_EINVAL);
  CHECK_EQ(strata_bubbles_submit(table, &bp, table), STRATA_ETYPE);
  bp.cell_size = 0;
  CHECK_EQ(strata_bubbles_submit(prob, &bp, table), STRATA_EINVAL);
  CHECK_EQ(strata_bubbles_submit(prob, NULL, table), STRATA_EINVAL);
  strata_array_destroy(bad);
  strata_array_destroy(table);
  strata_array_destroy(prob);
}

/* Value channels: each bubble gets sum(p v) / sum(p) of each, computed
 * here by brute force over its cells; a table of the wrong width is
 * refused. */
static void check_values(void)
{
  const int64_t n = 16, cells = n * n * n, shape[4] = {3, n, n, n};
  strata_array *map, *table;
  CHECK_EQ(strata_array_create(4, shape, STRATA_FLOAT32, &map), 0);
  float *p;
  strata_array_acquire(map, STRATA_WRITE, (void **)&p);
  double want[2][2] = {{0}}, mass[2] = {0};
  for (int64_t i = 0; i < cells; i++) {
    int64_t x = i % n, y = i / n % n, z = i / (n * n);
    int blob = x >= 2 && x < 6 && y >= 3 && y < 7 && z >= 1 && z < 4 ? 0
               : x >= 9 && x < 14 && y >= 8 && y < 12 && z >= 10     ? 1
                                                                     : -1;
    p[i] = blob < 0 ? 0.1f : 0.6f + 0.03f * (float)((x + 2 * y + 3 * z) % 11);
    p[cells + i] = (float)(x * y) - 0.5f * (float)z; /* a regression channel */
    p[2 * cells + i] = (float)((i * 7919) % 101) / 100.0f;
    if (blob >= 0) {
      mass[blob] += p[i];
      want[blob][0] += (double)p[i] * p[cells + i];
      want[blob][1] += (double)p[i] * p[2 * cells + i];
    }
  }
  strata_array_release(map);
  strata_bubble_params bp;
  strata_bubble_params_init(&bp);
  int64_t tshape[2] = {5, STRATA_BUBBLE_TABLE_COLUMNS + 2}, count;
  CHECK_EQ(strata_array_create(2, tshape, STRATA_FLOAT64, &table), 0);
  CHECK_EQ(strata_bubbles_submit(map, &bp, table), 0);
  strata_bubble *b = NULL;
  CHECK_EQ(strata_bubbles_read(table, &b, &count, NULL), 0);
  CHECK_EQ(count, 2);
  for (int k = 0; k < 2 && count == 2; k++) {
    CHECK_EQ(b[k].nvalues, 2);
    for (int v = 0; v < 2; v++)
      CHECK(fabs(b[k].values[v] - want[k][v] / mass[k]) <= 1e-9 * (1 + fabs(want[k][v])));
  }
  free(b);
  strata_array_destroy(table);
  tshape[1] = STRATA_BUBBLE_TABLE_COLUMNS; /* no room for the values */
  CHECK_EQ(strata_array_create(2, tshape, STRATA_FLOAT64, &table), 0);
  CHECK_EQ(strata_bubbles_submit(map, &bp, table), STRATA_EINVAL);
  strata_array_destroy(table);
  strata_array_destroy(map);
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  check_planted();
  check_connectivity();
  check_values();
  strata_finalize();
  return check_status();
}
