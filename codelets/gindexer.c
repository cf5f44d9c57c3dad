/* Global indexer codelets: the row gather and scatter that pack and unpack
 * exchange buffers through an index map, the segment copy of variable-size
 * items, and the owner-side application of put requests (last writer,
 * first writer or a reduction, in writer order). */
#include "gindexer.h"
#include "kernels/gindexer_kernels.h"
#include "kernels/merge_kernels.h"

/* Buffers: src (R), map (R, int64), dst (W). */
static void gather_cpu(void *buffers[], void *cl_arg)
{
  const size_t *row = cl_arg;
  strata__gather_rows_cpu(
      (void *)STARPU_VECTOR_GET_PTR(buffers[2]), (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
      (const int64_t *)STARPU_VECTOR_GET_PTR(buffers[1]), STARPU_VECTOR_GET_NX(buffers[1]), *row);
}

/* Buffers: src (R), map (R, int64), dst (RW). */
static void scatter_cpu(void *buffers[], void *cl_arg)
{
  const size_t *row = cl_arg;
  strata__scatter_rows_cpu(
      (void *)STARPU_VECTOR_GET_PTR(buffers[2]), (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
      (const int64_t *)STARPU_VECTOR_GET_PTR(buffers[1]), STARPU_VECTOR_GET_NX(buffers[1]), *row);
}

/* Buffers: src (R), segments (R, int64 triples), dst (W or RW). */
static void segments_cpu(void *buffers[], void *cl_arg)
{
  const size_t *item = cl_arg;
  strata__copy_segments_cpu(
      (void *)STARPU_VECTOR_GET_PTR(buffers[2]), (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
      (const int64_t *)STARPU_VECTOR_GET_PTR(buffers[1]), STARPU_VECTOR_GET_NX(buffers[1]), *item);
}

/* Buffers: dist (RW), inbox (R), csr (R), req (R) [, scratch: reductions]. */
static void apply_cpu(void *buffers[], void *cl_arg)
{
  const struct strata__put_apply *a = cl_arg;
  strata__put_apply_cpu(
      a->rule, a->op, a->dtype, a->count, (void *)STARPU_VECTOR_GET_PTR(buffers[0]),
      (const void *)STARPU_VECTOR_GET_PTR(buffers[1]),
      (const int64_t *)STARPU_VECTOR_GET_PTR(buffers[2]),
      (const int64_t *)STARPU_VECTOR_GET_PTR(buffers[3]), STARPU_VECTOR_GET_NX(buffers[2]) - 1);
}

#if STRATA__USE_CUDA
static void gather_cuda(void *buffers[], void *cl_arg)
{
  const size_t *row = cl_arg;
  strata__gather_rows_cuda((void *)STARPU_VECTOR_GET_PTR(buffers[2]),
                           (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                           (const int64_t *)STARPU_VECTOR_GET_PTR(buffers[1]),
                           STARPU_VECTOR_GET_NX(buffers[1]), *row, starpu_cuda_get_local_stream());
}

static void scatter_cuda(void *buffers[], void *cl_arg)
{
  const size_t *row = cl_arg;
  strata__scatter_rows_cuda((void *)STARPU_VECTOR_GET_PTR(buffers[2]),
                            (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                            (const int64_t *)STARPU_VECTOR_GET_PTR(buffers[1]),
                            STARPU_VECTOR_GET_NX(buffers[1]), *row, starpu_cuda_get_local_stream());
}

static void segments_cuda(void *buffers[], void *cl_arg)
{
  const size_t *item = cl_arg;
  strata__copy_segments_cuda(
      (void *)STARPU_VECTOR_GET_PTR(buffers[2]), (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
      (const int64_t *)STARPU_VECTOR_GET_PTR(buffers[1]), STARPU_VECTOR_GET_NX(buffers[1]), *item,
      starpu_cuda_get_local_stream());
}

/* Copies pick one request per index; a reduction goes round by round (the
 * t-th request of every index, identity elsewhere) so that the order of
 * the writers is kept without atomics. */
static void apply_cuda(void *buffers[], void *cl_arg)
{
  const struct strata__put_apply *a = cl_arg;
  void *dist = (void *)STARPU_VECTOR_GET_PTR(buffers[0]);
  const void *inbox = (const void *)STARPU_VECTOR_GET_PTR(buffers[1]);
  const int64_t *csr = (const int64_t *)STARPU_VECTOR_GET_PTR(buffers[2]),
                *req = (const int64_t *)STARPU_VECTOR_GET_PTR(buffers[3]);
  int64_t dn = STARPU_VECTOR_GET_NX(buffers[2]) - 1;
  size_t row = (size_t)a->count * strata_dtype_size(a->dtype);
  cudaStream_t s = starpu_cuda_get_local_stream();
  if (a->rule != STRATA__PUT_REDUCE) {
    strata__pick_rows_cuda(dist, inbox, csr, req, dn, row, a->rule == STRATA__PUT_LAST ? -1 : 0, s);
    return;
  }
  void *scratch = (void *)STARPU_VECTOR_GET_PTR(buffers[4]);
  size_t n = (size_t)(dn * a->count);
  for (int64_t t = 0; t < a->max_requests; t++) {
    strata__merge_fill_identity_cuda(a->op, a->dtype, scratch, n, s);
    strata__pick_rows_cuda(scratch, inbox, csr, req, dn, row, t, s);
    strata__merge_cuda(a->op, a->dtype, dist, scratch, n, s);
  }
}
#endif

/* Keyed on the size of the destination. */
static uint32_t first_buffer_footprint(struct starpu_task *task)
{
  starpu_data_handle_t h = STARPU_TASK_GET_HANDLE(task, task->cl->nbuffers == 3 ? 2 : 0);
  return starpu_hash_crc32c_be((uint32_t)starpu_vector_get_nx(h), 0);
}

STRATA__CODELET(gather_cl, "strata_gindexer_gather", 0xd95f02, gather_cpu, gather_cuda,
                first_buffer_footprint, NULL, .nbuffers = 3,
                .modes = {STARPU_R, STARPU_R, STARPU_W});
STRATA__CODELET(scatter_cl, "strata_gindexer_scatter", 0xfdae6b, scatter_cpu, scatter_cuda,
                first_buffer_footprint, NULL, .nbuffers = 3,
                .modes = {STARPU_R, STARPU_R, STARPU_RW});

/* Two modes: W when the segments cover the destination, RW when several
 * tasks fill parts of it. */
STRATA__CODELET(segments_cl, "strata_gindexer_segments", 0xe6550d, segments_cpu, segments_cuda,
                first_buffer_footprint, NULL, .nbuffers = 3,
                .modes = {STARPU_R, STARPU_R, STARPU_W});
STRATA__CODELET_SHARING(segments_partial_cl, segments_cl, "strata_gindexer_segments", 0xe6550d,
                        segments_cpu, segments_cuda, NULL, .nbuffers = 3,
                        .modes = {STARPU_R, STARPU_R, STARPU_RW});

/* Copy rules, and reductions: those need a scratch buffer on CUDA. */
STRATA__CODELET(apply_cl, "strata_gindexer_apply", 0xa63603, apply_cpu, apply_cuda,
                first_buffer_footprint, NULL, .nbuffers = 4,
                .modes = {STARPU_RW, STARPU_R, STARPU_R, STARPU_R});
STRATA__CODELET_SHARING(apply_reduce_cl, apply_cl, "strata_gindexer_apply", 0xa63603, apply_cpu,
                        apply_cuda, NULL, .nbuffers = 5,
                        .modes = {STARPU_RW, STARPU_R, STARPU_R, STARPU_R, STARPU_SCRATCH});

int strata__gindexer_gather_submit(starpu_data_handle_t src, starpu_data_handle_t map,
                                   starpu_data_handle_t dst, size_t row)
{
  starpu_data_handle_t h[3] = {src, map, dst};
  return strata__submit_copy_arg(&gather_cl, &row, sizeof row, 3, h, NULL);
}

int strata__gindexer_scatter_submit(starpu_data_handle_t src, starpu_data_handle_t map,
                                    starpu_data_handle_t dst, size_t row)
{
  starpu_data_handle_t h[3] = {src, map, dst};
  return strata__submit_copy_arg(&scatter_cl, &row, sizeof row, 3, h, NULL);
}

int strata__gindexer_segments_submit(starpu_data_handle_t src, starpu_data_handle_t segments,
                                     starpu_data_handle_t dst, size_t item, int partial)
{
  starpu_data_handle_t h[3] = {src, segments, dst};
  return strata__submit_copy_arg(partial ? &segments_partial_cl : &segments_cl, &item, sizeof item,
                                 3, h, NULL);
}

int strata__gindexer_apply_submit(starpu_data_handle_t dist, starpu_data_handle_t inbox,
                                  starpu_data_handle_t csr, starpu_data_handle_t req,
                                  const struct strata__put_apply *a)
{
  starpu_data_handle_t h[5] = {dist, inbox, csr, req, NULL};
  int reduce = a->rule == STRATA__PUT_REDUCE;
  if (reduce) /* dist's shape, allocated where the task runs */
    starpu_vector_data_register(&h[4], -1, 0, starpu_vector_get_nx(dist),
                                starpu_vector_get_elemsize(dist));
  int ret = strata__submit_copy_arg(reduce ? &apply_reduce_cl : &apply_cl, a, sizeof *a, 4 + reduce,
                                    h, NULL);
  if (reduce)
    starpu_data_unregister_submit(h[4]);
  return ret;
}
