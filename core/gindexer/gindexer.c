/* The global indexer (include/strata/gindexer.h).
 *
 * Creation (MPI collectives, once): the requested indices are sorted by
 * global index (so by owner; stable, so an index's requests from one rank
 * stay in their order), the counts and the sorted indices are exchanged
 * with MPI_Alltoall(v), and the owner lists its requests per owned index
 * (CSR, in writer order: source rank, then position). The maps become StarPU
 * handles so that the codelets find them on any worker, GPUs included.
 *
 * A multi-list indexer concatenates its lists (list order, then position),
 * so writers are ordered by rank, list and position.
 *
 * An exchange (tasks only): a gather or scatter packs the rows to send into
 * one buffer, partitioned by destination rank; each non-empty part travels
 * as one StarPU-MPI message (a local copy for the rank itself) into the
 * receiver's buffer, partitioned by source; a gather (Take) or the apply
 * codelet (Put) unpacks it. */
#include <stdlib.h>
#include <string.h>

#include <starpu_mpi.h>

#include <strata/starpu.h>

#include "codelets.h"
#include "gindexer.h"
#include "gindexer_impl.h"
#include "internal/runtime.h"
#include "kernels/gindexer_kernels.h"

/* Exchange buffers are host memory registered at home (partition plans
 * need the parent allocated); they are freed once their tasks are done: at
 * the end of a blocking exchange, at the start of the next exchange after
 * non-blocking ones, when an exchange fails, and at destroy. */
struct strata__gi_buffer {
  starpu_data_handle_t handle;
  void *mem;
  size_t bytes;
  int64_t exchange; /* the message exchange it belongs to (tag slot reuse) */
  struct strata__gi_buffer *next;
};

/* A registered buffer of n elements for exchange gi->exchanges, on no list. */
static struct strata__gi_buffer *buffer_new(strata_gindexer *gi, int64_t n, size_t elem)
{
  struct strata__gi_buffer *b = malloc(sizeof *b);
  void *mem = NULL;
  if (!b || strata__host_alloc(&mem, (size_t)n * elem) != 0) {
    free(b);
    return NULL;
  }
  *b = (struct strata__gi_buffer){NULL, mem, (size_t)n * elem, gi->exchanges, NULL};
  starpu_vector_data_register(&b->handle, STARPU_MAIN_RAM, (uintptr_t)mem, (uint32_t)n, elem);
  return b;
}

static void buffer_free(struct strata__gi_buffer *b)
{
  strata__unregister(b->handle); /* waits for its tasks and its plan's cleaning */
  strata__host_free(b->mem, b->bytes);
  free(b);
}

/* On the pending list: freed once its exchange is done (reclaim_if). */
static void buffer_pend(strata_gindexer *gi, struct strata__gi_buffer *b)
{
  b->next = gi->pending;
  gi->pending = b;
}

void *strata__gi_buffer(strata_gindexer *gi, int64_t n, size_t elem, starpu_data_handle_t *h)
{
  struct strata__gi_buffer *b = buffer_new(gi, n, elem);
  if (!b)
    return NULL;
  buffer_pend(gi, b);
  *h = b->handle;
  return b->mem;
}

/* Free the buffers `done` says to: unregistering waits for their tasks. */
static void reclaim_if(strata_gindexer *gi, int (*done)(struct strata__gi_buffer *, int64_t),
                       int64_t arg)
{
  for (struct strata__gi_buffer **at = &gi->pending; *at;) {
    struct strata__gi_buffer *b = *at;
    if (!done(b, arg)) {
      at = &b->next;
      continue;
    }
    *at = b->next;
    buffer_free(b);
  }
}

static int any_buffer(struct strata__gi_buffer *b, int64_t arg) { return (void)b, (void)arg, 1; }

static int tasks_done(struct strata__gi_buffer *b, int64_t arg)
{
  (void)arg;
  if (starpu_data_acquire_try(b->handle, STARPU_W) != 0)
    return 0;
  starpu_data_release(b->handle);
  return 1;
}

static int exchange_before(struct strata__gi_buffer *b, int64_t exchange)
{
  return b->exchange <= exchange;
}

void strata__gi_reclaim(strata_gindexer *gi) { reclaim_if(gi, any_buffer, 0); }

void strata__gi_reclaim_done(strata_gindexer *gi) { reclaim_if(gi, tasks_done, 0); }

/* The protocol's maps never change after create: no task writes them, so
 * StarPU need not order their readers (it would keep a record of every
 * exchange's reader until a writer that never comes). */
static starpu_data_handle_t register_map(int64_t *v, int64_t n)
{
  starpu_data_handle_t h = NULL;
  if (n > 0) {
    starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)v, (uint32_t)n, sizeof *v);
    starpu_data_set_sequential_consistency_flag(h, 0);
  }
  return h;
}

