/* Runtime life cycle. Modes:
 *   (none)          Strata starts MPI: state errors before init and after
 *                   finalize, double init/finalize, ranks, no restart.
 *   app-mpi         the application starts MPI: Strata can restart.
 *   app-mpi-single  MPI_THREAD_SINGLE is refused with STRATA_EMPI.
 *   app-mpi-polls   the application starts Open MPI polling on a crowded
 *                   node: rank 0 warns (app-mpi-yields: it does not).
 *   one-rank-fails  run with STARPU_NCPU=0 on one rank only: every rank
 *                   gets STRATA_ENODEV from strata_init, nobody hangs. */
#define _GNU_SOURCE /* sched_setaffinity, sched_getcpu */
#include <sched.h>
#include <starpu.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <strata/starpu.h>

#include "check.h"

static void check_not_ready(void)
{
  int64_t n = 4;
  strata_array *a = NULL; /* the state is checked before the arguments */
  CHECK_EQ(strata_initialized(), 0);
  CHECK_EQ(strata_rank(), STRATA_ESTATE);
  CHECK_EQ(strata_size(), STRATA_ESTATE);
  CHECK(strata_comm() == MPI_COMM_NULL);
  CHECK_EQ(strata_wait_all(), STRATA_ESTATE);
  CHECK_EQ(strata_array_create(1, &n, STRATA_INT32, &a), STRATA_ESTATE);
  CHECK_EQ(strata_merge(a, a, STRATA_SUM), STRATA_ESTATE);
  CHECK_EQ(strata_array_reduce(a, STRATA_SUM, 0), STRATA_ESTATE);
  /* destroy accepts NULL, so a non-NULL sentinel: never dereferenced, the
   * state is checked first */
  CHECK_EQ(strata_array_destroy((strata_array *)&n), STRATA_ESTATE);
  CHECK(strcmp(strata_version(), STRATA_VERSION_STRING) == 0);
}

/* Buffers StarPU allocates start on 64-byte cache lines (its default
 * alignment gave 16 or 32 modulo 64 for these sizes, heap and mmap). */
static void check_allocation_alignment(void)
{
  const uint32_t sizes[] = {1000, 5832, 46656};
  for (int k = 0; k < 3; k++) {
    starpu_data_handle_t h;
    starpu_vector_data_register(&h, -1, 0, sizes[k], sizeof(double));
    CHECK_EQ(starpu_data_acquire(h, STARPU_W), 0);
    CHECK_EQ(starpu_vector_get_local_ptr(h) % 64, 0);
    starpu_data_release(h);
    starpu_data_unregister(h);
  }
}

static void check_ready(void)
{
  check_allocation_alignment();
  CHECK_EQ(strata_initialized(), 1);
  int world;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  CHECK_EQ(strata_size(), world);
  CHECK(strata_rank() >= 0 && strata_rank() < world);
  CHECK(strata_comm() == MPI_COMM_WORLD);
  int sum = 0, rank = strata_rank();
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, strata_comm());
  CHECK_EQ(sum, world * (world - 1) / 2);
  CHECK_EQ(strata_wait_all(), 0);
}

/* strata_wait_all() returns only when every task has finished, and
 * strata_array_acquire() only when every task on the array has, whether
 * their polling outlasts the tasks or runs out first (spin_us below the
 * tasks' 12 ms); they stop polling when the tasks finish: with a 1 s spin
 * they must return long before the spin ends. */
static atomic_int tasks_done;

static void sleep_then_count(void *buffers[], void *arg)
{
  (void)buffers;
  (void)arg;
  nanosleep(&(struct timespec){.tv_nsec = 3000000}, NULL);
  atomic_fetch_add(&tasks_done, 1);
}

