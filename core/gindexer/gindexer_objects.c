/* The global indexer's object exchanges (include/strata/gindexer.h): byte
 * blobs and items serialised by user callbacks. The items are packed on
 * the host into a (counts, bytes) pair, moved by Take_v / Put_v task
 * graphs and rebuilt on the host; every callback error is agreed on. */
#include <stdlib.h>
#include <string.h>

#include "gindexer_impl.h"
#include "internal/runtime.h"

/* How one kind of item is serialised. Built items go to temporary slots
 * first, so that an error anywhere leaves the caller's arrays untouched. */
struct item_ops {
  /* Bytes of source item i (write them when cap suffices): >= 0 or an error. */
  int64_t (*pack)(void *ctx, int64_t i, void *buf, int64_t cap);
  /* Bytes of owned item i, for Put with extend (NULL otherwise). */
  int64_t (*pack_owned)(void *ctx, int64_t i, void *buf, int64_t cap);
  /* Build temporary slot i from bytes: 0 or an error. */
  int (*unpack)(void *ctx, int64_t i, const void *buf, int64_t size);
  /* Free temporary slot i (after an error). */
  void (*drop)(void *ctx, int64_t i);
  /* Put only: owned item i := temporary slot i (the old item is freed). */
  void (*commit)(void *ctx, int64_t i);
};

typedef int64_t (*pack_fn)(void *ctx, int64_t i, void *buf, int64_t cap);

/* Serialise n items into new counts (int64) and bytes (uint8) arrays. */
static int serialise(int64_t n, pack_fn pack, void *ctx, strata_array **counts,
                     strata_array **bytes)
{
  *counts = *bytes = NULL;
  int64_t *c = NULL, total = 0;
  unsigned char *b = NULL;
  int ret = strata_array_create(1, &n, STRATA_INT64, counts);
  if (!ret)
    ret = strata_array_acquire(*counts, STRATA_WRITE, (void **)&c);
  for (int64_t i = 0; i < n && !ret; i++) {
    c[i] = pack(ctx, i, NULL, 0);
    if (c[i] < 0)
      ret = (int)c[i];
    else
      total += c[i];
  }
  if (!ret)
    ret = strata_array_create(1, &total, STRATA_UINT8, bytes);
  if (!ret)
    ret = strata_array_acquire(*bytes, STRATA_WRITE, (void **)&b);
  for (int64_t i = 0, at = 0; i < n && !ret; at += c[i], i++)
    if (pack(ctx, i, b + at, c[i]) != c[i])
      ret = STRATA_EINVAL; /* the item changed size between the two calls */
  if (b)
    strata_array_release(*bytes);
  if (c)
    strata_array_release(*counts);
  if (ret) {
    strata_array_destroy(*counts);
    strata_array_destroy(*bytes);
    *counts = *bytes = NULL;
  }
  return ret;
}

/* Rebuild the slots i < n for which want(i) (all when NULL) from a
 * (counts, bytes) pair; an error anywhere drops every slot built. */
static int deserialise(strata_gindexer *gi, const struct item_ops *ops, void *ctx,
                       strata_array *counts, strata_array *bytes, const int64_t *want)
{
  const int64_t *c = NULL;
  const unsigned char *b = NULL;
  int64_t n = strata_array_nelems(counts), built = 0;
  int local = strata_array_acquire(counts, STRATA_READ, (void **)&c);
  if (!local)
    local = strata_array_acquire(bytes, STRATA_READ, (void **)&b);
  for (int64_t at = 0; built < n && !local; at += c[built], built++)
    if (!want || want[built])
      local = ops->unpack(ctx, built, b + at, c[built]);
  if (b)
    strata_array_release(bytes);
  if (c)
    strata_array_release(counts);
  int ret = strata__agree_on(gi->comm, local, NULL, 0);
  if (ret) /* the failed slot built nothing */
    for (int64_t i = 0; i < built - (local != 0); i++)
      if (!want || want[i])
        ops->drop(ctx, i);
  return ret;
}