static void free_maps(strata_gindexer *gi)
{
  starpu_data_handle_t hs[4] = {gi->h_local, gi->h_inverse, gi->h_csr, gi->h_req};
  for (int i = 0; i < 4; i++)
    if (hs[i])
      starpu_data_unregister(hs[i]);
  for (int l = 0; gi->h_order && l < gi->n_lists; l++)
    if (gi->h_order[l])
      starpu_data_unregister(gi->h_order[l]);
  free(gi->h_order);
  free(gi->list_off);
  free(gi->send_counts);
  free(gi->recv_counts);
  free(gi->local);
  free(gi->order);
  free(gi->inverse);
  free(gi->csr);
  free(gi->req);
}

/* Collective: `local` (this rank's argument check) and a well-formed
 * distribution that is the same everywhere (a digest agreed on). */
static int check_distrib(MPI_Comm comm, int size, const int64_t *distrib, int local)
{
  if (!local && (!distrib || distrib[0] != 0))
    local = STRATA_EINVAL;
  for (int r = 0; r < size && !local; r++)
    if (distrib[r + 1] < distrib[r])
      local = STRATA_EINVAL;
  int64_t digest =
      local ? 0 : starpu_hash_crc32c_be_n(distrib, (size_t)(size + 1) * sizeof *distrib, 0);
  return strata__agree_on(comm, local, &digest, 1);
}

static int *int_counts(const int64_t *v, int n)
{
  int *c = malloc((size_t)n * 2 * sizeof *c);
  if (!c)
    return NULL;
  for (int r = 0, at = 0; r < n; r++) {
    c[r] = (int)v[r];
    c[n + r] = at;
    at += (int)v[r];
  }
  return c;
}

/* Global index of request p. */
static int64_t request(const strata_gindexer *gi, const int64_t *const *idx, int64_t p)
{
  int l = strata__gi_list_of(gi, p);
  return idx[l][p - gi->list_off[l]];
}

/* Sort `n` keys (none negative) in place, stably, and give in pos the
 * position each came from: an LSD radix sort, RADIX_BITS bits a pass, as
 * many passes as the largest key needs. */
enum { RADIX_BITS = 11, RADIX_DIGITS = 1 << RADIX_BITS };

static int sort_positions(int64_t *key, int64_t n, int64_t *pos)
{
  int64_t *spare = malloc((size_t)(2 * n + 1) * sizeof *spare);
  if (!spare)
    return STRATA_ENOMEM;
  int64_t largest = 0;
  for (int64_t p = 0; p < n; p++) {
    pos[p] = p;
    largest |= key[p];
  }
  int64_t *key_in = key, *pos_in = pos, *key_out = spare, *pos_out = spare + n;
  for (int shift = 0; shift < 63 && largest >> shift; shift += RADIX_BITS) {
    int64_t start[RADIX_DIGITS + 1] = {0};
    for (int64_t p = 0; p < n; p++)
      start[((key_in[p] >> shift) & (RADIX_DIGITS - 1)) + 1]++;
    for (int d = 0; d < RADIX_DIGITS; d++)
      start[d + 1] += start[d];
    for (int64_t p = 0; p < n; p++) {
      int64_t at = start[(key_in[p] >> shift) & (RADIX_DIGITS - 1)]++;
      key_out[at] = key_in[p];
      pos_out[at] = pos_in[p];
    }
    int64_t *k = key_in, *q = pos_in;
    key_in = key_out, pos_in = pos_out;
    key_out = k, pos_out = q;
  }
  if (pos_in != pos) {
    memcpy(key, key_in, (size_t)n * sizeof *key);
    memcpy(pos, pos_in, (size_t)n * sizeof *pos);
  }
  free(spare);
  return 0;
}