static void sleep_then_increment(void *buffers[], void *arg)
{
  sleep_then_count(buffers, arg);
  ++*(int64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
}

static struct starpu_codelet sleeper_cl = {.cpu_funcs = {sleep_then_count}, .nbuffers = 0};
static struct starpu_codelet incrementer_cl = {
    .cpu_funcs = {sleep_then_increment}, .nbuffers = 1, .modes = {STARPU_RW}};

static void check_waits(const char *spin_us)
{
  enum { TASKS = 4 };
  setenv("STRATA_WAIT_SPIN_US", spin_us, 1);
  check_init(NULL, NULL);
  atomic_store(&tasks_done, 0);
  for (int i = 0; i < TASKS; i++)
    CHECK_EQ(starpu_task_insert(&sleeper_cl, 0), 0);
  double t0 = MPI_Wtime();
  CHECK_EQ(strata_wait_all(), 0);
  CHECK_EQ(atomic_load(&tasks_done), TASKS);
  CHECK(MPI_Wtime() - t0 < 0.9);

  int64_t one = 1, *count;
  strata_array *a;
  CHECK_EQ(strata_array_create(1, &one, STRATA_INT64, &a), 0);
  CHECK_EQ(strata_array_acquire(a, STRATA_WRITE, (void **)&count), 0);
  *count = 0;
  CHECK_EQ(strata_array_release(a), 0);
  for (int i = 0; i < TASKS; i++)
    CHECK_EQ(starpu_task_insert(&incrementer_cl, STARPU_RW, strata_array_handle(a), 0), 0);
  t0 = MPI_Wtime();
  CHECK_EQ(strata_array_acquire(a, STRATA_READ, (void **)&count), 0);
  CHECK_EQ(*count, TASKS);
  CHECK(MPI_Wtime() - t0 < 0.9);
  CHECK_EQ(strata_array_release(a), 0);
  CHECK_EQ(strata_array_destroy(a), 0);
  CHECK_EQ(strata_finalize(), 0);
  unsetenv("STRATA_WAIT_SPIN_US");
}

/* The automatic rule, computed here from MPI and the OS: yield when this
 * node's ranks times (CPU workers + progress thread) exceed its cores, or
 * this rank's threads the cores it is bound to. */
static int node_oversubscribed(void)
{
  MPI_Comm node;
  int ranks;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &ranks);
  MPI_Comm_free(&node);
  cpu_set_t mine;
  CHECK_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  long threads = starpu_cpu_worker_get_count() + 1;
  return ranks * threads > sysconf(_SC_NPROCESSORS_ONLN) || threads > CPU_COUNT(&mine);
}

/* Open MPI's mpi_yield_when_idle as the library holds it (MPI_T), -1
 * where the library has no such variable. Asked for the thread level MPI
 * runs at, which Open MPI's MPI_T_init_thread sets again. */
static int ompi_yields_when_idle(void)
{
  int level, provided, index, count, value = -1;
  MPI_T_cvar_handle handle;
  MPI_Query_thread(&level);
  CHECK_EQ(MPI_T_init_thread(level, &provided), MPI_SUCCESS);
  if (MPI_T_cvar_get_index("mpi_yield_when_idle", &index) == MPI_SUCCESS &&
      MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) == MPI_SUCCESS) {
    value = 0;
    CHECK_EQ(MPI_T_cvar_read(handle, &value), MPI_SUCCESS);
    MPI_T_cvar_handle_free(&handle);
  }
  MPI_T_finalize();
  return value;
}

