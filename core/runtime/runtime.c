/* Runtime state: MPI, StarPU and StarPU-MPI start and stop. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <starpu_mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <strata/version.h>

#include "codelets.h"
#include "internal/runtime.h"
#include "merge.h"

enum { UNINITIALIZED, READY, FINALIZED };

static struct {
  int state;
  int owns_mpi;        /* Strata called MPI_Init_thread, so it calls MPI_Finalize */
  int mpi_yields;      /* the application's Open MPI yields while it polls (-1: unknown) */
  int owns_starpu;     /* Strata started StarPU, so it shuts it down */
  int owns_starpu_mpi; /* Strata started StarPU-MPI, so it shuts it down */
  MPI_Comm comm;
  MPI_Comm coll_comm;
  int64_t *coll_scratch; /* strata__coll_scratch() */
  int rank, size;
  int64_t collectives;
  int nhooks;
  void (*hooks[8])(void); /* strata__on_finalize() */
  int idle_hook;          /* StarPU idle hook id, -1: idle workers spin */
  int64_t wait_spin_ns;   /* how long waits poll before they sleep */
} rt = {.state = UNINITIALIZED, .comm = MPI_COMM_NULL, .coll_comm = MPI_COMM_NULL, .idle_hook = -1};

void strata_config_init(strata_config *cfg)
{
  if (!cfg)
    return;
  cfg->ncpu = -1;
  cfg->ncuda = -1;
  cfg->sched = NULL;
  cfg->comm = MPI_COMM_NULL;
  cfg->yield_when_idle = -1;
  cfg->wait_spin_us = -1;
  cfg->starpu_mpi_running = -1;
}

const char *strata_version(void) { return STRATA_VERSION_STRING; }

int strata_initialized(void) { return rt.state == READY; }

int strata_yield_when_idle(void) { return rt.state == READY && rt.idle_hook >= 0; }

int strata__check_ready(void)
{
  return rt.state == READY ? 0
                           : strata__fail(STRATA_ESTATE, "Strata is not initialised "
                                                         "(strata_init), or finalised already");
}

MPI_Comm strata__coll_comm(void) { return rt.coll_comm; }

int64_t *strata__coll_scratch(void) { return rt.coll_scratch; }

int64_t strata__next_collective(void) { return rt.collectives++; }

int strata__on_finalize(void (*hook)(void))
{
  for (int k = 0; k < rt.nhooks; k++)
    if (rt.hooks[k] == hook)
      return 0;
  if (rt.nhooks == (int)(sizeof rt.hooks / sizeof rt.hooks[0]))
    return STRATA_ENOMEM;
  rt.hooks[rt.nhooks++] = hook;
  return 0;
}

/* Open MPI's mpi_yield_when_idle as the library holds it (MPI_T): 1 or 0,
 * or -1 where the MPI library has no such variable. Called before
 * StarPU-MPI's thread exists: Open MPI 4.1's MPI_T_init_thread sets the
 * process's thread level to the one it is asked for (asked for
 * MPI_THREAD_SINGLE, MPI_Query_thread said so afterwards), so it is asked
 * for the level MPI runs at. */
static int mpi_yields_when_idle(int level)
{
  int value = -1;
#ifndef STARPU_SIMGRID
  int provided, index, count;
  MPI_T_cvar_handle handle;
  if (MPI_T_init_thread(level, &provided) != MPI_SUCCESS)
    return -1;
  if (MPI_T_cvar_get_index("mpi_yield_when_idle", &index) == MPI_SUCCESS &&
      MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) == MPI_SUCCESS) {
    int on = 0;
    if (MPI_T_cvar_read(handle, &on) == MPI_SUCCESS)
      value = on != 0;
    MPI_T_cvar_handle_free(&handle);
  }
  MPI_T_finalize();
#else
  (void)level;
#endif
  return value;
}