static int build(strata_gindexer *gi, const int64_t *distrib, const int64_t *const *idx)
{
  int size = gi->size;
  gi->dn = distrib[gi->rank + 1] - distrib[gi->rank];
  gi->send_counts = calloc((size_t)size, sizeof *gi->send_counts);
  gi->recv_counts = calloc((size_t)size, sizeof *gi->recv_counts);
  gi->order = malloc((size_t)(gi->n_idx + 1) * sizeof *gi->order);
  gi->inverse = malloc((size_t)(gi->n_idx + 1) * sizeof *gi->inverse);
  gi->h_order = calloc((size_t)gi->n_lists + 1, sizeof *gi->h_order);
  int64_t *sorted = malloc((size_t)(gi->n_idx + 1) * sizeof *sorted);
  int ret = gi->send_counts && gi->recv_counts && gi->order && gi->inverse && gi->h_order && sorted
                ? 0
                : STRATA_ENOMEM;
  int *sc = NULL, *rc = NULL;
  if (!ret) {
    /* The requests in increasing global index, so by owner and, within an
     * owner, by the offset it reads or writes: each owner streams through
     * its block, where request order would jump at random over memory that
     * is seldom in cache (a 1-rank Take of 10^6 random items: its pack took
     * 2.4-2.9 ms in request order, 0.7-0.9 ms sorted). Stable, so
     * an index's writers keep their order (Put's rules). */
    for (int64_t p = 0; p < gi->n_idx; p++)
      sorted[p] = request(gi, idx, p);
    ret = sort_positions(sorted, gi->n_idx, gi->inverse);
    for (int64_t j = 0, owner = 0; !ret && j < gi->n_idx; j++) {
      while (owner + 1 < size && distrib[owner + 1] <= sorted[j])
        owner++;
      gi->send_counts[owner]++;
      gi->order[gi->inverse[j]] = j;
      sorted[j] -= distrib[owner];
    }
  }
  ret = strata__agree_on(gi->comm, ret, NULL, 0);
  if (!ret && MPI_Alltoall(gi->send_counts, 1, MPI_INT64_T, gi->recv_counts, 1, MPI_INT64_T,
                           gi->comm) != MPI_SUCCESS)
    ret = STRATA_EMPI;
  if (!ret) {
    gi->nin = 0;
    for (int r = 0; r < size; r++)
      gi->nin += gi->recv_counts[r];
    gi->local = malloc((size_t)(gi->nin + 1) * sizeof *gi->local);
    gi->csr = calloc((size_t)(gi->dn + 2), sizeof *gi->csr);
    gi->req = malloc((size_t)(gi->nin + 1) * sizeof *gi->req);
    sc = int_counts(gi->send_counts, size);
    rc = int_counts(gi->recv_counts, size);
    ret = gi->local && gi->csr && gi->req && sc && rc ? 0 : STRATA_ENOMEM;
  }
  ret = strata__agree_on(gi->comm, ret, NULL, 0);
  if (!ret && MPI_Alltoallv(sorted, sc, sc + size, MPI_INT64_T, gi->local, rc, rc + size,
                            MPI_INT64_T, gi->comm) != MPI_SUCCESS)
    ret = STRATA_EMPI;
  if (!ret) {
    /* Requests per owned index, in arrival (writer) order. */
    for (int64_t k = 0; k < gi->nin; k++)
      gi->csr[gi->local[k] + 2]++;
    for (int64_t i = 0; i < gi->dn; i++) {
      gi->requested += gi->csr[i + 2] > 0;
      gi->csr[i + 2] += gi->csr[i + 1];
    }
    for (int64_t k = 0; k < gi->nin; k++)
      gi->req[gi->csr[gi->local[k] + 1]++] = k;
    gi->h_local = register_map(gi->local, gi->nin);
    if (gi->n_lists == 1)
      gi->h_inverse = register_map(gi->inverse, gi->n_idx);
    for (int l = 0; l < gi->n_lists; l++)
      gi->h_order[l] = register_map(gi->order + gi->list_off[l], strata__gi_list_size(gi, l));
    gi->h_csr = register_map(gi->csr, gi->dn + 1);
    gi->h_req = register_map(gi->req, gi->nin);
  }
  free(sorted);
  free(sc);
  free(rc);
  return ret;
}

static int destroy_live(void *gi) { return strata_gindexer_destroy(gi); }

int strata_gmindexer_create(MPI_Comm comm, const int64_t *distrib, int n_lists,
                            const int64_t *const *idx, const int64_t *n_idx, strata_gindexer **out)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  int rank, size;
  if (comm == MPI_COMM_NULL || MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
    return STRATA_EINVAL;
  MPI_Comm_size(comm, &size);
  int local =
      out && n_lists >= 0 && (n_idx || n_lists == 0) && (idx || n_lists == 0) ? 0 : STRATA_EINVAL;
  for (int l = 0; l < n_lists && !local; l++)
    if (n_idx[l] < 0 || (!idx[l] && n_idx[l] > 0))
      local = STRATA_EINVAL;
  if ((ret = check_distrib(comm, size, distrib, local)))
    return strata__fail(ret, "gindexer: bad arguments or distribution");
  for (int l = 0; l < n_lists && !local; l++)
    for (int64_t p = 0; p < n_idx[l] && !local; p++)
      if (idx[l][p] < 0 || idx[l][p] >= distrib[size])
        local = STRATA_ERANGE;
  if ((ret = strata__agree_on(comm, local, NULL, 0)))
    return strata__fail(ret, "gindexer: an index outside [0, %lld)", (long long)distrib[size]);
  strata_gindexer *gi = calloc(1, sizeof *gi);
  int64_t *list_off = calloc((size_t)n_lists + 1, sizeof *list_off);
  if ((ret = strata__agree_on(comm, gi && list_off ? 0 : STRATA_ENOMEM, NULL, 0))) {
    free(gi);
    free(list_off);
    return ret;
  }
  for (int l = 0; l < n_lists; l++)
    list_off[l + 1] = list_off[l] + n_idx[l];
  strata__tags tags;
  if ((ret = strata__tags_take(comm, "gindexer", &tags))) {
    free(gi);
    free(list_off);
    return ret;
  }
  *gi = (strata_gindexer){.comm = comm,
                          .rank = rank,
                          .size = size,
                          .n_lists = n_lists,
                          .list_off = list_off,
                          .n_idx = list_off[n_lists],
                          .tags = tags};
  if ((ret = build(gi, distrib, idx))) {
    free_maps(gi);
    strata__tags_release(&tags);
    free(gi);
    return ret;
  }
  strata__live_add(&strata__objects, &gi->live, "global indexer", gi, destroy_live);
  *out = gi;
  return 0;
}

