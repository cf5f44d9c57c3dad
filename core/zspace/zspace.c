/* Integer ranges, affine maps and ZProjections. Pure integer code: usable
 * without strata_init(). */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata/error.h>
#include <strata/zspace.h>

#include "internal/runtime.h"

static int valid(const strata_zrange *r)
{
  return r && r->ndim >= 0 && r->ndim <= STRATA_ZMAX_DIMS;
}

/* Dimension index with negative values counting from the last, or -1. */
static int dim_index(int ndim, int dim)
{
  if (dim < 0)
    dim += ndim;
  return dim >= 0 && dim < ndim ? dim : -1;
}

int strata_zrange_init(strata_zrange *r, int ndim, const int64_t *start, const int64_t *end)
{
  strata__clear_error();
  if (!r || ndim < 0 || ndim > STRATA_ZMAX_DIMS || (ndim > 0 && (!start || !end)))
    return STRATA_EINVAL;
  for (int d = 0; d < ndim; d++)
    if (start[d] > end[d])
      return STRATA_EINVAL;
  memset(r, 0, sizeof *r);
  r->ndim = ndim;
  for (int d = 0; d < ndim; d++) {
    r->start[d] = start[d];
    r->end[d] = end[d];
  }
  return 0;
}

int64_t strata_zrange_size(const strata_zrange *r)
{
  if (!valid(r))
    return STRATA_EINVAL;
  int64_t size = 1, extent;
  int overflow = 0;
  for (int d = 0; d < r->ndim; d++) {
    if (r->end[d] == r->start[d])
      return 0; /* empty, however large the other extents */
    overflow |= __builtin_sub_overflow(r->end[d], r->start[d], &extent) ||
                __builtin_mul_overflow(size, extent, &size);
  }
  return overflow ? STRATA_ERANGE : size;
}

int strata_zrange_is_empty(const strata_zrange *r)
{
  strata__clear_error();
  int64_t size = strata_zrange_size(r);
  return size == STRATA_ERANGE ? 0 : size < 0 ? (int)size : size == 0;
}

int strata_zrange_contains_point(const strata_zrange *r, const int64_t *point)
{
  strata__clear_error();
  if (!valid(r) || (r->ndim > 0 && !point))
    return STRATA_EINVAL;
  for (int d = 0; d < r->ndim; d++)
    if (point[d] < r->start[d] || point[d] >= r->end[d])
      return 0;
  return 1;
}

int strata_zrange_contains(const strata_zrange *r, const strata_zrange *inner)
{
  strata__clear_error();
  if (!valid(r) || !valid(inner) || r->ndim != inner->ndim)
    return STRATA_EINVAL;
  for (int d = 0; d < r->ndim; d++)
    if (inner->start[d] < r->start[d] || inner->end[d] > r->end[d])
      return 0;
  return 1;
}

int strata_zrange_inclusive_end(const strata_zrange *r, int64_t *point)
{
  strata__clear_error();
  if (!valid(r) || (r->ndim > 0 && !point) || strata_zrange_is_empty(r))
    return STRATA_EINVAL;
  for (int d = 0; d < r->ndim; d++)
    point[d] = r->end[d] - 1;
  return 0;
}

int strata_zrange_intersect(const strata_zrange *a, const strata_zrange *b, strata_zrange *out,
                            strata_zrelation *relation)
{
  strata__clear_error();
  if (!valid(a) || !valid(b) || a->ndim != b->ndim || !out || !relation)
    return STRATA_EINVAL;
  strata_zrange x = {.ndim = a->ndim};
  int touching = 0;
  for (int d = 0; d < a->ndim; d++) {
    x.start[d] = a->start[d] > b->start[d] ? a->start[d] : b->start[d];
    x.end[d] = a->end[d] < b->end[d] ? a->end[d] : b->end[d];
    if (x.start[d] > x.end[d]) {
      *relation = STRATA_ZDISJOINT;
      return 0;
    }
    touching |= x.start[d] == x.end[d];
  }
  *out = x;
  *relation = touching ? STRATA_ZTOUCHING : STRATA_ZOVERLAP;
  return 0;
}

int strata_zrange_bounds(const strata_zrange *a, const strata_zrange *b, strata_zrange *out)
{
  strata__clear_error();
  if (!valid(a) || !valid(b) || a->ndim != b->ndim || !out)
    return STRATA_EINVAL;
  strata_zrange x = {.ndim = a->ndim};
  for (int d = 0; d < a->ndim; d++) {
    x.start[d] = a->start[d] < b->start[d] ? a->start[d] : b->start[d];
    x.end[d] = a->end[d] > b->end[d] ? a->end[d] : b->end[d];
  }
  *out = x;
  return 0;
}

