/* The global indexer's variable-size exchanges, Take_v and Put_v
 * (include/strata/gindexer.h).
 *
 * An item is a block of counts[i] elements. The counts go first, as a
 * fixed-size exchange of one int64 per request; the host then reads them,
 * because the receivers' buffers must be sized before the data can move.
 * The data moves as a second exchange whose pack and unpack are segment
 * copies (one segment per block) listed on the host. */
#include <stdlib.h>
#include <string.h>

#include <starpu_mpi.h>

#include <strata/starpu.h>

#include "codelets.h"
#include "gindexer.h"
#include "gindexer_impl.h"
#include "internal/runtime.h"

/* Checks a counts array of n int64 entries, each >= 0, describing `data`,
 * and returns their prefix sums in *displ (n + 1 entries); local result. */
static int read_counts(strata_array *counts, int64_t n, strata_array *data, int64_t **displ)
{
  *displ = NULL;
  if (!counts || !data)
    return STRATA_EINVAL;
  if (strata_array_dtype(counts) != STRATA_INT64)
    return STRATA_ETYPE;
  if (strata_array_nelems(counts) != n)
    return STRATA_EINVAL;
  int64_t *d = malloc((size_t)(n + 1) * sizeof *d);
  const int64_t *c = NULL;
  if (!d)
    return STRATA_ENOMEM;
  int ret = strata_array_acquire(counts, STRATA_READ, (void **)&c);
  d[0] = 0;
  for (int64_t i = 0; i < n && !ret; i++)
    if (c[i] < 0)
      ret = STRATA_EINVAL;
    else
      d[i + 1] = d[i] + c[i];
  if (c)
    strata_array_release(counts);
  if (!ret && d[n] != strata_array_nelems(data))
    ret = STRATA_EINVAL;
  if (ret)
    free(d);
  else
    *displ = d;
  return ret;
}

/* A list of segments (source offset, destination offset, length) filled
 * on the host into an exchange buffer: a StarPU handle for the copy
 * codelet. It reserves the most segments it can get; the unused tail is
 * zeroed (empty segments) before the copy. */
struct segments {
  starpu_data_handle_t handle;
  int64_t (*seg)[3];
  int64_t n, capacity;
};

static int segments_reserve(strata_gindexer *gi, struct segments *s, int64_t capacity)
{
  *s = (struct segments){.capacity = capacity};
  if (capacity == 0)
    return 0;
  s->seg = strata__gi_buffer(gi, capacity, sizeof *s->seg, &s->handle);
  return s->seg ? 0 : STRATA_ENOMEM;
}

static void segments_add(struct segments *s, int64_t from, int64_t to, int64_t len)
{
  if (len > 0) {
    s->seg[s->n][0] = from;
    s->seg[s->n][1] = to;
    s->seg[s->n][2] = len;
    s->n++;
  }
}

static int segments_copy(struct segments *s, starpu_data_handle_t src, starpu_data_handle_t dst,
                         size_t item, int partial)
{
  if (s->n == 0)
    return 0;
  memset(s->seg + s->n, 0, (size_t)(s->capacity - s->n) * sizeof *s->seg);
  return strata__gindexer_segments_submit(src, s->handle, dst, item, partial);
}

/* Per-rank totals of consecutive blocks: blocks [at, at + rows[r]) of
 * lengths len(k) go to (or come from) rank r. */
static void per_rank(const strata_gindexer *gi, const int64_t *rows, const int64_t *len,
                     const int64_t *map, int64_t *items)
{
  for (int r = 0, k = 0; r < gi->size; r++) {
    items[r] = 0;
    for (int64_t e = k + rows[r]; k < e; k++)
      items[r] += len[map ? map[k] : k];
  }
}

/* Take_v's copies. Owner: incoming request k reads its owned block into
 * the outbox. Requester: the inbox holds the blocks in owner-sorted order;
 * request p's block goes to at[p] in its list's output. */
static void take_v_segments(const strata_gindexer *gi, const int64_t *displ, const int64_t *len,
                            const int64_t *at, struct segments *pack, struct segments *unpack)
{
  for (int64_t k = 0, to = 0; k < gi->nin; k++) {
    int64_t i = gi->local[k], own = displ[i + 1] - displ[i];
    segments_add(pack, displ[i], to, own);
    to += own;
  }
  for (int64_t j = 0, from = 0; j < gi->n_idx; j++) {
    int64_t p = gi->inverse[j];
    segments_add(&unpack[strata__gi_list_of(gi, p)], from, at[p], len[p]);
    from += len[p];
  }
}