int strata_gindexer_create(MPI_Comm comm, const int64_t *distrib, const int64_t *idx, int64_t n_idx,
                           strata_gindexer **out)
{
  strata__clear_error();
  return strata_gmindexer_create(comm, distrib, 1, &idx, &n_idx, out);
}

int strata_gindexer_destroy(strata_gindexer *gi)
{
  if (!gi)
    return 0;
  strata__live_remove(&gi->live);
  strata__gi_reclaim(gi);
  strata__gi_pool_clear(gi);
  free_maps(gi); /* unregistering waits for the tasks that read the maps */
  strata__tags_release(&gi->tags);
  free(gi);
  return 0;
}

int64_t strata_gindexer_dist_size(const strata_gindexer *gi) { return gi ? gi->dn : STRATA_EINVAL; }

int64_t strata_gindexer_part_size(const strata_gindexer *gi)
{
  return gi ? gi->n_idx : STRATA_EINVAL;
}

int strata_gindexer_list_count(const strata_gindexer *gi)
{
  strata__clear_error();
  return gi ? gi->n_lists : STRATA_EINVAL;
}

int64_t strata_gindexer_list_size(const strata_gindexer *gi, int list)
{
  return gi && list >= 0 && list < gi->n_lists ? strata__gi_list_size(gi, list) : STRATA_EINVAL;
}

int strata__gi_list_of(const strata_gindexer *gi, int64_t p)
{
  return strata__range_at(gi->list_off, gi->n_lists, p);
}

int strata__gi_new_rows(int64_t rows, int64_t count, strata_dtype dtype, strata_array **out)
{
  int64_t shape[2] = {rows, count};
  if (count < 1 || !out)
    return STRATA_EINVAL;
  return count == 1 ? strata_array_create(1, shape, dtype, out)
                    : strata_array_create(2, shape, dtype, out);
}

int strata_gindexer_empty_dist(const strata_gindexer *gi, int64_t count, strata_dtype dtype,
                               strata_array **out)
{
  strata__clear_error();
  return gi ? strata__gi_new_rows(gi->dn, count, dtype, out) : STRATA_EINVAL;
}

int strata_gindexer_empty_part(const strata_gindexer *gi, int64_t count, strata_dtype dtype,
                               strata_array **out)
{
  strata__clear_error();
  return gi ? strata__gi_new_rows(gi->n_idx, count, dtype, out) : STRATA_EINVAL;
}

int strata_gmindexer_empty_parts(const strata_gindexer *gi, int64_t count, strata_dtype dtype,
                                 strata_array **outs)
{
  strata__clear_error();
  if (!gi || (!outs && gi->n_lists > 0))
    return STRATA_EINVAL;
  for (int l = 0; l < gi->n_lists; l++) {
    int ret = strata__gi_new_rows(strata__gi_list_size(gi, l), count, dtype, &outs[l]);
    if (ret) {
      while (l-- > 0) {
        strata_array_destroy(outs[l]);
        outs[l] = NULL;
      }
      return ret;
    }
  }
  return 0;
}

int strata_gindexer_access_counts(const strata_gindexer *gi, int64_t *counts)
{
  strata__clear_error();
  if (!gi || (!counts && gi->dn > 0))
    return STRATA_EINVAL;
  for (int64_t i = 0; i < gi->dn; i++)
    counts[i] = gi->csr[i + 1] - gi->csr[i];
  return 0;
}

/* ---- exchanges ------------------------------------------------------- */

void strata__gi_close(struct strata__gi_mailbox *m)
{
  if (m->pooled) {
    memset(m, 0, sizeof *m);
    return;
  }
  if (m->whole)
    strata__partition_clean_submit(m->whole, (unsigned)m->nchildren, m->children);
  free(m->parts);
  free(m->children);
  memset(m, 0, sizeof *m);
}

/* A mailbox over a new buffer: on the pending list, or in *kept (the
 * caller's to free) when `kept` is not NULL. */
