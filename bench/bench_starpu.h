/* StarPU figures shared by the benchmarks that run task graphs. */
#ifndef STRATA_BENCH_STARPU_H
#define STRATA_BENCH_STARPU_H

#include <starpu.h>

/* This rank's mean time executing tasks per CPU worker since the last call
 * (StarPU's profiling counters, reset by the read; profiling must be on),
 * in seconds. Under SimGrid, the tasks' simulated durations. */
static inline double bench_executing_per_worker(void)
{
  double busy = 0;
  int workers = 0;
  for (unsigned w = 0; w < starpu_worker_get_count(); w++) {
    struct starpu_profiling_worker_info info;
    if (starpu_worker_get_type((int)w) != STARPU_CPU_WORKER ||
        starpu_profiling_worker_get_info((int)w, &info) != 0)
      continue;
    busy += (double)info.executing_time.tv_sec + 1e-9 * (double)info.executing_time.tv_nsec;
    workers++;
  }
  return workers ? busy / workers : 0;
}

#endif
