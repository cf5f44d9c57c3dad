/* Slice pictures with cairo: every rank paints its leaves' cells into a
 * float image at the finest resolution, the images meet on rank 0 by a
 * max-reduction, and rank 0 draws the colour map and the outlines. */
#include <cairo.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "slice.h"

/* A perceptually ordered map from dark blue through red to pale yellow. */
static void colour(double t, uint8_t rgb[3])
{
  static const double stops[5][3] = {{0.05, 0.03, 0.20},
                                     {0.35, 0.07, 0.45},
                                     {0.75, 0.20, 0.30},
                                     {0.97, 0.55, 0.10},
                                     {0.99, 0.95, 0.65}};
  t = fmin(fmax(t, 0), 1) * 4;
  int i = t >= 4 ? 3 : (int)t;
  double f = t - i;
  for (int c = 0; c < 3; c++)
    rgb[c] = (uint8_t)lround(255 * ((1 - f) * stops[i][c] + f * stops[i + 1][c]));
}

/* This rank's leaves cut by the plane, as log10 values in img (P x P). */
static int paint_leaves(strata_amr *amr, int field, double z, int64_t P, float *img)
{
  const strata_amr_params *p = strata_amr_get_params(amr);
  const int64_t m = p->block_cells;
  int64_t n = 0;
  strata_amr_local_leaves(amr, NULL, 0, &n);
  strata_amr_block *leaves = malloc((size_t)(n + 1) * sizeof *leaves);
  double *v = malloc((size_t)(m * m * m) * sizeof *v);
  int ret = leaves && v ? strata_amr_local_leaves(amr, leaves, n, &n) : STRATA_ENOMEM;
  for (int64_t i = 0; i < n && !ret; i++) {
    strata_amr_block_info info;
    strata_amr_block_query(amr, &leaves[i], &info);
    if (z < info.lower[2] || z >= info.upper[2])
      continue;
    ret = strata_amr_read(amr, &leaves[i], field, 0, v);
    const double h = (info.upper[0] - info.lower[0]) / (double)m;
    const int64_t k = (int64_t)((z - info.lower[2]) / h), span = (int64_t)llround(h * (double)P);
    const int64_t x0 = llround(info.lower[0] * (double)P), y0 = llround(info.lower[1] * (double)P);
    for (int64_t j = 0; j < m; j++)
      for (int64_t c = 0; c < m; c++) {
        const float lv = (float)log10(fmax(v[(k * m + j) * m + c], 1e-30));
        for (int64_t y = y0 + j * span; y < y0 + (j + 1) * span; y++)
          for (int64_t x = x0 + c * span; x < x0 + (c + 1) * span; x++)
            img[y * P + x] = lv;
      }
  }
  free(leaves);
  free(v);
  return ret;
}

/* Rank 0: colour map, outlines of the leaves (`cut`, those the plane cuts)
 * and of the arrays, bubble circles. */
