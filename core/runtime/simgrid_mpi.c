/* The MPI calls of Strata's host side under SimGrid (internal/simgrid_mpi.h),
 * as SimGrid messages between the simulated ranks' nodes.
 *
 * A message goes through the mailbox of its pair of ranks and its
 * communicator, where SimGrid keeps messages in order: collective calls on
 * one communicator come in the same order on every rank (MPI's rule), so
 * the n-th message a rank takes from a mailbox is the n-th put there. Each
 * carries its call's number, checked on arrival. The simulated network is
 * SMPI's, between the nodes of the two ranks: the calling thread moves to
 * its rank's node for the call. (StarPU-MPI's own messages are not used:
 * under SMPI, one that arrives before its receive is posted is sometimes
 * never delivered.) Broadcasts and reductions to a root go along a
 * binomial tree and reductions to every rank by recursive doubling (log2 P
 * rounds), all-gathers and all-to-alls of small blocks by Bruck's algorithm
 * (log2 P rounds); gathers and other all-to-alls send one message per pair
 * of ranks that have something to say. */
#define STRATA_SIMGRID_MPI_IMPLEMENTATION
#include "internal/simgrid_mpi.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <starpu_mpi.h>

/* A call's number on its communicator: its context in the high bits. */
#define CONTEXT_BITS 44

/* MPI_COMM_WORLD is context 0; each MPI_Comm_dup of it gets a context of its
 * own (a handle that only this file reads), so that collective calls on two
 * communicators may interleave in different orders on different ranks, as
 * MPI allows. */
#define MAX_CONTEXTS 64
static char context_handles[MAX_CONTEXTS];
static int64_t calls[MAX_CONTEXTS];
static int contexts = 1;
static char self_comm_marker;
#define SIM_COMM_SELF ((MPI_Comm)(void *)&self_comm_marker)

static int context_of(MPI_Comm comm)
{
  char *c = (char *)(void *)comm;
  return c >= context_handles + 1 && c < context_handles + MAX_CONTEXTS ? (int)(c - context_handles)
                                                                        : 0;
}

/* The communicator of one rank: MPI_Comm_split_type's node. */
static int is_self(MPI_Comm comm) { return comm == SIM_COMM_SELF; }

/* The number of the next collective call on `comm` (0 on one rank alone,
 * which sends nothing). */
static int64_t next_tag(MPI_Comm comm)
{
  if (is_self(comm))
    return 0;
  int k = context_of(comm);
  return ((int64_t)k << CONTEXT_BITS) | calls[k]++;
}

static size_t type_size(MPI_Datatype t)
{
  if (t == MPI_INT64_T || t == MPI_UINT64_T || t == MPI_DOUBLE || t == MPI_LONG_LONG ||
      t == MPI_LONG_LONG_INT || t == MPI_UNSIGNED_LONG_LONG || t == MPI_LONG ||
      t == MPI_UNSIGNED_LONG)
    return 8;
  if (t == MPI_INT || t == MPI_FLOAT || t == MPI_UNSIGNED || t == MPI_INT32_T)
    return 4;
  if (t == MPI_SHORT || t == MPI_UNSIGNED_SHORT || t == MPI_INT16_T)
    return 2;
  return 1; /* MPI_BYTE, MPI_CHAR, MPI_INT8_T */
}

/* dst[i] = dst[i] op src[i]. */
#define COMBINE(T)                                                                                 \
  for (int i = 0; i < n; i++) {                                                                    \
    T *d = (T *)dst + i, s = ((const T *)src)[i];                                                  \
    if (op == MPI_SUM)                                                                             \
      *d += s;                                                                                     \
    else if (op == MPI_MIN)                                                                        \
      *d = s < *d ? s : *d;                                                                        \
    else if (op == MPI_MAX)                                                                        \
      *d = s > *d ? s : *d;                                                                        \
  }
#define COMBINE_BITS(T)                                                                            \
  for (int i = 0; op == MPI_BOR && i < n; i++)                                                     \
    ((T *)dst)[i] |= ((const T *)src)[i];

