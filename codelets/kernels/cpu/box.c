/* Box moves between dense row-major tensors (see box_kernels.h). */
#include <string.h>

#include "../box_kernels.h"
#include "../merge_kernels.h"

void strata__box_slabs(int ndim, const int64_t *extent, const struct strata__box *dst,
                       const struct strata__box *src,
                       void (*fn)(void *ctx, const struct strata__slab *s), void *ctx)
{
  int64_t cells = 1;
  for (int d = 0; d < ndim; d++)
    cells *= extent[d];
  if (cells == 0)
    return;
  if (ndim == 0) {
    fn(ctx, &(struct strata__slab){0, 0, 1, 1, 1, 1});
    return;
  }
  /* Slabs span the last two dimensions (one row for 1-D boxes). */
  int inner = ndim >= 2 ? ndim - 2 : 0;
  struct strata__slab s = {0,
                           0,
                           ndim >= 2 ? dst->shape[ndim - 1] : 0,
                           ndim >= 2 ? src->shape[ndim - 1] : 0,
                           ndim >= 2 ? extent[ndim - 2] : 1,
                           extent[ndim - 1]};
  int64_t idx[8] = {0};
  for (;;) {
    int64_t doff = 0, soff = 0;
    for (int d = 0; d < ndim; d++) {
      int64_t at = d < inner ? idx[d] : 0;
      doff = doff * dst->shape[d] + dst->start[d] + at;
      soff = soff * src->shape[d] + src->start[d] + at;
    }
    s.dst_off = doff;
    s.src_off = soff;
    fn(ctx, &s);
    int d = inner - 1;
    while (d >= 0 && ++idx[d] == extent[d])
      idx[d--] = 0;
    if (d < 0)
      return;
  }
}

/* What a slab callback needs: the element size, the buffers and, for
 * merges, the operator and type. */
struct slab_ctx {
  size_t elem;
  char *dst;
  const char *src;
  strata_op op;
  strata_dtype dtype;
};

static void copy_slab(void *ctx, const struct strata__slab *s)
{
  const struct slab_ctx *c = ctx;
  for (int64_t r = 0; r < s->rows; r++)
    memcpy(c->dst + (size_t)(s->dst_off + r * s->dst_pitch) * c->elem,
           c->src + (size_t)(s->src_off + r * s->src_pitch) * c->elem,
           (size_t)s->row_elems * c->elem);
}

void strata__box_copy_cpu(int ndim, const int64_t *extent, size_t elem, void *dst,
                          const struct strata__box *dst_box, const void *src,
                          const struct strata__box *src_box)
{
  struct slab_ctx c = {elem, dst, src, STRATA_SUM, STRATA_FLOAT32};
  strata__box_slabs(ndim, extent, dst_box, src_box, copy_slab, &c);
}

static void merge_slab(void *ctx, const struct strata__slab *s)
{
  const struct slab_ctx *c = ctx;
  for (int64_t r = 0; r < s->rows; r++)
    strata__merge_cpu(c->op, c->dtype, c->dst + (size_t)(s->dst_off + r * s->dst_pitch) * c->elem,
                      c->src + (size_t)(s->src_off + r * s->src_pitch) * c->elem,
                      (size_t)s->row_elems);
}

void strata__box_merge_cpu(int ndim, const int64_t *extent, strata_op op, strata_dtype dtype,
                           void *dst, const struct strata__box *dst_box, const void *src,
                           const struct strata__box *src_box)
{
  struct slab_ctx c = {strata_dtype_size(dtype), dst, src, op, dtype};
  strata__box_slabs(ndim, extent, dst_box, src_box, merge_slab, &c);
}

void strata__fill_cpu(void *dst, int64_t n, size_t elem, const void *value)
{
  for (int64_t i = 0; i < n; i++)
    memcpy((char *)dst + (size_t)i * elem, value, elem);
}
