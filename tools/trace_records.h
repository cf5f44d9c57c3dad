/* Readers of the files starpu_fxt_tool writes: tasks.rec (one record per
 * task) and, from paje.trace, the kind of every worker. */
#ifndef STRATA_TOOLS_TRACE_RECORDS_H
#define STRATA_TOOLS_TRACE_RECORDS_H

#define TRACE_MAX_WORKERS 256

/* A task that ran: times in microseconds from the start of the trace. */
struct trace_task {
  char name[64];  /* task or codelet name; "(unnamed)" when none */
  char kind[16];  /* worker kind (CPU, CUDA, ...); "?" when unknown */
  int rank;       /* MPIRank, 0 when absent or negative */
  int worker;     /* WorkerId, -1 when absent */
  long iteration; /* first Iteration number, -1 when none */
  double start_us, end_us;
};

/* (rank, worker) -> kind, from the worker containers of a Paje trace. */
struct trace_workers {
  struct trace_worker {
    int rank, worker;
    char kind[16];
  } * w;
  int n, cap;
};

/* Read the worker containers of `paje_path`; 0 or a negative errno. */
int trace_read_workers(const char *paje_path, struct trace_workers *w);
void trace_workers_free(struct trace_workers *w);

/* Call fn on every task record of `tasks_path` that has a start and an end
 * time (control records, tasks that never ran and unknown fields are
 * skipped); stops at the first nonzero return of fn and returns it. 0, fn's
 * code or a negative errno. */
int trace_read_tasks(const char *tasks_path, const struct trace_workers *w,
                     int (*fn)(const struct trace_task *t, void *ctx), void *ctx);

#endif