int strata_zrange_split(const strata_zrange *r, int dim, int64_t chunk, strata_zrange *out,
                        int capacity, int *count)
{
  strata__clear_error();
  int d = valid(r) ? dim_index(r->ndim, dim) : -1;
  if (d < 0 || chunk < 1 || !count || capacity < 0 || (capacity > 0 && !out))
    return STRATA_EINVAL;
  int64_t extent = r->end[d] - r->start[d], n = (extent + chunk - 1) / chunk;
  if (n > INT32_MAX)
    return STRATA_ERANGE;
  *count = (int)n;
  if (n > capacity)
    return STRATA_ERANGE;
  for (int64_t i = 0; i < n; i++) {
    out[i] = *r;
    out[i].start[d] = r->start[d] + i * chunk;
    out[i].end[d] = out[i].start[d] + chunk < r->end[d] ? out[i].start[d] + chunk : r->end[d];
  }
  return 0;
}

int strata_zrange_split_sizes(const strata_zrange *r, int dim, const int64_t *sizes, int n,
                              strata_zrange *out)
{
  strata__clear_error();
  int d = valid(r) ? dim_index(r->ndim, dim) : -1;
  if (d < 0 || n < 0 || (n > 0 && (!sizes || !out)))
    return STRATA_EINVAL;
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    if (sizes[i] < 1)
      return STRATA_EINVAL;
    total += sizes[i];
  }
  if (total != r->end[d] - r->start[d])
    return STRATA_EINVAL;
  int64_t at = r->start[d];
  for (int i = 0; i < n; i++) {
    out[i] = *r;
    out[i].start[d] = at;
    out[i].end[d] = at += sizes[i];
  }
  return 0;
}

int strata_zrange_product(const strata_zrange *a, const strata_zrange *b, strata_zrange *out)
{
  strata__clear_error();
  if (!valid(a) || !valid(b) || !out || a->ndim + b->ndim > STRATA_ZMAX_DIMS)
    return STRATA_EINVAL;
  strata_zrange x = *a;
  for (int d = 0; d < b->ndim; d++) {
    x.start[a->ndim + d] = b->start[d];
    x.end[a->ndim + d] = b->end[d];
  }
  x.ndim = a->ndim + b->ndim;
  *out = x;
  return 0;
}

/* Check that perm is a permutation of ndim dimensions (negative allowed)
 * and normalise it into `norm`. */
static int normalise_perm(const int *perm, int ndim, int *norm)
{
  int seen[STRATA_ZMAX_DIMS] = {0};
  if (ndim > 0 && !perm)
    return STRATA_EINVAL;
  for (int i = 0; i < ndim; i++) {
    norm[i] = dim_index(ndim, perm[i]);
    if (norm[i] < 0 || seen[norm[i]]++)
      return STRATA_EINVAL;
  }
  return 0;
}

int strata_zrange_permute(const strata_zrange *r, const int *perm, strata_zrange *out)
{
  strata__clear_error();
  int p[STRATA_ZMAX_DIMS];
  if (!valid(r) || !out || normalise_perm(perm, r->ndim, p))
    return STRATA_EINVAL;
  strata_zrange x = {.ndim = r->ndim};
  for (int i = 0; i < r->ndim; i++) {
    x.start[i] = r->start[p[i]];
    x.end[i] = r->end[p[i]];
  }
  *out = x;
  return 0;
}

int strata_zrange_translate(const strata_zrange *r, const int64_t *offset, strata_zrange *out)
{
  strata__clear_error();
  if (!valid(r) || !out || (r->ndim > 0 && !offset))
    return STRATA_EINVAL;
  strata_zrange x = *r;
  for (int d = 0; d < r->ndim; d++) {
    x.start[d] += offset[d];
    x.end[d] += offset[d];
  }
  *out = x;
  return 0;
}

static const char *skip_spaces(const char *s)
{
  while (isspace((unsigned char)*s))
    s++;
  return s;
}

/* A signed decimal integer that fits in int64_t; NULL when there is none. */
static const char *parse_int(const char *s, int64_t *v)
{
  char *end;
  s = skip_spaces(s);
  if (!isdigit((unsigned char)*s) && !((*s == '-' || *s == '+') && isdigit((unsigned char)s[1])))
    return NULL;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (errno == ERANGE)
    return NULL;
  *v = x;
  return skip_spaces(end);
}