static int combine(void *dst, const void *src, int n, MPI_Datatype t, MPI_Op op)
{
  if (op != MPI_SUM && op != MPI_MIN && op != MPI_MAX && op != MPI_BOR)
    return MPI_ERR_OP;
  if (t == MPI_DOUBLE) {
    if (op == MPI_BOR)
      return MPI_ERR_OP;
    COMBINE(double)
  } else if (t == MPI_FLOAT) {
    if (op == MPI_BOR)
      return MPI_ERR_OP;
    COMBINE(float)
  } else if (t == MPI_INT64_T || t == MPI_LONG_LONG) {
    COMBINE(int64_t) COMBINE_BITS(int64_t)
  } else if (t == MPI_UINT64_T || t == MPI_UNSIGNED_LONG_LONG) {
    COMBINE(uint64_t) COMBINE_BITS(uint64_t)
  } else if (t == MPI_INT) {
    COMBINE(int) COMBINE_BITS(int)
  } else if (t == MPI_UNSIGNED) {
    COMBINE(unsigned) COMBINE_BITS(unsigned)
  } else if (t == MPI_INT8_T || t == MPI_CHAR) {
    COMBINE(int8_t) COMBINE_BITS(int8_t)
  } else {
    return MPI_ERR_TYPE;
  }
  return MPI_SUCCESS;
}

/* Messages in flight, in one table that every simulated rank reaches: the
 * ranks share the process's heap but not its globals (SMPI gives each its
 * own), so the table hangs on the host of rank 0's main thread. A letter
 * from rank `from` to rank `to` waits in their pair's list until taken. */
struct letter {
  int64_t tag; /* its context in the high bits */
  struct letter *next;
  unsigned char bytes[];
};
struct post_office {
  int size;
  struct letter **first; /* per receiving rank and sender, oldest first */
};

static struct post_office *post_office(int size)
{
  sg_host_t anchor = sg_host_by_name("StarPU-MPI0-MAIN");
  struct post_office *po = anchor ? sg_host_get_data(anchor) : NULL;
  if (!po && anchor && (po = calloc(1, sizeof *po))) {
    po->size = size;
    if (!(po->first = calloc((size_t)size * (size_t)size, sizeof *po->first))) {
      free(po);
      return NULL;
    }
    sg_host_set_data(anchor, po);
  }
  return po;
}

/* The oldest letter from `from` for `to` in `tag`'s context, out of its list. */
static struct letter *take_letter(struct post_office *po, int to, int from, int64_t tag)
{
  for (struct letter **l = &po->first[(size_t)to * (size_t)po->size + (size_t)from]; *l;
       l = &(*l)->next)
    if ((*l)->tag >> CONTEXT_BITS == tag >> CONTEXT_BITS) {
      struct letter *x = *l;
      *l = x->next;
      return x;
    }
  return NULL;
}

/* Messages of one call, waited for together. The simulated transfer of each
 * is a SimGrid message of its size between the two ranks' nodes; its bytes
 * travel as a letter. */
struct message {
  sg_comm_t comm;
  void *dst; /* a receive's destination (NULL: a send) */
  int peer;
  size_t bytes;
  int64_t tag;
};
struct messages {
  int n, cap;
  struct message *m;
  sg_host_t home; /* the thread's own host, NULL until it moved */
};

static void world(int *rank, int *size)
{
  starpu_mpi_comm_rank(MPI_COMM_WORLD, rank);
  starpu_mpi_comm_size(MPI_COMM_WORLD, size);
}

/* The mailbox of messages from rank `from` to rank `to` in `tag`'s context:
 * SimGrid matches messages on it in order, as the letters are. */
static sg_mailbox_t mailbox(int from, int to, int64_t tag)
{
  char name[64];
  snprintf(name, sizeof name, "strata-mpi %d>%d #%lld", from, to, (long long)(tag >> CONTEXT_BITS));
  return sg_mailbox_by_name(name);
}

static int post(struct messages *m, int send, const void *buf, size_t bytes, int peer, int64_t tag)
{
  int rank, size;
  world(&rank, &size);
  struct post_office *po = post_office(size);
  if (!po)
    return MPI_ERR_NO_MEM;
  if (m->n == m->cap) {
    int cap = m->cap ? 2 * m->cap : 8;
    struct message *grown = realloc(m->m, (size_t)cap * sizeof *grown);
    if (!grown)
      return MPI_ERR_NO_MEM;
    m->m = grown;
    m->cap = cap;
  }
  if (!m->home) { /* to the rank's node, whose thread started main() (StarPU) */
    m->home = sg_host_self();
    sg_actor_set_host(sg_actor_self(),
                      sg_actor_get_host(sg_actor_by_pid(sg_actor_self_get_ppid())));
  }
  struct message *x = &m->m[m->n];
  *x = (struct message){.peer = peer, .bytes = bytes, .tag = tag};
  if (send) {
    struct letter *l = malloc(sizeof *l + bytes),
                  **last = &po->first[(size_t)peer * (size_t)size + (size_t)rank];
    if (!l)
      return MPI_ERR_NO_MEM;
    *l = (struct letter){.tag = tag};
    memcpy(l->bytes, buf, bytes);
    while (*last)
      last = &(*last)->next;
    *last = l;
    x->comm = sg_mailbox_put_async(mailbox(rank, peer, tag), l, (long)bytes);
  } else {
    x->dst = (void *)buf;
    static void *unused; /* SimGrid's copy of the payload (the letter holds the bytes) */
    x->comm = sg_mailbox_get_async(mailbox(peer, rank, tag), &unused);
  }
  m->n++;
  return MPI_SUCCESS;
}