static int take_v(strata_gindexer *gi, strata_array *dist_counts, strata_array *dist_data,
                  strata_array **out_counts, strata_array **out_data, unsigned flags)
{
  int ret = strata__check_ready();
  if (ret || !gi)
    return ret ? ret : STRATA_EINVAL;
  strata__gi_reclaim_done(gi);
  int n = gi->n_lists, size = gi->size;
  int local =
      dist_data && ((out_counts && out_data) || n == 0) && (n == 1 || !(flags & STRATA__GI_SINGLE))
          ? 0
          : STRATA_EINVAL;
  int64_t dtype = local ? -1 : strata_array_dtype(dist_data);
  for (int l = 0; l < n && !local; l++)
    if (out_data[l] && strata_array_dtype(out_data[l]) != (int)dtype)
      local = STRATA_ETYPE;
  int64_t *displ = NULL; /* the owned blocks */
  if (!local)
    local = read_counts(dist_counts, gi->dn, dist_data, &displ);
  strata_dtype type;
  if ((ret = strata__gi_agree(gi, local, 1, dtype, &type, NULL))) {
    free(displ);
    return strata__fail(ret, "gindexer take_v: bad counts, sizes or types");
  }
  /* Counts phase: every requester learns its blocks' lengths. */
  char *made = calloc((size_t)n + 1, 2);
  for (int l = 0; made && l < n; l++)
    made[l] = out_counts[l] == NULL;
  if ((ret = strata__gi_take(gi, dist_counts, 1, out_counts, STRATA__GI_WAIT)) || !made) {
    free(made);
    free(displ);
    return ret ? ret : STRATA_ENOMEM; /* a failed take agreed, freed its outputs */
  }
  /* Lengths of the requests in request order, then per-rank totals. */
  int64_t *len = malloc((size_t)(gi->n_idx + 1) * sizeof *len);
  int64_t *at = calloc((size_t)gi->n_idx + 1, sizeof *at); /* offset in its list's output */
  int64_t *out_items = calloc((size_t)size * 2, sizeof *out_items), *in_items = out_items + size;
  int64_t *own_len = malloc((size_t)(gi->dn + 1) * sizeof *own_len);
  local = len && at && out_items && own_len ? 0 : STRATA_ENOMEM;
  for (int l = 0; l < n && !local; l++) {
    const int64_t *c;
    if ((local = strata_array_acquire(out_counts[l], STRATA_READ, (void **)&c)))
      break;
    int64_t off = gi->list_off[l], sum = 0;
    for (int64_t q = 0; q < strata__gi_list_size(gi, l); q++) {
      len[off + q] = c[q];
      at[off + q] = sum;
      sum += c[q];
    }
    strata_array_release(out_counts[l]);
    if (out_data[l] && strata_array_nelems(out_data[l]) != sum)
      local = STRATA_EINVAL;
    else if (!out_data[l] && !(local = strata_array_create(1, &sum, type, &out_data[l])))
      made[n + l] = 1;
  }
  for (int64_t i = 0; !local && i < gi->dn; i++)
    own_len[i] = displ[i + 1] - displ[i];
  struct segments pack = {0}, *unpack = calloc((size_t)n + 1, sizeof *unpack);
  struct strata__gi_mailbox outbox = {0}, inbox = {0};
  size_t item = strata_dtype_size(type);
  if (!local && !unpack)
    local = STRATA_ENOMEM;
  if (!local) {
    per_rank(gi, gi->recv_counts, own_len, gi->local, out_items);
    per_rank(gi, gi->send_counts, len, gi->inverse, in_items);
    int64_t nout = 0, nin = 0;
    for (int r = 0; r < size; r++) {
      nout += out_items[r];
      nin += in_items[r];
    }
    local = strata__gi_open(gi, out_items, nout, in_items, nin, item, &outbox, &inbox);
    if (!local)
      local = segments_reserve(gi, &pack, gi->nin);
    for (int l = 0; l < n && !local; l++)
      local = segments_reserve(gi, &unpack[l], strata__gi_list_size(gi, l));
    if (!local)
      take_v_segments(gi, displ, len, at, &pack, unpack);
  }
  if ((ret = strata__agree_on(gi->comm, local, NULL, 0))) {
    strata__gi_close(&outbox);
  } else {
    ret = segments_copy(&pack, strata_array_handle(dist_data), outbox.whole, item, 0);
    if (!ret)
      ret = strata__gi_post(gi, &outbox, out_items, &inbox, in_items);
    for (int l = 0; l < n && !ret; l++)
      ret = segments_copy(&unpack[l], inbox.whole, strata_array_handle(out_data[l]), item, 0);
  }
  strata__gi_close(&inbox);
  if (ret) {
    strata__gi_unmake(out_counts, made, n);
    strata__gi_unmake(out_data, made + n, n);
  }
  free(made);
  free(unpack);
  free(displ);
  free(len);
  free(at);
  free(out_items);
  free(own_len);
  return strata__gi_finish(gi, flags, out_data, n, ret);
}

