/* The runtime's internal interface, shared by core/, amr/ and graphs/ (not
 * installed): live objects, errors, agreement across ranks, the array object. */
#ifndef STRATA_INTERNAL_RUNTIME_H
#define STRATA_INTERNAL_RUNTIME_H

#include <pthread.h>
#include <starpu.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include <strata/array.h>
#include <strata/merge.h>
#include <strata/runtime.h>
#include <strata/types.h>

/* Live-object registries (live.c), so strata_finalize() can report the
 * objects the application did not destroy and destroy them: each object
 * embeds one link, added at creation, removed by its destroy function. */
typedef struct strata__live {
  struct strata__registry *registry; /* NULL: not registered */
  const char *kind;                  /* "graph", "array", ... for the report */
  void *object;
  int (*destroy)(void *object);
  struct strata__live *newer, *older;
} strata__live;
typedef struct strata__registry {
  pthread_mutex_t lock;
  strata__live *newest;
} strata__registry;
/* Arrays go last at finalize: the other objects may hold them. */
extern strata__registry strata__objects, strata__arrays;
void strata__live_add(strata__registry *r, strata__live *l, const char *kind, void *object,
                      int (*destroy)(void *));
void strata__live_remove(strata__live *l);
int64_t strata__live_count(strata__registry *r);
/* Destroy every object of `r`, newest first, reporting each (debug). */
void strata__live_destroy_all(strata__registry *r);

/* Pinned host memory through StarPU (host_memory.c). Large blocks that are
 * freed are kept for the next allocation of the same size, so that arrays,
 * exchange buffers and outputs made again and again do not fault in fresh
 * pages each time; fresh large blocks ask for transparent huge pages. The
 * free takes the size given to the allocation. */
int strata__host_alloc(void **p, size_t n);
void strata__host_free(void *p, size_t n);
/* Without blocking: unregister h, registered at home on the host block p of
 * n bytes, once every access submitted on it is done, then give p back. */
void strata__host_unregister_submit(starpu_data_handle_t h, void *p, size_t n);
/* Give the kept blocks back (strata_finalize). */
void strata__host_cache_flush(void);
/* StarPU's allocations of host memory through the same huge-page advice
 * (on: after StarPU starts, when Strata started it and there is no GPU;
 * off: after it stops). */
void strata__host_hooks(int on);

struct strata_array {
  int ndim;
  int64_t shape[STRATA_MAX_DIMS];
  strata_dtype dtype;
  int64_t nelems;
  int64_t nbytes;
  void *data;
  int owns_data;
  int acquired;
  int redux_op;                /* operator of the installed reduction methods, -1 if none */
  starpu_data_handle_t handle; /* NULL while lazy (deferred compute) */
  /* Holders: the application (until strata_array_destroy) plus internal
   * references (recorded graphs); freed when none is left. */
  int refs;
  int user_gone;
  /* Deferred compute: the context that recorded this array and its node
   * (NULL: no recorded history), and how to compute it while lazy. */
  void *history;
  int64_t history_node;
  int (*realize)(struct strata_array *a);
  /* Recorded nodes of deferred compute that read this array as an input:
   * how many contexts hold such an input node, and what computes their
   * pending results before the array is written (strata__array_writable). */
  int lazy_readers;
  int (*before_write)(struct strata_array *a);
  strata__live live;
};

/* Of n ranges whose starts ascend, the last that starts at or before p (0
 * when none does): the owner of position p. */
