/* The global indexer's variable-size exchanges, Take_v and Put_v
 * (include/strata/gindexer.h).
 *
 * An item is a block of counts[i] elements. The counts go first, as a
 * fixed-size exchange of one int64 per request; the host then reads them,
 * because the receivers' buffers must be sized before the data can move.
 * The data moves as a second exchange whose pack and unpack are block
 * copies (strata__gindexer_blocks_submit): where a block starts in its
 * source comes from prefix sums of the counts, where it lands from one
 * offset per copied block. The host computes both in sequential passes;
 * the protocol's maps name the blocks. */
#include <stdlib.h>
#include <string.h>

#include <starpu_mpi.h>

#include <strata/starpu.h>

#include "codelets.h"
#include "gindexer.h"
#include "gindexer_impl.h"
#include "internal/runtime.h"

/* Checks a counts array of n int64 entries, each >= 0, describing `data`,
 * and writes their prefix sums to displ (n + 1 entries) unless it is
 * NULL; local result. */
static int read_counts(strata_array *counts, int64_t n, strata_array *data, int64_t *displ)
{
  if (!counts || !data)
    return STRATA_EINVAL;
  if (strata_array_dtype(counts) != STRATA_INT64)
    return STRATA_ETYPE;
  if (strata_array_nelems(counts) != n)
    return STRATA_EINVAL;
  const int64_t *c = NULL;
  int ret = strata_array_acquire(counts, STRATA_READ, (void **)&c);
  int64_t sum = 0;
  for (int64_t i = 0; i < n && !ret; i++) {
    if (displ)
      displ[i] = sum;
    if (c[i] < 0)
      ret = STRATA_EINVAL;
    sum += c[i];
  }
  if (displ)
    displ[n] = sum;
  if (c)
    strata_array_release(counts);
  if (!ret && sum != strata_array_nelems(data))
    ret = STRATA_EINVAL;
  return ret;
}

/* n int64 (n > 0) registered in *h for the copy tasks and freed with the
 * exchange's buffers; NULL when out of memory. */
static int64_t *index_buffer(strata_gindexer *gi, int64_t n, starpu_data_handle_t *h)
{
  *h = NULL;
  return strata__gi_buffer(gi, n, sizeof(int64_t), h);
}

/* Item totals of the consecutive row ranges of rows[r] rows each (one
 * range per rank), from the rows' prefix sums. */
static void per_rank(const strata_gindexer *gi, const int64_t *rows, const int64_t *prefix,
                     int64_t *items)
{
  int64_t k = 0;
  for (int r = 0; r < gi->size; k += rows[r], r++)
    items[r] = prefix[k + rows[r]] - prefix[k];
}

/* The counts phase: one int64 per request moves like a fixed Take (owner
 * to requester, `take`) or Put (requester to owner); the host then reads
 * both mailboxes in place: what this rank sent (`sent`, in the order it
 * packed) and what it received (`received`, by source rank). */
struct counts_phase {
  starpu_data_handle_t out, in;
  const int64_t *sent, *received;
};

/* Collective; the pack reads dist_counts (take) or each list's counts. */
static int counts_post(strata_gindexer *gi, int take, strata_array *dist_counts,
                       strata_array *const *counts, struct counts_phase *c)
{
  const int64_t *out_rows = take ? gi->recv_counts : gi->send_counts,
                *in_rows = take ? gi->send_counts : gi->recv_counts;
  struct strata__gi_mailbox outbox = {0}, inbox = {0};
  *c = (struct counts_phase){0};
  int ret = strata__gi_open(gi, out_rows, take ? gi->nin : gi->n_idx, in_rows,
                            take ? gi->n_idx : gi->nin, sizeof(int64_t), &outbox, &inbox);
  if ((ret = strata__agree_on(gi->comm, ret, NULL, 0))) {
    strata__gi_close(&outbox);
    strata__gi_close(&inbox);
    return ret;
  }
  c->out = outbox.whole;
  c->in = inbox.whole;
  if (!take)
    ret = strata__gi_pack_parts(gi, counts, outbox.whole, sizeof(int64_t));
  else if (outbox.whole)
    ret = strata__gindexer_gather_submit(strata_array_handle(dist_counts), gi->h_local,
                                         outbox.whole, sizeof(int64_t), 1);
  if (!ret)
    ret = strata__gi_post(gi, &outbox, out_rows, &inbox, in_rows);
  strata__gi_close(&inbox);
  return ret;
}

