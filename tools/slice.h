/* PNG pictures of an inference run. */
#ifndef STRATA_TOOLS_SLICE_H
#define STRATA_TOOLS_SLICE_H

#include <strata/strata.h>

/* A slice of the hierarchy at height z, written by rank 0 to `path`: the
 * log10 of field `field` at the finest resolution, leaf outlines,
 * inference-array squares and bubble circles (collective). */
int infer_slice_png(strata_amr *amr, int field, strata_infer *inf, double z, const char *path);

#endif
