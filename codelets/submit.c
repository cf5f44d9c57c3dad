/* Strata's task insert path: builds the starpu_task directly, without the
 * variadic parsing and argument packing of starpu_task_insert(). */
#include <errno.h>

#include "codelets.h"

int strata__from_starpu(int starpu_ret)
{
  if (starpu_ret >= 0)
    return 0;
  return starpu_ret == -ENODEV ? STRATA_ENODEV : STRATA_ESTARPU;
}

int strata__submit(struct starpu_codelet *cl, const void *cl_arg, size_t cl_arg_size, int nbuffers,
                   const starpu_data_handle_t *handles, const enum starpu_data_access_mode *modes)
{
  if (nbuffers < 0 || nbuffers > STARPU_NMAXBUFS)
    return STRATA_EINVAL;
  struct starpu_task *task = starpu_task_create();
  if (!task)
    return STRATA_ENOMEM;
  task->cl = cl;
  task->cl_arg = (void *)cl_arg;
  task->cl_arg_size = cl_arg_size;
  task->cl_arg_free = 0;
  task->nbuffers = nbuffers;
  for (int i = 0; i < nbuffers; i++) {
    task->handles[i] = handles[i];
    if (modes)
      task->modes[i] = modes[i];
  }
  int ret = starpu_task_submit(task);
  if (ret != 0) {
    task->destroy = 0;
    starpu_task_destroy(task);
  }
  return strata__from_starpu(ret);
}
