/* The global indexer's protocol object and the exchange machinery shared
 * by its fixed-size (gindexer.c), variable-size (gindexer_v.c) and object
 * (gindexer_objects.c) exchanges. Not installed. */
#ifndef STRATA_CORE_GINDEXER_IMPL_H
#define STRATA_CORE_GINDEXER_IMPL_H

#include <starpu.h>

#include <strata/gindexer.h>

#include "internal/exchange.h"
#include "internal/runtime.h"

struct strata__gi_buffer;
struct strata__gi_pooled;

/* An exchange's StarPU-MPI tag: one of the first STRATA__GI_TAG_SLOTS of
 * the indexer's range, used in turn. */
#define STRATA__GI_TAG_SLOTS 1024

struct strata_gindexer {
  MPI_Comm comm;
  int rank, size, n_lists;
  strata__tags tags;
  int64_t exchanges;
  int64_t dn, n_idx, nin;
  int64_t requested;    /* owned indices with at least one request */
  int64_t *list_off;    /* [n_lists + 1] first request of each list */
  int64_t *send_counts; /* [size] requests this rank sends to each owner */
  int64_t *recv_counts; /* [size] requests this rank owns from each rank */
  int64_t *local;       /* [nin] owned offset of each incoming request */
  int64_t *order;       /* [n_idx] row of request p in the owner-sorted list */
  int64_t *inverse;     /* [n_idx] request p of sorted row j */
  int64_t *csr, *req;   /* [dn + 1], [nin]: incoming requests per owned index */
  starpu_data_handle_t h_local, h_csr, h_req;
  starpu_data_handle_t h_inverse;    /* single list only: the Put pack is one gather */
  starpu_data_handle_t *h_order;     /* [n_lists] each list's slice of order (NULL: empty) */
  struct strata__gi_buffer *pending; /* exchange buffers not yet freed */
  struct strata__gi_pooled *pool;    /* the fixed exchanges' mailboxes, kept */
  strata__live live;
};

/* A temporary row buffer split by peer rank: children only for the
 * non-empty parts (the parts are consecutive, so they tile the buffer). */
struct strata__gi_mailbox {
  starpu_data_handle_t whole;  /* NULL when nothing moves */
  starpu_data_handle_t *parts; /* by rank; NULL for empty parts */
  starpu_data_handle_t *children;
  int nchildren;
  int pooled; /* kept by the indexer: closing leaves it */
};

/* Host memory of n elements of `elem` bytes (n > 0) registered at home as
 * a vector in *h, freed with its handle by strata__gi_reclaim(); NULL when
 * out of memory. */
void *strata__gi_buffer(strata_gindexer *gi, int64_t n, size_t elem, starpu_data_handle_t *h);

/* Unregister (waiting for their tasks) and free the exchange buffers. */
void strata__gi_reclaim(strata_gindexer *gi);

/* Free the kept mailboxes of the fixed exchanges (waits for their tasks). */
void strata__gi_pool_clear(strata_gindexer *gi);

/* Free the exchange buffers whose tasks are done, without waiting. Only
 * where the calling exchange submits no more tasks: at its start (the
 * buffers are earlier exchanges') or when it fails. */
void strata__gi_reclaim_done(strata_gindexer *gi);

/* Outbox with out_rows[r] rows for rank r (nout in all) and inbox with
 * in_rows[r] rows from rank r (nin), rows of `row` bytes; local result
 * (STRATA_ENOMEM), to be agreed on by the caller. */
int strata__gi_open(strata_gindexer *gi, const int64_t *out_rows, int64_t nout,
                    const int64_t *in_rows, int64_t nin, size_t row,
                    struct strata__gi_mailbox *outbox, struct strata__gi_mailbox *inbox);

/* After the pack tasks on outbox->whole: move every part to its rank and
 * leave the inbox whole for the unpack tasks; closes the outbox. */
int strata__gi_post(strata_gindexer *gi, struct strata__gi_mailbox *outbox, const int64_t *out_rows,
                    struct strata__gi_mailbox *inbox, const int64_t *in_rows);

void strata__gi_close(struct strata__gi_mailbox *m);

/* The exchange's agreement: the smallest local error of any rank; else
 * STRATA_EINVAL when the counts differ; else the element type, which the
 * ranks that know one (dtype >= 0) must share (STRATA_ETYPE), in *agreed
 * (STRATA_EINVAL when no rank knows it). `any` (or NULL): a flag in,
 * whether some rank set it out. */
int strata__gi_agree(strata_gindexer *gi, int local, int64_t count, int64_t dtype,
                     strata_dtype *agreed, int64_t *any);

/* After an error: destroy the arrays[l] an exchange allocated (made[l]
 * set; `made` may be NULL) and reset their entries. */
void strata__gi_unmake(strata_array **arrays, const char *made, int n);

/* A new array of rows x count (1-D when count is 1). */
int strata__gi_new_rows(int64_t rows, int64_t count, strata_dtype dtype, strata_array **out);

/* Exchange flags: wait for the result; a single-list call (refused on
 * every rank when some rank's indexer has another number of lists). */
enum { STRATA__GI_WAIT = 1, STRATA__GI_SINGLE = 2 };

/* Fixed-size Take into one array per list (strata_gmindexer_take). */
int strata__gi_take(strata_gindexer *gi, strata_array *dist, int64_t count, strata_array **outs,
                    unsigned flags);

/* Pack the rows of the lists' arrays (values[l], row bytes per request)
 * into an outbox sorted by owner (the requests' order map). */
int strata__gi_pack_parts(strata_gindexer *gi, strata_array *const *values,
                          starpu_data_handle_t outbox, size_t row);

/* Size of this rank's list l. */
static inline int64_t strata__gi_list_size(const strata_gindexer *gi, int l)
{
  return gi->list_off[l + 1] - gi->list_off[l];
}

/* The list holding request p (p < n_idx). */
int strata__gi_list_of(const strata_gindexer *gi, int64_t p);

/* The end of an exchange: a blocking one waits (strata__gi_wait); a
 * failed non-blocking one frees the buffers whose tasks are done. */
int strata__gi_finish(strata_gindexer *gi, unsigned flags, strata_array *const *arrays, int n,
                      int ret);

/* Wait until the n arrays are computed, then free the exchange buffers;
 * returns `ret` (or the wait's error). */
int strata__gi_wait(strata_gindexer *gi, strata_array *const *arrays, int n, int ret);

#endif
