/* PNG pictures of an inference run. */
#ifndef STRATA_TOOLS_SLICE_H
#define STRATA_TOOLS_SLICE_H

#include <strata/strata.h>

/* The widest picture drawn, in pixels: one pixel per finest cell. */
enum { INFER_SLICE_MAX_PIXELS = 4096 };

/* Pixels per side of the slice of a hierarchy: its finest cells per axis. */
static inline int64_t infer_slice_pixels(int root_blocks, int block_cells, int max_level)
{
  return max_level > 30 ? INT64_MAX : ((int64_t)root_blocks * block_cells) << max_level;
}

/* A slice of the hierarchy at height z, written by rank 0 to `path`: the
 * log10 of field `field` at the finest resolution, leaf outlines,
 * inference-array squares and bubble circles (collective). Written
 * atomically (strata_output_begin). */
int infer_slice_png(strata_amr *amr, int field, strata_infer *inf, double z, const char *path);

#endif
