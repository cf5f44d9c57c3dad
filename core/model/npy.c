/* NumPy .npy files: header parsing with validation of every field, data in
 * host byte order, and writing (version 1.0, little-endian). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata/io.h>

#include "internal/model.h"
#include "internal/runtime.h"

struct npy_header {
  strata_dtype dtype;
  int swap; /* stored big-endian */
  int ndim;
  int64_t shape[STRATA_MAX_DIMS];
  int64_t nelems;
};

static uint32_t le32(const unsigned char *b)
{
  return b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* The value of 'key' in the header dictionary: pointer after "key':". */
static const char *dict_value(const char *dict, const char *key)
{
  char quoted[32];
  for (int q = 0; q < 2; q++) {
    snprintf(quoted, sizeof quoted, q ? "\"%s\"" : "'%s'", key);
    const char *at = strstr(dict, quoted);
    if (at) {
      at += strlen(quoted);
      while (isspace((unsigned char)*at))
        at++;
      if (*at == ':')
        return at + 1;
    }
  }
  return NULL;
}

static int parse_descr(const char *path, const char *v, struct npy_header *h)
{
  while (isspace((unsigned char)*v))
    v++;
  char quote = *v;
  if ((quote != '\'' && quote != '"') || strlen(v) < 5 || v[4] != quote)
    return strata__fail(STRATA_EIO, "%s: malformed 'descr'", path);
  char order = v[1], kind = v[2], size = v[3];
  static const struct {
    char kind, size;
    strata_dtype dtype;
  } types[] = {{'b', '1', STRATA_BOOL},   {'i', '1', STRATA_INT8},  {'u', '1', STRATA_UINT8},
               {'i', '4', STRATA_INT32},  {'i', '8', STRATA_INT64}, {'f', '4', STRATA_FLOAT32},
               {'f', '8', STRATA_FLOAT64}};
  if (order != '<' && order != '>' && order != '|' && order != '=')
    return strata__fail(STRATA_EIO, "%s: unknown byte order '%c'", path, order);
  for (size_t i = 0; i < sizeof types / sizeof *types; i++)
    if (types[i].kind == kind && types[i].size == size) {
      h->dtype = types[i].dtype;
      h->swap = order == '>' && size != '1';
      return 0;
    }
  return strata__fail(STRATA_ETYPE, "%s: unsupported element type '%c%c'", path, kind, size);
}

static int parse_shape(const char *path, const char *v, struct npy_header *h)
{
  while (isspace((unsigned char)*v))
    v++;
  if (*v++ != '(')
    return strata__fail(STRATA_EIO, "%s: malformed 'shape'", path);
  h->ndim = 0;
  h->nelems = 1;
  for (;;) {
    while (isspace((unsigned char)*v) || *v == ',')
      v++;
    if (*v == ')')
      return 0;
    if (!isdigit((unsigned char)*v))
      return strata__fail(STRATA_EIO, "%s: malformed 'shape'", path);
    if (h->ndim == STRATA_MAX_DIMS)
      return strata__fail(STRATA_EINVAL, "%s: more than %d dimensions", path, STRATA_MAX_DIMS);
    char *end;
    long long d = strtoll(v, &end, 10);
    if (d < 0 || d > (INT64_C(1) << 40) || (d > 0 && h->nelems > (INT64_C(1) << 40) / d))
      return strata__fail(STRATA_EIO, "%s: shape too large", path);
    h->shape[h->ndim++] = d;
    h->nelems *= d;
    v = end;
  }
}

/* The file holds at least the data its header announces: checked before
 * anything is allocated, so a short file cannot make us reserve gigabytes. */
static int check_data_size(const char *path, FILE *f, const struct npy_header *h)
{
  long at = ftell(f);
  if (at < 0 || fseek(f, 0, SEEK_END) != 0)
    return strata__fail(STRATA_EIO, "%s: cannot seek", path);
  long end = ftell(f);
  if (end < 0 || fseek(f, at, SEEK_SET) != 0)
    return strata__fail(STRATA_EIO, "%s: cannot seek", path);
  uint64_t need = (uint64_t)h->nelems * strata_dtype_size(h->dtype);
  if ((uint64_t)(end - at) < need)
    return strata__fail(STRATA_EIO, "%s: truncated data (%llu bytes announced, %ld present)", path,
                        (unsigned long long)need, end - at);
  return 0;
}

/* Open `path` and parse its header; on success *f is positioned at the data. */
static int npy_open(const char *path, FILE **f, struct npy_header *h)
{
  unsigned char pre[12];
  if (!(*f = fopen(path, "rb")))
    return strata__fail(STRATA_EIO, "%s: cannot open", path);
  int ret = 0;
  char *dict = NULL;
  if (fread(pre, 1, 8, *f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0)
    ret = strata__fail(STRATA_EIO, "%s: not a .npy file (bad magic)", path);
  else if (pre[6] < 1 || pre[6] > 3)
    ret = strata__fail(STRATA_EIO, "%s: unsupported .npy version %d", path, pre[6]);
  if (ret)
    goto out;
  uint32_t len;
  if (pre[6] == 1) {
    if (fread(pre + 8, 1, 2, *f) != 2) {
      ret = strata__fail(STRATA_EIO, "%s: truncated header", path);
      goto out;
    }
    len = pre[8] | (uint32_t)pre[9] << 8;
  } else {
    if (fread(pre + 8, 1, 4, *f) != 4) {
      ret = strata__fail(STRATA_EIO, "%s: truncated header", path);
      goto out;
    }
    len = le32(pre + 8);
  }
  if (len > (1u << 20)) {
    ret = strata__fail(STRATA_EIO, "%s: header of %u bytes is implausible", path, len);
    goto out;
  }
  dict = malloc(len + 1);
  if (!dict || fread(dict, 1, len, *f) != len) {
    ret = dict ? strata__fail(STRATA_EIO, "%s: truncated header", path) : STRATA_ENOMEM;
    goto out;
  }
  dict[len] = '\0';
  const char *descr = dict_value(dict, "descr"), *order = dict_value(dict, "fortran_order");
  const char *shape = dict_value(dict, "shape");
  if (!descr || !order || !shape) {
    ret = strata__fail(STRATA_EIO, "%s: header lacks descr, fortran_order or shape", path);
    goto out;
  }
  while (isspace((unsigned char)*order))
    order++;
  if (strncmp(order, "True", 4) == 0)
    ret = strata__fail(STRATA_EINVAL, "%s: Fortran order is not supported", path);
  else if (strncmp(order, "False", 5) != 0)
    ret = strata__fail(STRATA_EIO, "%s: malformed 'fortran_order'", path);
  else if (!(ret = parse_descr(path, descr, h)) && !(ret = parse_shape(path, shape, h)))
    ret = check_data_size(path, *f, h);
out:
  free(dict);
  if (ret) {
    fclose(*f);
    *f = NULL;
  }
  return ret;
}

/* Read the data into dst (nelems elements) in host order. */
static int npy_read_data(const char *path, FILE *f, const struct npy_header *h, void *dst)
{
  size_t size = strata_dtype_size(h->dtype), n = (size_t)h->nelems;
  if (fread(dst, size, n, f) != n)
    return strata__fail(STRATA_EIO, "%s: truncated data (%zu elements expected)", path, n);
  if (h->swap)
    for (size_t i = 0; i < n; i++) {
      unsigned char *e = (unsigned char *)dst + i * size;
      for (size_t a = 0, b = size - 1; a < b; a++, b--) {
        unsigned char t = e[a];
        e[a] = e[b];
        e[b] = t;
      }
    }
  return 0;
}

int strata_npy_load(const char *path, strata_array **out)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!path || !out)
    return STRATA_EINVAL;
  *out = NULL;
  FILE *f;
  struct npy_header h;
  if ((ret = npy_open(path, &f, &h)))
    return ret;
  strata_array *a;
  if ((ret = strata_array_create(h.ndim, h.shape, h.dtype, &a)) == 0) {
    void *data;
    strata_array_acquire(a, STRATA_WRITE, &data);
    ret = npy_read_data(path, f, &h, data);
    strata_array_release(a);
    if (ret)
      strata_array_destroy(a);
    else
      *out = a;
  }
  fclose(f);
  return ret;
}

