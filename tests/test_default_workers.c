/* Without STARPU_NCPU, a rank alone uses every core, and a rank with peers
 * leaves one to StarPU-MPI's progress thread (StarPU-MPI's own default). */
#include <starpu.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"

int main(int argc, char **argv)
{
  unsetenv("STARPU_NCPU");
  unsetenv("STARPU_RESERVE_NCPU");
  check_init(&argc, &argv);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  /* StarPU's own caps: its build's maximum and the cores it sees. */
  long usable = cores < STARPU_MAXCPUS ? cores : STARPU_MAXCPUS;
  long expected = strata_size() == 1 ? usable : usable - 1;
  if (expected < 1)
    expected = 1;
  CHECK_EQ(starpu_cpu_worker_get_count(), expected);
  strata_finalize();
  return check_status();
}
