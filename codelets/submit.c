/* Strata's task insert path: builds the starpu_task directly, without the
 * variadic parsing and argument packing of starpu_task_insert(). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <starpu_mpi.h>

#include "codelets.h"

int strata__from_starpu(int starpu_ret)
{
  if (starpu_ret >= 0)
    return 0;
  return starpu_ret == -ENODEV ? STRATA_ENODEV : STRATA_ESTARPU;
}

/* Plans whose cleaning is submitted and not done yet, in the process: while
 * there are none, strata__unregister need not wait for one. */
static int64_t plans_to_clean;

/* A plan to clean once its parent is free again. */
struct plan_clean {
  starpu_data_handle_t parent;
  unsigned n;
  starpu_data_handle_t children[];
};

/* The parent is held (read) here: clean the plan, then let it go, so that
 * an unregistration of the parent waiting behind this cannot run first. */
static void clean_plan(void *arg)
{
  struct plan_clean *c = arg;
  starpu_data_partition_clean(c->parent, c->n, c->children);
  __atomic_sub_fetch(&plans_to_clean, 1, __ATOMIC_RELEASE);
  starpu_data_release_on_node(c->parent, STARPU_ACQUIRE_NO_NODE);
  free(c);
}

void strata__partition_clean_submit(starpu_data_handle_t parent, unsigned n,
                                    starpu_data_handle_t *children)
{
  struct plan_clean *c = malloc(sizeof *c + n * sizeof *children);
  if (c) {
    *c = (struct plan_clean){parent, n};
    memcpy(c->children, children, n * sizeof *children);
    __atomic_add_fetch(&plans_to_clean, 1, __ATOMIC_RELAXED);
    /* No node: the parent stays where it is (no copy back from a GPU). */
    if (starpu_data_acquire_on_node_cb(parent, STARPU_ACQUIRE_NO_NODE, STARPU_R, clean_plan, c) ==
        0)
      return;
    __atomic_sub_fetch(&plans_to_clean, 1, __ATOMIC_RELAXED);
    free(c);
  }
  starpu_data_partition_clean(parent, n, children); /* out of memory: may drop ~50 B */
}

/* Smallest result cut into chunks: below it a chunk costs less than its
 * task and partition (about 10 µs). */
#define SPLIT_BYTES (1 << 20)
enum { MAX_CHUNKS = 64 };

int strata__row_chunks(starpu_data_handle_t out, int64_t rows, int64_t row_elems)
{
  unsigned workers = starpu_cpu_worker_get_count();
  size_t nx = starpu_vector_get_nx(out);
  if (workers < 2 || rows < 2 || (int64_t)nx != rows * row_elems ||
      nx * starpu_vector_get_elemsize(out) < SPLIT_BYTES || starpu_cuda_worker_get_count() > 0 ||
      strata__capture_active() || starpu_data_get_home_node(out) < 0)
    return 1;
  int64_t most = rows < MAX_CHUNKS ? rows : MAX_CHUNKS;
  return most < (int64_t)workers ? (int)most : (int)workers;
}

int strata__rows_submit(starpu_data_handle_t out, int64_t rows, int64_t row_elems, int nchunks,
                        int (*chunk)(void *ctx, int64_t lo, int64_t hi, starpu_data_handle_t part),
                        void *ctx)
{
  if (nchunks < 1 || nchunks > MAX_CHUNKS)
    return STRATA_EINVAL;
  long lengths[MAX_CHUNKS];
  starpu_data_handle_t children[MAX_CHUNKS];
  for (int c = 0; c < nchunks; c++)
    lengths[c] = (long)((rows * (c + 1) / nchunks - rows * c / nchunks) * row_elems);
  struct starpu_data_filter f = {.filter_func = starpu_vector_filter_list_long,
                                 .nchildren = (unsigned)nchunks,
                                 .filter_arg_ptr = lengths};
  starpu_data_partition_plan(out, &f, children);
  starpu_data_partition_submit(out, (unsigned)nchunks, children);
  int ret = 0;
  for (int c = 0; c < nchunks && !ret; c++)
    ret = chunk(ctx, rows * c / nchunks, rows * (c + 1) / nchunks, children[c]);
  starpu_data_unpartition_submit(out, (unsigned)nchunks, children, -1);
  strata__partition_clean_submit(out, (unsigned)nchunks, children);
  return ret;
}

void strata__unregister(starpu_data_handle_t handle)
{
  /* Behind every earlier access, the plan cleaning included; no data moves.
   * Only while some cleaning is pending: an acquisition costs 2-3 us. */
  if (__atomic_load_n(&plans_to_clean, __ATOMIC_ACQUIRE) > 0 &&
      starpu_data_acquire_on_node(handle, STARPU_ACQUIRE_NO_NODE, STARPU_W) == 0)
    starpu_data_release_on_node(handle, STARPU_ACQUIRE_NO_NODE);
  starpu_data_unregister(handle);
}

static _Thread_local int submit_priority;