int strata_zrange_parse(const char *text, strata_zrange *r)
{
  strata__clear_error();
  if (!text || !r)
    return STRATA_EINVAL;
  const char *s = skip_spaces(text);
  if (strncmp(s, "zr[", 3) != 0)
    return STRATA_EINVAL;
  s = skip_spaces(s + 3);
  int64_t start[STRATA_ZMAX_DIMS], end[STRATA_ZMAX_DIMS];
  int ndim = 0;
  if (*s != ']')
    for (;;) {
      if (ndim == STRATA_ZMAX_DIMS || !(s = parse_int(s, &start[ndim])) || *s++ != ':' ||
          !(s = parse_int(s, &end[ndim])))
        return STRATA_EINVAL;
      ndim++;
      if (*s == ']')
        break;
      if (*s++ != ',')
        return STRATA_EINVAL;
    }
  if (*skip_spaces(s + 1) != '\0')
    return STRATA_EINVAL;
  return strata_zrange_init(r, ndim, start, end);
}

int strata_zrange_format(const strata_zrange *r, char *buf, size_t size)
{
  strata__clear_error();
  if (!valid(r) || (size > 0 && !buf))
    return STRATA_EINVAL;
  char text[STRATA_ZMAX_DIMS * 44 + 8];
  int len = snprintf(text, sizeof text, "zr[");
  for (int d = 0; d < r->ndim; d++)
    len += snprintf(text + len, sizeof text - (size_t)len, "%s%lld:%lld", d ? ", " : "",
                    (long long)r->start[d], (long long)r->end[d]);
  len += snprintf(text + len, sizeof text - (size_t)len, "]");
  if (size > 0)
    snprintf(buf, size, "%s", text);
  return len;
}

int strata_zaffine_init(strata_zaffine *f, int in_dims, int out_dims, const int64_t *matrix,
                        const int64_t *offset)
{
  strata__clear_error();
  if (!f || in_dims < 0 || out_dims < 0 || in_dims > STRATA_ZMAX_DIMS ||
      out_dims > STRATA_ZMAX_DIMS)
    return STRATA_EINVAL;
  memset(f, 0, sizeof *f);
  f->in_dims = in_dims;
  f->out_dims = out_dims;
  for (int i = 0; i < out_dims; i++) {
    for (int j = 0; matrix && j < in_dims; j++)
      f->matrix[i][j] = matrix[i * in_dims + j];
    f->offset[i] = offset ? offset[i] : 0;
  }
  return 0;
}

static int valid_map(const strata_zaffine *f)
{
  return f && f->in_dims >= 0 && f->out_dims >= 0 && f->in_dims <= STRATA_ZMAX_DIMS &&
         f->out_dims <= STRATA_ZMAX_DIMS;
}

int strata_zaffine_apply(const strata_zaffine *f, const int64_t *x, int64_t *y)
{
  strata__clear_error();
  if (!valid_map(f) || (f->in_dims > 0 && !x) || (f->out_dims > 0 && !y))
    return STRATA_EINVAL;
  int64_t r[STRATA_ZMAX_DIMS];
  for (int i = 0; i < f->out_dims; i++) {
    r[i] = f->offset[i];
    for (int j = 0; j < f->in_dims; j++)
      r[i] += f->matrix[i][j] * x[j];
  }
  memcpy(y, r, (size_t)f->out_dims * sizeof *y);
  return 0;
}

int strata_zaffine_broadcast_apply(const strata_zaffine *f, const int64_t *x, int ndim, int64_t *y)
{
  strata__clear_error();
  if (!valid_map(f) || ndim < f->in_dims || !x || !y ||
      ndim - f->in_dims + f->out_dims > STRATA_ZMAX_DIMS)
    return STRATA_EINVAL;
  int lead = ndim - f->in_dims;
  int64_t tail[STRATA_ZMAX_DIMS];
  int ret = strata_zaffine_apply(f, x + lead, tail);
  if (ret)
    return ret;
  memmove(y, x, (size_t)lead * sizeof *y);
  memcpy(y + lead, tail, (size_t)f->out_dims * sizeof *y);
  return 0;
}

int strata_zaffine_translate(strata_zaffine *f, const int64_t *delta)
{
  strata__clear_error();
  if (!valid_map(f) || (f->out_dims > 0 && !delta))
    return STRATA_EINVAL;
  for (int i = 0; i < f->out_dims; i++)
    f->offset[i] += delta[i];
  return 0;
}