/* Start MPI unless the application did; check its thread level. */
static int start_mpi(int *argc, char ***argv)
{
  int started, provided;
  MPI_Initialized(&started);
  if (!started) {
    if (rt.owns_mpi) /* we finalised it: MPI cannot start twice */
      return strata__fail(STRATA_ESTATE, "Strata finalised MPI already: MPI cannot start again");
    /* Open MPI polls without giving its core away unless its launcher saw
     * more ranks than cores; but a rank's StarPU-MPI progress thread and
     * main thread poll beside its workers on any node. Two ranks that Open
     * MPI had bound one to a core took 7.2 and 8.3 ms a Put of 10^6 items
     * polling (two series), 3.8 yielding; one unbound rank, 2.4 either way. The user's setting,
     * 0 included, stays. */
    if (setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0))
      return STRATA_ENOMEM;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      return STRATA_EMPI;
    rt.owns_mpi = 1;
  } else {
    int finalized;
    MPI_Finalized(&finalized);
    if (finalized)
      return strata__fail(STRATA_ESTATE, "the application finalised MPI already");
    MPI_Query_thread(&provided);
    rt.mpi_yields = mpi_yields_when_idle(provided);
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    strata_log(STRATA_LOG_ERROR, "MPI thread level %d is below MPI_THREAD_SERIALIZED", provided);
    return STRATA_EMPI;
  }
  if (provided < MPI_THREAD_MULTIPLE)
    strata_log(STRATA_LOG_WARN, "MPI_THREAD_MULTIPLE not provided: do not call MPI "
                                "concurrently with Strata collectives");
  return 0;
}

/* What strata_init took before StarPU: the collective scratch, and MPI
 * when Strata started it. */
static void release_mpi_side(void)
{
  free(rt.coll_scratch);
  rt.coll_scratch = NULL;
  if (rt.owns_mpi)
    MPI_Finalize();
}

/* StarPU's numeric environment variables, checked before starpu_init:
 * StarPU aborts the process on a value that is not a whole number (and on
 * STARPU_NCPU=-1), where Strata returns an error. */
static int check_starpu_environment(void)
{
  static const char *const counts[] = {"STARPU_NCPU",
                                       "STARPU_NCPUS",
                                       "STARPU_NCUDA",
                                       "STARPU_NOPENCL",
                                       "STARPU_NMIC",
                                       "STARPU_NMPI_MS",
                                       "STARPU_NWORKER_PER_CUDA",
                                       "STARPU_CUDA_PIPELINE",
                                       "STARPU_OPENCL_PIPELINE",
                                       "STARPU_CALIBRATE",
                                       "STARPU_CALIBRATE_MINIMUM",
                                       "STARPU_BUS_CALIBRATE",
                                       "STARPU_PREFETCH",
                                       "STARPU_WORKERS_NOBIND",
                                       "STARPU_SILENT",
                                       "STARPU_LIMIT_CUDA_MEM",
                                       "STARPU_LIMIT_CPU_MEM",
                                       "STARPU_MIN_WORKERSIZE",
                                       "STARPU_MAX_WORKERSIZE",
                                       "STARPU_SINGLE_COMBINED_WORKER",
                                       "STARPU_DISABLE_ASYNCHRONOUS_COPY",
                                       "STARPU_WATCHDOG_TIMEOUT",
                                       "STARPU_RESERVE_NCPU",
                                       "STARPU_MPI_CACHE",
                                       "STARPU_MPI_COMM"};
  for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
    const char *v = getenv(counts[k]);
    if (!v)
      continue;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || errno || x < 0 || x > INT_MAX)
      return strata__fail(STRATA_EINVAL, "%s=%s: StarPU wants a whole number from 0 to %d",
                          counts[k], v, INT_MAX);
  }
  return 0;
}

#ifndef STARPU_SIMGRID
/* StarPU calibrates the bus into STARPU_HOME on first use; ranks of one
 * node sharing a fresh STARPU_HOME would write and read those files at the
 * same time (StarPU 1.3 aborts on the half-written file). The first rank of
 * each node starts StarPU first, the others after it.
 * Only StarPU itself is started here, which involves no MPI: StarPU-MPI's
 * own initialisation is collective (1.4 with FxT synchronises the ranks'
 * clocks), so it runs once every rank is known to have StarPU. */
