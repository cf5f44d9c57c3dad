/* The exchange layer (internal/exchange.h): StarPU-MPI tags, messages per
 * pair of ranks, mailboxes. */
#include <stdlib.h>
#include <string.h>

#include <starpu_mpi.h>

#include "amr.h"
#include "codelets.h"
#include "internal/exchange.h"
#include "internal/runtime.h"
#include "view.h"

/* Tag layout: bit 62 Strata's; bit 61 set: an object's range (12-bit slot,
 * 48-bit offset); clear: a collective call's (41-bit number, 20-bit offset). */
#define STRATA_TAG   ((int64_t)1 << 62)
#define OBJECT_TAG   ((int64_t)1 << 61)
#define OBJECT_BITS  48
#define CALL_BITS    20
#define CALL_NUMBERS ((int64_t)1 << 41)

_Static_assert(STRATA__TAG_SLOTS <= ((int64_t)1 << (61 - OBJECT_BITS)), "slots overflow bit 61");

static uint64_t slots_used[STRATA__TAG_SLOTS / 64];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;

int strata__tags_take(MPI_Comm comm, const char *owner, strata__tags *t)
{
  uint64_t used[STRATA__TAG_SLOTS / 64];
  pthread_mutex_lock(&slots_lock);
  memcpy(used, slots_used, sizeof used);
  pthread_mutex_unlock(&slots_lock);
  if (MPI_Allreduce(MPI_IN_PLACE, used, STRATA__TAG_SLOTS / 64, MPI_UINT64_T, MPI_BOR, comm) !=
      MPI_SUCCESS)
    return strata__fail(STRATA_EMPI, "%s: the agreement on StarPU-MPI tags failed", owner);
  for (int w = 0; w < STRATA__TAG_SLOTS / 64; w++)
    if (~used[w]) {
      int bit = __builtin_ctzll(~used[w]);
      pthread_mutex_lock(&slots_lock);
      slots_used[w] |= (uint64_t)1 << bit;
      pthread_mutex_unlock(&slots_lock);
      t->slot = 64 * w + bit;
      t->base = STRATA_TAG | OBJECT_TAG | ((int64_t)t->slot << OBJECT_BITS);
      t->count = (int64_t)1 << OBJECT_BITS;
      return 0;
    }
  return strata__fail(STRATA_ENOMEM,
                      "%s: %d objects holding StarPU-MPI tags are alive (global indexers, AMR "
                      "hierarchies, inference methods), the most that the tags can tell apart",
                      owner, STRATA__TAG_SLOTS);
}

void strata__tags_release(strata__tags *t)
{
  if (t->slot < 0 || t->count == 0)
    return;
  pthread_mutex_lock(&slots_lock);
  slots_used[t->slot / 64] &= ~((uint64_t)1 << (t->slot % 64));
  pthread_mutex_unlock(&slots_lock);
  *t = (strata__tags){.slot = -1};
}

int strata__tags_of_call(int64_t seq, strata__tags *t)
{
  if (seq < 0 || seq >= CALL_NUMBERS)
    return strata__fail(STRATA_ENOMEM,
                        "exchange: %lld collective calls, more than StarPU-MPI's "
                        "tags can tell apart",
                        (long long)seq);
  *t = (strata__tags){
      .base = STRATA_TAG | (seq << CALL_BITS), .count = (int64_t)1 << CALL_BITS, .slot = -1};
  return 0;
}

void strata__tags_part(const strata__tags *t, int k, int n, strata__tags *part)
{
  int64_t each = t->count / n;
  *part = (strata__tags){.base = t->base + k * each, .count = each, .slot = -1};
}

int strata__tag(const strata__tags *t, int64_t i, int64_t *tag)
{
  if (i < 0 || i >= t->count)
    return strata__fail(STRATA_ENOMEM, "exchange: tag %lld of a range of %lld", (long long)i,
                        (long long)t->count);
  *tag = t->base + i;
  return 0;
}

