/** @file zspace.h
 *  @brief Integer index spaces (ZRanges), integer affine maps and
 *  ZProjections: the maps from an operation's index space to the regions of
 *  its tensors, used to shard operations into blocks. */
#ifndef STRATA_ZSPACE_H
#define STRATA_ZSPACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
/* The library exports what its public headers declare, and nothing else. */
#pragma GCC visibility push(default)

/** Maximum number of dimensions of a range or map. */
#define STRATA_ZMAX_DIMS 8

/** A half-open box [start, end) of any dimension (0 to STRATA_ZMAX_DIMS);
 *  start <= end component-wise. Build it with strata_zrange_init(). */
typedef struct strata_zrange {
  int ndim;                        /**< number of dimensions */
  int64_t start[STRATA_ZMAX_DIMS]; /**< inclusive lower corner */
  int64_t end[STRATA_ZMAX_DIMS];   /**< exclusive upper corner */
} strata_zrange;

/** @brief Make [start, end). @return 0, or STRATA_EINVAL when ndim is out of
 *  range, a pointer is NULL (with ndim > 0) or start > end somewhere. */
int strata_zrange_init(strata_zrange *r, int ndim, const int64_t *start, const int64_t *end);

/** @brief Number of points (1 for a 0-dimensional range), STRATA_EINVAL, or
 *  STRATA_ERANGE when the count does not fit in int64_t. */
int64_t strata_zrange_size(const strata_zrange *r);

/** @brief 1 when the range holds no point, 0 otherwise (or STRATA_EINVAL). */
int strata_zrange_is_empty(const strata_zrange *r);

/** @brief 1 when @p point lies in @p r, else 0 (or STRATA_EINVAL). */
int strata_zrange_contains_point(const strata_zrange *r, const int64_t *point);

/** @brief 1 when @p inner lies in @p r, else 0 (or STRATA_EINVAL for
 *  different dimensions). An empty range is contained when its corners lie
 *  in the closed box [start, end], so also at the end boundary. */
int strata_zrange_contains(const strata_zrange *r, const strata_zrange *inner);

/** @brief The last point, end - 1. @return 0, or STRATA_EINVAL for an empty
 *  range (it has no last point). */
int strata_zrange_inclusive_end(const strata_zrange *r, int64_t *point);

/** How two ranges meet. */
typedef enum strata_zrelation {
  STRATA_ZDISJOINT = 0, /**< separated by a gap in some dimension */
  STRATA_ZTOUCHING = 1, /**< they share a face but no point: the intersection is empty */
  STRATA_ZOVERLAP = 2   /**< they share at least one point */
} strata_zrelation;

/** @brief Intersection of @p a and @p b. @p out receives it when they touch
 *  or overlap (an empty range when they only touch) and @p relation how they
 *  meet. @return 0, or STRATA_EINVAL for different dimensions. */
int strata_zrange_intersect(const strata_zrange *a, const strata_zrange *b, strata_zrange *out,
                            strata_zrelation *relation);

/** @brief Smallest range holding @p a and @p b. @return 0 or STRATA_EINVAL. */
int strata_zrange_bounds(const strata_zrange *a, const strata_zrange *b, strata_zrange *out);

/** @brief Split along @p dim (negative counts from the last) into chunks of
 *  @p chunk points: ceil(d / chunk) ranges, the last one shorter. At most
 *  @p capacity are written; *@p count receives the number of chunks.
 *  @return 0; STRATA_EINVAL (bad dim, chunk < 1); STRATA_ERANGE when
 *  capacity is too small. An empty dimension gives 0 chunks. */
int strata_zrange_split(const strata_zrange *r, int dim, int64_t chunk, strata_zrange *out,
                        int capacity, int *count);

/** @brief Split along @p dim into @p n chunks of the given positive sizes,
 *  which must add up to the extent. @return 0 or STRATA_EINVAL. */
int strata_zrange_split_sizes(const strata_zrange *r, int dim, const int64_t *sizes, int n,
                              strata_zrange *out);

/** @brief Cartesian product: the dimensions of @p a, then those of @p b. */
int strata_zrange_product(const strata_zrange *a, const strata_zrange *b, strata_zrange *out);

/** @brief out dimension i is @p r's dimension perm[i] (a permutation;
 *  negative entries count from the last). */
int strata_zrange_permute(const strata_zrange *r, const int *perm, strata_zrange *out);

/** @brief Shift by @p offset (ndim entries). */
int strata_zrange_translate(const strata_zrange *r, const int64_t *offset, strata_zrange *out);

/** @brief Parse "zr[2:4, 3:5]" (spaces optional; "zr[]" is 0-dimensional).
 *  @return 0, or STRATA_EINVAL for malformed text or start > end. */
int strata_zrange_parse(const char *text, strata_zrange *r);

/** @brief Format as "zr[2:4, 3:5]" into @p buf (NUL-terminated).
 *  @return the length it needs (like snprintf), or STRATA_EINVAL. */
int strata_zrange_format(const strata_zrange *r, char *buf, size_t size);