static int start_starpu_per_node(MPI_Comm comm, struct starpu_conf *conf)
{
  /* What starpu_mpi_init_conf() would set, MPI-aware traces and a core for
   * the progress thread unless the worker count is given; but only where
   * there is a peer to talk to: alone, the progress thread has nothing to
   * progress, and keeping it a core left half of a 2-core node idle. */
  int ranks;
  MPI_Comm_size(comm, &ranks);
  if (conf->ncpus == -1 && conf->reserve_ncpus == -1 && ranks > 1)
    conf->reserve_ncpus = 1;
  conf->will_use_mpi = 1;
  MPI_Comm node;
  int local, ret = 0;
  if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
    return starpu_init(conf);
  MPI_Comm_rank(node, &local);
  if (local == 0)
    ret = starpu_init(conf);
  MPI_Barrier(node);
  if (local != 0)
    ret = starpu_init(conf);
  MPI_Comm_free(&node);
  return ret;
}
#endif

/* The ranks of comm on this node (1 when MPI cannot tell). */
static int ranks_on_node(MPI_Comm comm)
{
  int n = 1;
  MPI_Comm node;
  if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    MPI_Comm_size(node, &n);
    MPI_Comm_free(&node);
  }
  return n;
}

/* StarPU's idle CPU workers spin. When the node runs more StarPU threads
 * than it has cores, they take the cores from the threads that have work
 * (other ranks' workers, StarPU-MPI progress threads, the application):
 * then each idle pass gives the core away, as Open MPI's yield_when_idle. */
static unsigned yield_core(void *arg)
{
  (void)arg;
  sched_yield();
  return 1; /* the worker may block */
}

/* The cores this thread may run on (its affinity, which StarPU's threads
 * inherit; a launcher's binding sets it), or those online. */
static long cores_allowed(void)
{
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  return sysconf(_SC_NPROCESSORS_ONLN);
}

/* Whether the ranks' threads (CPU workers and the StarPU-MPI progress
 * thread) outnumber their cores: the node's ranks together against the
 * node's, or this rank against those it is bound to (Open MPI binds one or
 * two ranks to a core each by default). */
static int oversubscribed(int node_ranks)
{
  long threads = (long)starpu_cpu_worker_get_count() + 1, cores = sysconf(_SC_NPROCESSORS_ONLN);
  return (cores > 0 && node_ranks * threads > cores) || threads > cores_allowed();
}

/* 1 or 0 from STRATA_YIELD_WHEN_IDLE, else the configuration's choice;
 * -1 (automatic) is on when oversubscribed. */
static int resolve_idle_yield(int configured, int node_ranks)
{
  const char *env = getenv("STRATA_YIELD_WHEN_IDLE");
  if (env && (!strcmp(env, "0") || !strcmp(env, "1")))
    return env[0] == '1';
  if (env && *env)
    strata_log(STRATA_LOG_WARN, "STRATA_YIELD_WHEN_IDLE=%s ignored (0 or 1)", env);
  if (configured >= 0)
    return configured;
  return oversubscribed(node_ranks);
}

/* Microseconds from STRATA_WAIT_SPIN_US, else the configuration's, else
 * 1000: a waiting thread that sleeps wakes 30-60 us late on a virtual
 * machine, a quarter of a 100-200 us round of AMR tasks; past 1 ms that
 * costs under 5 %, and the poll yields its core meanwhile. */
static int resolve_wait_spin(int configured)
{
#ifdef STARPU_SIMGRID
  (void)configured;
  return 0; /* simulated threads take turns: a spinning one would keep its turn */
#else
  const char *env = getenv("STRATA_WAIT_SPIN_US");
  if (env && *env) {
    char *end;
    long us = strtol(env, &end, 10);
    if (!*end && us >= 0 && us <= 1000000)
      return (int)us;
    strata_log(STRATA_LOG_WARN, "STRATA_WAIT_SPIN_US=%s ignored (0 to 1000000)", env);
  }
  return configured >= 0 ? configured : 1000;
#endif
}

/* Start StarPU-MPI on the StarPU that runs on every rank, taking a
 * reference on it (starpu_mpi_shutdown() gives it back): 0 on every rank,
 * or the same error on every rank with StarPU-MPI stopped again. */
static int start_starpu_mpi(int *argc, char ***argv, MPI_Comm comm, struct starpu_conf *conf)
{
  int ret = starpu_mpi_init_conf(argc, argv, 0, comm, conf);
  if (ret != 0)
    strata_log(STRATA_LOG_ERROR, "StarPU-MPI initialisation failed (%d)", ret);
  int code = ret == 0 ? 0 : STRATA_ESTARPU, agreed = code;
  MPI_Allreduce(&code, &agreed, 1, MPI_INT, MPI_MIN, comm);
  if (agreed != 0 && ret == 0)
    starpu_mpi_shutdown();
  return agreed;
}

