/* Sharded execution codelets: the shard codelet (one shard of an
 * operation: the operation's own CPU or CUDA kernel on its region buffers)
 * and the region codelets that move a region between a tensor and a
 * buffer (gather with padding, scatter, scatter-merge for reductions). */
#include <string.h>

#include "kernels/box_kernels.h"
#include "shard.h"
#include "shard_ops.h"

static void shard_cpu(void *buffers[], void *cl_arg)
{
  const struct strata__shard_call *call = cl_arg;
  void *ptr[STARPU_NMAXBUFS];
  for (int t = 0; t < call->shard.ntensors; t++)
    ptr[t] = (void *)STARPU_VECTOR_GET_PTR(buffers[t]);
  call->cpu(&call->shard, ptr, call->arg);
}

#if STRATA__USE_CUDA
#include <starpu_cublas_v2.h>

static void shard_cuda(void *buffers[], void *cl_arg)
{
  const struct strata__shard_call *call = cl_arg;
  void *ptr[STARPU_NMAXBUFS];
  for (int t = 0; t < call->shard.ntensors; t++)
    ptr[t] = (void *)STARPU_VECTOR_GET_PTR(buffers[t]);
  call->cuda(&call->shard, ptr, call->arg, starpu_cuda_get_local_stream(),
             starpu_cublas_get_local_handle());
}
#endif

/* CUDA workers only for operations that have a CUDA kernel. */
static int shard_can_execute(unsigned workerid, struct starpu_task *task, unsigned nimpl)
{
  (void)nimpl;
  const struct strata__shard_call *call = task->cl_arg;
  return starpu_worker_get_type((int)workerid) != STARPU_CUDA_WORKER || call->cuda != NULL;
}

/* Keyed on the operation and the size of every buffer. */
static uint32_t shard_footprint(struct starpu_task *task)
{
  const struct strata__shard_call *call = task->cl_arg;
  uint32_t key = call->id;
  for (unsigned t = 0; t < STARPU_TASK_GET_NBUFFERS(task); t++)
    key = starpu_hash_crc32c_be(starpu_vector_get_nx(STARPU_TASK_GET_HANDLE(task, t)), key);
  return key;
}

STRATA__CODELET(shard_cl, "strata_shard", 0x8c6d31, shard_cpu, shard_cuda, shard_footprint, NULL,
                .can_execute = shard_can_execute, .nbuffers = STARPU_VARIABLE_NBUFFERS);

int strata__shard_submit(const struct strata__shard_call *call, size_t size,
                         const starpu_data_handle_t *handles,
                         const enum starpu_data_access_mode *modes)
{
  return strata__submit_copy_arg(&shard_cl, call, size, call->shard.ntensors, handles, modes);
}

/* Region moves. Buffers: the tensor, then the region buffer. */
static void piece_boxes(const struct strata__region_move *m, int k, struct strata__box *tensor,
                        struct strata__box *buffer)
{
  memcpy(tensor->shape, m->tensor_shape, sizeof tensor->shape);
  memcpy(tensor->start, m->piece[k].tensor_start, sizeof tensor->start);
  memcpy(buffer->shape, m->buffer_shape, sizeof buffer->shape);
  memcpy(buffer->start, m->piece[k].buffer_start, sizeof buffer->start);
}

static int64_t buffer_cells(const struct strata__region_move *m)
{
  int64_t n = 1;
  for (int d = 0; d < m->ndim; d++)
    n *= m->buffer_shape[d];
  return n;
}

static void gather_cpu(void *buffers[], void *cl_arg)
{
  const struct strata__region_move *m = cl_arg;
  const void *tensor = (const void *)STARPU_VECTOR_GET_PTR(buffers[0]);
  void *buffer = (void *)STARPU_VECTOR_GET_PTR(buffers[1]);
  if (m->pad)
    strata__fill_cpu(buffer, buffer_cells(m), m->elem, m->fill);
  for (int k = 0; k < m->npieces; k++) {
    struct strata__box tb, bb;
    piece_boxes(m, k, &tb, &bb);
    strata__box_copy_cpu(m->ndim, m->piece[k].extent, m->elem, buffer, &bb, tensor, &tb);
  }
}