static int mailbox_open(strata_gindexer *gi, struct strata__gi_mailbox *m, const int64_t *rows,
                        int64_t total, size_t row, struct strata__gi_buffer **kept)
{
  int size = gi->size;
  memset(m, 0, sizeof *m);
  m->parts = calloc((size_t)size, sizeof *m->parts);
  m->children = malloc((size_t)size * sizeof *m->children);
  long *lengths = malloc((size_t)size * sizeof *lengths);
  struct strata__gi_buffer *b = NULL;
  if (!m->parts || !m->children || !lengths || (total > 0 && !(b = buffer_new(gi, total, row)))) {
    free(lengths);
    strata__gi_close(m);
    return STRATA_ENOMEM;
  }
  if (total == 0) { /* nothing to move: no buffer */
    free(lengths);
    return 0;
  }
  if (kept)
    *kept = b;
  else
    buffer_pend(gi, b);
  m->whole = b->handle;
  for (int r = 0; r < size; r++)
    if (rows[r] > 0)
      lengths[m->nchildren++] = (long)rows[r];
  struct starpu_data_filter f = {.filter_func = starpu_vector_filter_list_long,
                                 .nchildren = (unsigned)m->nchildren,
                                 .filter_arg_ptr = lengths};
  starpu_data_partition_plan(m->whole, &f, m->children);
  for (int r = 0, c = 0; r < size; r++)
    m->parts[r] = rows[r] > 0 ? m->children[c++] : NULL;
  free(lengths);
  return 0;
}

/* The mailboxes of fixed exchanges (rows per peer: the protocol's send or
 * receive counts) are kept per indexer and row size, their buffers and
 * partition plans reused: no registration, plan or fresh pages per
 * exchange (StarPU 1.3 also keeps 48 B for good per short-lived handle that
 * a request waited on, docs/reliability.md). Exchanges that share one are ordered by
 * its handle. At most POOL_SIZE are kept; the least recently used goes. */
enum { POOL_SIZE = 8 };

struct strata__gi_pooled {
  const int64_t *rows; /* gi->send_counts or gi->recv_counts */
  size_t row;
  struct strata__gi_mailbox box;
  struct strata__gi_buffer *buffer;
  int64_t last_exchange; /* the exchange that used it last */
  int settled;           /* that exchange is known complete */
  struct strata__gi_pooled *next;
};

static void pooled_free(struct strata__gi_pooled *p)
{
  p->box.pooled = 0;
  strata__gi_close(&p->box);
  if (p->buffer)
    buffer_free(p->buffer);
  free(p);
}

void strata__gi_pool_clear(strata_gindexer *gi)
{
  while (gi->pool) {
    struct strata__gi_pooled *p = gi->pool;
    gi->pool = p->next;
    pooled_free(p);
  }
}

/* A kept mailbox of `rows`, made on first use. Its buffer is not on the
 * pending list: it lives until the indexer does (or is evicted). */
static int pooled_open(strata_gindexer *gi, struct strata__gi_mailbox *m, const int64_t *rows,
                       int64_t total, size_t row)
{
  struct strata__gi_pooled **at = &gi->pool, **oldest = NULL, *p = NULL;
  int count = 0;
  for (; *at; at = &(*at)->next, count++) {
    if ((*at)->rows == rows && (*at)->row == row) {
      p = *at;
      break;
    }
    if ((*at)->last_exchange < gi->exchanges &&
        (!oldest || (*at)->last_exchange < (*oldest)->last_exchange))
      oldest = at;
  }
  if (!p) {
    if (count >= POOL_SIZE && oldest) {
      struct strata__gi_pooled *gone = *oldest;
      *oldest = gone->next;
      pooled_free(gone);
    }
    if (!(p = calloc(1, sizeof *p)))
      return STRATA_ENOMEM;
    int ret = mailbox_open(gi, &p->box, rows, total, row, &p->buffer);
    if (ret) {
      free(p);
      return ret;
    }
    p->rows = rows;
    p->row = row;
    p->box.pooled = 1;
    p->next = gi->pool;
    gi->pool = p;
  }
  p->last_exchange = gi->exchanges;
  p->settled = 0;
  *m = p->box;
  return 0;
}

/* Wait until the kept mailboxes last used by an exchange up to `exchange`
 * are done with it (tag slot reuse, see next_tag). */
static void pool_settle(strata_gindexer *gi, int64_t exchange)
{
  for (struct strata__gi_pooled *p = gi->pool; p; p = p->next)
    if (!p->settled && p->last_exchange <= exchange) {
      if (p->box.whole && starpu_data_acquire(p->box.whole, STARPU_W) == 0)
        starpu_data_release(p->box.whole);
      p->settled = 1;
    }
}

static int box_open(strata_gindexer *gi, struct strata__gi_mailbox *m, const int64_t *rows,
                    int64_t total, size_t row)
{
  if (total > 0 && (rows == gi->send_counts || rows == gi->recv_counts))
    return pooled_open(gi, m, rows, total, row);
  return mailbox_open(gi, m, rows, total, row, NULL);
}