/* Start StarPU, then StarPU-MPI, as cfg asks; the same code on every rank
 * (ranks that started stop again when another rank could not). */
static int start_starpu(int *argc, char ***argv, MPI_Comm comm, const strata_config *cfg)
{
  struct starpu_conf conf;
  starpu_conf_init(&conf); /* environment variables override what we set */
  if (cfg->ncpu >= 0)
    conf.ncpus = cfg->ncpu;
  if (cfg->ncuda >= 0)
    conf.ncuda = cfg->ncuda;
  if (!getenv("STARPU_NOPENCL"))
    conf.nopencl = 0; /* an NVIDIA OpenCL driver would otherwise take a core */
  if (!getenv("STARPU_SCHED"))
    conf.sched_policy_name = cfg->sched ? cfg->sched : "lws";
#ifdef STARPU_SIMGRID
  /* Under SimGrid, StarPU started apart from StarPU-MPI runs no task once a
   * message has passed: starpu_mpi_init_conf() starts both (and
   * starpu_mpi_shutdown() stops both). */
  int ret = 0;
  const int owns_starpu = 0;
#else
  int ret = start_starpu_per_node(comm, &conf);
  const int owns_starpu = 1;
#endif
  if (ret != 0)
    strata_log(STRATA_LOG_ERROR, "StarPU initialisation failed (%d)", ret);
  int code = ret == 0 ? 0 : ret == -ENODEV ? STRATA_ENODEV : STRATA_ESTARPU, agreed = code;
  MPI_Allreduce(&code, &agreed, 1, MPI_INT, MPI_MIN, comm);
  if (agreed == 0)
    agreed = start_starpu_mpi(argc, argv, comm, &conf);
  if (agreed != 0 && starpu_is_initialized())
    starpu_shutdown();
  rt.owns_starpu_mpi = agreed == 0;
  rt.owns_starpu = owns_starpu && agreed == 0;
  return agreed;
}

/* The application runs StarPU: use it as it is (its workers, scheduler and
 * environment), start StarPU-MPI on it unless the application did, and
 * leave both running at strata_finalize(). */
static int attach_starpu(int *argc, char ***argv, MPI_Comm comm, const strata_config *cfg)
{
  if (cfg->ncpu >= 0 || cfg->ncuda >= 0 || cfg->sched)
    strata_log(STRATA_LOG_WARN, "StarPU runs already: the workers and scheduler of "
                                "strata_config are ignored");
  /* StarPU-MPI has no query for whether it runs; an application that
   * started StarPU under MPI normally did so with starpu_mpi_init_conf(). */
  int mpi_running = cfg->starpu_mpi_running != 0;
  int ret = mpi_running ? 0 : start_starpu_mpi(argc, argv, comm, NULL);
  rt.owns_starpu = 0;
  rt.owns_starpu_mpi = ret == 0 && !mpi_running;
  if (ret == 0)
    strata_log(STRATA_LOG_INFO, "attached to the application's StarPU%s",
               mpi_running ? " and StarPU-MPI" : "; StarPU-MPI started on it");
  return ret;
}