static void destroy_all(strata_array **a, int n)
{
  for (int i = 0; i < n; i++)
    strata_array_destroy(a[i]);
}

static int take_items(strata_gindexer *gi, const struct item_ops *ops, void *ctx)
{
  strata_array *a[4] = {NULL}; /* counts, bytes, taken counts, taken bytes */
  int ret = strata__agree_on(gi->comm, serialise(gi->dn, ops->pack, ctx, &a[0], &a[1]), NULL, 0);
  if (!ret)
    ret = strata_gindexer_take_v(gi, a[0], a[1], &a[2], &a[3]);
  if (!ret)
    ret = deserialise(gi, ops, ctx, a[2], a[3], NULL);
  destroy_all(a, 4);
  return ret;
}

static int put_items(strata_gindexer *gi, const struct item_ops *ops, void *ctx,
                     strata_put_rule rule, int extend)
{
  strata_array *a[6] = {NULL}; /* counts, bytes, owned counts, owned bytes, new counts, bytes */
  int64_t *written = calloc((size_t)gi->dn + 1, sizeof *written);
  int local = written ? serialise(gi->n_idx, ops->pack, ctx, &a[0], &a[1]) : STRATA_ENOMEM;
  if (!local && extend)
    local = serialise(gi->dn, ops->pack_owned, ctx, &a[2], &a[3]);
  int ret = strata__agree_on(gi->comm, local, NULL, 0);
  if (!ret)
    ret = strata_gindexer_put_v(gi, a[0], a[1], rule, extend, a[2], a[3], &a[4], &a[5]);
  if (!ret) {
    strata_gindexer_access_counts(gi, written);
    ret = deserialise(gi, ops, ctx, a[4], a[5], written);
  }
  for (int64_t i = 0; i < gi->dn && !ret; i++)
    if (written[i])
      ops->commit(ctx, i);
  free(written);
  destroy_all(a, 6);
  return ret;
}

/* ---- byte blobs ------------------------------------------------------ */

struct blobs {
  const strata_blob *src;
  strata_blob *owned, *tmp;
};

static int64_t blob_bytes(const strata_blob *b, void *buf, int64_t cap)
{
  if (b->size < 0 || (b->size > 0 && !b->data))
    return STRATA_EINVAL;
  if (cap >= b->size && b->size > 0)
    memcpy(buf, b->data, (size_t)b->size);
  return b->size;
}

static int64_t blob_pack(void *ctx, int64_t i, void *buf, int64_t cap)
{
  return blob_bytes(&((struct blobs *)ctx)->src[i], buf, cap);
}

static int64_t blob_pack_owned(void *ctx, int64_t i, void *buf, int64_t cap)
{
  return blob_bytes(&((struct blobs *)ctx)->owned[i], buf, cap);
}

static int blob_unpack(void *ctx, int64_t i, const void *buf, int64_t size)
{
  strata_blob *b = &((struct blobs *)ctx)->tmp[i];
  b->size = size;
  b->data = size > 0 ? malloc((size_t)size) : NULL;
  if (size > 0 && !b->data)
    return STRATA_ENOMEM;
  if (size > 0)
    memcpy(b->data, buf, (size_t)size);
  return 0;
}

static void blob_drop(void *ctx, int64_t i)
{
  strata_blob *b = &((struct blobs *)ctx)->tmp[i];
  free(b->data);
  *b = (strata_blob){NULL, 0};
}

static void blob_commit(void *ctx, int64_t i)
{
  struct blobs *bl = ctx;
  free(bl->owned[i].data);
  bl->owned[i] = bl->tmp[i];
}

static const struct item_ops blob_ops = {blob_pack, blob_pack_owned, blob_unpack, blob_drop,
                                         blob_commit};

int strata_gindexer_take_blobs(strata_gindexer *gi, const strata_blob *dist, strata_blob *out)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret || !gi)
    return ret ? ret : STRATA_EINVAL;
  int local =
      (dist || gi->dn == 0) && (out || gi->n_idx == 0) && gi->n_lists == 1 ? 0 : STRATA_EINVAL;
  if ((ret = strata__agree_on(gi->comm, local, NULL, 0)))
    return strata__fail(ret, "gindexer take_blobs: bad arguments");
  struct blobs ctx = {.src = dist, .tmp = out};
  return take_items(gi, &blob_ops, &ctx);
}