static void wait_progressing(sg_comm_t comm);

static int wait_all(struct messages *m, int ret)
{
  int rank, size;
  world(&rank, &size);
  struct post_office *po = m->n ? post_office(size) : NULL;
  for (int k = 0; k < m->n; k++) {
    struct message *x = &m->m[k];
    wait_progressing(x->comm);
    if (!x->dst)
      continue;
    struct letter *l = take_letter(po, rank, x->peer, x->tag);
    if (!l || l->tag != x->tag) {
      fprintf(stderr, "strata: simulated MPI: rank %d, call %llx from rank %d: %s\n", rank,
              (unsigned long long)x->tag, x->peer, l ? "another call's message" : "no message");
      abort();
    }
    memcpy(x->dst, l->bytes, x->bytes);
    free(l);
  }
  if (m->home)
    sg_actor_set_host(sg_actor_self(), m->home);
  free(m->m);
  *m = (struct messages){0};
  return ret;
}

/* One message each way; the caller passes `bytes` of 0 to skip. */
static int exchange_one(int send, const void *buf, size_t bytes, int peer, int64_t tag)
{
  struct messages m = {0};
  int ret = bytes ? post(&m, send, buf, bytes, peer, tag) : MPI_SUCCESS;
  return wait_all(&m, ret);
}

/* This rank and the ranks of `comm` (0 and 1 for one rank alone). */
static void members(MPI_Comm comm, int *rank, int *size)
{
  if (is_self(comm))
    *rank = 0, *size = 1;
  else
    world(rank, size);
}

int strata__sim_initialized(int *flag)
{
  *flag = 1; /* StarPU started the rank before main() */
  return MPI_SUCCESS;
}

int strata__sim_query_thread(int *provided)
{
  /* The simulated threads run one at a time: no two calls can overlap. */
  *provided = MPI_THREAD_MULTIPLE;
  return MPI_SUCCESS;
}

int strata__sim_comm_rank(MPI_Comm comm, int *rank)
{
  int size;
  members(comm, rank, &size);
  return MPI_SUCCESS;
}

int strata__sim_comm_size(MPI_Comm comm, int *size)
{
  int rank;
  members(comm, &rank, size);
  return MPI_SUCCESS;
}

int strata__sim_comm_dup(MPI_Comm comm, MPI_Comm *dup)
{
  if (comm == SIM_COMM_SELF) {
    *dup = comm;
    return MPI_SUCCESS;
  }
  if (contexts == MAX_CONTEXTS)
    return MPI_ERR_COMM;
  *dup = (MPI_Comm)(void *)&context_handles[contexts++];
  return MPI_SUCCESS;
}

int strata__sim_comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *out)
{
  (void)comm, (void)type, (void)key, (void)info;
  *out = SIM_COMM_SELF;
  return MPI_SUCCESS;
}

int strata__sim_comm_free(MPI_Comm *comm)
{
  *comm = MPI_COMM_NULL;
  return MPI_SUCCESS;
}

/* Binomial tree rooted at `root`: ranks renumbered so that the root is 0. */
int strata__sim_bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
  int rank, size;
  members(comm, &rank, &size);
  if (size == 1)
    return MPI_SUCCESS;
  int64_t tag = next_tag(comm);
  size_t bytes = (size_t)count * type_size(type);
  int me = (rank - root + size) % size, ret = MPI_SUCCESS, mask = 1;
  while (mask < size && !(me & mask))
    mask <<= 1;
  if (me != 0) /* from the rank that differs in my lowest set bit */
    ret = exchange_one(0, buf, bytes, ((me - mask) + root) % size, tag);
  for (mask >>= 1; mask > 0 && ret == MPI_SUCCESS; mask >>= 1)
    if (me + mask < size)
      ret = exchange_one(1, buf, bytes, (me + mask + root) % size, tag);
  return ret;
}

