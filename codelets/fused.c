/* Fused elementwise groups: tasks compute a group's result (W) from its
 * leaves (R). On CPUs they run the group's generated kernel (graphs/jit.c),
 * or its program when no kernel could be generated; on GPUs its program
 * (kernels/fused_kernels.h). A large result is cut into chunks of rows,
 * one task per CPU worker: one task is one core, and a chain of
 * elementwise operations on one array would otherwise leave the other
 * cores idle. */
#include "fused.h"
#include "kernels/fused_kernels.h"

_Static_assert(STARPU_NMAXBUFS - 1 <= STRATA__FUSED_MAXLEAVES, "a fused task's leaves fit");

struct fused_args {
  strata__fused_fn fn; /* NULL: the program */
  uint64_t id;         /* the group's hash, stable across processes */
  int nbuffers;
  int64_t lo, hi;    /* rows of the first dimension (0, 1 for a 0-d result) */
  int64_t row_elems; /* elements per row */
  struct strata__fused_program program;
};

static void fused_cpu(void *buffers[], void *cl_arg)
{
  const struct fused_args *a = cl_arg;
  void *ptr[STARPU_NMAXBUFS];
  for (int k = 0; k < a->nbuffers; k++)
    ptr[k] = (void *)STARPU_VECTOR_GET_PTR(buffers[k]);
  if (a->fn)
    a->fn(ptr, a->lo, a->hi);
  else
    strata__fused_cpu(&a->program, (const void *const *)ptr + 1, ptr[0], a->lo * a->row_elems,
                      a->hi * a->row_elems);
}

#if STRATA__USE_CUDA
static void fused_cuda(void *buffers[], void *cl_arg)
{
  const struct fused_args *a = cl_arg;
  const void *leaves[STARPU_NMAXBUFS];
  for (int k = 1; k < a->nbuffers; k++)
    leaves[k - 1] = (const void *)STARPU_VECTOR_GET_PTR(buffers[k]);
  strata__fused_cuda(&a->program, leaves, (void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                     starpu_cuda_get_local_stream());
}
#endif

/* Same group, data sizes and way of running (generated kernel or program,
 * whose costs differ several-fold on CPUs), same cost; the function pointer
 * itself differs from process to process. */
static uint32_t fused_footprint(struct starpu_task *task)
{
  const struct fused_args *a = task->cl_arg;
  uint32_t group = starpu_hash_crc32c_be((uint32_t)(a->id ^ (a->id >> 32)), a->fn != NULL);
  return starpu_hash_crc32c_be(group, starpu_task_data_footprint(task));
}

STRATA__CODELET(fused_cl, "strata_fused", 0x08519c, fused_cpu, fused_cuda, fused_footprint, NULL,
                .nbuffers = STARPU_VARIABLE_NBUFFERS);
/* A chunk of rows: CPU only (the GPU program computes whole results). */
STRATA__CODELET(fused_chunk_cl, "strata_fused_chunk", 0x08519c, fused_cpu, NULL, fused_footprint,
                NULL, .nbuffers = STARPU_VARIABLE_NBUFFERS);

static int submit_one(struct strata__codelet *cl, struct fused_args *a,
                      const starpu_data_handle_t *leaves, starpu_data_handle_t out)
{
  starpu_data_handle_t h[STARPU_NMAXBUFS] = {out};
  enum starpu_data_access_mode m[STARPU_NMAXBUFS] = {STARPU_W};
  for (int k = 1; k < a->nbuffers; k++) {
    h[k] = leaves[k - 1];
    m[k] = STARPU_R;
  }
  return strata__submit_copy_arg(cl, a, sizeof *a, a->nbuffers, h, m);
}

struct chunk_ctx {
  struct fused_args *a;
  const starpu_data_handle_t *leaves;
};

static int submit_chunk(void *ctx, int64_t lo, int64_t hi, starpu_data_handle_t part)
{
  struct chunk_ctx *c = ctx;
  c->a->lo = lo;
  c->a->hi = hi;
  return submit_one(&fused_chunk_cl, c->a, c->leaves, part);
}

int strata__fused_submit(strata__fused_fn fn, uint64_t id,
                         const struct strata__fused_program *program,
                         const starpu_data_handle_t *leaves, starpu_data_handle_t out)
{
  int nleaves = program->nleaves;
  if (nleaves < 0 || nleaves + 1 > STARPU_NMAXBUFS)
    return STRATA_EINVAL;
  struct fused_args a = {.fn = fn, .id = id, .nbuffers = nleaves + 1, .program = *program};
  int64_t rows = program->ndim > 0 ? program->shape[0] : 1;
  a.row_elems = 1;
  for (int d = 1; d < program->ndim; d++)
    a.row_elems *= program->shape[d];
  int nchunks = strata__row_chunks(out, rows, a.row_elems);
  if (nchunks == 1) {
    a.hi = rows;
    return submit_one(&fused_cl, &a, leaves, out);
  }
  struct chunk_ctx c = {&a, leaves};
  return strata__rows_submit(out, rows, a.row_elems, nchunks, submit_chunk, &c);
}