int strata_init(int *argc, char ***argv, const strata_config *cfg)
{
  strata__clear_error();
  if (rt.state == READY)
    return 0;
  strata_config defaults;
  if (!cfg) {
    strata_config_init(&defaults);
    cfg = &defaults;
  }
  if (cfg->ncpu < -1 || cfg->ncuda < -1 || cfg->yield_when_idle < -1 || cfg->yield_when_idle > 1 ||
      cfg->wait_spin_us < -1 || cfg->wait_spin_us > 1000000 || cfg->starpu_mpi_running < -1 ||
      cfg->starpu_mpi_running > 1)
    return STRATA_EINVAL;
  int ret = start_mpi(argc, argv);
  if (ret) {
    if (ret == STRATA_EMPI)
      release_mpi_side();
    return ret;
  }
  MPI_Comm comm = cfg->comm == MPI_COMM_NULL ? MPI_COMM_WORLD : cfg->comm;
  /* A bad variable on any rank stops every rank before StarPU reads them
   * (starpu_conf_init already does). */
  int size;
  MPI_Comm_size(comm, &size);
  int env = check_starpu_environment(), env_agreed = env;
  rt.coll_scratch = env ? NULL : malloc(4 * (size_t)size * sizeof *rt.coll_scratch);
  if (!env && !rt.coll_scratch)
    env = env_agreed = STRATA_ENOMEM;
  MPI_Allreduce(&env, &env_agreed, 1, MPI_INT, MPI_MIN, comm);
  if (env_agreed) {
    if (!env)
      strata__fail(env_agreed,
                   env_agreed == STRATA_ENOMEM
                       ? "another rank is out of memory"
                       : "a StarPU environment variable of another rank is not a number");
    release_mpi_side();
    return env_agreed;
  }

  /* The application runs StarPU already, on every rank or on none. */
  const int attach = starpu_is_initialized() != 0;
  int every[2] = {attach, !attach}; /* every rank attaches, none does */
  MPI_Allreduce(MPI_IN_PLACE, every, 2, MPI_INT, MPI_MIN, comm);
  if (!every[0] && !every[1]) {
    release_mpi_side();
    return strata__fail(STRATA_ESTATE, "StarPU is initialised on some ranks only");
  }
  /* Buffers StarPU allocates (AMR blocks, arrays) start on cache lines:
   * its default leaves them 16-byte aligned, so every 64-byte AVX-512
   * access and one in two AVX2 accesses would straddle two lines. Only ever
   * raises the alignment. */
  starpu_malloc_set_align(64);
  ret = attach ? attach_starpu(argc, argv, comm, cfg) : start_starpu(argc, argv, comm, cfg);
  if (ret) {
    release_mpi_side();
    return ret;
  }
  MPI_Comm_rank(comm, &rt.rank);
  MPI_Comm_size(comm, &rt.size);
  MPI_Comm_dup(comm, &rt.coll_comm);
  rt.comm = comm;
  rt.collectives = 0;
  if (rt.owns_starpu) /* an application's StarPU keeps its own allocator */
    strata__host_hooks(1);
  strata__codelets_start();
  int node_ranks = ranks_on_node(comm);
  if (resolve_idle_yield(cfg->yield_when_idle, node_ranks))
    rt.idle_hook = starpu_idle_hook_register(yield_core, NULL);
  if (!rt.owns_mpi && rt.rank == 0 && oversubscribed(node_ranks) && rt.mpi_yields == 0)
    strata_log(STRATA_LOG_WARN, "Open MPI polls without giving its core away "
                                "(mpi_yield_when_idle off) where the threads outnumber the "
                                "cores: set OMPI_MCA_mpi_yield_when_idle=1 before MPI starts "
                                "(docs/tuning.md)");
  rt.wait_spin_ns = 1000 * (int64_t)resolve_wait_spin(cfg->wait_spin_us);
  rt.state = READY;
  if (starpu_cpu_worker_get_count() == 0 && starpu_worker_get_count() > 0)
    strata_log(STRATA_LOG_WARN, "no CPU worker on this rank: work that calls application "
                                "functions on the host (AMR initial conditions, models "
                                "without a CUDA function) fails here "
                                "with STRATA_ENODEV");
  strata_log(STRATA_LOG_INFO, "Strata %s on %d rank(s), %u worker(s), idle workers %s",
             STRATA_VERSION_STRING, rt.size, starpu_worker_get_count(),
             rt.idle_hook >= 0 ? "yield" : "spin");
  return 0;
}

int strata_finalize(void)
{
  if (rt.state != READY)
    return 0;
  starpu_task_wait_for_all();
  strata__live_destroy_all(&strata__objects);
  for (int k = 0; k < rt.nhooks; k++)
    rt.hooks[k]();
  rt.nhooks = 0;
  strata__live_destroy_all(&strata__arrays);
  strata__host_cache_flush();
  strata__codelets_stop();
  if (rt.idle_hook >= 0)
    starpu_idle_hook_deregister(rt.idle_hook);
  rt.idle_hook = -1;
  if (rt.owns_starpu_mpi)
    starpu_mpi_shutdown();
  if (rt.owns_starpu && starpu_is_initialized()) {
    starpu_shutdown();
    strata__host_hooks(0);
  }
  MPI_Comm_free(&rt.coll_comm);
  rt.comm = MPI_COMM_NULL;
  rt.state = FINALIZED;
  release_mpi_side();
  return 0;
}