int strata__sim_reduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                       int root, MPI_Comm comm)
{
  size_t bytes = (size_t)count * type_size(type);
  int rank, size;
  members(comm, &rank, &size);
  const void *mine = send == MPI_IN_PLACE ? recv : send;
  char *acc = malloc(bytes ? bytes : 1), *part = malloc(bytes ? bytes : 1);
  if (!acc || !part) {
    free(acc), free(part);
    return MPI_ERR_NO_MEM;
  }
  memcpy(acc, mine, bytes);
  int64_t tag = next_tag(comm);
  int me = (rank - root + size) % size, ret = MPI_SUCCESS, mask = 1;
  for (; mask < size && ret == MPI_SUCCESS; mask <<= 1) {
    if (me & mask) { /* my part goes up, and I am done */
      ret = exchange_one(1, acc, bytes, ((me - mask) + root) % size, tag);
      break;
    }
    if (me + mask < size) {
      ret = exchange_one(0, part, bytes, (me + mask + root) % size, tag);
      if (ret == MPI_SUCCESS)
        ret = combine(acc, part, count, type, op);
    }
  }
  if (me == 0 && ret == MPI_SUCCESS)
    memcpy(recv, acc, bytes);
  free(acc), free(part);
  return ret;
}

/* Recursive doubling, as Open MPI reduces small messages on every rank:
 * log2 P rounds, each an exchange with the rank whose number differs in
 * one bit, both combining the same two values (so every rank gets the same
 * bits: the operations are commutative). Past the largest power of two,
 * a rank hands its value to the rank that number below and gets the result
 * back: two more rounds. */
int strata__sim_allreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                          MPI_Comm comm)
{
  size_t bytes = (size_t)count * type_size(type);
  int rank, size;
  members(comm, &rank, &size);
  if (send != MPI_IN_PLACE)
    memcpy(recv, send, bytes);
  char *theirs = malloc(bytes ? bytes : 1);
  if (!theirs)
    return MPI_ERR_NO_MEM;
  int64_t tag = next_tag(comm);
  int below = 1;
  while (2 * below <= size)
    below *= 2;
  const int extra = rank + below < size; /* a rank past `below` hands its value to me */
  int ret = MPI_SUCCESS;
  if (rank >= below) {
    ret = exchange_one(1, recv, bytes, rank - below, tag);
    if (ret == MPI_SUCCESS)
      ret = exchange_one(0, recv, bytes, rank - below, tag);
  } else {
    if (extra && (ret = exchange_one(0, theirs, bytes, rank + below, tag)) == MPI_SUCCESS)
      ret = combine(recv, theirs, count, type, op);
    for (int mask = 1; mask < below && ret == MPI_SUCCESS; mask <<= 1) {
      struct messages m = {0};
      ret = post(&m, 1, recv, bytes, rank ^ mask, tag);
      if (ret == MPI_SUCCESS)
        ret = post(&m, 0, theirs, bytes, rank ^ mask, tag);
      ret = wait_all(&m, ret);
      if (ret == MPI_SUCCESS)
        ret = combine(recv, theirs, count, type, op);
    }
    if (extra && ret == MPI_SUCCESS)
      ret = exchange_one(1, recv, bytes, rank + below, tag);
  }
  free(theirs);
  return ret;
}

/* Recursive doubling: after the round of distance d, each rank holds the
 * combination of the 2d ranks up to itself (fewer near rank 0), and has
 * combined into its result all those before it. */
int strata__sim_exscan(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                       MPI_Comm comm)
{
  size_t bytes = (size_t)count * type_size(type);
  int rank, size;
  members(comm, &rank, &size);
  char *incl = malloc(bytes ? bytes : 1), *part = malloc(bytes ? bytes : 1);
  if (!incl || !part) {
    free(incl), free(part);
    return MPI_ERR_NO_MEM;
  }
  memcpy(incl, send == MPI_IN_PLACE ? recv : send, bytes);
  int ret = MPI_SUCCESS, have = 0;
  for (int d = 1; d < size && ret == MPI_SUCCESS; d <<= 1) {
    int64_t tag = next_tag(comm);
    struct messages m = {0};
    if (rank + d < size)
      ret = post(&m, 1, incl, bytes, rank + d, tag);
    if (ret == MPI_SUCCESS && rank >= d)
      ret = post(&m, 0, part, bytes, rank - d, tag);
    ret = wait_all(&m, ret);
    if (ret != MPI_SUCCESS || rank < d)
      continue;
    if (have)
      ret = combine(recv, part, count, type, op);
    else
      memcpy(recv, part, bytes), have = 1;
    if (ret == MPI_SUCCESS)
      ret = combine(incl, part, count, type, op);
  }
  free(incl), free(part);
  return ret;
}

int strata__sim_barrier(MPI_Comm comm)
{
  int token = 0;
  return strata__sim_allreduce(MPI_IN_PLACE, &token, 1, MPI_INT, MPI_SUM, comm);
}