int strata_zaffine_permute_input(strata_zaffine *f, const int *perm)
{
  strata__clear_error();
  int p[STRATA_ZMAX_DIMS];
  if (!valid_map(f) || normalise_perm(perm, f->in_dims, p))
    return STRATA_EINVAL;
  strata_zaffine g = *f;
  for (int i = 0; i < f->out_dims; i++)
    for (int j = 0; j < f->in_dims; j++)
      g.matrix[i][j] = f->matrix[i][p[j]];
  *f = g;
  return 0;
}

int strata_zaffine_permute_output(strata_zaffine *f, const int *perm)
{
  strata__clear_error();
  int p[STRATA_ZMAX_DIMS];
  if (!valid_map(f) || normalise_perm(perm, f->out_dims, p))
    return STRATA_EINVAL;
  strata_zaffine g = *f;
  for (int i = 0; i < f->out_dims; i++) {
    memcpy(g.matrix[i], f->matrix[p[i]], sizeof g.matrix[i]);
    g.offset[i] = f->offset[p[i]];
  }
  *f = g;
  return 0;
}

int strata_zproj_init(strata_zproj *p, const strata_zaffine *map, const int64_t *shape)
{
  strata__clear_error();
  if (!p || !valid_map(map) || (map->out_dims > 0 && !shape))
    return STRATA_EINVAL;
  for (int i = 0; i < map->out_dims; i++)
    if (shape[i] < 0)
      return STRATA_EINVAL;
  memset(p, 0, sizeof *p);
  p->map = *map;
  memcpy(p->shape, shape, (size_t)map->out_dims * sizeof *shape);
  return 0;
}

int strata_zproj_apply_point(const strata_zproj *p, const int64_t *x, strata_zrange *region)
{
  strata__clear_error();
  int64_t start[STRATA_ZMAX_DIMS], end[STRATA_ZMAX_DIMS];
  if (!p || !region)
    return STRATA_EINVAL;
  int ret = strata_zaffine_apply(&p->map, x, start);
  if (ret)
    return ret;
  for (int i = 0; i < p->map.out_dims; i++)
    end[i] = start[i] + p->shape[i];
  return strata_zrange_init(region, p->map.out_dims, start, end);
}

int strata_zproj_apply_range(const strata_zproj *p, const strata_zrange *range,
                             strata_zrange *region)
{
  strata__clear_error();
  if (!p || !valid(range) || !region || range->ndim != p->map.in_dims)
    return STRATA_EINVAL;
  int64_t lo[STRATA_ZMAX_DIMS], hi[STRATA_ZMAX_DIMS];
  if (strata_zrange_is_empty(range)) {
    for (int i = 0; i < p->map.out_dims; i++)
      lo[i] = hi[i] = p->map.offset[i];
    return strata_zrange_init(region, p->map.out_dims, lo, hi);
  }
  /* Per row, each term a x_j over x_j in [s_j, e_j - 1] spans
   * [min(a s_j, a (e_j - 1)), max(...)]: sums of intervals are exact. */
  for (int i = 0; i < p->map.out_dims; i++) {
    lo[i] = hi[i] = p->map.offset[i];
    for (int j = 0; j < p->map.in_dims; j++) {
      int64_t a = p->map.matrix[i][j], u = a * range->start[j], v = a * (range->end[j] - 1);
      lo[i] += u < v ? u : v;
      hi[i] += u < v ? v : u;
    }
    hi[i] += p->shape[i];
  }
  return strata_zrange_init(region, p->map.out_dims, lo, hi);
}

static cJSON *int_array(const int64_t *v, int n)
{
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < n; i++)
    cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i]));
  return a;
}

int strata_zproj_to_json(const strata_zproj *p, char *buf, size_t size)
{
  strata__clear_error();
  if (!p || !valid_map(&p->map) || (size > 0 && !buf))
    return STRATA_EINVAL;
  cJSON *root = cJSON_CreateObject(), *rows = cJSON_AddArrayToObject(root, "projection");
  for (int i = 0; i < p->map.out_dims; i++)
    cJSON_AddItemToArray(rows, int_array(p->map.matrix[i], p->map.in_dims));
  cJSON_AddItemToObject(root, "offset", int_array(p->map.offset, p->map.out_dims));
  cJSON_AddItemToObject(root, "shape", int_array(p->shape, p->map.out_dims));
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  if (!text)
    return STRATA_ENOMEM;
  int len = (int)strlen(text);
  if (size > 0)
    snprintf(buf, size, "%s", text);
  free(text);
  return len;
}