int strata__transfer(MPI_Comm comm, int64_t tag, int from, int to, starpu_data_handle_t h)
{
  int me;
  MPI_Comm_rank(comm, &me);
  if (me == from)
    return starpu_mpi_isend_detached(h, to, tag, comm, NULL, NULL) ? STRATA_EMPI : 0;
  if (me == to)
    return starpu_mpi_irecv_detached(h, from, tag, comm, NULL, NULL) ? STRATA_EMPI : 0;
  return 0;
}

int strata__exchange_post(MPI_Comm comm, int64_t tag, const int64_t *send,
                          starpu_data_handle_t const *outbox, const int64_t *recv,
                          starpu_data_handle_t const *inbox, int64_t *messages)
{
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  for (int r = 0; r < size; r++) {
    if (r == rank) {
      if (send[r] > 0) {
        int ret = strata__copy_submit(outbox[r], inbox[r]);
        if (ret)
          return ret;
      }
      continue;
    }
    if (recv[r] > 0 && starpu_mpi_irecv_detached(inbox[r], r, tag, comm, NULL, NULL) != 0)
      return STRATA_EMPI;
    if (send[r] > 0) {
      if (starpu_mpi_isend_detached(outbox[r], r, tag, comm, NULL, NULL) != 0)
        return STRATA_EMPI;
      if (messages)
        ++*messages;
    }
  }
  return 0;
}

int strata__mailbox_open(struct strata__mailbox *mb, MPI_Comm comm, int64_t tag, size_t elemsize)
{
  *mb = (struct strata__mailbox){.comm = comm, .tag = tag, .elemsize = elemsize};
  MPI_Comm_rank(comm, &mb->rank);
  MPI_Comm_size(comm, &mb->size);
  size_t n = (size_t)mb->size;
  mb->send = calloc(n, sizeof *mb->send);
  mb->recv = calloc(n, sizeof *mb->recv);
  mb->outbox = calloc(n, sizeof *mb->outbox);
  mb->inbox = calloc(n, sizeof *mb->inbox);
  return mb->send && mb->recv && mb->outbox && mb->inbox ? 0 : STRATA_ENOMEM;
}

int64_t strata__mailbox_reserve(struct strata__mailbox *mb, int from, int to, int64_t values)
{
  int64_t at = -1;
  if (from == mb->rank) {
    at = mb->send[to];
    mb->send[to] += values;
  } else if (to == mb->rank) {
    at = mb->recv[from];
    mb->recv[from] += values;
  }
  return at;
}

int strata__mailbox_prepare(struct strata__mailbox *mb)
{
  for (int r = 0; r < mb->size; r++) {
    if (mb->recv[r])
      starpu_vector_data_register(&mb->inbox[r], -1, 0, (uint32_t)mb->recv[r], mb->elemsize);
    if (!mb->send[r])
      continue;
    starpu_vector_data_register(&mb->outbox[r], -1, 0, (uint32_t)mb->send[r], mb->elemsize);
    /* A block fill without interior zeroes the whole vector, ahead of
     * queued work like the packs that wait for it. */
    struct strata__amr_fill zero = {0};
    int previous = strata__submit_priority(STARPU_MAX_PRIO);
    int ret = strata__amr_fill_submit(MPI_COMM_NULL, mb->outbox[r], &zero);
    strata__submit_priority(previous);
    if (ret)
      return ret;
  }
  return 0;
}

int strata__mailbox_post(struct strata__mailbox *mb, int64_t *messages)
{
  return strata__exchange_post(mb->comm, mb->tag, mb->send, mb->outbox, mb->recv, mb->inbox,
                               messages);
}

void strata__mailbox_close(struct strata__mailbox *mb)
{
  for (int r = 0; r < mb->size; r++) {
    if (mb->inbox && mb->inbox[r])
      starpu_data_unregister_submit(mb->inbox[r]);
    if (mb->outbox && mb->outbox[r])
      starpu_data_unregister_submit(mb->outbox[r]);
  }
  free(mb->send);
  free(mb->recv);
  free(mb->outbox);
  free(mb->inbox);
  memset(mb, 0, sizeof *mb);
}

/* ---- records between the host sides of the ranks ---- */

/* An exchange that failed returns no records (ret: its agreed error). */
static int drop_received(int64_t **recv, int ret)
{
  free(*recv);
  *recv = NULL;
  return ret;
}