int strata__sim_gatherv(const void *send, int scount, MPI_Datatype stype, void *recv,
                        const int *rcounts, const int *displs, MPI_Datatype rtype, int root,
                        MPI_Comm comm)
{
  int rank, size;
  members(comm, &rank, &size);
  int64_t tag = next_tag(comm);
  struct messages m = {0};
  int ret = MPI_SUCCESS;
  size_t es = type_size(rtype);
  if (rank != root)
    ret = scount ? post(&m, 1, send, (size_t)scount * type_size(stype), root, tag) : ret;
  for (int r = 0; rank == root && r < size && ret == MPI_SUCCESS; r++) {
    char *at = (char *)recv + (size_t)displs[r] * es;
    if (r == root && send != MPI_IN_PLACE)
      memcpy(at, send, (size_t)scount * type_size(stype));
    else if (r != root && rcounts[r])
      ret = post(&m, 0, at, (size_t)rcounts[r] * es, r, tag);
  }
  return wait_all(&m, ret);
}

int strata__sim_gather(const void *send, int scount, MPI_Datatype stype, void *recv, int rcount,
                       MPI_Datatype rtype, int root, MPI_Comm comm)
{
  int rank, size;
  members(comm, &rank, &size);
  int *counts = malloc((size_t)size * sizeof *counts),
      *displs = malloc((size_t)size * sizeof *displs);
  int ret = counts && displs ? MPI_SUCCESS : MPI_ERR_NO_MEM;
  for (int r = 0; ret == MPI_SUCCESS && r < size; r++)
    counts[r] = rcount, displs[r] = r * rcount;
  if (ret == MPI_SUCCESS)
    ret = strata__sim_gatherv(send, scount, stype, recv, counts, displs, rtype, root, comm);
  free(counts), free(displs);
  return ret;
}

int strata__sim_allgatherv(const void *send, int scount, MPI_Datatype stype, void *recv,
                           const int *rcounts, const int *displs, MPI_Datatype rtype, MPI_Comm comm)
{
  int rank, size;
  members(comm, &rank, &size);
  size_t es = type_size(rtype);
  if (send == MPI_IN_PLACE) { /* my part is in place already */
    send = (char *)recv + (size_t)displs[rank] * es;
    scount = rcounts[rank];
    stype = rtype;
  }
  int ret = strata__sim_gatherv(send, scount, stype, recv, rcounts, displs, rtype, 0, comm);
  /* Then the whole from rank 0: the parts lie at their displacements. */
  int64_t end = 0;
  for (int r = 0; r < size; r++)
    if ((int64_t)displs[r] + rcounts[r] > end)
      end = (int64_t)displs[r] + rcounts[r];
  return ret == MPI_SUCCESS ? strata__sim_bcast(recv, (int)(end * (int64_t)es), MPI_BYTE, 0, comm)
                            : ret;
}

/* Bruck's all-gather, as Open MPI gathers small blocks: ceil(log2(size))
 * rounds of one message each way, after the round of distance d each rank
 * holding the blocks of the 2d ranks from itself on. */
int strata__sim_allgather(const void *send, int scount, MPI_Datatype stype, void *recv, int rcount,
                          MPI_Datatype rtype, MPI_Comm comm)
{
  int rank, size;
  members(comm, &rank, &size);
  const size_t block = (size_t)rcount * type_size(rtype), n = (size_t)size, me = (size_t)rank;
  char *at = malloc(n * block + 1); /* at[i]: the block of rank + i */
  if (!at)
    return MPI_ERR_NO_MEM;
  memcpy(at, send == MPI_IN_PLACE ? (const char *)recv + me * block : send,
         send == MPI_IN_PLACE ? block : (size_t)scount * type_size(stype));
  int ret = MPI_SUCCESS;
  const int64_t tag = size > 1 ? next_tag(comm) : 0;
  for (size_t d = 1; d < n && ret == MPI_SUCCESS; d <<= 1) {
    const size_t count = d < n - d ? d : n - d;
    struct messages m = {0};
    ret = post(&m, 1, at, count * block, (int)((me + n - d) % n), tag);
    if (ret == MPI_SUCCESS)
      ret = post(&m, 0, at + d * block, count * block, (int)((me + d) % n), tag);
    ret = wait_all(&m, ret);
  }
  for (size_t i = 0; ret == MPI_SUCCESS && i < n; i++)
    memcpy((char *)recv + (me + i) % n * block, at + i * block, block);
  free(at);
  return ret;
}