static inline int strata__range_at(const int64_t *starts, int n, int64_t p)
{
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (starts[mid] <= p)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/* Room for item n of `size` bytes in the array at `items` (the address of
 * its pointer), of capacity *cap: doubled, from `first`, when full. On
 * STRATA_ENOMEM the array is as it was. */
static inline int strata__grow(void *items, int64_t n, int64_t *cap, size_t size, int64_t first)
{
  if (n < *cap)
    return 0;
  const int64_t more = *cap ? 2 * *cap : first;
  void *old, *p;
  memcpy(&old, items, sizeof old);
  if (!(p = realloc(old, (size_t)more * size)))
    return STRATA_ENOMEM;
  memcpy(items, &p, sizeof p);
  *cap = more;
  return 0;
}

/* Record the details of an error for strata_error_message() and return
 * `code`; strata__clear_error() at the start of calls that use it. */
int strata__fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strata__clear_error(void);

/* STRATA_ESTATE unless strata_init() has completed (and not finalize). */
int strata__check_ready(void);

/* Call `hook` in strata_finalize(), once every task has run (upper layers
 * release what tasks may use). Registering twice is one registration. */
int strata__on_finalize(void (*hook)(void));

/* starpu_data_acquire() that first polls for strata_config::wait_spin_us
 * (as strata_wait_all()), so that a thread waiting for the last tasks on a
 * handle is not woken up tens of microseconds after they end. */
int strata__acquire(starpu_data_handle_t handle, enum starpu_data_access_mode mode);

/* Communicator reserved for Strata's own collective checks. */
MPI_Comm strata__coll_comm(void);

/* 4 int64 per rank of strata__coll_comm(), allocated at strata_init, for
 * strata__exchange_records' counts: one call at a time uses it, as
 * collective calls on one communicator are ordered (MPI's rule). */
int64_t *strata__coll_scratch(void);

/* Next number of the per-rank sequence of collective calls: identical on
 * every rank as long as collectives are called in the same order. */
int64_t strata__next_collective(void);

/* Agreement across ranks for a collective call: every rank passes its local
 * error code (0 or negative) and `n` values that must be equal on all ranks.
 * Returns the same code everywhere: the smallest local error, else
 * STRATA_EINVAL when the values differ, else 0. At most 16 values
 * (more: STRATA_EINVAL everywhere, with a message). */
int strata__agree(int local_err, const int64_t *values, int n);

/* strata__agree's error agreement in the same one all-gather as every
 * rank's `n` values (at most 3): on success *all points to them, rank r's
 * value i at (*all)[4 * r + i], in the collective scratch (valid until the
 * next collective call); on error *all is NULL (STRATA_ESTATE outside
 * strata_init/strata_finalize). */
int strata__agree_gather(int local_err, const int64_t *mine, int n, const int64_t **all);

/* The same on another communicator (collective over `comm`); on
 * MPI_COMM_NULL, work done by this rank alone, the local error as it is. */
int strata__agree_on(MPI_Comm comm, int local_err, const int64_t *values, int n);

/* Give a's handle the StarPU reduction methods of `op` (STARPU_REDUX
 * accesses), after pending reductions with other methods have run. */
int strata__array_set_redux(strata_array *a, strata_op op);

/* A lazy array: shape (extents may be -1: known after computing) and dtype,
 * no storage; `realize` computes it on first use. */
int strata__array_new_lazy(int ndim, const int64_t *shape, strata_dtype dtype,
                           int (*realize)(strata_array *), strata_array **out);

/* Give a lazy array its storage (with its final shape) and handle. */
int strata__array_attach(strata_array *a, const int64_t *shape);

/* Compute `a` if it is lazy (submits its tasks); 0 otherwise. */
int strata__array_ready(strata_array *a);

/* strata__array_ready(), and STRATA_EINPLACE when `a` has recorded history
 * (for operations that write into an existing array); pending lazy results
 * that read `a` are computed first. */
int strata__array_writable(strata_array *a);

/* STRATA_ESTATE with its message, for an operation on an array that the
 * application holds acquired (its task would wait for the release). */
int strata__array_busy(void);

/* Internal references: keep `a` alive past strata_array_destroy(). */
void strata__array_retain(strata_array *a);
void strata__array_unref(strata_array *a);

/* Extent N of a float32 [channels, N, N, N] array (or [N, N, N] with one
 * channel), or -1 when the array is not of that form. */
int64_t strata__cube_extent(const strata_array *a, int channels);

/* A STARPU_SCRATCH handle of `bytes` bytes, without a home copy. */
starpu_data_handle_t strata__scratch_register(uint64_t bytes);

#endif