int strata__npy_read_f32(const char *path, int *ndim, int64_t *shape, float **data)
{
  FILE *f;
  struct npy_header h;
  int ret = npy_open(path, &f, &h);
  if (ret)
    return ret;
  if (h.dtype != STRATA_FLOAT32)
    ret = strata__fail(STRATA_EINVAL, "%s: weights must be float32, not %s", path,
                       strata_dtype_name(h.dtype));
  else if (!(*data = malloc((size_t)(h.nelems ? h.nelems : 1) * sizeof(float))))
    ret = STRATA_ENOMEM;
  else if ((ret = npy_read_data(path, f, &h, *data))) {
    free(*data);
    *data = NULL;
  } else {
    *ndim = h.ndim;
    memcpy(shape, h.shape, (size_t)h.ndim * sizeof *shape);
  }
  fclose(f);
  return ret;
}

int strata_npy_save(const char *path, strata_array *a)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!path || !a)
    return STRATA_EINVAL;
  static const char *const descr[STRATA_NDTYPES] = {"|b1", "|i1", "|u1", "<i4",
                                                    "<i8", "<f4", "<f8"};
  char dict[400];
  int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     descr[a->dtype]);
  for (int d = 0; d < a->ndim; d++)
    len += snprintf(dict + len, sizeof dict - (size_t)len, "%lld,%s", (long long)a->shape[d],
                    d + 1 < a->ndim ? " " : "");
  len += snprintf(dict + len, sizeof dict - (size_t)len, "), }");
  /* Pad with spaces so that the data starts on a 64-byte boundary. */
  int total = 10 + len + 1, padded = (total + 63) / 64 * 64;
  strata_output *out;
  if ((ret = strata_output_begin(path, &out)))
    return ret;
  FILE *f = strata_output_stream(out);
  if (f) {
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    pre[8] = (unsigned char)((padded - 10) & 0xff);
    pre[9] = (unsigned char)((padded - 10) >> 8);
    fwrite(pre, 1, 10, f);
    fprintf(f, "%s%*s\n", dict, padded - total, "");
    void *data;
    strata_array_acquire(a, STRATA_READ, &data);
    fwrite(data, 1, (size_t)a->nbytes, f);
    strata_array_release(a);
  }
  return strata_output_finish(out, f);
}