int strata__sim_alltoallv(const void *send, const int *scounts, const int *sdispls,
                          MPI_Datatype stype, void *recv, const int *rcounts, const int *rdispls,
                          MPI_Datatype rtype, MPI_Comm comm)
{
  int rank, size;
  members(comm, &rank, &size);
  int64_t tag = next_tag(comm);
  size_t ss = type_size(stype), rs = type_size(rtype);
  struct messages m = {0};
  int ret = MPI_SUCCESS;
  for (int r = 0; r < size && ret == MPI_SUCCESS; r++) {
    char *in = (char *)recv + (size_t)rdispls[r] * rs;
    const char *out = (const char *)send + (size_t)sdispls[r] * ss;
    if (r == rank)
      memcpy(in, out, (size_t)scounts[r] * ss);
    else if (rcounts[r])
      ret = post(&m, 0, in, (size_t)rcounts[r] * rs, r, tag);
  }
  for (int k = 1; k < size && ret == MPI_SUCCESS; k++) { /* peers in a ring, not all on rank 0 */
    int r = (rank + k) % size;
    if (scounts[r])
      ret = post(&m, 1, (const char *)send + (size_t)sdispls[r] * ss, (size_t)scounts[r] * ss, r,
                 tag);
  }
  return wait_all(&m, ret);
}

/* All-to-all of small blocks as Open MPI sends them, by Bruck's algorithm:
 * log2(size) rounds of one message each way, round k carrying the blocks
 * whose distance to their rank has bit k set. A message to every peer would
 * be size^2 transfers for the simulation to carry (4 bytes each for the
 * counts before an exchange of records). */
static int alltoall_bruck(const void *send, void *recv, size_t block, int rank, int size,
                          int64_t tag)
{
  const size_t n = (size_t)size, me = (size_t)rank;
  char *at = malloc(n * block), *out = malloc(n * block), *in = malloc(n * block);
  int ret = at && out && in ? MPI_SUCCESS : MPI_ERR_NO_MEM;
  for (size_t i = 0; ret == MPI_SUCCESS && i < n; i++) /* at[i]: for rank + i */
    memcpy(at + i * block, (const char *)send + (me + i) % n * block, block);
  for (size_t k = 1; k < n && ret == MPI_SUCCESS; k <<= 1) {
    size_t count = 0;
    for (size_t i = k; i < n; i++)
      if (i & k)
        memcpy(out + count++ * block, at + i * block, block);
    struct messages m = {0};
    ret = post(&m, 1, out, count * block, (int)((me + k) % n), tag);
    if (ret == MPI_SUCCESS)
      ret = post(&m, 0, in, count * block, (int)((me + n - k) % n), tag);
    ret = wait_all(&m, ret);
    count = 0;
    for (size_t i = k; ret == MPI_SUCCESS && i < n; i++)
      if (i & k)
        memcpy(at + i * block, in + count++ * block, block);
  }
  for (size_t i = 0; ret == MPI_SUCCESS && i < n; i++) /* at[i]: from rank - i */
    memcpy((char *)recv + (me + n - i) % n * block, at + i * block, block);
  free(at), free(out), free(in);
  return ret;
}

int strata__sim_alltoall(const void *send, int scount, MPI_Datatype stype, void *recv, int rcount,
                         MPI_Datatype rtype, MPI_Comm comm)
{
  int rank, size;
  members(comm, &rank, &size);
  const size_t block = (size_t)scount * type_size(stype);
  if (size > 1 && block > 0 && block <= 256 && block == (size_t)rcount * type_size(rtype))
    return alltoall_bruck(send, recv, block, rank, size, next_tag(comm));
  size_t n = (size_t)size;
  int *sc = malloc(n * sizeof *sc), *sd = malloc(n * sizeof *sd);
  int *rc = malloc(n * sizeof *rc), *rd = malloc(n * sizeof *rd);
  int ret = sc && sd && rc && rd ? MPI_SUCCESS : MPI_ERR_NO_MEM;
  for (int r = 0; ret == MPI_SUCCESS && r < size; r++)
    sc[r] = scount, sd[r] = r * scount, rc[r] = rcount, rd[r] = r * rcount;
  if (ret == MPI_SUCCESS)
    ret = strata__sim_alltoallv(send, sc, sd, stype, recv, rc, rd, rtype, comm);
  free(sc), free(sd), free(rc), free(rd);
  return ret;
}

double strata__sim_wtime(void) { return starpu_timing_now() * 1e-6; /* simulated time */ }

/* ---- point to point (p4est's calls under the simulation) ----
 *
 * A send copies its bytes into a note, which a SimGrid message of its size
 * carries to the receiver's mailbox (one per rank); it is complete when
 * the receiver has taken it. A SimGrid message moves only while both its
 * ends wait on it, and only between nodes (a main thread's own host has no
 * route). So from its first point-to-point call on, a rank's main thread
 * stays on its node, and whenever it waits for anything (a receive, a
 * send, a collective's message) it waits on all its messages at once: its
 * sends in flight and one receive from its mailbox. A note it takes goes to
 * its earliest posted receive of that source, tag and communicator, else is
 * kept for a later one: MPI's matching, messages of one sender in order.
 * A rank's receives, sends and kept notes are its own (SMPI gives each rank
 * its own globals); where SimGrid writes a received note's address is on
 * the heap, which all ranks share. */