int strata__gi_open(strata_gindexer *gi, const int64_t *out_rows, int64_t nout,
                    const int64_t *in_rows, int64_t nin, size_t row,
                    struct strata__gi_mailbox *outbox, struct strata__gi_mailbox *inbox)
{
  int ret = box_open(gi, outbox, out_rows, nout, row);
  if (!ret && (ret = box_open(gi, inbox, in_rows, nin, row)))
    strata__gi_close(outbox);
  return ret;
}

static void mailbox_partition(struct strata__gi_mailbox *m)
{
  if (m->whole)
    starpu_data_partition_submit(m->whole, (unsigned)m->nchildren, m->children);
}

static void mailbox_unpartition(struct strata__gi_mailbox *m)
{
  if (m->whole)
    starpu_data_unpartition_submit(m->whole, (unsigned)m->nchildren, m->children, -1);
}

/* The tag of the next exchange: one of the first STRATA__GI_TAG_SLOTS of
 * the indexer's range, used in turn. A slot is used again only once
 * this rank's exchange that last had it is complete (its buffers'
 * tasks, the StarPU-MPI requests among them, are done), so two messages
 * from one rank with one tag are always sent and received in order, and
 * StarPU-MPI keeps state for a bounded number of tags. */
static int64_t next_tag(strata_gindexer *gi)
{
  int64_t e = gi->exchanges++;
  if (e >= STRATA__GI_TAG_SLOTS) {
    reclaim_if(gi, exchange_before, e - STRATA__GI_TAG_SLOTS);
    pool_settle(gi, e - STRATA__GI_TAG_SLOTS);
  }
  return gi->tags.base + e % STRATA__GI_TAG_SLOTS;
}

/* Send the non-empty parts of the outbox (rows by destination) and receive
 * into the inbox (rows by source); the rank's own part is a local copy. */
int strata__gi_post(strata_gindexer *gi, struct strata__gi_mailbox *outbox, const int64_t *out_rows,
                    struct strata__gi_mailbox *inbox, const int64_t *in_rows)
{
  int64_t tag = next_tag(gi);
  mailbox_partition(outbox);
  mailbox_partition(inbox);
  int ret =
      strata__exchange_post(gi->comm, tag, out_rows, outbox->parts, in_rows, inbox->parts, NULL);
  mailbox_unpartition(outbox);
  mailbox_unpartition(inbox);
  strata__gi_close(outbox);
  return ret;
}

int strata__gi_agree(strata_gindexer *gi, int local, int64_t count, int64_t dtype,
                     strata_dtype *agreed, int64_t *any)
{
  int64_t unknown = INT64_MAX;
  int64_t buf[6] = {
      local,          count, -count, dtype >= 0 ? dtype : unknown, dtype >= 0 ? -dtype : unknown,
      any ? -*any : 0};
  if (MPI_Allreduce(MPI_IN_PLACE, buf, 6, MPI_INT64_T, MPI_MIN, gi->comm) != MPI_SUCCESS)
    return STRATA_EMPI;
  if (any)
    *any = -buf[5];
  if (buf[0] < 0)
    return (int)buf[0];
  if (buf[1] != -buf[2] || buf[3] == unknown)
    return STRATA_EINVAL;
  if (buf[3] != -buf[4])
    return STRATA_ETYPE;
  *agreed = (strata_dtype)buf[3];
  return 0;
}

void strata__gi_unmake(strata_array **arrays, const char *made, int n)
{
  for (int l = 0; made && l < n; l++)
    if (made[l] && arrays[l]) {
      strata_array_destroy(arrays[l]);
      arrays[l] = NULL;
    }
}

