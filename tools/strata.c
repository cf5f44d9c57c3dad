/* The `strata` command-line tool. Subcommands are entries of `commands`. */
#define _GNU_SOURCE /* sched_getaffinity */
#include <dirent.h>
#include <errno.h>
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <strata/amr.h>
#include <strata/strata.h>

#include "commands.h"
#include "strata_build_config.h"

int wants_help(int argc, char **argv)
{
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
      return 1;
  return 0;
}

static const char *yes_no(int b) { return b ? "yes" : "no"; }

/* The CPUs in `set` as a list ("0", "0-1", "0,2"), appended to `out`. */
static void append_cpus(const cpu_set_t *set, char *out, size_t size)
{
  const char *sep = "";
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, set))
      continue;
    int last = c;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set))
      last++;
    size_t len = strlen(out);
    snprintf(out + len, size - len, last > c ? "%s%d-%d" : "%s%d", sep, c, last);
    sep = ",";
    c = last;
  }
}

/* Where this process's threads may run: the main thread, StarPU's workers
 * ("CPU 0", ...) and StarPU-MPI's progress thread ("MPI"), as Linux has
 * them (binding by the launcher, by StarPU, or none). */
static void thread_cpus(char *out, size_t size)
{
  snprintf(out, size, "rank %d:", strata_rank());
  DIR *dir = opendir("/proc/self/task");
  for (struct dirent *d; dir && (d = readdir(dir));) {
    char path[300], comm[64] = "";
    pid_t tid = (pid_t)atoi(d->d_name);
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", d->d_name);
    FILE *f = tid > 0 ? fopen(path, "r") : NULL;
    if (f) {
      if (!fgets(comm, sizeof comm, f))
        comm[0] = 0;
      fclose(f);
    }
    comm[strcspn(comm, "\n")] = 0;
    int main_thread = tid == getpid();
    cpu_set_t set;
    if (!(main_thread || strncmp(comm, "CPU ", 4) == 0 || strncmp(comm, "CUDA ", 5) == 0 ||
          strcmp(comm, "MPI") == 0) ||
        sched_getaffinity(tid, sizeof set, &set) != 0)
      continue;
    size_t len = strlen(out);
    snprintf(out + len, size - len, " %s on ", main_thread ? "main" : comm);
    append_cpus(&set, out, size);
    len = strlen(out);
    snprintf(out + len, size - len, ",");
  }
  if (dir)
    closedir(dir);
  out[strlen(out) - 1] = out[strlen(out) - 1] == ',' ? 0 : out[strlen(out) - 1];
}

static int cmd_info(int argc, char **argv)
{
  if (wants_help(argc, argv)) {
    puts("usage: strata info\n\n"
         "Print the Strata and StarPU versions, the features StarPU was built with\n"
         "(CUDA, FxT, MPI, OpenCL), the workers, the ranks and the scheduler in use,\n"
         "whether idle CPU workers yield their core (docs/tuning.md), and on which\n"
         "CPUs each rank's main thread, workers and StarPU-MPI thread may run (the\n"
         "binding).\n"
         "StarPU's environment variables (STARPU_NCPU, STARPU_SCHED, ...) apply.");
    return 0;
  }
  if (argc > 1) {
    fprintf(stderr, "strata info: unexpected argument '%s' (see --help)\n", argv[1]);
    return 2;
  }
  int ret = strata_init(NULL, NULL, NULL);
  if (ret) {
    fprintf(stderr, "strata info: %s%s%s\n", strata_strerror(ret),
            *strata_error_message() ? ": " : "", strata_error_message());
    return 1;
  }
  int major, minor, release;
  starpu_get_version(&major, &minor, &release);
  unsigned ncpu = starpu_worker_get_count_by_type(STARPU_CPU_WORKER);
  unsigned ncuda = starpu_worker_get_count_by_type(STARPU_CUDA_WORKER);
  unsigned nopencl = starpu_worker_get_count_by_type(STARPU_OPENCL_WORKER);
  struct starpu_sched_policy *policy = starpu_sched_ctx_get_sched_policy(0);
  if (strata_rank() == 0) {
    printf("Strata %s\n", strata_version());
    printf("StarPU %d.%d.%d (%s)\n", major, minor, release, STRATA_STARPU_MODULES);
#ifdef STARPU_USE_CUDA
    const int cuda = 1;
#else
    const int cuda = 0;
#endif
#ifdef STARPU_USE_FXT
    const int fxt = 1;
#else
    const int fxt = 0;
#endif
#ifdef STARPU_USE_OPENCL
    const int opencl = 1;
#else
    const int opencl = 0;
#endif
    printf("StarPU features: MPI yes, CUDA %s, FxT %s, OpenCL %s\n", yes_no(cuda), yes_no(fxt),
           yes_no(opencl));
    printf("Strata CUDA kernels: %s\n", yes_no(STRATA_HAVE_CUDA_KERNELS));
    printf("HDF5 output: %s\n", STRATA_HDF5_PARALLEL ? "parallel (every rank writes its blocks)"
                                                     : "serial (rank 0 writes)");
    printf("Ranks: %d\n", strata_size());
    printf("Scheduler: %s\n", policy && policy->policy_name ? policy->policy_name : "unknown");
    printf("Workers on rank 0: %u (CPU %u, CUDA %u, OpenCL %u)\n", starpu_worker_get_count(), ncpu,
           ncuda, nopencl);
    for (unsigned w = 0; w < starpu_worker_get_count(); w++) {
      char name[64];
      starpu_worker_get_name((int)w, name, sizeof name);
      printf("  worker %u: %s\n", w, name);
    }
    printf("Idle CPU workers on rank 0: %s\n", strata_yield_when_idle() ? "yield" : "spin");
  }
  enum { LINE = 512 };
  char mine[LINE], *all = malloc((size_t)strata_size() * LINE);
  int ok = all != NULL;
  thread_cpus(mine, sizeof mine);
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, strata_comm());
  if (ok)
    MPI_Gather(mine, LINE, MPI_CHAR, all, LINE, MPI_CHAR, 0, strata_comm());
  if (ok && strata_rank() == 0) {
    puts("Threads' CPUs (binding):");
    for (int r = 0; r < strata_size(); r++)
      printf("  %s\n", all + (size_t)r * LINE);
  }
  free(all);
  strata_finalize();
  return 0;
}