struct note {
  /* First: SMPI's copy of a message's payload hands the receiver the
   * first pointer's worth of bytes it points to, so this is what arrives. */
  struct note *self;
  int source, tag, context;
  size_t bytes;
  struct note *next;
  unsigned char data[];
};
struct request {
  int is_recv, done;
  sg_comm_t comm; /* a send's message */
  void *buf;
  size_t capacity;
  int source, tag, context;
  MPI_Status status;
  struct request *next; /* posted receives, in order */
};
static int settled; /* on the node, for good */
static struct note *kept, **kept_end = &kept;
static struct request *posted, **posted_end = &posted;
static struct request **sending; /* sends in flight */
static int nsending, sending_cap;
static sg_comm_t taking;  /* the receive from the rank's mailbox, or NULL */
static void **taken_slot; /* where SimGrid puts its note's address */

static sg_mailbox_t inbox_of(int rank)
{
  char name[48];
  snprintf(name, sizeof name, "strata-mpi p2p %d", rank);
  return sg_mailbox_by_name(name);
}

static void settle(void)
{
  if (settled)
    return;
  settled = 1;
  sg_actor_set_host(sg_actor_self(), sg_actor_get_host(sg_actor_by_pid(sg_actor_self_get_ppid())));
}

static int matches(const struct request *r, const struct note *n)
{
  return r->context == n->context && (r->source == MPI_ANY_SOURCE || r->source == n->source) &&
         (r->tag == MPI_ANY_TAG || r->tag == n->tag);
}

/* Note n into receive r; MPI_ERR_TRUNCATE where it does not fit. */
static void deliver(struct request *r, struct note *n)
{
  const size_t bytes = n->bytes < r->capacity ? n->bytes : r->capacity;
  memcpy(r->buf, n->data, bytes);
  r->status = (MPI_Status){.MPI_SOURCE = n->source,
                           .MPI_TAG = n->tag,
                           .MPI_ERROR = n->bytes > r->capacity ? MPI_ERR_TRUNCATE : MPI_SUCCESS,
                           .count = (int)bytes};
  r->done = 1;
  free(n);
}

/* A note taken: to the earliest posted receive it matches, else kept. */
static void arrived(struct note *n)
{
  n->next = NULL;
  for (struct request **r = &posted; *r; r = &(*r)->next)
    if (matches(*r, n)) {
      struct request *x = *r;
      if (!(*r = x->next))
        posted_end = r;
      deliver(x, n);
      return;
    }
  *kept_end = n;
  kept_end = &n->next;
}

/* Wait until one of the rank's messages is through, `extra` (a collective's,
 * or NULL) among them: 1 when it was `extra`. */
static int progress(sg_comm_t extra)
{
  int rank, size;
  world(&rank, &size);
  if (!taking) {
    taken_slot = taken_slot ? taken_slot : malloc(sizeof *taken_slot);
    taking = sg_mailbox_get_async(inbox_of(rank), taken_slot);
  }
  const int n = 1 + nsending + (extra != NULL);
  sg_comm_t *all = malloc((size_t)n * sizeof *all);
  if (!all)
    abort(); /* no way to report it from inside a wait */
  all[0] = taking;
  for (int i = 0; i < nsending; i++)
    all[1 + i] = sending[i]->comm;
  if (extra)
    all[n - 1] = extra;
  const ssize_t k = sg_comm_wait_any(all, (size_t)n);
  free(all);
  if (k == 0) {
    taking = NULL;
    arrived(*taken_slot);
  } else if (k <= nsending) { /* its message let go by SimGrid's wait */
    struct request *done = sending[k - 1];
    done->done = 1;
    done->comm = NULL;
    sending[k - 1] = sending[--nsending];
  }
  return extra && k == n - 1;
}

static void wait_progressing(sg_comm_t comm)
{
  if (!settled)
    sg_comm_wait(comm);
  else
    while (!progress(comm))
      ;
}