/* Integers of a JSON array into v (at most max); -1 when it is not one. */
static int read_ints(const cJSON *a, int64_t *v, int max)
{
  int n = cJSON_GetArraySize(a);
  if (!cJSON_IsArray(a) || n > max)
    return -1;
  for (int i = 0; i < n; i++) {
    const cJSON *x = cJSON_GetArrayItem(a, i);
    /* range first: converting a double outside int64's range is undefined */
    if (!cJSON_IsNumber(x) || !(fabs(x->valuedouble) < 0x1p63) ||
        x->valuedouble != floor(x->valuedouble))
      return -1;
    v[i] = (int64_t)x->valuedouble;
  }
  return n;
}

int strata_zproj_from_json(const char *json, strata_zproj *p)
{
  strata__clear_error();
  if (!json || !p)
    return STRATA_EINVAL;
  cJSON *root = cJSON_Parse(json);
  if (!root)
    return STRATA_EIO;
  int ret = STRATA_EINVAL;
  const cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "projection");
  int64_t m[STRATA_ZMAX_DIMS * STRATA_ZMAX_DIMS], offset[STRATA_ZMAX_DIMS], shape[STRATA_ZMAX_DIMS];
  int out = cJSON_GetArraySize(rows), in = -1;
  if (cJSON_IsArray(rows) && out <= STRATA_ZMAX_DIMS) {
    int ok = 1;
    for (int i = 0; ok && i < out; i++) {
      int n = read_ints(cJSON_GetArrayItem(rows, i), m + i * STRATA_ZMAX_DIMS, STRATA_ZMAX_DIMS);
      ok = n >= 0 && (in < 0 || n == in);
      in = n;
    }
    if (ok && read_ints(cJSON_GetObjectItemCaseSensitive(root, "offset"), offset, out) == out &&
        read_ints(cJSON_GetObjectItemCaseSensitive(root, "shape"), shape, out) == out) {
      strata_zaffine f;
      int64_t dense[STRATA_ZMAX_DIMS * STRATA_ZMAX_DIMS];
      in = in < 0 ? 0 : in;
      for (int i = 0; i < out; i++)
        for (int j = 0; j < in; j++)
          dense[i * in + j] = m[i * STRATA_ZMAX_DIMS + j];
      ret = strata_zaffine_init(&f, in, out, dense, offset);
      if (!ret)
        ret = strata_zproj_init(p, &f, shape);
    }
  }
  cJSON_Delete(root);
  return ret;
}

/* Segments of [s, e) in one dimension of extent d under a policy: source
 * start, length and destination offset. Returns the count, or a negative
 * STRATA_E* code. */
enum { MAX_SEGMENTS = 64 };
struct segment {
  int64_t src, len, dst;
};

static int64_t floor_mod(int64_t a, int64_t d)
{
  int64_t m = a % d;
  return m < 0 ? m + d : m;
}

static int segments(int64_t s, int64_t e, int64_t d, strata_oob_policy policy, struct segment *seg)
{
  if (s == e)
    return 0;
  switch (policy) {
  case STRATA_OOB_ERROR:
    if (s < 0 || e > d)
      return STRATA_ERANGE;
    seg[0] = (struct segment){s, e - s, 0};
    return 1;
  case STRATA_OOB_CLIP:
  case STRATA_OOB_PAD: {
    int64_t a = s < 0 ? 0 : s, b = e > d ? d : e;
    if (a >= b)
      return 0;
    seg[0] = (struct segment){a, b - a, a - s};
    return 1;
  }
  case STRATA_OOB_NEGATIVE:
    if (s < -d || e > d)
      return STRATA_ERANGE;
    if (e <= 0 || s >= 0) {
      seg[0] = (struct segment){s < 0 ? s + d : s, e - s, 0};
      return 1;
    }
    seg[0] = (struct segment){s + d, -s, 0};
    seg[1] = (struct segment){0, e, -s};
    return 2;
  default: { /* WRAP */
    if (d <= 0)
      return STRATA_ERANGE;
    int n = 0;
    for (int64_t at = s; at < e; n++) {
      if (n == MAX_SEGMENTS)
        return STRATA_ERANGE;
      int64_t src = floor_mod(at, d), len = d - src < e - at ? d - src : e - at;
      seg[n] = (struct segment){src, len, at - s};
      at += len;
    }
    return n;
  }
  }
}