static int strata_owns_mpi(int argc, char **argv)
{
  unsetenv("STRATA_YIELD_WHEN_IDLE"); /* the automatic rule is under test */
  /* Strata starts MPI: Open MPI then yields while it polls, even where its
   * launcher saw no more ranks than cores (one rank, on its own) */
  unsetenv("OMPI_MCA_mpi_yield_when_idle");
  check_not_ready();
  CHECK_EQ(strata_yield_when_idle(), 0);
  CHECK_EQ(strata_finalize(), 0); /* safe when not initialised */
  strata_config cfg;
  strata_config_init(&cfg);
  CHECK_EQ(cfg.yield_when_idle, -1);
  cfg.ncpu = -5;
  CHECK_EQ(strata_init(&argc, &argv, &cfg), STRATA_EINVAL);
  strata_config_init(&cfg);
  cfg.yield_when_idle = 2;
  CHECK_EQ(strata_init(&argc, &argv, &cfg), STRATA_EINVAL);
  strata_config_init(&cfg);
  CHECK_EQ(cfg.wait_spin_us, -1);
  cfg.wait_spin_us = -2;
  CHECK_EQ(strata_init(&argc, &argv, &cfg), STRATA_EINVAL);
  cfg.wait_spin_us = 1000001;
  CHECK_EQ(strata_init(&argc, &argv, &cfg), STRATA_EINVAL);
  check_init(&argc, &argv);
  CHECK_EQ(strata_yield_when_idle(), node_oversubscribed());
  int level, after;
  MPI_Query_thread(&level);
  CHECK(ompi_yields_when_idle() != 0);
  MPI_Query_thread(&after);
  CHECK_EQ(after, level);
  CHECK_EQ(strata_init(&argc, &argv, NULL), 0); /* second init: no-op */
  check_ready();
  if (!getenv("STRATA_LOG"))
    CHECK_EQ(strata_log_threshold(), STRATA_LOG_WARN);
  CHECK_EQ(strata_finalize(), 0);
  CHECK_EQ(strata_finalize(), 0);
  check_not_ready();
  CHECK_EQ(strata_yield_when_idle(), 0);
  /* Strata finalised MPI, which cannot start again. */
  CHECK_EQ(strata_init(&argc, &argv, NULL), STRATA_ESTATE);
  return check_status();
}

static double cpu_seconds(clockid_t clock)
{
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Idle workers that yield leave a busy application thread its core. With
 * the whole process on one core, the main thread spins for 0.3 s, and all
 * the other threads together must take less than half its CPU time:
 * workers that spin would take as much as it, or more. Comparing CPU times
 * inside the process, rather than with the wall clock, keeps other
 * processes on that core out of the result. */
static void check_idle_workers_yield(void)
{
  nanosleep(&(struct timespec){.tv_nsec = 20000000}, NULL); /* workers go idle */
  double wall = MPI_Wtime(), main0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID),
         all0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
  while (MPI_Wtime() - wall < 0.3)
    ;
  double main = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - main0;
  double others = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - all0 - main;
  if (!(others < 0.5 * main))
    fprintf(stderr, "idle workers took %.3f s of CPU beside the main thread's %.3f s\n", others,
            main);
  CHECK(others < 0.5 * main);
}

static int app_owns_mpi(int argc, char **argv)
{
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  strata_config cfg;
  strata_config_init(&cfg);
  cfg.sched = "eager";
  cfg.comm = MPI_COMM_WORLD;
  /* Restarts with idle yielding on, off, and on but overridden by the
   * environment. With one rank, the first runs on one core, on which the
   * workers' yielding is measured (StarPU's threads inherit the mask). */
  int world;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  cpu_set_t cores, one_core;
  CHECK_EQ(sched_getaffinity(0, sizeof cores, &cores), 0);
  CPU_ZERO(&one_core);
  CPU_SET(sched_getcpu(), &one_core);
  for (int round = 0; round < 3; round++) {
    cfg.yield_when_idle = round == 1 ? 0 : 1;
    if (round == 2)
      setenv("STRATA_YIELD_WHEN_IDLE", "0", 1);
    int on_one_core = round == 0 && world == 1;
    if (on_one_core)
      CHECK_EQ(sched_setaffinity(0, sizeof one_core, &one_core), 0);
    int ret = strata_init(&argc, &argv, &cfg);
    if (ret == STRATA_ENODEV) {
      MPI_Finalize();
      return 77;
    }
    CHECK_EQ(ret, 0);
    check_ready();
    CHECK_EQ(strata_yield_when_idle(), round == 0);
    if (on_one_core)
      check_idle_workers_yield();
    CHECK_EQ(strata_finalize(), 0);
    if (on_one_core)
      CHECK_EQ(sched_setaffinity(0, sizeof cores, &cores), 0);
    check_not_ready();
  }
  /* The automatic rule on a rank bound to one core: its worker and the
   * progress thread outnumber it, whatever the node's ranks (a spinning
   * worker held the core a whole time slice: a 1-rank Put of 10^6 items
   * took 4.0 ms bound, 2.4-2.7 ms with the worker yielding). */
  unsetenv("STRATA_YIELD_WHEN_IDLE");
  const char *ncpu = getenv("STARPU_NCPU");
  char *ncpu_kept = ncpu ? strdup(ncpu) : NULL;
  setenv("STARPU_NCPU", "1", 1); /* one rank on the node's 2 cores would not yield */
  cfg.yield_when_idle = -1;
  CHECK_EQ(sched_setaffinity(0, sizeof one_core, &one_core), 0);
  CHECK_EQ(strata_init(&argc, &argv, &cfg), 0);
  CHECK_EQ(strata_yield_when_idle(), 1);
  CHECK_EQ(strata_finalize(), 0);
  CHECK_EQ(sched_setaffinity(0, sizeof cores, &cores), 0);
  if (ncpu_kept)
    setenv("STARPU_NCPU", ncpu_kept, 1);
  else
    unsetenv("STARPU_NCPU");
  free(ncpu_kept);
  check_waits("0");
  check_waits("100");
  check_waits("1000000");
  int finalized;
  MPI_Finalized(&finalized);
  CHECK_EQ(finalized, 0); /* the application's MPI is left running */
  MPI_Finalize();
  return check_status();
}

