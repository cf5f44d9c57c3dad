/** @file runtime.h
 *  @brief Strata runtime: initialisation, ranks, waiting, logging. */
#ifndef STRATA_RUNTIME_H
#define STRATA_RUNTIME_H

#include <mpi.h>

#include <strata/error.h>

#ifdef __cplusplus
extern "C" {
#endif
/* The library exports what its public headers declare, and nothing else. */
#pragma GCC visibility push(default)

/** Runtime configuration. Fill it with strata_config_init() and change only
 *  the fields you need. StarPU environment variables (STARPU_NCPU,
 *  STARPU_NCUDA, STARPU_SCHED, ...) take precedence over these fields, as
 *  in StarPU itself. */
typedef struct strata_config {
  int ncpu;          /**< CPU workers per rank; -1: StarPU's default. */
  int ncuda;         /**< CUDA workers per rank; -1: StarPU's default. */
  const char *sched; /**< scheduler name; NULL: "lws". */
  MPI_Comm comm;     /**< communicator of the ranks; MPI_COMM_NULL: MPI_COMM_WORLD. */
  /** Idle CPU workers call sched_yield() instead of spinning: 1 on, 0 off,
   *  -1 (default) on when this node's ranks times (CPU workers + 1, for the
   *  StarPU-MPI progress thread) exceed its cores, or when this rank's CPU
   *  workers + 1 exceed the cores it is bound to (the calling thread's
   *  affinity at strata_init). The environment variable
   *  STRATA_YIELD_WHEN_IDLE (0 or 1) takes precedence. */
  int yield_when_idle;
  /** strata_wait_all(), strata_array_acquire() and Strata's own reads of
   *  task results poll for up to this many microseconds before they sleep,
   *  as OpenMP's active wait policy: a thread that sleeps at once
   *  wakes up tens of microseconds after the last task ends, which short
   *  task graphs feel. 0: sleep at once; -1 (default): 1000; at most
   *  1000000. The polling thread yields its core between polls, so that
   *  workers and the StarPU-MPI progress thread keep running on an
   *  oversubscribed node. The environment variable STRATA_WAIT_SPIN_US takes
   *  precedence. */
  int wait_spin_us;
  /** When the application initialised StarPU before strata_init() (Strata
   *  then attaches to it and leaves it running): 1 when the application
   *  also started StarPU-MPI (starpu_mpi_init_conf() or starpu_mpi_init()),
   *  0 when it did not and Strata should start StarPU-MPI on its StarPU
   *  (and stop it at strata_finalize()); -1 (default): 1. StarPU-MPI has
   *  no call that tells whether it runs. Ignored when Strata starts StarPU. */
  int starpu_mpi_running;
} strata_config;

/** @brief Fill @p cfg with the defaults (every field "let StarPU decide",
 *  scheduler lws, MPI_COMM_WORLD). A NULL @p cfg is ignored. */
void strata_config_init(strata_config *cfg);

/** @brief Start Strata: MPI (when the application has not initialised it,
 *  asking for MPI_THREAD_MULTIPLE), StarPU and StarPU-MPI.
 *
 *  When it starts MPI itself, it first sets OMPI_MCA_mpi_yield_when_idle=1
 *  in the environment unless the variable is set: Open MPI then gives its
 *  core away while it polls, which the StarPU-MPI progress thread and the
 *  main thread do beside the workers.
 *
 *  When the application has initialised StarPU already (on every rank),
 *  Strata attaches to it: it uses the application's workers and scheduler
 *  and does not start StarPU again, and it starts StarPU-MPI only as
 *  strata_config::starpu_mpi_running says. strata_finalize() then leaves
 *  StarPU (and StarPU-MPI unless Strata started it) running for the
 *  application to shut down. StarPU running on some ranks only gives
 *  STRATA_ESTATE on every rank.
 *
 *  Works in a plain process without mpiexec (one rank). Calling it again
 *  while initialised does nothing and returns 0. After strata_finalize() it
 *  may be called again unless Strata had initialised MPI itself (MPI cannot
 *  be restarted), which gives STRATA_ESTATE.
 *  @param argc, argv the program's arguments (may be NULL).
 *  @param cfg configuration, NULL for defaults.
 *  Collective over the communicator: when StarPU cannot start on some rank,
 *  every rank returns the same code (the ranks that had started stop again).
 *  @return 0; STRATA_EMPI when MPI's thread level is below
 *          MPI_THREAD_SERIALIZED; STRATA_ENODEV when StarPU finds no worker;
 *          STRATA_ESTARPU for other StarPU failures; STRATA_EINVAL for a bad
 *          configuration. */
int strata_init(int *argc, char ***argv, const strata_config *cfg);

/** @brief Stop Strata: waits for submitted tasks (the application's too),
 *  destroys the arrays still alive (listing them at log level debug), shuts
 *  down StarPU-MPI and StarPU where Strata started them, and MPI when Strata
 *  started it. Safe to call when not initialised. */
int strata_finalize(void);

/** @brief 1 when Strata is initialised, else 0. */
int strata_initialized(void);

/** @brief 1 when this rank's idle CPU workers yield their core
 *  (strata_config::yield_when_idle as resolved by strata_init()), 0 when
 *  they spin or Strata is not initialised. */
int strata_yield_when_idle(void);

/** @brief This process's rank in strata_comm(), or STRATA_ESTATE. */
int strata_rank(void);

/** @brief Number of ranks in strata_comm(), or STRATA_ESTATE. */
int strata_size(void);

/** @brief The communicator Strata runs on; MPI_COMM_NULL when not initialised. */
MPI_Comm strata_comm(void);

/** @brief Strata's version string ("MAJOR.MINOR.PATCH"); callable any time. */
const char *strata_version(void);

/** @brief Wait until every task submitted so far on this rank has finished:
 *  polls for strata_config::wait_spin_us, then sleeps. */
int strata_wait_all(void);

/** Log levels, from the environment variable STRATA_LOG
 *  (error|warn|info|debug; default warn). */
typedef enum strata_log_level {
  STRATA_LOG_ERROR = 0, /**< failures */
  STRATA_LOG_WARN,      /**< suspicious situations (default threshold) */
  STRATA_LOG_INFO,      /**< progress */
  STRATA_LOG_DEBUG      /**< details for developers */
} strata_log_level;

/** @brief The current log threshold (read from STRATA_LOG on first use). */
strata_log_level strata_log_threshold(void);

/** @brief Print a message on stderr, prefixed with the rank, when @p level is
 *  at or below the threshold. printf-style. */
void strata_log(strata_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
