/* The exchange layer: every rank-to-rank message of Strata goes through it
 * (the global indexer, the AMR ghost fill, the inference populate and
 * update, merges across ranks, sharded launches). Not installed.
 *
 * - StarPU-MPI tags: the one allocator. Strata's tags have bit 62 set, so
 *   applications keep theirs below 2^62. A long-lived object (an indexer, a
 *   hierarchy, an inference method) holds a range of 2^48 tags from one of
 *   STRATA__TAG_SLOTS slots, agreed over its communicator and reused after
 *   its release; a collective call gets the 2^20 tags of its number in the
 *   sequence of collective calls. Running out is an error, never a wrap.
 * - Mailboxes: one packed message per pair of ranks and phase, as a task
 *   graph: pack tasks write the outboxes, StarPU-MPI moves each outbox after
 *   its pack tasks, unpack tasks read the inboxes. The AMR halo exchange and
 *   the inference populate and update use strata__mailbox: one vector per
 *   peer and direction, for one exchange. The global indexer posts through
 *   strata__exchange_post too. It keeps its own buffers, one per direction
 *   and split per peer by a partition plan, because it reuses them across
 *   exchanges: a handle made per exchange costs StarPU 1.3 48 bytes for
 *   good once a request has waited on it (docs/reliability.md).
 * - Host-side records: plans and descriptions that ranks exchange between
 *   tasks (strata__exchange_records), one all-to-all of counts (which also
 *   agrees on errors) and one of the records.
 * - One error mapping: a StarPU-MPI send or receive that cannot be posted
 *   is STRATA_EMPI; a StarPU call, strata__from_starpu(). */
#ifndef STRATA_INTERNAL_EXCHANGE_H
#define STRATA_INTERNAL_EXCHANGE_H

#include <mpi.h>
#include <starpu.h>
#include <stddef.h>
#include <stdint.h>

/* Live tag ranges of objects at once (on one process). */
#define STRATA__TAG_SLOTS 4096

/* A range of StarPU-MPI tags: base + i for 0 <= i < count. */
typedef struct strata__tags {
  int64_t base, count;
  int slot; /* the object slot, -1 for a collective call's range */
} strata__tags;

/* An object's range: the lowest slot free on every rank of `comm`
 * (collective over it; ranks may create objects on other communicators in
 * other orders). STRATA_ENOMEM, naming `owner`, when every slot is held;
 * STRATA_EMPI when the agreement fails. */
int strata__tags_take(MPI_Comm comm, const char *owner, strata__tags *t);

/* Give an object's range back (its messages are complete); idempotent,
 * and a zeroed range (never taken: count 0) is ignored. */
void strata__tags_release(strata__tags *t);

/* The range of the collective call numbered `seq` (strata__next_collective,
 * identical on every rank); STRATA_ENOMEM past 2^41 calls. */
int strata__tags_of_call(int64_t seq, strata__tags *t);

/* Part k of n equal parts of a range (0 <= k < n; n a power of two). */
void strata__tags_part(const strata__tags *t, int k, int n, strata__tags *part);

/* Tag i of the range into *tag; STRATA_ENOMEM with a message past its end. */
int strata__tag(const strata__tags *t, int64_t i, int64_t *tag);

/* One message of a whole handle from rank `from` to rank `to` under `tag`:
 * the sender posts the send of its `h`, the receiver the receive into its
 * `h`, other ranks nothing. */
int strata__transfer(MPI_Comm comm, int64_t tag, int from, int to, starpu_data_handle_t h);

/* Send outbox[r] to each peer r with send[r] > 0 and receive inbox[r] from
 * each peer with recv[r] > 0, all under `tag`; the rank's own part
 * (send[rank] > 0) is a local copy into inbox[rank]. A send leaves once the
 * tasks submitted before it on its outbox are done. *messages (or NULL) is
 * increased by the number of messages sent. */
int strata__exchange_post(MPI_Comm comm, int64_t tag, const int64_t *send,
                          starpu_data_handle_t const *outbox, const int64_t *recv,
                          starpu_data_handle_t const *inbox, int64_t *messages);

/* A mailbox of one phase: values of `elemsize` bytes reserved per pair of
 * ranks, then one outbox and one inbox vector per peer, registered here,
 * unregistered at close (after their tasks). */
struct strata__mailbox {
  MPI_Comm comm;
  int rank, size;
  int64_t tag;
  size_t elemsize;
  int64_t *send, *recv; /* per peer: values to it, from it */
  starpu_data_handle_t *outbox, *inbox;
};

int strata__mailbox_open(struct strata__mailbox *mb, MPI_Comm comm, int64_t tag, size_t elemsize);

/* Room for `values` from rank `from` to rank `to` (from != to): the offset
 * in the message, the same on both ranks; -1 when this rank is neither. */
int64_t strata__mailbox_reserve(struct strata__mailbox *mb, int from, int to, int64_t values);

/* Register the boxes of the reservations made so far; each outbox is
 * zeroed first, so that pack tasks may write parts of it (RW). */
int strata__mailbox_prepare(struct strata__mailbox *mb);

/* After the pack tasks: post the messages (strata__exchange_post). */
int strata__mailbox_post(struct strata__mailbox *mb, int64_t *messages);

/* Unregister the boxes once their tasks are done and free the mailbox. */
void strata__mailbox_close(struct strata__mailbox *mb);

/* Host-side records between ranks (plans, descriptions): record i of
 * `width` int64 goes to rank dest[i]; *recv (malloc'd, never NULL on
 * success, NULL after an error) gets *nrecv records, those of rank 0
 * first, each rank's in its sending order; *total (or NULL): the records sent by all ranks
 * together. Collective over `comm`, which must be strata__coll_comm(). Errors agreed: `local_err`
 * (this rank's error before the call, 0 if none) travels with the all-to-all of counts, so that an
 * exchange costs one collective call when no rank sends anything and three otherwise (each
 * agreement costs log2 P rounds: docs/scaling.md). */
int strata__exchange_records(MPI_Comm comm, int local_err, const int64_t *records, const int *dest,
                             int64_t n, int width, int64_t **recv, int64_t *nrecv, int64_t *total);
#endif