int strata_zregion_resolve(const strata_zrange *region, const int64_t *shape,
                           strata_oob_policy policy, strata_zpiece *pieces, int capacity,
                           int *count, strata_zrange *effective)
{
  strata__clear_error();
  if (!valid(region) || (region->ndim > 0 && !shape) || !count || capacity < 0 ||
      (capacity > 0 && !pieces) || policy < STRATA_OOB_ERROR || policy > STRATA_OOB_PAD)
    return STRATA_EINVAL;
  int nd = region->ndim, nseg[STRATA_ZMAX_DIMS];
  struct segment seg[STRATA_ZMAX_DIMS][MAX_SEGMENTS];
  *count = 0;
  int64_t total = 1;
  strata_zrange eff = *region;
  for (int d = 0; d < nd; d++) {
    if (shape[d] < 0)
      return STRATA_EINVAL;
    nseg[d] = segments(region->start[d], region->end[d], shape[d], policy, seg[d]);
    if (nseg[d] < 0)
      return nseg[d];
    if (policy == STRATA_OOB_CLIP) {
      eff.start[d] = nseg[d] ? seg[d][0].src : region->start[d];
      eff.end[d] = nseg[d] ? seg[d][0].src + seg[d][0].len : region->start[d];
    }
    total *= nseg[d];
  }
  if (effective)
    *effective = eff;
  if (total > INT32_MAX)
    return STRATA_ERANGE;
  *count = (int)total;
  if (total > capacity)
    return STRATA_ERANGE;
  /* Every combination of one segment per dimension is a piece. */
  for (int64_t k = 0; k < total; k++) {
    strata_zpiece *p = &pieces[k];
    memset(p, 0, sizeof *p);
    p->source.ndim = nd;
    for (int64_t rest = k, d = nd - 1; d >= 0; d--) {
      const struct segment *g = &seg[d][rest % nseg[d]];
      rest /= nseg[d];
      p->source.start[d] = g->src;
      p->source.end[d] = g->src + g->len;
      p->dest[d] = policy == STRATA_OOB_CLIP ? 0 : g->dst;
    }
  }
  return 0;
}

int strata_zregion_gather(const void *tensor, const int64_t *shape, size_t elem_size,
                          const strata_zrange *region, strata_oob_policy policy, const void *fill,
                          void *out)
{
  strata__clear_error();
  if (!tensor || !out || elem_size == 0 || elem_size > 64)
    return STRATA_EINVAL;
  int count;
  strata_zrange eff;
  int ret = strata_zregion_resolve(region, shape, policy, NULL, 0, &count, &eff);
  if (ret && ret != STRATA_ERANGE)
    return ret;
  if (ret == STRATA_ERANGE && count == 0)
    return ret; /* the policy itself refused the region */
  strata_zpiece *pieces = malloc((size_t)(count ? count : 1) * sizeof *pieces);
  if (!pieces)
    return STRATA_ENOMEM;
  if ((ret = strata_zregion_resolve(region, shape, policy, pieces, count, &count, &eff))) {
    free(pieces);
    return ret;
  }
  int nd = eff.ndim;
  int64_t cells = strata_zrange_size(&eff), ext[STRATA_ZMAX_DIMS];
  for (int d = 0; d < nd; d++)
    ext[d] = eff.end[d] - eff.start[d];
  static const unsigned char zeros[64];
  for (int64_t i = 0; i < cells; i++) /* padding first, pieces over it */
    memcpy((char *)out + (size_t)i * elem_size, fill ? fill : zeros, elem_size);
  for (int k = 0; k < count; k++) {
    int64_t n = strata_zrange_size(&pieces[k].source);
    for (int64_t i = 0; i < n; i++) {
      int64_t src = 0, dst = 0, rest = i;
      int64_t idx[STRATA_ZMAX_DIMS];
      for (int d = nd - 1; d >= 0; d--) {
        int64_t len = pieces[k].source.end[d] - pieces[k].source.start[d];
        idx[d] = rest % len;
        rest /= len;
      }
      for (int d = 0; d < nd; d++) {
        src = src * shape[d] + pieces[k].source.start[d] + idx[d];
        dst = dst * ext[d] + pieces[k].dest[d] + idx[d];
      }
      memcpy((char *)out + (size_t)dst * elem_size, (const char *)tensor + (size_t)src * elem_size,
             elem_size);
    }
  }
  free(pieces);
  return 0;
}