int strata__exchange_records(MPI_Comm comm, int local_err, const int64_t *records, const int *dest,
                             int64_t n, int width, int64_t **recv, int64_t *nrecv, int64_t *total)
{
  *recv = NULL;
  *nrecv = 0;
  if (total)
    *total = 0;
  if (comm != strata__coll_comm()) /* the same on every rank: a call site's mistake */
    return strata__fail(STRATA_EINVAL, "internal: records exchanged off Strata's communicator");
  /* Allocated before the counts, so that *recv is never NULL on success
   * (callers sort and search it) even when nothing moves and no agreement
   * follows the counts; grown once the counts are known. */
  *recv = malloc(sizeof **recv);
  int local = local_err ? local_err : *recv ? 0 : STRATA_ENOMEM;
  if (local)
    n = 0; /* the records are not read: every rank returns the error */
  int size;
  MPI_Comm_size(comm, &size);
  /* To each rank: how many values it gets from this one, and this rank's
   * record count or its error, so that the all-to-all of counts is also
   * the agreement on errors and gives every rank the total. */
  int64_t *out = strata__coll_scratch(), *in = out + 2 * size;
  for (int r = 0; r < 2 * size; r++)
    out[r] = 0;
  if (!local && n * width > INT32_MAX)
    local = strata__fail(STRATA_ENOMEM, "more than 2^31 values in one exchange of records");
  for (int64_t i = 0; !local && i < n; i++)
    out[2 * dest[i]] += width;
  for (int r = 0; r < size; r++)
    out[2 * r + 1] = local ? local : n;
  if (MPI_Alltoall(out, 2, MPI_INT64_T, in, 2, MPI_INT64_T, comm) != MPI_SUCCESS)
    return drop_received(recv, STRATA_EMPI);
  int ret = 0;
  int64_t everyone = 0, received = 0;
  for (int r = 0; r < size; r++) {
    const int64_t said = in[2 * r + 1];
    ret = said < 0 && (ret == 0 || said < ret) ? (int)said : ret;
    everyone += said;
    received += in[2 * r];
  }
  if (ret) /* agreed */
    return drop_received(recv, ret);
  if (everyone == 0) /* nothing to move anywhere: the buffer as it is */
    return 0;
  if (total)
    *total = everyone;
  /* Rank after rank: counts, offsets, then each record at its rank's place. */
  int *sc = calloc((size_t)size, sizeof *sc), *sd = calloc((size_t)size + 1, sizeof *sd);
  int *rc = calloc((size_t)size, sizeof *rc), *rd = calloc((size_t)size, sizeof *rd);
  int64_t *send = malloc((size_t)(n * width + 1) * sizeof *send);
  int64_t *grown = received ? realloc(*recv, (size_t)(received + 1) * sizeof **recv) : *recv;
  *recv = grown ? grown : *recv; /* freed below if the exchange fails */
  local = sc && sd && rc && rd && send && grown ? 0 : STRATA_ENOMEM;
  if (!local && received > INT32_MAX)
    local = strata__fail(STRATA_ENOMEM, "more than 2^31 values to receive in one exchange");
  for (int r = 0; !local && r < size; r++) {
    sc[r] = (int)out[2 * r];
    sd[r + 1] = sd[r] + sc[r];
    rc[r] = (int)in[2 * r];
    if (r + 1 < size)
      rd[r + 1] = rd[r] + rc[r];
  }
  for (int64_t i = 0; !local && i < n; i++) {
    memcpy(send + sd[dest[i]], records + i * width, (size_t)width * sizeof *send);
    sd[dest[i]] += width;
  }
  for (int r = 0; !local && r < size; r++) /* back to each rank's start */
    sd[r] -= sc[r];
  ret = strata__agree_on(comm, local, NULL, 0);
  if (!ret &&
      MPI_Alltoallv(send, sc, sd, MPI_INT64_T, *recv, rc, rd, MPI_INT64_T, comm) != MPI_SUCCESS)
    ret = STRATA_EMPI;
  free(sc), free(sd), free(rc), free(rd), free(send);
  if (ret) {
    if (total)
      *total = 0;
    return drop_received(recv, ret);
  }
  *nrecv = received / width;
  return 0;
}