int strata__gi_take(strata_gindexer *gi, strata_array *dist, int64_t count, strata_array **outs,
                    unsigned flags)
{
  int ret = strata__check_ready();
  if (ret || !gi)
    return ret ? ret : STRATA_EINVAL; /* no communicator to agree on */
  strata__gi_reclaim_done(gi);
  int n = gi->n_lists;
  int local = dist && (outs || n == 0) && count >= 1 && (n == 1 || !(flags & STRATA__GI_SINGLE))
                  ? 0
                  : STRATA_EINVAL;
  int64_t dtype = local ? -1 : strata_array_dtype(dist);
  if (!local && strata_array_nelems(dist) != gi->dn * count)
    local = STRATA_EINVAL;
  for (int l = 0; l < n && !local; l++)
    if (outs[l] && strata_array_nelems(outs[l]) != strata__gi_list_size(gi, l) * count)
      local = STRATA_EINVAL;
    else if (outs[l] && strata_array_dtype(outs[l]) != (int)dtype)
      local = STRATA_ETYPE;
  /* Outputs and buffers first, so that one agreement covers them too. */
  char *made = calloc((size_t)n + 1, 1);
  if (!local && !made)
    local = STRATA_ENOMEM;
  for (int l = 0; l < n && !local; l++)
    if (!outs[l] && !(local = strata__gi_new_rows(strata__gi_list_size(gi, l), count,
                                                  (strata_dtype)dtype, &outs[l])))
      made[l] = 1;
  size_t row = local ? 0 : (size_t)count * strata_dtype_size((strata_dtype)dtype);
  struct strata__gi_mailbox outbox = {0}, inbox = {0};
  if (!local)
    local = strata__gi_open(gi, gi->recv_counts, gi->nin, gi->send_counts, gi->n_idx, row, &outbox,
                            &inbox);
  strata_dtype type;
  if ((ret = strata__gi_agree(gi, local, count, dtype, &type, NULL))) {
    strata__gi_close(&outbox);
    strata__gi_close(&inbox);
    strata__gi_unmake(outs, made, n);
    free(made);
    strata__gi_reclaim_done(gi);
    return strata__fail(ret, "gindexer take: sizes, count or types disagree");
  }
  if (gi->nin > 0)
    ret = strata__gindexer_gather_submit(strata_array_handle(dist), gi->h_local, outbox.whole, row,
                                         1);
  if (!ret)
    ret = strata__gi_post(gi, &outbox, gi->recv_counts, &inbox, gi->send_counts);
  for (int l = 0; l < n && !ret; l++)
    if (gi->h_order[l])
      ret = strata__gindexer_gather_submit(inbox.whole, gi->h_order[l],
                                           strata_array_handle(outs[l]), row, 0);
  strata__gi_close(&outbox);
  strata__gi_close(&inbox);
  if (ret)
    strata__gi_unmake(outs, made, n);
  free(made);
  return strata__gi_finish(gi, flags, outs, n, ret);
}

int strata__gi_pack_parts(strata_gindexer *gi, strata_array *const *values,
                          starpu_data_handle_t outbox, size_t row)
{
  int ret = 0;
  if (gi->h_inverse)
    return strata__gindexer_gather_submit(strata_array_handle(values[0]), gi->h_inverse, outbox,
                                          row, 0);
  for (int l = 0; l < gi->n_lists && !ret; l++)
    if (gi->h_order[l])
      ret = strata__gindexer_scatter_submit(strata_array_handle(values[l]), gi->h_order[l], outbox,
                                            row);
  return ret;
}

/* Put's output when allocated (`dist` not NULL): 0, or the reduction's
 * identity, for unreferenced items; and the exchange buffers. Local. */
static int put_buffers(strata_gindexer *gi, int64_t count, strata_put_rule rule, strata_op op,
                       strata_dtype type, strata_array **dist, struct strata__gi_mailbox *outbox,
                       struct strata__gi_mailbox *inbox)
{
  int ret = 0;
  if (dist && !(ret = strata__gi_new_rows(gi->dn, count, type, dist))) {
    strata_op fill = rule == STRATA_PUT_REDUCE ? op : type == STRATA_BOOL ? STRATA_LOR : STRATA_SUM;
    ret = strata_array_fill_identity(*dist, fill);
  }
  size_t row = (size_t)count * strata_dtype_size(type);
  return ret ? ret
             : strata__gi_open(gi, gi->send_counts, gi->n_idx, gi->recv_counts, gi->nin, row,
                               outbox, inbox);
}