static int draw(strata_amr *amr, strata_infer *inf, const float *img, int64_t P, double z,
                const strata_amr_block *cut, int64_t ncut, const int64_t (*idx)[3], int64_t ne,
                const strata_bubble *bubbles, int64_t nb, const char *path)
{
  float lo = INFINITY, hi = -INFINITY;
  for (int64_t i = 0; i < P * P; i++)
    if (isfinite(img[i])) {
      lo = fminf(lo, img[i]);
      hi = fmaxf(hi, img[i]);
    }
  cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)P, (int)P);
  if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS)
    return STRATA_ENOMEM;
  uint8_t *px = cairo_image_surface_get_data(s);
  const int stride = cairo_image_surface_get_stride(s);
  cairo_surface_flush(s);
  for (int64_t y = 0; y < P; y++)
    for (int64_t x = 0; x < P; x++) {
      uint8_t rgb[3];
      colour(hi > lo ? (img[y * P + x] - lo) / (hi - lo) : 0, rgb);
      uint32_t *dst = (uint32_t *)(px + (P - 1 - y) * stride) + x; /* y up */
      *dst = (uint32_t)rgb[0] << 16 | (uint32_t)rgb[1] << 8 | rgb[2];
    }
  cairo_surface_mark_dirty(s);
  cairo_t *cr = cairo_create(s);
  cairo_translate(cr, 0, (double)P); /* domain units, y up */
  cairo_scale(cr, (double)P, -(double)P);
  double unit = 1.0 / (double)P;
  /* Leaf outlines. */
  cairo_set_source_rgba(cr, 1, 1, 1, 0.25);
  cairo_set_line_width(cr, unit);
  for (int64_t i = 0; i < ncut; i++) {
    strata_amr_block_info info;
    strata_amr_block_query(amr, &cut[i], &info);
    if (z >= info.lower[2] && z < info.upper[2])
      cairo_rectangle(cr, info.lower[0], info.lower[1], info.upper[0] - info.lower[0],
                      info.upper[1] - info.lower[1]);
  }
  cairo_stroke(cr);
  /* Inference arrays cut by the plane. */
  const strata_amr_params *p = strata_amr_get_params(amr);
  const double edge =
      1.0 / (double)((int64_t)p->root_blocks << strata_infer_get_params(inf)->level_array);
  cairo_set_source_rgba(cr, 0.2, 0.9, 1.0, 0.9);
  cairo_set_line_width(cr, 2 * unit);
  for (int64_t e = 0; idx && e < ne; e++)
    if (z >= (double)idx[e][2] * edge && z < (double)(idx[e][2] + 1) * edge)
      cairo_rectangle(cr, (double)idx[e][0] * edge, (double)idx[e][1] * edge, edge, edge);
  cairo_stroke(cr);
  /* Bubbles cut by the plane. */
  cairo_set_source_rgba(cr, 1.0, 1.0, 0.2, 0.95);
  for (int64_t b = 0; b < nb; b++) {
    double dz = z - bubbles[b].center[2], r2 = bubbles[b].radius * bubbles[b].radius - dz * dz;
    if (r2 <= 0)
      continue;
    cairo_new_sub_path(cr);
    cairo_arc(cr, bubbles[b].center[0], bubbles[b].center[1], fmax(sqrt(r2), 2 * unit), 0,
              2 * 3.14159265358979323846);
  }
  cairo_stroke(cr);
  cairo_destroy(cr);
  strata_output *out;
  int ret = strata_output_begin(path, &out);
  if (!ret) {
    errno = 0;
    if (cairo_surface_write_to_png(s, strata_output_temp_path(out)) == CAIRO_STATUS_SUCCESS)
      ret = strata_output_commit(out);
    else
      ret = strata_output_abandon(out, errno);
  }
  cairo_surface_destroy(s);
  return ret;
}

int infer_slice_png(strata_amr *amr, int field, strata_infer *inf, double z, const char *path)
{
  const strata_amr_params *p = strata_amr_get_params(amr);
  const int64_t P = infer_slice_pixels(p->root_blocks, p->block_cells, p->max_level);
  if (P > INFER_SLICE_MAX_PIXELS || z < 0 || z >= 1)
    return STRATA_EINVAL;
  float *img = malloc((size_t)(P * P) * sizeof *img);
  int local = img ? 0 : STRATA_ENOMEM;
  for (int64_t i = 0; img && i < P * P; i++)
    img[i] = -INFINITY;
  if (!local)
    local = paint_leaves(amr, field, z, P, img);
  int any = local;
  MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MIN, strata_comm());
  if (any) {
    free(img);
    return any;
  }
  strata_bubble *bubbles = NULL;
  int64_t nb = 0;
  int ret = strata_infer_bubbles(inf, &bubbles, NULL, &nb);
  if (!ret && strata_rank() == 0)
    MPI_Reduce(MPI_IN_PLACE, img, (int)(P * P), MPI_FLOAT, MPI_MAX, 0, strata_comm());
  else if (!ret)
    MPI_Reduce(img, NULL, (int)(P * P), MPI_FLOAT, MPI_MAX, 0, strata_comm());
  /* The level array, gathered (collective) for rank 0 to draw. */
  int64_t ne = 0, (*idx)[3] = NULL;
  if (!ret)
    ret = strata_infer_elements(inf, NULL, NULL, 0, &ne);
  if (!ret) {
    idx = malloc((size_t)(ne + 1) * sizeof *idx);
    ret = strata_infer_elements(inf, idx, NULL, idx ? ne : 0, &ne);
  }
  /* The leaves the plane cuts, gathered (collective) for their outlines:
   * those overlapping a slab one finest cell thick from z. */
  const double lo[3] = {0, 0, z}, hi[3] = {1, 1, z + 0.5 / (double)P};
  int64_t ncut = 0;
  strata_amr_block *cut = NULL;
  if (!ret)
    ret = strata_amr_intersect(amr, lo, hi, NULL, 0, &ncut);
  if (!ret) {
    cut = malloc((size_t)(ncut + 1) * sizeof *cut);
    ret = strata_amr_intersect(amr, lo, hi, cut, cut ? ncut : 0, &ncut);
  }
  if (!ret && strata_rank() == 0)
    local = idx && cut ? draw(amr, inf, img, P, z, cut, ncut, (const int64_t(*)[3])idx, ne, bubbles,
                              nb, path)
                       : STRATA_ENOMEM;
  free(cut);
  free(idx);
  free(bubbles);
  free(img);
  MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MIN, strata_comm());
  return ret ? ret : any;
}
