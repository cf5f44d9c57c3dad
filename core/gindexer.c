/* The global indexer (include/strata/gindexer.h).
 *
 * Creation (MPI collectives, once): the requested indices are counting-
 * sorted by owner (stable, so each owner sees a rank's requests in their
 * order), the counts and the sorted indices are exchanged with
 * MPI_Alltoall(v), and the owner lists its requests per owned index (CSR,
 * in writer order: source rank, then position). The maps become StarPU
 * handles so that the codelets find them on any worker, GPUs included.
 *
 * An exchange (tasks only): a gather packs the rows to send into one
 * buffer, partitioned by destination rank; each non-empty part travels as
 * one StarPU-MPI message (a local copy for the rank itself) into the
 * receiver's buffer, partitioned by source; a gather (Take) or the apply
 * codelet (Put) unpacks it. */
#include <stdlib.h>
#include <string.h>

#include <starpu_mpi.h>

#include <strata/starpu.h>

#include "codelets.h"
#include "internal.h"
#include "kernels/gindexer_kernels.h"

struct strata_gindexer {
  MPI_Comm comm;
  int rank, size;
  int64_t serial, exchanges;
  int64_t dn, n_idx, nin, max_requests;
  int64_t *send_counts; /* [size] requests this rank sends to each owner */
  int64_t *recv_counts; /* [size] requests this rank owns from each rank */
  int64_t *local;       /* [nin] owned offset of each incoming request */
  int64_t *order;       /* [n_idx] row of request p in the owner-sorted list */
  int64_t *inverse;     /* [n_idx] request p of sorted row j */
  int64_t *csr, *req;   /* [dn + 1], [nin]: incoming requests per owned index */
  starpu_data_handle_t h_local, h_order, h_inverse, h_csr, h_req;
  struct mailbox_memory *pending; /* exchange buffers not yet freed */
};

/* Exchange buffers are host memory registered at home (partition plans
 * need the parent allocated); they are freed once their tasks are done:
 * at the end of a blocking exchange, or at destroy after non-blocking ones. */
struct mailbox_memory {
  starpu_data_handle_t handle;
  void *mem;
  struct mailbox_memory *next;
};

static void reclaim(strata_gindexer *gi)
{
  while (gi->pending) {
    struct mailbox_memory *m = gi->pending;
    gi->pending = m->next;
    starpu_data_unregister(m->handle); /* waits for its tasks */
    starpu_free(m->mem);
    free(m);
  }
}

static starpu_data_handle_t register_map(int64_t *v, int64_t n)
{
  starpu_data_handle_t h = NULL;
  if (n > 0)
    starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)v, (uint32_t)n, sizeof *v);
  return h;
}