static int put_lists(strata_gindexer *gi, strata_array *const *values, int64_t count,
                     strata_put_rule rule, strata_op op, strata_array **dist, unsigned flags)
{
  int ret = strata__check_ready();
  if (ret || !gi)
    return ret ? ret : STRATA_EINVAL;
  strata__gi_reclaim_done(gi);
  int n = gi->n_lists;
  int local = (values || n == 0) && dist && count >= 1 && rule >= STRATA_PUT_LAST &&
                      rule <= STRATA_PUT_REDUCE && (n == 1 || !(flags & STRATA__GI_SINGLE))
                  ? 0
                  : STRATA_EINVAL;
  int64_t dtype = local || !*dist ? -1 : strata_array_dtype(*dist);
  for (int l = 0; l < n && !local; l++) {
    if (!values[l] || strata_array_nelems(values[l]) != strata__gi_list_size(gi, l) * count)
      local = STRATA_EINVAL;
    else if (dtype >= 0 && strata_array_dtype(values[l]) != (int)dtype)
      local = STRATA_ETYPE;
    else
      dtype = strata_array_dtype(values[l]);
  }
  if (!local && *dist && strata_array_nelems(*dist) != gi->dn * count)
    local = STRATA_EINVAL;
  strata_dtype result, type = (strata_dtype)dtype;
  if (!local && rule == STRATA_PUT_REDUCE && (unsigned)op >= STRATA_NOPS)
    local = STRATA_EINVAL;
  else if (!local && dtype >= 0 && rule == STRATA_PUT_REDUCE &&
           (strata_merge_result_dtype(op, type, &result) || result != type))
    local = STRATA_ETYPE;
  /* A rank that knows the type allocates now, so that one agreement covers
   * its buffers; one without lists nor output learns the type from the
   * agreement, allocates after it, and then every rank agrees once more. */
  int made = !local && !*dist && dtype >= 0;
  int64_t late = !local && dtype < 0;
  struct strata__gi_mailbox outbox = {0}, inbox = {0};
  if (made || (!local && !late))
    local = put_buffers(gi, count, rule, op, type, made ? dist : NULL, &outbox, &inbox);
  /* The ranks must also agree on the rule and the operator. */
  int64_t key = count ^ ((int64_t)((int)rule * 256 + (int)op) << 48);
  ret = strata__gi_agree(gi, local, key, dtype, &type, &late);
  if (!ret && late) {
    local = 0;
    if (dtype < 0) { /* this rank was late: it has no output yet */
      made = 1;
      local = put_buffers(gi, count, rule, op, type, dist, &outbox, &inbox);
    }
    ret = strata__agree_on(gi->comm, local, NULL, 0);
  }
  if (ret) {
    strata__gi_close(&outbox);
    strata__gi_close(&inbox);
    if (made)
      strata__gi_unmake(dist, "\1", 1);
    strata__gi_reclaim_done(gi);
    return strata__fail(ret, "gindexer put: sizes, count, rule or types disagree");
  }
  size_t row = (size_t)count * strata_dtype_size(type);
  ret = strata__gi_pack_parts(gi, values, outbox.whole, row);
  if (!ret)
    ret = strata__gi_post(gi, &outbox, gi->send_counts, &inbox, gi->recv_counts);
  if (!ret && gi->nin > 0) {
    struct strata__put_apply a = {(int)rule, op, type, count};
    ret = strata__gindexer_apply_submit(strata_array_handle(*dist), inbox.whole, gi->h_csr,
                                        gi->h_req, gi->h_local, &a);
  }
  strata__gi_close(&outbox);
  strata__gi_close(&inbox);
  if (ret && made)
    strata__gi_unmake(dist, "\1", 1);
  return strata__gi_finish(gi, flags, dist, 1, ret);
}

int strata__gi_finish(strata_gindexer *gi, unsigned flags, strata_array *const *arrays, int n,
                      int ret)
{
  if (flags & STRATA__GI_WAIT)
    return strata__gi_wait(gi, arrays, ret ? 0 : n, ret);
  if (ret) /* nothing more is submitted: what finished can go */
    strata__gi_reclaim_done(gi);
  return ret;
}

int strata__gi_wait(strata_gindexer *gi, strata_array *const *arrays, int n, int ret)
{
  for (int l = 0; l < n && !ret; l++)
    if (!(ret = strata_array_acquire(arrays[l], STRATA_READ, NULL)))
      ret = strata_array_release(arrays[l]);
  strata__gi_reclaim(gi);
  return ret;
}

int strata_gmindexer_take(strata_gindexer *gi, strata_array *dist, int64_t count,
                          strata_array **outs)
{
  strata__clear_error();
  return strata__gi_take(gi, dist, count, outs, STRATA__GI_WAIT);
}

int strata_gmindexer_take_submit(strata_gindexer *gi, strata_array *dist, int64_t count,
                                 strata_array **outs)
{
  strata__clear_error();
  return strata__gi_take(gi, dist, count, outs, 0);
}

int strata_gmindexer_put(strata_gindexer *gi, strata_array *const *values, int64_t count,
                         strata_put_rule rule, strata_op op, strata_array **dist)
{
  strata__clear_error();
  return put_lists(gi, values, count, rule, op, dist, STRATA__GI_WAIT);
}

int strata_gmindexer_put_submit(strata_gindexer *gi, strata_array *const *values, int64_t count,
                                strata_put_rule rule, strata_op op, strata_array **dist)
{
  strata__clear_error();
  return put_lists(gi, values, count, rule, op, dist, 0);
}

/* The single-list calls: one array stands for the only list. */
int strata_gindexer_take(strata_gindexer *gi, strata_array *dist, int64_t count, strata_array **out)
{
  strata__clear_error();
  return strata__gi_take(gi, dist, count, out, STRATA__GI_WAIT | STRATA__GI_SINGLE);
}

int strata_gindexer_take_submit(strata_gindexer *gi, strata_array *dist, int64_t count,
                                strata_array **out)
{
  strata__clear_error();
  return strata__gi_take(gi, dist, count, out, STRATA__GI_SINGLE);
}

int strata_gindexer_put(strata_gindexer *gi, strata_array *values, int64_t count,
                        strata_put_rule rule, strata_op op, strata_array **dist)
{
  strata__clear_error();
  return put_lists(gi, &values, count, rule, op, dist, STRATA__GI_WAIT | STRATA__GI_SINGLE);
}

int strata_gindexer_put_submit(strata_gindexer *gi, strata_array *values, int64_t count,
                               strata_put_rule rule, strata_op op, strata_array **dist)
{
  strata__clear_error();
  return put_lists(gi, &values, count, rule, op, dist, STRATA__GI_SINGLE);
}