/* Wait for the counts and read them in place (until counts_release). */
static int counts_read(struct counts_phase *c)
{
  static const int64_t none[1];
  c->sent = c->received = none;
  if (c->out && strata__acquire(c->out, STARPU_R) != 0)
    c->out = c->in = NULL;
  else if (c->in && strata__acquire(c->in, STARPU_R) != 0) {
    starpu_data_release(c->out);
    c->out = c->in = NULL;
  } else {
    if (c->out)
      c->sent = (const int64_t *)starpu_vector_get_local_ptr(c->out);
    if (c->in)
      c->received = (const int64_t *)starpu_vector_get_local_ptr(c->in);
    return 0;
  }
  return STRATA_ESTARPU;
}

static void counts_release(struct counts_phase *c)
{
  if (c->out)
    starpu_data_release(c->out);
  if (c->in)
    starpu_data_release(c->in);
  *c = (struct counts_phase){0};
}

/* Take_v's outputs before the exchange: out_counts[l] given with the list's
 * size (int64) or made, out_data[l] given with the agreed type; local. */
static int take_v_outputs(strata_gindexer *gi, strata_array **out_counts, strata_array **out_data,
                          int64_t dtype, char *made)
{
  for (int l = 0; l < gi->n_lists; l++) {
    if (out_data[l] && strata_array_dtype(out_data[l]) != (int)dtype)
      return STRATA_ETYPE;
    if (out_counts[l] && strata_array_dtype(out_counts[l]) != STRATA_INT64)
      return STRATA_ETYPE;
    if (out_counts[l] && strata_array_nelems(out_counts[l]) != strata__gi_list_size(gi, l))
      return STRATA_EINVAL;
  }
  for (int l = 0; l < gi->n_lists; l++) {
    int64_t m = strata__gi_list_size(gi, l);
    if (!out_counts[l]) {
      int ret = strata_array_create(1, &m, STRATA_INT64, &out_counts[l]);
      if (ret)
        return ret;
      made[l] = 1;
    }
  }
  return 0;
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
  char *made = calloc((size_t)n + 1, 2); /* out_counts, then out_data */
  if (!local && !made)
    local = STRATA_ENOMEM;
  starpu_data_handle_t h_displ = NULL; /* the owned blocks */
  int64_t *displ = local ? NULL : index_buffer(gi, gi->dn + 1, &h_displ);
  if (!local)
    local = displ ? read_counts(dist_counts, gi->dn, dist_data, displ) : STRATA_ENOMEM;
  if (!local)
    local = take_v_outputs(gi, out_counts, out_data, dtype, made);
  strata_dtype type;
  struct counts_phase cp;
  if ((ret = strata__gi_agree(gi, local, 1, dtype, &type, NULL)) ||
      (ret = counts_post(gi, 1, dist_counts, NULL, &cp))) {
    if (made)
      strata__gi_unmake(out_counts, made, n);
    free(made);
    strata__gi_reclaim_done(gi);
    return strata__fail(ret, "gindexer take_v: bad counts, sizes or types");
  }
  for (int l = 0; l < n && !ret; l++) /* the requesters' counts, in request order */
    if (gi->h_order[l])
      ret = strata__gindexer_gather_submit(cp.in, gi->h_order[l],
                                           strata_array_handle(out_counts[l]), sizeof(int64_t), 0);
  if (ret) /* the counts are not read: nothing to release */
    cp = (struct counts_phase){0};
  local = ret ? ret : counts_read(&cp);
  /* Owner: where the requested blocks go in the outbox (outoff, in the
   * order the counts went). Requester: the inbox's prefix sums by source,
   * and each list's output offsets (at, with the list's total last). */
  int64_t *items = calloc((size_t)size * 2 + (size_t)n, sizeof *items);
  int64_t *out_items = items, *in_items = items + size, *list_items = items + 2 * size;
  starpu_data_handle_t *h_at = calloc((size_t)n + 1, sizeof *h_at), h_inoff, h_outoff;
  int64_t *inoff = local ? NULL : index_buffer(gi, gi->n_idx + 1, &h_inoff);
  int64_t *outoff = local ? NULL : index_buffer(gi, gi->nin + 1, &h_outoff);
  if (!local && (!items || !h_at || !inoff || !outoff))
    local = STRATA_ENOMEM;
  if (!local) {
    inoff[0] = outoff[0] = 0;
    for (int64_t k = 0; k < gi->nin; k++)
      outoff[k + 1] = outoff[k] + cp.sent[k];
    for (int64_t j = 0; j < gi->n_idx; j++)
      inoff[j + 1] = inoff[j] + cp.received[j];
    per_rank(gi, gi->recv_counts, outoff, out_items);
    per_rank(gi, gi->send_counts, inoff, in_items);
  }
  for (int l = 0; l < n && !local; l++) {
    int64_t m = strata__gi_list_size(gi, l), *order = gi->order + gi->list_off[l];
    int64_t *at = index_buffer(gi, m + 1, &h_at[l]);
    if (!at) {
      local = STRATA_ENOMEM;
      break;
    }
    at[0] = 0;
    for (int64_t q = 0; q < m; q++)
      at[q + 1] = at[q] + cp.received[order[q]];
    list_items[l] = at[m];
    if (out_data[l] && strata_array_nelems(out_data[l]) != at[m])
      local = STRATA_EINVAL;
    else if (!out_data[l] && !(local = strata_array_create(1, &at[m], type, &out_data[l])))
      made[n + l] = 1;
  }
  counts_release(&cp);
  struct strata__gi_mailbox outbox = {0}, inbox = {0};
  size_t item = strata_dtype_size(type);
  if (!local)
    local = strata__gi_open(gi, out_items, outoff[gi->nin], in_items, inoff[gi->n_idx], item,
                            &outbox, &inbox);
  if ((ret = strata__agree_on(gi->comm, local, NULL, 0))) {
    strata__gi_close(&outbox);
  } else {
    if (outbox.whole)
      ret = strata__gindexer_blocks_submit(strata_array_handle(dist_data), h_displ, gi->h_local,
                                           h_outoff, outbox.whole, gi->nin, item, 0);
    if (!ret)
      ret = strata__gi_post(gi, &outbox, out_items, &inbox, in_items);
    for (int l = 0; l < n && !ret; l++)
      if (list_items[l] > 0)
        ret = strata__gindexer_blocks_submit(inbox.whole, h_inoff, gi->h_order[l], h_at[l],
                                             strata_array_handle(out_data[l]),
                                             strata__gi_list_size(gi, l), item, 0);
  }
  strata__gi_close(&inbox);
  if (ret) {
    strata__gi_unmake(out_counts, made, n);
    strata__gi_unmake(out_data, made + n, n);
  }
  free(made);
  free(items);
  free(h_at);
  return strata__gi_finish(gi, flags, out_data, n, ret);
}