/* strata_init's return, with what it wrote to stderr in `said`. */
static int init_saying(int *argc, char ***argv, const strata_config *cfg, char *said, size_t size)
{
  FILE *capture = tmpfile();
  CHECK(capture != NULL);
  fflush(stderr);
  int kept = dup(STDERR_FILENO);
  dup2(fileno(capture), STDERR_FILENO);
  int ret = strata_init(argc, argv, cfg);
  fflush(stderr);
  dup2(kept, STDERR_FILENO);
  close(kept);
  rewind(capture);
  size_t n = fread(said, 1, size - 1, capture);
  said[n] = 0;
  fclose(capture);
  return ret;
}

/* The application started Open MPI polling (mpi_yield_when_idle off) on a
 * node whose threads outnumber its cores (STARPU_NCPU=2 on one rank, or 2
 * ranks of one worker, on 2 cores): rank 0 warns and names the setting.
 * `polling` 0: the same start with Open MPI yielding says nothing of it. */
static int app_mpi_polls(int argc, char **argv, int polling)
{
  setenv("OMPI_MCA_mpi_yield_when_idle", polling ? "0" : "1", 1);
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  char said[4096];
  CHECK_EQ(init_saying(&argc, &argv, NULL, said, sizeof said), 0);
  int warned = strstr(said, "OMPI_MCA_mpi_yield_when_idle=1") != NULL;
  int crowded = node_oversubscribed(); /* collective */
  CHECK_EQ(warned, polling && strata_rank() == 0 && crowded);
  if (sysconf(_SC_NPROCESSORS_ONLN) <= 2) /* the case under test must be seen here */
    CHECK_EQ(crowded, 1);
  CHECK_EQ(strata_finalize(), 0);
  MPI_Finalize();
  return check_status();
}

static int app_mpi_single(int argc, char **argv)
{
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
  if (provided < MPI_THREAD_SERIALIZED)
    CHECK_EQ(strata_init(&argc, &argv, NULL), STRATA_EMPI);
  CHECK_EQ(strata_initialized(), 0);
  MPI_Finalize();
  return check_status();
}

static int one_rank_fails(int argc, char **argv)
{
  int ret = strata_init(&argc, &argv, NULL);
  CHECK_EQ(ret, STRATA_ENODEV);
  CHECK_EQ(strata_initialized(), 0);
  return check_status();
}

int main(int argc, char **argv)
{
  if (argc > 1 && strcmp(argv[1], "one-rank-fails") == 0)
    return one_rank_fails(argc, argv);
  if (argc > 1 && strcmp(argv[1], "app-mpi") == 0)
    return app_owns_mpi(argc, argv);
  if (argc > 1 && strcmp(argv[1], "app-mpi-polls") == 0)
    return app_mpi_polls(argc, argv, 1);
  if (argc > 1 && strcmp(argv[1], "app-mpi-yields") == 0)
    return app_mpi_polls(argc, argv, 0);
  if (argc > 1 && strcmp(argv[1], "app-mpi-single") == 0)
    return app_mpi_single(argc, argv);
  return strata_owns_mpi(argc, argv);
}