/* Put_v, owner side: the length of every owned block after the put, and
 * where the initial blocks and the incoming ones land in the output. */
struct put_v_plan {
  strata_put_rule rule;
  int extend;
  const int64_t *init;  /* initial displacements (dn + 1), or NULL */
  const int64_t *inlen; /* incoming block lengths (nin) */
  int64_t *inoff;       /* their offsets in the inbox (nin) */
  int64_t *counts;      /* new counts (dn) */
};

static int64_t put_v_counts(const strata_gindexer *gi, struct put_v_plan *v)
{
  int64_t total = 0;
  for (int64_t k = 0, off = 0; k < gi->nin; k++) {
    v->inoff[k] = off;
    off += v->inlen[k];
  }
  for (int64_t i = 0; i < gi->dn; i++) {
    int64_t lo = gi->csr[i], hi = gi->csr[i + 1];
    int64_t c = v->init ? v->init[i + 1] - v->init[i] : 0;
    if (v->extend)
      for (int64_t j = lo; j < hi; j++)
        c += v->inlen[gi->req[j]];
    else if (lo < hi)
      c = v->inlen[gi->req[v->rule == STRATA_PUT_LAST ? hi - 1 : lo]];
    v->counts[i] = c;
    total += c;
  }
  return total;
}

/* Put_v's copies. Sender: request p's block (at start[p] in its list's
 * values) goes to the outbox in owner-sorted order. Owner: the kept
 * initial blocks and the written ones land in the new data. */
static void put_v_segments(const strata_gindexer *gi, const struct put_v_plan *v,
                           const int64_t *start, const int64_t *len, struct segments *pack,
                           struct segments *from_init, struct segments *from_inbox)
{
  for (int64_t j = 0, to = 0; j < gi->n_idx; j++) {
    int64_t p = gi->inverse[j];
    segments_add(&pack[strata__gi_list_of(gi, p)], start[p], to, len[p]);
    to += len[p];
  }
  for (int64_t i = 0, to = 0; i < gi->dn; to += v->counts[i], i++) {
    int64_t lo = gi->csr[i], hi = gi->csr[i + 1], at = to;
    if (v->init && (v->extend || lo == hi)) {
      segments_add(from_init, v->init[i], at, v->init[i + 1] - v->init[i]);
      at += v->init[i + 1] - v->init[i];
    }
    if (!v->extend && lo < hi) { /* only the winner's block */
      lo = v->rule == STRATA_PUT_LAST ? hi - 1 : lo;
      hi = lo + 1;
    }
    for (int64_t j = lo; j < hi; j++) {
      int64_t k = gi->req[j];
      segments_add(from_inbox, v->inoff[k], at, v->inlen[k]);
      at += v->inlen[k];
    }
  }
}

/* The counts phase of Put_v: each request's length travels to its owner,
 * whose host reads them (nin int64 in *inlen, malloc'd). */
static int put_v_send_counts(strata_gindexer *gi, strata_array *const *counts, int64_t **inlen)
{
  struct strata__gi_mailbox outbox = {0}, inbox = {0};
  *inlen = malloc((size_t)(gi->nin + 1) * sizeof **inlen);
  int ret = *inlen ? strata__gi_open(gi, gi->send_counts, gi->n_idx, gi->recv_counts, gi->nin,
                                     sizeof(int64_t), &outbox, &inbox)
                   : STRATA_ENOMEM;
  if ((ret = strata__agree_on(gi->comm, ret, NULL, 0))) {
    strata__gi_close(&outbox);
    strata__gi_close(&inbox);
    free(*inlen);
    *inlen = NULL;
    return ret;
  }
  ret = strata__gi_pack_parts(gi, counts, outbox.whole, sizeof(int64_t));
  if (!ret)
    ret = strata__gi_post(gi, &outbox, gi->send_counts, &inbox, gi->recv_counts);
  if (!ret && inbox.whole) {
    if (strata__acquire(inbox.whole, STARPU_R) == 0) {
      memcpy(*inlen, (void *)starpu_vector_get_local_ptr(inbox.whole),
             (size_t)gi->nin * sizeof **inlen);
      starpu_data_release(inbox.whole);
    } else {
      ret = STRATA_ESTARPU;
    }
  }
  strata__gi_close(&inbox);
  return ret;
}