/** An integer affine map y = M x + offset from in_dims to out_dims. */
typedef struct strata_zaffine {
  int in_dims, out_dims;                              /**< dimensions */
  int64_t matrix[STRATA_ZMAX_DIMS][STRATA_ZMAX_DIMS]; /**< M[out][in] */
  int64_t offset[STRATA_ZMAX_DIMS];                   /**< offset[out] */
} strata_zaffine;

/** @brief Make a map from a row-major out_dims x in_dims @p matrix (NULL:
 *  zero) and @p offset (NULL: zero). @return 0 or STRATA_EINVAL. */
int strata_zaffine_init(strata_zaffine *f, int in_dims, int out_dims, const int64_t *matrix,
                        const int64_t *offset);

/** @brief y = M x + offset. */
int strata_zaffine_apply(const strata_zaffine *f, const int64_t *x, int64_t *y);

/** @brief Apply to a point with @p ndim >= in_dims coordinates: the leading
 *  ndim - in_dims pass through unchanged, the rest are mapped; @p y has
 *  ndim - in_dims + out_dims entries. */
int strata_zaffine_broadcast_apply(const strata_zaffine *f, const int64_t *x, int ndim, int64_t *y);

/** @brief Add @p delta (out_dims entries) to the offset. */
int strata_zaffine_translate(strata_zaffine *f, const int64_t *delta);

/** @brief Reorder the inputs: new input i is old input perm[i]. */
int strata_zaffine_permute_input(strata_zaffine *f, const int *perm);

/** @brief Reorder the outputs: new output i is old output perm[i]. */
int strata_zaffine_permute_output(strata_zaffine *f, const int *perm);

/** A ZProjection: an affine map to the start of a region of fixed shape. */
typedef struct strata_zproj {
  strata_zaffine map;              /**< index point -> region start */
  int64_t shape[STRATA_ZMAX_DIMS]; /**< region shape (map.out_dims entries, >= 0) */
} strata_zproj;

/** @brief Make a projection. @return 0, or STRATA_EINVAL when the shape has
 *  a negative extent (its rank is the map's output rank by construction). */
int strata_zproj_init(strata_zproj *p, const strata_zaffine *map, const int64_t *shape);

/** @brief The region of one index point: [M x + offset, + shape). */
int strata_zproj_apply_point(const strata_zproj *p, const int64_t *x, strata_zrange *region);

/** @brief The exact bounding region of the regions of every point of
 *  @p range, by interval arithmetic per output row (right for negative and
 *  mixed-sign coefficients); an empty @p range gives a zero-shape region at
 *  the offset. */
int strata_zproj_apply_range(const strata_zproj *p, const strata_zrange *range,
                             strata_zrange *region);

/** @brief JSON form {"projection": [[...]], "offset": [...], "shape": [...]}
 *  written into @p buf. @return the length needed, or STRATA_EINVAL. */
int strata_zproj_to_json(const strata_zproj *p, char *buf, size_t size);

/** @brief Read the JSON form. @return 0, STRATA_EIO for malformed JSON,
 *  STRATA_EINVAL for inconsistent sizes or values. */
int strata_zproj_from_json(const char *json, strata_zproj *p);

/** What to do with the part of a region that leaves the tensor [0, shape). */
typedef enum strata_oob_policy {
  STRATA_OOB_ERROR = 0, /**< the region must lie inside the tensor (else STRATA_ERANGE) */
  STRATA_OOB_CLIP,      /**< keep the part inside; the region shrinks to it */
  STRATA_OOB_WRAP,      /**< toroidal: coordinates are taken modulo the extent */
  STRATA_OOB_NEGATIVE,  /**< numpy: -d <= i < 0 means d + i; beyond is STRATA_ERANGE */
  STRATA_OOB_PAD        /**< cells outside read as a fill value */
} strata_oob_policy;

/** A piece of a resolved region: the tensor cells @p source land at
 *  @p dest (relative to the region's start) in the region's buffer. */
typedef struct strata_zpiece {
  strata_zrange source;           /**< cells of the tensor */
  int64_t dest[STRATA_ZMAX_DIMS]; /**< where they go, relative to the region start */
} strata_zpiece;

/** @brief Resolve @p region against a tensor of @p shape under @p policy:
 *  the tensor pieces that fill it (at most @p capacity written, *@p count
 *  set in any case; wrap and negative split a region at the boundaries).
 *  With STRATA_OOB_CLIP, *@p effective (may be NULL) receives the clipped
 *  region; otherwise the region itself. Cells of the region no piece covers
 *  are padding (STRATA_OOB_PAD) or dropped (CLIP).
 *  @return 0; STRATA_ERANGE (ERROR or NEGATIVE policy violated, or
 *          capacity too small); STRATA_EINVAL. */
int strata_zregion_resolve(const strata_zrange *region, const int64_t *shape,
                           strata_oob_policy policy, strata_zpiece *pieces, int capacity,
                           int *count, strata_zrange *effective);

/** @brief Copy @p region of a dense row-major tensor (@p shape, elements of
 *  @p elem_size bytes) into @p out (the effective region's shape,
 *  row-major) under @p policy; padding cells get the bytes of @p fill
 *  (may be NULL for zero). @return as strata_zregion_resolve(). */
int strata_zregion_gather(const void *tensor, const int64_t *shape, size_t elem_size,
                          const strata_zrange *region, strata_oob_policy policy, const void *fill,
                          void *out);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
