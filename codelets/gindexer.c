/* Global indexer codelets: the row gather and scatter that pack and unpack
 * exchange buffers through an index map, the block copy of variable-size
 * items, and the owner-side application of put requests (last writer,
 * first writer or a reduction, in writer order). */
#include "gindexer.h"
#include "kernels/gindexer_kernels.h"
#include "kernels/merge_kernels.h"

/* The gather's argument: the row size, and whether the map ascends. */
struct gather_rows {
  size_t row;
  int ascending;
};

/* Buffers: src (R), map (R, int64), dst (W). */
static void gather_cpu(void *buffers[], void *cl_arg)
{
  const struct gather_rows *a = cl_arg;
  strata__gather_rows_cpu(
      (void *)STARPU_VECTOR_GET_PTR(buffers[2]), (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
      (const int64_t *)STARPU_VECTOR_GET_PTR(buffers[1]), STARPU_VECTOR_GET_NX(buffers[1]), a->row);
}

/* Buffers: src (R), map (R, int64), dst (RW). */
static void scatter_cpu(void *buffers[], void *cl_arg)
{
  const size_t *row = cl_arg;
  strata__scatter_rows_cpu(
      (void *)STARPU_VECTOR_GET_PTR(buffers[2]), (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
      (const int64_t *)STARPU_VECTOR_GET_PTR(buffers[1]), STARPU_VECTOR_GET_NX(buffers[1]), *row);
}

/* The block copy's argument: the copies, their item size, and whether the
 * blocks are named by a map. */
struct copy_blocks {
  size_t item;
  int64_t n;
  int mapped;
};

/* Its buffers: src (R), displ (R), [map (R),] at (R), dst (W or RW). */
struct blocks_buffers {
  void *dst;
  const void *src;
  const int64_t *displ, *map, *at;
};

static struct blocks_buffers blocks_buffers(void *buffers[], const struct copy_blocks *a)
{
  return (struct blocks_buffers){
      .dst = (void *)STARPU_VECTOR_GET_PTR(buffers[3 + a->mapped]),
      .src = (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
      .displ = (const int64_t *)STARPU_VECTOR_GET_PTR(buffers[1]),
      .map = a->mapped ? (const int64_t *)STARPU_VECTOR_GET_PTR(buffers[2]) : NULL,
      .at = (const int64_t *)STARPU_VECTOR_GET_PTR(buffers[2 + a->mapped])};
}

static void blocks_cpu(void *buffers[], void *cl_arg)
{
  const struct copy_blocks *a = cl_arg;
  struct blocks_buffers b = blocks_buffers(buffers, a);
  strata__copy_blocks_cpu(b.dst, b.src, b.displ, b.map, b.at, a->n, a->item);
}

/* Buffers: dist (RW), inbox (R), csr (R), req (R), local (R); the CPU
 * applies the requests in arrival order (local), CUDA per owned index
 * (csr, req). */
static void apply_cpu(void *buffers[], void *cl_arg)
{
  const struct strata__put_apply *a = cl_arg;
  strata__put_apply_cpu(
      a->rule, a->op, a->dtype, a->count, (void *)STARPU_VECTOR_GET_PTR(buffers[0]),
      (const void *)STARPU_VECTOR_GET_PTR(buffers[1]),
      (const int64_t *)STARPU_VECTOR_GET_PTR(buffers[4]), STARPU_VECTOR_GET_NX(buffers[4]));
}

#if STRATA__USE_CUDA
static void gather_cuda(void *buffers[], void *cl_arg)
{
  const struct gather_rows *a = cl_arg;
  strata__gather_rows_cuda(
      (void *)STARPU_VECTOR_GET_PTR(buffers[2]), (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
      (const int64_t *)STARPU_VECTOR_GET_PTR(buffers[1]), STARPU_VECTOR_GET_NX(buffers[1]), a->row,
      starpu_cuda_get_local_stream());
}

static void scatter_cuda(void *buffers[], void *cl_arg)
{
  const size_t *row = cl_arg;
  strata__scatter_rows_cuda((void *)STARPU_VECTOR_GET_PTR(buffers[2]),
                            (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                            (const int64_t *)STARPU_VECTOR_GET_PTR(buffers[1]),
                            STARPU_VECTOR_GET_NX(buffers[1]), *row, starpu_cuda_get_local_stream());
}

static void blocks_cuda(void *buffers[], void *cl_arg)
{
  const struct copy_blocks *a = cl_arg;
  struct blocks_buffers b = blocks_buffers(buffers, a);
  strata__copy_blocks_cuda(b.dst, b.src, b.displ, b.map, b.at, a->n, a->item,
                           starpu_cuda_get_local_stream());
}

/* Copies pick one request per index; a reduction merges each index's
 * requests in writer order, one thread per element. */
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
  if (a->rule != STRATA__PUT_REDUCE)
    strata__pick_rows_cuda(dist, inbox, csr, req, dn, row, a->rule == STRATA__PUT_LAST ? -1 : 0, s);
  else
    strata__merge_rows_cuda(a->op, a->dtype, dist, inbox, (size_t)a->count, dn, csr, req, s);
}
#endif

/* A footprint of a rounded size (strata__rounded_size). */
static uint32_t rounded_size_footprint(uint64_t n, uint32_t seed)
{
  const uint64_t rounded = strata__rounded_size(n);
  return starpu_hash_crc32c_be((uint32_t)(rounded >> 32),
                               starpu_hash_crc32c_be((uint32_t)rounded, seed));
}

/* Keyed on the source's row count, rounded, and the row size. */
static uint32_t scatter_footprint(struct starpu_task *task)
{
  const size_t *row = task->cl_arg;
  return rounded_size_footprint(starpu_vector_get_nx(STARPU_TASK_GET_HANDLE(task, 1)),
                                (uint32_t)*row);
}

/* Keyed on the destination's row count, rounded, the row size (a gather
 * of 10^6 rows at random costs 1.5 ms with rows of 4 bytes and 2.1 ms with
 * rows of 8) and the map's order. */
static uint32_t gather_footprint(struct starpu_task *task)
{
  const struct gather_rows *a = task->cl_arg;
  return rounded_size_footprint(starpu_vector_get_nx(STARPU_TASK_GET_HANDLE(task, 2)),
                                starpu_hash_crc32c_be((uint32_t)a->row, (uint32_t)a->ascending));
}

STRATA__CODELET(gather_cl, "strata_gindexer_gather", 0xd95f02, gather_cpu, gather_cuda,
                gather_footprint, NULL, .nbuffers = 3, .modes = {STARPU_R, STARPU_R, STARPU_W});
STRATA__CODELET(scatter_cl, "strata_gindexer_scatter", 0xfdae6b, scatter_cpu, scatter_cuda,
                scatter_footprint, NULL, .nbuffers = 3, .modes = {STARPU_R, STARPU_R, STARPU_RW});

/* Keyed on the block count and the destination's size, rounded, and the
 * item size. */
static uint32_t blocks_footprint(struct starpu_task *task)
{
  const struct copy_blocks *a = task->cl_arg;
  starpu_data_handle_t dst = STARPU_TASK_GET_HANDLE(task, 3 + a->mapped);
  return rounded_size_footprint(starpu_vector_get_nx(dst),
                                rounded_size_footprint((uint64_t)a->n, (uint32_t)a->item));
}

/* Four or five buffers, and W when the blocks cover the destination or RW
 * when several tasks fill parts of it: the modes come with each task. */
STRATA__CODELET(blocks_cl, "strata_gindexer_blocks", 0xe6550d, blocks_cpu, blocks_cuda,
                blocks_footprint, NULL, .nbuffers = STARPU_VARIABLE_NBUFFERS);

/* Keyed on the size of the owned rows, rounded, their type and the rule (a
 * reduction reads what it writes). */
static uint32_t apply_footprint(struct starpu_task *task)
{
  const struct strata__put_apply *a = task->cl_arg;
  return rounded_size_footprint(starpu_vector_get_nx(STARPU_TASK_GET_HANDLE(task, 0)),
                                starpu_hash_crc32c_be((uint32_t)a->dtype, (uint32_t)a->rule));
}

STRATA__CODELET(apply_cl, "strata_gindexer_apply", 0xa63603, apply_cpu, apply_cuda, apply_footprint,
                NULL, .nbuffers = 5, .modes = {STARPU_RW, STARPU_R, STARPU_R, STARPU_R, STARPU_R});

int strata__gindexer_gather_submit(starpu_data_handle_t src, starpu_data_handle_t map,
                                   starpu_data_handle_t dst, size_t row, int ascending)
{
  struct gather_rows a = {row, ascending != 0};
  starpu_data_handle_t h[3] = {src, map, dst};
  return strata__submit_copy_arg(&gather_cl, &a, sizeof a, 3, h, NULL);
}

int strata__gindexer_scatter_submit(starpu_data_handle_t src, starpu_data_handle_t map,
                                    starpu_data_handle_t dst, size_t row)
{
  starpu_data_handle_t h[3] = {src, map, dst};
  return strata__submit_copy_arg(&scatter_cl, &row, sizeof row, 3, h, NULL);
}

int strata__gindexer_blocks_submit(starpu_data_handle_t src, starpu_data_handle_t displ,
                                   starpu_data_handle_t map, starpu_data_handle_t at,
                                   starpu_data_handle_t dst, int64_t n, size_t item, int partial)
{
  struct copy_blocks a = {item, n, map != NULL};
  starpu_data_handle_t h[5] = {src, displ, map ? map : at, map ? at : dst, dst};
  enum starpu_data_access_mode m[5] = {STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_R};
  m[3 + a.mapped] = partial ? STARPU_RW : STARPU_W;
  return strata__submit_copy_arg(&blocks_cl, &a, sizeof a, 4 + a.mapped, h, m);
}

int strata__gindexer_apply_submit(starpu_data_handle_t dist, starpu_data_handle_t inbox,
                                  starpu_data_handle_t csr, starpu_data_handle_t req,
                                  starpu_data_handle_t local, const struct strata__put_apply *a)
{
  starpu_data_handle_t h[5] = {dist, inbox, csr, req, local};
  return strata__submit_copy_arg(&apply_cl, a, sizeof *a, 5, h, NULL);
}