/* Put_v, owner side: the incoming block lengths (arrival order) and their
 * prefix sums in the inbox, and the initial blocks (prefix sums, or NULL). */
struct put_v_plan {
  strata_put_rule rule;
  int extend;
  const int64_t *init;  /* dn + 1, or NULL */
  const int64_t *inlen; /* nin */
  int64_t *inoff;       /* nin + 1 */
};

/* One pass over the owned indices: the new counts (their sum returned) and
 * the owner-side copies into the new data: the kept initial blocks (index
 * i, at kat) and the incoming blocks that stay (arrival k, at iat). An
 * incoming block's length is a random read behind a branch the CPU cannot
 * predict (whether the index was written); it is prefetched a stride ahead
 * along the requests so that the misses overlap (1e6 indices: 26 -> 9 ms). */
static int64_t put_v_place(const strata_gindexer *gi, const struct put_v_plan *v, int64_t *counts,
                           int64_t *kmap, int64_t *kat, int64_t *imap, int64_t *iat)
{
  enum { AHEAD = 16 };
  const int64_t *restrict csr = gi->csr, *restrict req = gi->req, *restrict inlen = v->inlen,
                          *restrict init = v->init;
  const int64_t dn = gi->dn, nin = gi->nin;
  const int extend = v->extend, last = v->rule == STRATA_PUT_LAST;
  int64_t *restrict inoff = v->inoff, to = 0;
  inoff[0] = 0;
  for (int64_t k = 0; k < nin; k++)
    inoff[k + 1] = inoff[k] + inlen[k];
  if (!init && !extend && nin > 0) { /* branch-free: imap and iat have one spare entry */
    int64_t r = 0;
    for (int64_t i = 0; i < dn; i++) {
      int64_t lo = csr[i], hi = csr[i + 1];
      if (lo + AHEAD < nin)
        __builtin_prefetch(&inlen[req[lo + AHEAD]]);
      int has = lo < hi;
      int64_t k = req[has ? (last ? hi - 1 : lo) : 0];
      int64_t len = has ? inlen[k] : 0;
      imap[r] = k;
      iat[r] = to;
      r += has;
      counts[i] = len;
      to += len;
    }
    return to;
  }
  for (int64_t i = 0; i < dn; i++) {
    int64_t lo = csr[i], hi = csr[i + 1], at = to;
    if (lo + AHEAD < nin)
      __builtin_prefetch(&inlen[req[lo + AHEAD]]);
    if (init && (extend || lo == hi)) {
      *kmap++ = i;
      *kat++ = at;
      at += init[i + 1] - init[i];
    }
    if (!extend && lo < hi) { /* only the winner's block */
      lo = last ? hi - 1 : lo;
      hi = lo + 1;
    }
    for (int64_t j = lo; j < hi; j++) {
      *imap++ = req[j];
      *iat++ = at;
      at += inlen[req[j]];
    }
    counts[i] = at - to;
    to = at;
  }
  return to;
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
  /* Requester: each list's blocks (prefix sums) and totals. */
  int64_t *list_items = calloc((size_t)n + 1, sizeof *list_items), *init = NULL;
  starpu_data_handle_t *h_start = calloc((size_t)n + 1, sizeof *h_start), h_init = NULL;
  if (!local && (!list_items || !h_start))
    local = STRATA_ENOMEM;
  for (int l = 0; l < n && !local; l++) {
    int64_t m = strata__gi_list_size(gi, l), *d = index_buffer(gi, m + 1, &h_start[l]);
    if (!d || (local = read_counts(counts[l], m, values[l], d))) {
      local = local ? local : STRATA_ENOMEM;
      break;
    }
    list_items[l] = d[m];
    if (dtype >= 0 && strata_array_dtype(values[l]) != (int)dtype)
      local = STRATA_ETYPE;
    dtype = strata_array_dtype(values[l]);
  }
  if (!local && init_counts)
    local = (init = index_buffer(gi, gi->dn + 1, &h_init))
                ? read_counts(init_counts, gi->dn, init_data, init)
                : STRATA_ENOMEM;
  strata_dtype type;
  int64_t key = extend ? 2 + (int64_t)rule : (int64_t)rule; /* the same everywhere */
  struct counts_phase cp;
  if ((ret = strata__gi_agree(gi, local, key, dtype, &type, NULL)) ||
      (ret = counts_post(gi, 0, NULL, counts, &cp)) || (ret = counts_read(&cp))) {
    free(list_items);
    free(h_start);
    strata__gi_reclaim_done(gi);
    return strata__fail(ret, "gindexer put_v: bad counts, sizes, rule or types");
  }
  /* Requester: the outbox's prefix sums in owner order (what was sent),
   * and each request's place there (`at` per list). */
  struct put_v_plan plan = {
      .rule = rule, .extend = extend != 0, .init = init, .inlen = cp.received};
  int64_t *sorted = malloc((size_t)(gi->n_idx + 1) * sizeof *sorted);
  int64_t *items = calloc((size_t)gi->size * 2, sizeof *items);
  int64_t *out_items = items, *in_items = items ? items + gi->size : NULL;
  starpu_data_handle_t *h_at = calloc((size_t)n + 1, sizeof *h_at), h_inoff = NULL;
  plan.inoff = index_buffer(gi, gi->nin + 1, &h_inoff);
  local = sorted && items && h_at && plan.inoff ? 0 : STRATA_ENOMEM;
  if (!local) {
    sorted[0] = 0;
    for (int64_t j = 0; j < gi->n_idx; j++)
      sorted[j + 1] = sorted[j] + cp.sent[j];
    per_rank(gi, gi->send_counts, sorted, out_items);
  }
  for (int l = 0; l < n && !local; l++) {
    int64_t m = strata__gi_list_size(gi, l), *at;
    if (list_items[l] == 0)
      continue;
    if (!(at = index_buffer(gi, m, &h_at[l]))) {
      local = STRATA_ENOMEM;
      break;
    }
    for (int64_t q = 0; q < m; q++)
      at[q] = sorted[gi->order[gi->list_off[l] + q]];
  }
  /* Owner: the new counts and data, and where each kept block lands. */
  int64_t nkept = !init ? 0 : extend ? gi->dn : gi->dn - gi->requested;
  int64_t nstay = extend ? gi->nin : gi->requested, *new_counts = NULL, total = 0;
  starpu_data_handle_t h_kmap = NULL, h_kat = NULL, h_imap = NULL, h_iat = NULL;
  int64_t *kmap = NULL, *kat = NULL, *imap = NULL, *iat = NULL;
  if (!local && nkept > 0 &&
      (!(kmap = index_buffer(gi, nkept, &h_kmap)) || !(kat = index_buffer(gi, nkept, &h_kat))))
    local = STRATA_ENOMEM;
  if (!local && nstay > 0 &&
      (!(imap = index_buffer(gi, nstay + 1, &h_imap)) ||
       !(iat = index_buffer(gi, nstay + 1, &h_iat))))
    local = STRATA_ENOMEM;
  if (!local && !(local = strata_array_create(1, &gi->dn, STRATA_INT64, out_counts)) &&
      !(local = strata_array_acquire(*out_counts, STRATA_WRITE, (void **)&new_counts))) {
    total = put_v_place(gi, &plan, new_counts, kmap, kat, imap, iat);
    per_rank(gi, gi->recv_counts, plan.inoff, in_items);
    strata_array_release(*out_counts);
    local = strata_array_create(1, &total, type, out_data);
  }
  counts_release(&cp);
  struct strata__gi_mailbox outbox = {0}, inbox = {0};
  size_t item = strata_dtype_size(type);
  if (!local)
    local = strata__gi_open(gi, out_items, sorted[gi->n_idx], in_items, plan.inoff[gi->nin], item,
                            &outbox, &inbox);
  if ((ret = strata__agree_on(gi->comm, local, NULL, 0))) {
    strata__gi_close(&outbox);
  } else {
    for (int l = 0; l < n && !ret; l++)
      if (list_items[l] > 0)
        ret = strata__gindexer_blocks_submit(strata_array_handle(values[l]), h_start[l], NULL,
                                             h_at[l], outbox.whole, strata__gi_list_size(gi, l),
                                             item, n > 1);
    if (!ret)
      ret = strata__gi_post(gi, &outbox, out_items, &inbox, in_items);
    int from_init = nkept > 0 && init[gi->dn] > 0, from_inbox = nstay > 0 && inbox.whole;
    if (!ret && from_init)
      ret = strata__gindexer_blocks_submit(strata_array_handle(init_data), h_init, h_kmap, h_kat,
                                           strata_array_handle(*out_data), nkept, item, from_inbox);
    if (!ret && from_inbox)
      ret = strata__gindexer_blocks_submit(inbox.whole, h_inoff, h_imap, h_iat,
                                           strata_array_handle(*out_data), nstay, item, from_init);
  }
  strata__gi_close(&inbox);
  if (ret) {
    strata__gi_unmake(out_counts, "\1", 1);
    strata__gi_unmake(out_data, "\1", 1);
  }
  free(list_items);
  free(h_start);
  free(sorted);
  free(items);
  free(h_at);
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