static int cmd_amr_info(int argc, char **argv)
{
  if (wants_help(argc, argv)) {
    puts("usage: strata amr-info FILE.h5\n\n"
         "Summarise an AMR hierarchy written by strata_amr_write_hdf5(): geometry,\n"
         "blocks per level and per rank, and for each field its minimum, maximum\n"
         "and integral over the unit domain (its mean). Layout: docs/amr.md.");
    return 0;
  }
  if (argc != 2) {
    fprintf(stderr, "strata amr-info: expected one file (see --help)\n");
    return 2;
  }
  /* libhdf5 1.10 can crash on a damaged container before Strata's checks
   * see anything (docs/reliability.md): the file is read in a child process
   * (this command starts no StarPU threads), and a crash there is an error
   * message here, not a crash. */
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    int ret = strata_amr_hdf5_summary(argv[1], stdout);
    if (ret)
      fprintf(stderr, "strata amr-info: %s: %s\n", strata_strerror(ret), strata_error_message());
    fflush(stdout);
    _exit(ret ? 1 : 0);
  }
  int status;
  if (child < 0 || waitpid(child, &status, 0) != child) {
    fprintf(stderr, "strata amr-info: cannot start the reader: %s\n", strerror(errno));
    return 1;
  }
  if (WIFSIGNALED(status)) {
    fprintf(stderr,
            "strata amr-info: %s: libhdf5 crashed reading it (signal %d): the file is "
            "damaged\n",
            argv[1], WTERMSIG(status));
    return 1;
  }
  if (WEXITSTATUS(status))
    return 1;
  return 0;
}

static const struct command {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv);
} commands[] = {
    {"info", "versions, StarPU features, workers, ranks, scheduler", cmd_info},
    {"amr-info", "summary of an AMR hierarchy's HDF5 file", cmd_amr_info},
    {"infer", "the inference main job on the cosmology test problem", cmd_infer},
    {"model", "inputs, outputs, layers and cost of a model file (ONNX or JSON)", cmd_model},
    {"graph", "print an exported graph as Graphviz DOT, or summarise it", cmd_graph},
    {"trace-summary", "per-codelet and per-rank figures of a traced run", cmd_trace_summary},
};

static void usage(FILE *out)
{
  fputs("usage: strata [--version] [--help] <command> [<args>]\n\ncommands:\n", out);
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fputs("\n'strata <command> --help' describes a command.\n", out);
}

int main(int argc, char **argv)
{
  /* A file-size limit (ulimit -f) fails the write that meets it with EFBIG,
   * which the writer reports after removing its partial file, instead of
   * killing the process and every output still to come. */
  signal(SIGXFSZ, SIG_IGN);
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("strata %s\n", strata_version());
    return 0;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(stdout);
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (strcmp(argv[1], commands[i].name) == 0)
      return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "strata: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