int strata_gindexer_put_blobs(strata_gindexer *gi, const strata_blob *values, strata_put_rule rule,
                              int extend, strata_blob *dist)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret || !gi)
    return ret ? ret : STRATA_EINVAL;
  strata_blob *tmp = calloc((size_t)gi->dn + 1, sizeof *tmp);
  int local = (values || gi->n_idx == 0) && (dist || gi->dn == 0) && gi->n_lists == 1
                  ? (tmp ? 0 : STRATA_ENOMEM)
                  : STRATA_EINVAL;
  if (!(ret = strata__agree_on(gi->comm, local, NULL, 0))) {
    struct blobs ctx = {.src = values, .owned = dist, .tmp = tmp};
    ret = put_items(gi, &blob_ops, &ctx, rule, extend);
  }
  free(tmp);
  return ret;
}

/* ---- items through a user codec -------------------------------------- */

struct objects {
  const strata_codec *codec;
  void *const *src;
  void **owned, **tmp;
};

static int64_t object_pack(void *ctx, int64_t i, void *buf, int64_t cap)
{
  struct objects *o = ctx;
  return o->codec->pack(o->src[i], buf, cap, o->codec->user);
}

static int object_unpack(void *ctx, int64_t i, const void *buf, int64_t size)
{
  struct objects *o = ctx;
  o->tmp[i] = NULL;
  return o->codec->unpack(buf, size, &o->tmp[i], o->codec->user);
}

static void object_release(const struct objects *o, void *item)
{
  if (item && o->codec->release)
    o->codec->release(item, o->codec->user);
}

static void object_drop(void *ctx, int64_t i)
{
  struct objects *o = ctx;
  object_release(o, o->tmp[i]);
  o->tmp[i] = NULL;
}

static void object_commit(void *ctx, int64_t i)
{
  struct objects *o = ctx;
  object_release(o, o->owned[i]);
  o->owned[i] = o->tmp[i];
}

static const struct item_ops object_ops = {object_pack, NULL, object_unpack, object_drop,
                                           object_commit};

static int check_codec(strata_gindexer *gi, const strata_codec *codec, int local)
{
  if (!codec || !codec->pack || !codec->unpack || gi->n_lists != 1)
    local = STRATA_EINVAL;
  return strata__agree_on(gi->comm, local, NULL, 0);
}

int strata_gindexer_take_objects(strata_gindexer *gi, void *const *dist, const strata_codec *codec,
                                 void **out)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret || !gi)
    return ret ? ret : STRATA_EINVAL;
  int local = (dist || gi->dn == 0) && (out || gi->n_idx == 0) ? 0 : STRATA_EINVAL;
  if ((ret = check_codec(gi, codec, local)))
    return strata__fail(ret, "gindexer take_objects: bad arguments or codec");
  struct objects ctx = {.codec = codec, .src = dist, .tmp = out};
  return take_items(gi, &object_ops, &ctx);
}

int strata_gindexer_put_objects(strata_gindexer *gi, void *const *values, strata_put_rule rule,
                                const strata_codec *codec, void **dist)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret || !gi)
    return ret ? ret : STRATA_EINVAL;
  void **tmp = calloc((size_t)gi->dn + 1, sizeof *tmp);
  int local = (values || gi->n_idx == 0) && (dist || gi->dn == 0) ? (tmp ? 0 : STRATA_ENOMEM)
                                                                  : STRATA_EINVAL;
  if ((ret = check_codec(gi, codec, local)))
    ret = strata__fail(ret, "gindexer put_objects: bad arguments or codec");
  if (!ret) {
    struct objects ctx = {.codec = codec, .src = values, .owned = dist, .tmp = tmp};
    ret = put_items(gi, &object_ops, &ctx, rule, 0);
  }
  free(tmp);
  return ret;
}