static void scatter_cpu(void *buffers[], void *cl_arg)
{
  const struct strata__region_move *m = cl_arg;
  void *tensor = (void *)STARPU_VECTOR_GET_PTR(buffers[0]);
  const void *buffer = (const void *)STARPU_VECTOR_GET_PTR(buffers[1]);
  for (int k = 0; k < m->npieces; k++) {
    struct strata__box tb, bb;
    piece_boxes(m, k, &tb, &bb);
    if (m->merge)
      strata__box_merge_cpu(m->ndim, m->piece[k].extent, m->op, m->dtype, tensor, &tb, buffer, &bb);
    else
      strata__box_copy_cpu(m->ndim, m->piece[k].extent, m->elem, tensor, &tb, buffer, &bb);
  }
}

#if STRATA__USE_CUDA
static void gather_cuda(void *buffers[], void *cl_arg)
{
  const struct strata__region_move *m = cl_arg;
  const void *tensor = (const void *)STARPU_VECTOR_GET_PTR(buffers[0]);
  void *buffer = (void *)STARPU_VECTOR_GET_PTR(buffers[1]);
  cudaStream_t stream = starpu_cuda_get_local_stream();
  if (m->pad)
    strata__fill_cuda(buffer, buffer_cells(m), m->elem, m->fill, stream);
  for (int k = 0; k < m->npieces; k++) {
    struct strata__box tb, bb;
    piece_boxes(m, k, &tb, &bb);
    strata__box_copy_cuda(m->ndim, m->piece[k].extent, m->elem, buffer, &bb, tensor, &tb, stream);
  }
}

static void scatter_cuda(void *buffers[], void *cl_arg)
{
  const struct strata__region_move *m = cl_arg;
  void *tensor = (void *)STARPU_VECTOR_GET_PTR(buffers[0]);
  const void *buffer = (const void *)STARPU_VECTOR_GET_PTR(buffers[1]);
  cudaStream_t stream = starpu_cuda_get_local_stream();
  for (int k = 0; k < m->npieces; k++) {
    struct strata__box tb, bb;
    piece_boxes(m, k, &tb, &bb);
    if (m->merge)
      strata__box_merge_cuda(m->ndim, m->piece[k].extent, m->op, m->dtype, tensor, &tb, buffer, &bb,
                             stream);
    else
      strata__box_copy_cuda(m->ndim, m->piece[k].extent, m->elem, tensor, &tb, buffer, &bb, stream);
  }
}
#endif

/* Keyed on the region buffer's size. */
static uint32_t region_footprint(struct starpu_task *task)
{
  return starpu_hash_crc32c_be(starpu_vector_get_nx(STARPU_TASK_GET_HANDLE(task, 1)), 0);
}

STRATA__CODELET(gather_cl, "strata_region_gather", 0xbd9e39, gather_cpu, gather_cuda,
                region_footprint, NULL, .nbuffers = 2, .modes = {STARPU_R, STARPU_W});

STRATA__CODELET(scatter_cl, "strata_region_scatter", 0xe7ba52, scatter_cpu, scatter_cuda,
                region_footprint, NULL, .nbuffers = 2, .modes = {STARPU_RW, STARPU_R});

static size_t move_size(const struct strata__region_move *m)
{
  return sizeof *m + (size_t)m->npieces * sizeof m->piece[0];
}

int strata__region_gather_submit(starpu_data_handle_t tensor, starpu_data_handle_t buffer,
                                 const struct strata__region_move *m)
{
  starpu_data_handle_t h[2] = {tensor, buffer};
  return strata__submit_copy_arg(&gather_cl, m, move_size(m), 2, h, NULL);
}

int strata__region_scatter_submit(starpu_data_handle_t tensor, starpu_data_handle_t buffer,
                                  const struct strata__region_move *m)
{
  starpu_data_handle_t h[2] = {tensor, buffer};
  return strata__submit_copy_arg(&scatter_cl, m, move_size(m), 2, h, NULL);
}