static int put_v(strata_gindexer *gi, strata_array *const *counts, strata_array *const *values,
                 strata_put_rule rule, int extend, strata_array *init_counts,
                 strata_array *init_data, strata_array **out_counts, strata_array **out_data,
                 unsigned flags)
{
  int ret = strata__check_ready();
  if (ret || !gi)
    return ret ? ret : STRATA_EINVAL;
  strata__gi_reclaim_done(gi);
  int n = gi->n_lists;
  int local = ((counts && values) || n == 0) && out_counts && out_data && !*out_counts &&
                      !*out_data && (rule == STRATA_PUT_LAST || rule == STRATA_PUT_FIRST) &&
                      !init_counts == !init_data && (n == 1 || !(flags & STRATA__GI_SINGLE))
                  ? 0
                  : STRATA_EINVAL;
  int64_t dtype = local || !init_data ? -1 : strata_array_dtype(init_data);
  int64_t *start = malloc((size_t)(gi->n_idx + 1) * sizeof *start); /* in its list's values */
  int64_t *len = malloc((size_t)(gi->n_idx + 1) * sizeof *len), *init = NULL;
  if (!local && (!start || !len))
    local = STRATA_ENOMEM;
  for (int l = 0; l < n && !local; l++) {
    int64_t *d, off = gi->list_off[l];
    if ((local = read_counts(counts[l], strata__gi_list_size(gi, l), values[l], &d)))
      break;
    for (int64_t q = 0; q < strata__gi_list_size(gi, l); q++) {
      start[off + q] = d[q];
      len[off + q] = d[q + 1] - d[q];
    }
    free(d);
    if (dtype >= 0 && strata_array_dtype(values[l]) != (int)dtype)
      local = STRATA_ETYPE;
    dtype = strata_array_dtype(values[l]);
  }
  if (!local && init_counts)
    local = read_counts(init_counts, gi->dn, init_data, &init);
  strata_dtype type;
  int64_t key = extend ? 2 + (int64_t)rule : (int64_t)rule; /* the same everywhere */
  if ((ret = strata__gi_agree(gi, local, key, dtype, &type, NULL))) {
    free(start);
    free(len);
    free(init);
    return strata__fail(ret, "gindexer put_v: bad counts, sizes, rule or types");
  }
  struct put_v_plan plan = {.rule = rule, .extend = extend != 0, .init = init};
  int64_t *inlen = NULL;
  if ((ret = put_v_send_counts(gi, counts, &inlen))) {
    free(start);
    free(len);
    free(init);
    return ret;
  }
  plan.inlen = inlen;
  plan.inoff = malloc((size_t)(gi->nin + 1) * sizeof *plan.inoff);
  int64_t *out_items = calloc((size_t)gi->size * 2, sizeof *out_items),
          *in_items = out_items ? out_items + gi->size : NULL;
  local = plan.inoff && out_items ? 0 : STRATA_ENOMEM;
  int64_t *new_counts = NULL, total = 0;
  if (!local && !(local = strata_array_create(1, &gi->dn, STRATA_INT64, out_counts)) &&
      !(local = strata_array_acquire(*out_counts, STRATA_WRITE, (void **)&new_counts))) {
    plan.counts = new_counts;
    total = put_v_counts(gi, &plan);
    local = strata_array_create(1, &total, type, out_data);
  }
  struct segments *pack = calloc((size_t)n + 1, sizeof *pack), from_init = {0}, from_inbox = {0};
  struct strata__gi_mailbox outbox = {0}, inbox = {0};
  size_t item = strata_dtype_size(type);
  if (!local && !pack)
    local = STRATA_ENOMEM;
  if (!local) {
    per_rank(gi, gi->send_counts, len, gi->inverse, out_items);
    per_rank(gi, gi->recv_counts, inlen, NULL, in_items);
    int64_t nout = 0, nin = 0;
    for (int r = 0; r < gi->size; r++) {
      nout += out_items[r];
      nin += in_items[r];
    }
    local = strata__gi_open(gi, out_items, nout, in_items, nin, item, &outbox, &inbox);
    for (int l = 0; l < n && !local; l++)
      local = segments_reserve(gi, &pack[l], strata__gi_list_size(gi, l));
    if (!local)
      local = segments_reserve(gi, &from_init, init ? gi->dn : 0);
    if (!local)
      local = segments_reserve(gi, &from_inbox, gi->nin);
    if (!local)
      put_v_segments(gi, &plan, start, len, pack, &from_init, &from_inbox);
  }
  if (new_counts)
    strata_array_release(*out_counts);
  if ((ret = strata__agree_on(gi->comm, local, NULL, 0))) {
    strata__gi_close(&outbox);
  } else {
    int partial = n > 1;
    for (int l = 0; l < n && !ret; l++)
      ret = segments_copy(&pack[l], strata_array_handle(values[l]), outbox.whole, item, partial);
    if (!ret)
      ret = strata__gi_post(gi, &outbox, out_items, &inbox, in_items);
    partial = from_init.n > 0 && from_inbox.n > 0;
    if (!ret && init)
      ret = segments_copy(&from_init, strata_array_handle(init_data),
                          strata_array_handle(*out_data), item, partial);
    if (!ret)
      ret = segments_copy(&from_inbox, inbox.whole, strata_array_handle(*out_data), item, partial);
  }
  strata__gi_close(&inbox);
  if (ret) {
    strata__gi_unmake(out_counts, "\1", 1);
    strata__gi_unmake(out_data, "\1", 1);
  }
  free(pack);
  free(start);
  free(len);
  free(init);
  free(inlen);
  free(plan.inoff);
  free(out_items);
  return strata__gi_finish(gi, flags, out_data, 1, ret);
}