int strata_rank(void) { return rt.state == READY ? rt.rank : STRATA_ESTATE; }

int strata_size(void) { return rt.state == READY ? rt.size : STRATA_ESTATE; }

MPI_Comm strata_comm(void) { return rt.state == READY ? rt.comm : MPI_COMM_NULL; }

/* Poll ready(arg) for up to wait_spin_ns, giving the core to any runnable
 * thread between polls (a worker or the StarPU-MPI progress thread may need
 * it): whether it became true. The blocking call that follows then returns
 * at once, or sleeps when the spin ran out. */
static int spin_until(int (*ready)(void *), void *arg)
{
  if (rt.wait_spin_ns <= 0)
    return 0;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    if (ready(arg))
      return 1;
    sched_yield();
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((t.tv_sec - t0.tv_sec) * 1000000000 + (t.tv_nsec - t0.tv_nsec) >= rt.wait_spin_ns)
      return 0;
  }
}

static int no_task_left(void *unused)
{
  (void)unused;
  return starpu_task_nsubmitted() == 0;
}

int strata_wait_all(void)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  spin_until(no_task_left, NULL);
  return strata__from_starpu(starpu_task_wait_for_all());
}

struct acquire_attempt {
  starpu_data_handle_t handle;
  enum starpu_data_access_mode mode;
};

static int acquired(void *arg)
{
  const struct acquire_attempt *a = arg;
  return starpu_data_acquire_try(a->handle, a->mode) == 0;
}

int strata__acquire(starpu_data_handle_t handle, enum starpu_data_access_mode mode)
{
  struct acquire_attempt a = {handle, mode};
  return spin_until(acquired, &a) ? 0 : starpu_data_acquire(handle, mode);
}

int strata__agree(int local_err, const int64_t *values, int n)
{
  return strata__agree_on(rt.coll_comm, local_err, values, n);
}

int strata__agree_gather(int local_err, const int64_t *mine, int n, const int64_t **all)
{
  /* Each rank's values and its error in one all-gather into the scratch:
   * the smallest error is strata__agree's answer. */
  *all = NULL;
  if (n < 0 || n > 3)
    return strata__fail(STRATA_EINVAL, "internal: %d values to gather, at most 3", n);
  if (rt.coll_comm == MPI_COMM_NULL) /* no values to give: not a success */
    return local_err ? local_err
                     : strata__fail(STRATA_ESTATE, "internal: gather before strata_init");
  int size;
  MPI_Comm_size(rt.coll_comm, &size);
  int64_t buf[4] = {0, 0, 0, local_err};
  memcpy(buf, mine, (size_t)n * sizeof *mine);
  if (MPI_Allgather(buf, 4, MPI_INT64_T, rt.coll_scratch, 4, MPI_INT64_T, rt.coll_comm) !=
      MPI_SUCCESS)
    return STRATA_EMPI;
  int ret = 0;
  for (int r = 0; r < size; r++)
    ret = rt.coll_scratch[4 * r + 3] < ret ? (int)rt.coll_scratch[4 * r + 3] : ret;
  if (!ret)
    *all = rt.coll_scratch;
  return ret;
}

int strata__agree_on(MPI_Comm comm, int local_err, const int64_t *values, int n)
{
  /* One MIN-allreduce gives the smallest error and, through negation, both
   * the minimum and the maximum of every value. */
  int64_t buf[1 + 2 * 16];
  if (n > 16) /* the same on every rank: a call site's mistake, not an input's */
    return strata__fail(STRATA_EINVAL, "internal: %d values to agree on, at most 16", n);
  if (comm == MPI_COMM_NULL)
    return local_err;
  buf[0] = local_err;
  for (int i = 0; i < n; i++) {
    buf[1 + i] = values[i];
    buf[1 + n + i] = -values[i];
  }
  if (MPI_Allreduce(MPI_IN_PLACE, buf, 1 + 2 * n, MPI_INT64_T, MPI_MIN, comm) != MPI_SUCCESS)
    return STRATA_EMPI;
  if (buf[0] < 0)
    return (int)buf[0];
  for (int i = 0; i < n; i++)
    if (buf[1 + i] != -buf[1 + n + i])
      return STRATA_EINVAL;
  return 0;
}