int64_t strata__thread_cpu_ns(void)
{
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

void strata__charge_cpu(int64_t *account, int64_t start)
{
  if (account)
    __atomic_add_fetch(account, strata__thread_cpu_ns() - start, __ATOMIC_RELAXED);
}

double strata__expected_seconds(struct strata__codelet *cl, uint32_t footprint, int workerid)
{
  if (!cl->model.is_loaded)
    return NAN;
  struct starpu_perfmodel_arch *arch =
      starpu_worker_get_perf_archtype(workerid, STARPU_NMAX_SCHED_CTXS);
  double us =
      arch ? starpu_perfmodel_history_based_expected_perf(&cl->model, arch, footprint) : NAN;
  return us > 0 ? us * 1e-6 : NAN;
}

int strata__submit_priority(int priority)
{
  int previous = submit_priority;
  submit_priority = priority;
  return previous;
}

static int submit(struct strata__codelet *cl, void *cl_arg, size_t cl_arg_size, int free_arg,
                  int nbuffers, const starpu_data_handle_t *handles,
                  const enum starpu_data_access_mode *modes)
{
  int bad = nbuffers < 0 || nbuffers > STRATA__MAX_BUFFERS ||
            (nbuffers > STARPU_NMAXBUFS && (!modes || cl->cl.nbuffers != STARPU_VARIABLE_NBUFFERS));
  int captured =
      bad ? 0 : strata__capture_task(cl, cl_arg, cl_arg_size, free_arg, nbuffers, handles, modes);
  if (captured)
    return captured < 0 ? captured : 0;
  struct starpu_task *task = bad ? NULL : starpu_task_create();
  if (!task) {
    if (free_arg)
      free(cl_arg);
    return bad ? STRATA_EINVAL : STRATA_ENOMEM;
  }
  task->cl = &cl->cl;
  task->priority = submit_priority;
  task->flops = cl->flops ? cl->flops(cl_arg, handles) : 0.0;
  task->cl_arg = cl_arg;
  task->cl_arg_size = cl_arg_size;
  task->cl_arg_free = free_arg;
  task->nbuffers = nbuffers;
  starpu_data_handle_t *h = task->handles;
  enum starpu_data_access_mode *m = task->modes;
  if (nbuffers > STARPU_NMAXBUFS) { /* StarPU frees these with the task */
    h = task->dyn_handles = malloc((size_t)nbuffers * sizeof *h);
    m = task->dyn_modes = malloc((size_t)nbuffers * sizeof *m);
    if (!h || !m) {
      task->destroy = 0;
      starpu_task_destroy(task);
      return STRATA_ENOMEM;
    }
  }
  for (int i = 0; i < nbuffers; i++) {
    h[i] = handles[i];
    if (modes)
      m[i] = modes[i];
  }
  int ret = starpu_task_submit(task);
  if (ret != 0) {
    task->destroy = 0;
    starpu_task_destroy(task); /* frees an owned cl_arg */
  }
  return strata__from_starpu(ret);
}

int strata__submit(struct strata__codelet *cl, const void *cl_arg, size_t cl_arg_size, int nbuffers,
                   const starpu_data_handle_t *handles, const enum starpu_data_access_mode *modes)
{
  return submit(cl, (void *)cl_arg, cl_arg_size, 0, nbuffers, handles, modes);
}

int strata__submit_owned_arg(struct strata__codelet *cl, void *arg, size_t size, int nbuffers,
                             const starpu_data_handle_t *handles,
                             const enum starpu_data_access_mode *modes)
{
  return submit(cl, arg, size, 1, nbuffers, handles, modes);
}

int strata__submit_copy_arg(struct strata__codelet *cl, const void *arg, size_t size, int nbuffers,
                            const starpu_data_handle_t *handles,
                            const enum starpu_data_access_mode *modes)
{
  void *copy = malloc(size);
  if (!copy)
    return STRATA_ENOMEM;
  memcpy(copy, arg, size);
  return submit(cl, copy, size, 1, nbuffers, handles, modes);
}

int strata__mpi_submit_copy_arg(MPI_Comm comm, struct strata__codelet *cl, const void *arg,
                                size_t size, int nbuffers, const starpu_data_handle_t *handles,
                                const enum starpu_data_access_mode *modes)
{
  if (nbuffers < 1 || nbuffers > STRATA__MAX_BUFFERS)
    return STRATA_EINVAL;
  struct starpu_data_descr descr[STRATA__MAX_BUFFERS];
  int exec_rank = -1, me;
  MPI_Comm_rank(comm, &me);
  for (int i = 0; i < nbuffers; i++) {
    descr[i] = (struct starpu_data_descr){.handle = handles[i], .mode = modes[i]};
    if (exec_rank < 0 && (modes[i] & STARPU_W))
      exec_rank = starpu_mpi_data_get_rank(handles[i]);
  }
  /* Only the executing rank gets the argument: StarPU-MPI does not free
   * STARPU_CL_ARGS on the ranks that merely take part in the transfers. */
  if (me != exec_rank)
    return strata__from_starpu(starpu_mpi_task_insert(comm, &cl->cl, STARPU_DATA_MODE_ARRAY, descr,
                                                      nbuffers, STARPU_PRIORITY, submit_priority,
                                                      0));
  void *copy = malloc(size);
  if (!copy)
    return STRATA_ENOMEM;
  memcpy(copy, arg, size);
  return strata__from_starpu(starpu_mpi_task_insert(comm, &cl->cl, STARPU_DATA_MODE_ARRAY, descr,
                                                    nbuffers, STARPU_CL_ARGS, copy, size,
                                                    STARPU_PRIORITY, submit_priority, STARPU_FLOPS,
                                                    cl->flops ? cl->flops(arg, handles) : 0.0, 0));
}

uint32_t strata__arg_footprint(struct starpu_task *task)
{
  return starpu_hash_crc32c_be_n(task->cl_arg, task->cl_arg_size, 0);
}

uint64_t strata__rounded_size(uint64_t n)
{
  int shift = 0;
  while (n >> shift >= 128)
    shift++;
  return shift ? (n + ((uint64_t)1 << (shift - 1))) >> shift << shift : n;
}
