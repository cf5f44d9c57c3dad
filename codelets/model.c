/* The model codelet: one model invocation per task, on a CPU worker or, when
 * the model has a CUDA implementation, a CUDA worker (cuBLAS handle of the
 * worker, its stream). History-based perf model keyed on (model, n). */
#include "model.h"

#include <math.h>

#if STRATA__USE_CUDA
#include <starpu_cublas_v2.h>
#endif

static void model_cpu(void *buffers[], void *cl_arg)
{
  const struct strata__model_call *call = cl_arg;
  /* CPU time, not wall time: what the task cost whatever else ran on the core. */
  int64_t start = strata__thread_cpu_ns();
  call->cpu(call->model, (const float *)STARPU_VECTOR_GET_PTR(buffers[0]),
            (const float *)STARPU_VECTOR_GET_PTR(buffers[1]),
            (float *)STARPU_VECTOR_GET_PTR(buffers[2]),
            strata__cube_root(STARPU_VECTOR_GET_NX(buffers[1]) / call->in_channels),
            (void *)STARPU_VECTOR_GET_PTR(buffers[3]));
  strata__charge_cpu(call->cpu_ns, start);
}

#if STRATA__USE_CUDA
static void model_cuda(void *buffers[], void *cl_arg)
{
  const struct strata__model_call *call = cl_arg;
  call->cuda(call->model, (const float *)STARPU_VECTOR_GET_PTR(buffers[0]),
             (const float *)STARPU_VECTOR_GET_PTR(buffers[1]),
             (float *)STARPU_VECTOR_GET_PTR(buffers[2]),
             strata__cube_root(STARPU_VECTOR_GET_NX(buffers[1]) / call->in_channels),
             (void *)STARPU_VECTOR_GET_PTR(buffers[3]), starpu_cublas_get_local_handle(),
             starpu_cuda_get_local_stream());
}
#endif

/* CUDA workers only for models that have a CUDA implementation. */
static int model_can_execute(unsigned workerid, struct starpu_task *task, unsigned nimpl)
{
  (void)nimpl;
  const struct strata__model_call *call = task->cl_arg;
  return starpu_worker_get_type((int)workerid) != STARPU_CUDA_WORKER || call->cuda != NULL;
}

static uint32_t model_footprint(struct starpu_task *task)
{
  const struct strata__model_call *call = task->cl_arg;
  uint32_t nx = starpu_vector_get_nx(STARPU_TASK_GET_HANDLE(task, 1));
  return starpu_hash_crc32c_be(nx, call->id);
}

/* The model's count at the extent of the task's input. */
static double model_flops(const void *arg, const starpu_data_handle_t *handles)
{
  const struct strata__model_call *call = arg;
  if (!call->flops)
    return 0;
  return call->flops(call->model,
                     strata__cube_root(starpu_vector_get_nx(handles[1]) / call->in_channels));
}

STRATA__CODELET(model_cl, "strata_model", 0xd7301f, model_cpu, model_cuda, model_footprint,
                model_flops, .can_execute = model_can_execute, .nbuffers = 4,
                .modes = {STARPU_R, STARPU_R, STARPU_W, STARPU_SCRATCH});

int strata__model_submit(const struct strata__model_call *call, starpu_data_handle_t weights,
                         starpu_data_handle_t in, starpu_data_handle_t out,
                         starpu_data_handle_t scratch)
{
  starpu_data_handle_t h[4] = {weights, in, out, scratch};
  return strata__submit(&model_cl, call, sizeof *call, 4, h, NULL);
}

double strata__model_expected_seconds(const struct strata__model_call *call, int64_t n,
                                      int workerid)
{
  enum starpu_worker_archtype type = starpu_worker_get_type(workerid);
  if (type != STARPU_CPU_WORKER && (type != STARPU_CUDA_WORKER || !call->cuda))
    return INFINITY;
  uint32_t footprint = starpu_hash_crc32c_be((uint32_t)(n * n * n * call->in_channels), call->id);
  return strata__expected_seconds(&model_cl, footprint, workerid);
}