int strata_gindexer_take_v(strata_gindexer *gi, strata_array *dist_counts, strata_array *dist_data,
                           strata_array **out_counts, strata_array **out_data)
{
  strata__clear_error();
  return take_v(gi, dist_counts, dist_data, out_counts, out_data,
                STRATA__GI_WAIT | STRATA__GI_SINGLE);
}

int strata_gindexer_take_v_submit(strata_gindexer *gi, strata_array *dist_counts,
                                  strata_array *dist_data, strata_array **out_counts,
                                  strata_array **out_data)
{
  strata__clear_error();
  return take_v(gi, dist_counts, dist_data, out_counts, out_data, STRATA__GI_SINGLE);
}

int strata_gmindexer_take_v(strata_gindexer *gi, strata_array *dist_counts, strata_array *dist_data,
                            strata_array **out_counts, strata_array **out_data)
{
  strata__clear_error();
  return take_v(gi, dist_counts, dist_data, out_counts, out_data, STRATA__GI_WAIT);
}

int strata_gindexer_put_v(strata_gindexer *gi, strata_array *counts, strata_array *values,
                          strata_put_rule rule, int extend, strata_array *init_counts,
                          strata_array *init_data, strata_array **out_counts,
                          strata_array **out_data)
{
  strata__clear_error();
  return put_v(gi, &counts, &values, rule, extend, init_counts, init_data, out_counts, out_data,
               STRATA__GI_WAIT | STRATA__GI_SINGLE);
}

int strata_gindexer_put_v_submit(strata_gindexer *gi, strata_array *counts, strata_array *values,
                                 strata_put_rule rule, int extend, strata_array *init_counts,
                                 strata_array *init_data, strata_array **out_counts,
                                 strata_array **out_data)
{
  strata__clear_error();
  return put_v(gi, &counts, &values, rule, extend, init_counts, init_data, out_counts, out_data,
               STRATA__GI_SINGLE);
}

int strata_gmindexer_put_v(strata_gindexer *gi, strata_array *const *counts,
                           strata_array *const *values, strata_put_rule rule, int extend,
                           strata_array *init_counts, strata_array *init_data,
                           strata_array **out_counts, strata_array **out_data)
{
  strata__clear_error();
  return put_v(gi, counts, values, rule, extend, init_counts, init_data, out_counts, out_data,
               STRATA__GI_WAIT);
}