int strata__sim_isend(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                      MPI_Comm comm, MPI_Request *req)
{
  int rank, size;
  world(&rank, &size);
  settle();
  const size_t bytes = (size_t)count * type_size(type);
  struct note *n = malloc(sizeof *n + bytes);
  struct request *r = calloc(1, sizeof *r);
  if (nsending == sending_cap) {
    int cap = sending_cap ? 2 * sending_cap : 16;
    struct request **grown = realloc(sending, (size_t)cap * sizeof *grown);
    if (grown)
      sending = grown, sending_cap = cap;
  }
  if (!n || !r || nsending == sending_cap) {
    free(n), free(r);
    return MPI_ERR_NO_MEM;
  }
  *n = (struct note){
      .self = n, .source = rank, .tag = tag, .context = context_of(comm), .bytes = bytes};
  memcpy(n->data, buf, bytes);
  r->comm = sg_mailbox_put_async(inbox_of(dest), n, (long)bytes);
  sending[nsending++] = r;
  *req = (MPI_Request)(void *)r;
  return MPI_SUCCESS;
}

int strata__sim_irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                      MPI_Request *req)
{
  settle();
  struct request *r = calloc(1, sizeof *r);
  if (!r)
    return MPI_ERR_NO_MEM;
  *r = (struct request){.is_recv = 1,
                        .buf = buf,
                        .capacity = (size_t)count * type_size(type),
                        .source = source,
                        .tag = tag,
                        .context = context_of(comm)};
  *req = (MPI_Request)(void *)r;
  for (struct note **n = &kept; *n; n = &(*n)->next)
    if (matches(r, *n)) {
      struct note *x = *n;
      if (!(*n = x->next))
        kept_end = n;
      deliver(r, x);
      return MPI_SUCCESS;
    }
  *posted_end = r;
  posted_end = &r->next;
  return MPI_SUCCESS;
}

/* A finished request's status, then the request freed. */
static int finish(MPI_Request *req, MPI_Status *status)
{
  struct request *r = (struct request *)(void *)*req;
  const int ret = r->is_recv ? r->status.MPI_ERROR : MPI_SUCCESS;
  if (status != MPI_STATUS_IGNORE)
    *status = r->status;
  if (r->comm)
    sg_comm_unref(r->comm);
  free(r);
  *req = MPI_REQUEST_NULL;
  return ret;
}

int strata__sim_wait(MPI_Request *req, MPI_Status *status)
{
  if (*req == MPI_REQUEST_NULL)
    return MPI_SUCCESS;
  while (!((struct request *)(void *)*req)->done)
    progress(NULL);
  return finish(req, status);
}

int strata__sim_waitall(int n, MPI_Request *reqs, MPI_Status *statuses)
{
  int ret = MPI_SUCCESS;
  for (int i = 0; i < n; i++) {
    int one = strata__sim_wait(&reqs[i],
                               statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i]);
    ret = ret == MPI_SUCCESS ? one : ret;
  }
  return ret;
}

int strata__sim_waitsome(int n, MPI_Request *reqs, int *outcount, int *indices,
                         MPI_Status *statuses)
{
  int active = 0, ret = MPI_SUCCESS;
  for (int i = 0; i < n; i++)
    active += reqs[i] != MPI_REQUEST_NULL;
  *outcount = active ? 0 : MPI_UNDEFINED;
  while (active && !*outcount) {
    for (int i = 0; i < n; i++)
      if (reqs[i] != MPI_REQUEST_NULL && ((struct request *)(void *)reqs[i])->done) {
        const int k = (*outcount)++;
        indices[k] = i;
        int one =
            finish(&reqs[i], statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[k]);
        ret = ret == MPI_SUCCESS ? one : ret;
      }
    if (!*outcount)
      progress(NULL);
  }
  return ret;
}

int strata__sim_probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
  settle();
  const struct request want = {.source = source, .tag = tag, .context = context_of(comm)};
  for (;;) {
    for (const struct note *n = kept; n; n = n->next)
      if (matches(&want, n)) {
        if (status != MPI_STATUS_IGNORE)
          *status =
              (MPI_Status){.MPI_SOURCE = n->source, .MPI_TAG = n->tag, .count = (int)n->bytes};
        return MPI_SUCCESS;
      }
    progress(NULL);
  }
}

int strata__sim_send(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                     MPI_Comm comm)
{
  MPI_Request r;
  int ret = strata__sim_isend(buf, count, type, dest, tag, comm, &r);
  return ret == MPI_SUCCESS ? strata__sim_wait(&r, MPI_STATUS_IGNORE) : ret;
}

int strata__sim_recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                     MPI_Status *status)
{
  MPI_Request r;
  int ret = strata__sim_irecv(buf, count, type, source, tag, comm, &r);
  return ret == MPI_SUCCESS ? strata__sim_wait(&r, status) : ret;
}

int strata__sim_get_count(const MPI_Status *status, MPI_Datatype type, int *count)
{
  const int size = (int)type_size(type);
  *count = status->count % size ? MPI_UNDEFINED : status->count / size;
  return MPI_SUCCESS;
}