static void free_maps(strata_gindexer *gi)
{
  starpu_data_handle_t hs[5] = {gi->h_local, gi->h_order, gi->h_inverse, gi->h_csr, gi->h_req};
  for (int i = 0; i < 5; i++)
    if (hs[i])
      starpu_data_unregister(hs[i]);
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

/* Owner of global index i: the rank r with distrib[r] <= i < distrib[r+1]. */
static int owner_of(const int64_t *distrib, int size, int64_t i)
{
  int lo = 0, hi = size - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (distrib[mid] <= i)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
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

static int build(strata_gindexer *gi, const int64_t *distrib, const int64_t *idx)
{
  int size = gi->size;
  gi->dn = distrib[gi->rank + 1] - distrib[gi->rank];
  gi->send_counts = calloc((size_t)size, sizeof *gi->send_counts);
  gi->recv_counts = calloc((size_t)size, sizeof *gi->recv_counts);
  gi->order = malloc((size_t)(gi->n_idx + 1) * sizeof *gi->order);
  gi->inverse = malloc((size_t)(gi->n_idx + 1) * sizeof *gi->inverse);
  int *owner = malloc((size_t)(gi->n_idx + 1) * sizeof *owner);
  int64_t *sorted = malloc((size_t)(gi->n_idx + 1) * sizeof *sorted);
  int ret = gi->send_counts && gi->recv_counts && gi->order && gi->inverse && owner && sorted
                ? 0
                : STRATA_ENOMEM;
  int *sc = NULL, *rc = NULL;
  if (!ret) {
    for (int64_t p = 0; p < gi->n_idx; p++)
      gi->send_counts[owner[p] = owner_of(distrib, size, idx[p])]++;
    int64_t *at = calloc((size_t)size, sizeof *at);
    for (int r = 1; at && r < size; r++)
      at[r] = at[r - 1] + gi->send_counts[r - 1];
    for (int64_t p = 0; at && p < gi->n_idx; p++) {
      int64_t j = at[owner[p]]++;
      gi->order[p] = j;
      gi->inverse[j] = p;
      sorted[j] = idx[p] - distrib[owner[p]];
    }
    ret = at ? 0 : STRATA_ENOMEM;
    free(at);
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
      int64_t n = gi->csr[i + 2];
      gi->max_requests = n > gi->max_requests ? n : gi->max_requests;
      gi->csr[i + 2] += gi->csr[i + 1];
    }
    for (int64_t k = 0; k < gi->nin; k++)
      gi->req[gi->csr[gi->local[k] + 1]++] = k;
    gi->h_local = register_map(gi->local, gi->nin);
    gi->h_order = register_map(gi->order, gi->n_idx);
    gi->h_inverse = register_map(gi->inverse, gi->n_idx);
    gi->h_csr = register_map(gi->csr, gi->dn + 1);
    gi->h_req = register_map(gi->req, gi->nin);
  }
  free(owner);
  free(sorted);
  free(sc);
  free(rc);
  return ret;
}

int strata_gindexer_create(MPI_Comm comm, const int64_t *distrib, const int64_t *idx, int64_t n_idx,
                           strata_gindexer **out)
{
  int ret = strata__check_ready();
  if (ret)
    return ret;
  int rank, size;
  if (comm == MPI_COMM_NULL || MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
    return STRATA_EINVAL;
  MPI_Comm_size(comm, &size);
  int local = out && n_idx >= 0 && (idx || n_idx == 0) ? 0 : STRATA_EINVAL;
  if ((ret = check_distrib(comm, size, distrib, local)))
    return strata__fail(ret, "gindexer: bad arguments or distribution");
  for (int64_t p = 0; p < n_idx && !local; p++)
    if (idx[p] < 0 || idx[p] >= distrib[size])
      local = STRATA_ERANGE;
  if ((ret = strata__agree_on(comm, local, NULL, 0)))
    return strata__fail(ret, "gindexer: an index outside [0, %lld)", (long long)distrib[size]);
  strata_gindexer *gi = calloc(1, sizeof *gi);
  if ((ret = strata__agree_on(comm, gi ? 0 : STRATA_ENOMEM, NULL, 0))) {
    free(gi);
    return ret;
  }
  static int64_t serials;
  *gi = (strata_gindexer){
      .comm = comm, .rank = rank, .size = size, .n_idx = n_idx, .serial = serials++};
  if ((ret = build(gi, distrib, idx))) {
    free_maps(gi);
    free(gi);
    return ret;
  }
  *out = gi;
  return 0;
}

int strata_gindexer_destroy(strata_gindexer *gi)
{
  if (!gi)
    return 0;
  reclaim(gi);
  free_maps(gi); /* unregistering waits for the tasks that read the maps */
  free(gi);
  return 0;
}

int64_t strata_gindexer_dist_size(const strata_gindexer *gi) { return gi ? gi->dn : STRATA_EINVAL; }

int64_t strata_gindexer_part_size(const strata_gindexer *gi)
{
  return gi ? gi->n_idx : STRATA_EINVAL;
}

static int new_rows(int64_t rows, int64_t count, strata_dtype dtype, strata_array **out)
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
  return gi ? new_rows(gi->dn, count, dtype, out) : STRATA_EINVAL;
}

int strata_gindexer_empty_part(const strata_gindexer *gi, int64_t count, strata_dtype dtype,
                               strata_array **out)
{
  return gi ? new_rows(gi->n_idx, count, dtype, out) : STRATA_EINVAL;
}

int strata_gindexer_access_counts(const strata_gindexer *gi, int64_t *counts)
{
  if (!gi || (!counts && gi->dn > 0))
    return STRATA_EINVAL;
  for (int64_t i = 0; i < gi->dn; i++)
    counts[i] = gi->csr[i + 1] - gi->csr[i];
  return 0;
}

/* ---- exchanges ------------------------------------------------------- */

/* A temporary row buffer split by peer rank: children only for the
 * non-empty parts (the parts are consecutive, so they tile the buffer). */
struct mailbox {
  starpu_data_handle_t whole;
  starpu_data_handle_t *parts; /* by rank; NULL for empty parts */
  starpu_data_handle_t *children;
  int nchildren;
};

static void mailbox_close(struct mailbox *m)
{
  if (m->whole)
    starpu_data_partition_clean(m->whole, (unsigned)m->nchildren, m->children);
  free(m->parts);
  free(m->children);
}

static int mailbox_open(strata_gindexer *gi, struct mailbox *m, const int64_t *rows, int64_t total,
                        size_t row)
{
  int size = gi->size;
  memset(m, 0, sizeof *m);
  m->parts = calloc((size_t)size, sizeof *m->parts);
  m->children = malloc((size_t)size * sizeof *m->children);
  long *lengths = malloc((size_t)size * sizeof *lengths);
  if (!m->parts || !m->children || !lengths) {
    free(lengths);
    mailbox_close(m);
    return STRATA_ENOMEM;
  }
  if (total == 0) { /* nothing to move: no buffer */
    free(lengths);
    return 0;
  }
  struct mailbox_memory *mm = malloc(sizeof *mm);
  void *mem = NULL;
  if (!mm || starpu_malloc(&mem, (size_t)total * row) != 0) {
    free(mm);
    free(lengths);
    mailbox_close(m);
    return STRATA_ENOMEM;
  }
  starpu_vector_data_register(&m->whole, STARPU_MAIN_RAM, (uintptr_t)mem, (uint32_t)total, row);
  *mm = (struct mailbox_memory){m->whole, mem, gi->pending};
  gi->pending = mm;
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

static void mailbox_partition(struct mailbox *m)
{
  if (m->whole)
    starpu_data_partition_submit(m->whole, (unsigned)m->nchildren, m->children);
}

static void mailbox_unpartition(struct mailbox *m)
{
  if (m->whole)
    starpu_data_unpartition_submit(m->whole, (unsigned)m->nchildren, m->children, -1);
}

/* Send the non-empty parts of `out` (rows by destination) and receive into
 * `in` (rows by source); the rank's own part is a local copy. */
static int post(strata_gindexer *gi, struct mailbox *out, const int64_t *out_rows,
                struct mailbox *in, const int64_t *in_rows, int64_t tag)
{
  int ret = 0;
  for (int r = 0; r < gi->size && !ret; r++) {
    if (r == gi->rank) {
      if (out_rows[r] > 0)
        ret = starpu_data_cpy(in->parts[r], out->parts[r], 1, NULL, NULL) ? STRATA_ESTARPU : 0;
      continue;
    }
    if (out_rows[r] > 0 &&
        starpu_mpi_isend_detached(out->parts[r], r, tag, gi->comm, NULL, NULL) != 0)
      ret = STRATA_EMPI;
    if (!ret && in_rows[r] > 0 &&
        starpu_mpi_irecv_detached(in->parts[r], r, tag, gi->comm, NULL, NULL) != 0)
      ret = STRATA_EMPI;
  }
  return ret;
}

static int64_t next_tag(strata_gindexer *gi)
{
  return ((int64_t)1 << 56) | ((gi->serial & 0xfff) << 40) | (gi->exchanges++ & 0xffffffffff);
}

/* Checks common to the exchanges, agreed on every rank. */
static int check_exchange(strata_gindexer *gi, strata_array *in, int64_t in_rows, int64_t count,
                          strata_array **out, int64_t out_rows)
{
  if (!gi)
    return STRATA_EINVAL; /* no communicator to agree on */
  int local = in && out && count >= 1 ? 0 : STRATA_EINVAL;
  int64_t dtype = local ? -1 : strata_array_dtype(in);
  if (!local && (strata_array_nelems(in) != in_rows * count ||
                 (*out && strata_array_nelems(*out) != out_rows * count)))
    local = STRATA_EINVAL;
  else if (!local && *out && strata_array_dtype(*out) != (int)dtype)
    local = STRATA_ETYPE;
  int ret = strata__agree_on(gi->comm, local, &count, 1); /* counts differ: EINVAL */
  if (!ret && strata__agree_on(gi->comm, 0, &dtype, 1))
    ret = STRATA_ETYPE; /* the ranks' types differ */
  return ret;
}

/* Pack the rows of `src` through `pack_map` into an outbox split by
 * destination (out_rows, nout in all), move every part to its rank, and
 * leave the rows in `inbox` split by source (in_rows, nin in all), whole
 * again for the unpack. The caller closes both mailboxes. */
static int move_rows(strata_gindexer *gi, starpu_data_handle_t src, starpu_data_handle_t pack_map,
                     const int64_t *out_rows, int64_t nout, const int64_t *in_rows, int64_t nin,
                     size_t row, struct mailbox *outbox, struct mailbox *inbox)
{
  int ret = mailbox_open(gi, outbox, out_rows, nout, row);
  if (ret)
    return ret;
  if ((ret = mailbox_open(gi, inbox, in_rows, nin, row))) {
    mailbox_close(outbox);
    return ret;
  }
  if (nout > 0)
    ret = strata__gindexer_gather_submit(src, pack_map, outbox->whole, row);
  mailbox_partition(outbox);
  mailbox_partition(inbox);
  if (!ret)
    ret = post(gi, outbox, out_rows, inbox, in_rows, next_tag(gi));
  mailbox_unpartition(outbox);
  mailbox_unpartition(inbox);
  return ret;
}

int strata_gindexer_take_submit(strata_gindexer *gi, strata_array *dist, int64_t count,
                                strata_array **out)
{
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if ((ret = check_exchange(gi, dist, gi ? gi->dn : 0, count, out, gi ? gi->n_idx : 0)))
    return strata__fail(ret, "gindexer take: sizes, count or types disagree");
  strata_dtype dtype = (strata_dtype)strata_array_dtype(dist);
  int allocated = *out == NULL;
  if (allocated && (ret = new_rows(gi->n_idx, count, dtype, out)))
    return ret;
  size_t row = (size_t)count * strata_dtype_size(dtype);
  struct mailbox outbox, inbox;
  ret = move_rows(gi, strata_array_handle(dist), gi->h_local, gi->recv_counts, gi->nin,
                  gi->send_counts, gi->n_idx, row, &outbox, &inbox);
  if (ret != STRATA_ENOMEM) {
    if (!ret && gi->n_idx > 0)
      ret =
          strata__gindexer_gather_submit(inbox.whole, gi->h_order, strata_array_handle(*out), row);
    mailbox_close(&outbox);
    mailbox_close(&inbox);
  }
  if (ret && allocated) {
    strata_array_destroy(*out);
    *out = NULL;
  }
  return ret;
}

int strata_gindexer_put_submit(strata_gindexer *gi, strata_array *values, int64_t count,
                               strata_put_rule rule, strata_op op, strata_array **dist)
{
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if ((ret = check_exchange(gi, values, gi ? gi->n_idx : 0, count, dist, gi ? gi->dn : 0)))
    return strata__fail(ret, "gindexer put: sizes, count or types disagree");
  strata_dtype dtype = (strata_dtype)strata_array_dtype(values), result;
  if (rule < STRATA_PUT_LAST || rule > STRATA_PUT_REDUCE)
    return STRATA_EINVAL; /* the same on every rank: the arguments are */
  if (rule == STRATA_PUT_REDUCE &&
      (strata_merge_result_dtype(op, dtype, &result) || result != dtype))
    return strata__fail(STRATA_ETYPE, "gindexer put: %s does not keep %s", strata_op_name(op),
                        strata_dtype_name(dtype));
  if (*dist == NULL) {
    if ((ret = new_rows(gi->dn, count, dtype, dist)))
      return ret;
    /* Unreferenced items: 0, or the reduction's identity. */
    strata_op fill = rule == STRATA_PUT_REDUCE ? op
                     : dtype == STRATA_BOOL    ? STRATA_LOR
                                               : STRATA_SUM;
    if ((ret = strata_array_fill_identity(*dist, fill)))
      return ret;
  }
  size_t row = (size_t)count * strata_dtype_size(dtype);
  struct mailbox outbox, inbox;
  ret = move_rows(gi, strata_array_handle(values), gi->h_inverse, gi->send_counts, gi->n_idx,
                  gi->recv_counts, gi->nin, row, &outbox, &inbox);
  if (ret == STRATA_ENOMEM)
    return ret;
  if (!ret && gi->nin > 0) {
    starpu_data_handle_t scratch;
    starpu_vector_data_register(&scratch, -1, 0, (uint32_t)gi->dn, row);
    struct strata__put_apply a = {(int)rule, op, dtype, count, gi->max_requests};
    ret = strata__gindexer_apply_submit(strata_array_handle(*dist), inbox.whole, gi->h_csr,
                                        gi->h_req, scratch, &a);
    starpu_data_unregister_submit(scratch);
  }
  mailbox_close(&outbox);
  mailbox_close(&inbox);
  return ret;
}

static int wait_for(strata_gindexer *gi, strata_array *a, int ret)
{
  if (!ret && !(ret = strata_array_acquire(a, STRATA_READ, NULL)))
    ret = strata_array_release(a);
  if (gi)
    reclaim(gi);
  return ret;
}

int strata_gindexer_take(strata_gindexer *gi, strata_array *dist, int64_t count, strata_array **out)
{
  int ret = strata_gindexer_take_submit(gi, dist, count, out);
  return wait_for(gi, ret ? NULL : *out, ret);
}

int strata_gindexer_put(strata_gindexer *gi, strata_array *values, int64_t count,
                        strata_put_rule rule, strata_op op, strata_array **dist)
{
  int ret = strata_gindexer_put_submit(gi, values, count, rule, op, dist);
  return wait_for(gi, ret ? NULL : *dist, ret);
}
