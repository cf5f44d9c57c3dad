/* Elementwise functions with broadcasting: result (W), then the array
 * operands (R), one to three of them. A large result is cut into chunks
 * of rows, one task per CPU worker (strata__rows_submit), each reading its
 * rows of the operands. */
#include "elementwise.h"

static int narrays(const struct strata__ew_args *a) { return a->nops - (a->scalar_at >= 0); }

/* The array operands' data from the task's buffers (after the result),
 * starting `lo` rows of the result in (none on a broadcast first dimension). */
static void operands_at(void *buffers[], const struct strata__ew_args *a, int64_t lo,
                        const void *in[STRATA__EW_MAXOPS])
{
  for (int k = 0; k < STRATA__EW_MAXOPS; k++)
    in[k] = k < narrays(a) ? (const char *)STARPU_VECTOR_GET_PTR(buffers[k + 1]) +
                                 lo * a->stride[k][0] * (int64_t)strata_dtype_size(a->in_dtype[k])
                           : NULL;
}

static void ew_cpu(void *buffers[], void *cl_arg)
{
  const void *in[STRATA__EW_MAXOPS];
  operands_at(buffers, cl_arg, 0, in);
  strata__ew_cpu(cl_arg, (void *)STARPU_VECTOR_GET_PTR(buffers[0]), in);
}

#if STRATA__USE_CUDA
static void ew_cuda(void *buffers[], void *cl_arg)
{
  const void *in[STRATA__EW_MAXOPS];
  operands_at(buffers, cl_arg, 0, in);
  strata__ew_cuda(cl_arg, (void *)STARPU_VECTOR_GET_PTR(buffers[0]), in,
                  starpu_cuda_get_local_stream());
}
#endif

/* A chunk of rows [lo, lo + shape[0]) of the result. */
struct ew_chunk_args {
  struct strata__ew_args ew; /* shape[0]: the chunk's rows */
  int64_t lo;
};

static void ew_chunk_cpu(void *buffers[], void *cl_arg)
{
  const struct ew_chunk_args *c = cl_arg;
  const void *in[STRATA__EW_MAXOPS];
  operands_at(buffers, &c->ew, c->lo, in);
  strata__ew_cpu(&c->ew, (void *)STARPU_VECTOR_GET_PTR(buffers[0]), in);
}

/* The scalar's value does not change the cost. */
static uint32_t ew_footprint(struct starpu_task *task)
{
  struct strata__ew_args a = *(const struct strata__ew_args *)task->cl_arg;
  a.scalar = 0;
  return starpu_hash_crc32c_be_n(&a, sizeof a, 0);
}

STRATA__CODELET(ew_cl, "strata_elementwise", 0x4292c6, ew_cpu, ew_cuda, ew_footprint, NULL,
                .nbuffers = STARPU_VARIABLE_NBUFFERS);
/* CPU only, as the chunks exist only on nodes without GPUs; keyed like a
 * whole task of the chunk's rows (ew_footprint reads the leading args). */
STRATA__CODELET(ew_chunk_cl, "strata_elementwise_chunk", 0x4292c6, ew_chunk_cpu, NULL, ew_footprint,
                NULL, .nbuffers = STARPU_VARIABLE_NBUFFERS);

struct chunk_ctx {
  const struct strata__ew_args *a;
  starpu_data_handle_t *h;
  enum starpu_data_access_mode *m;
  int nbuffers;
};

static int submit_chunk(void *ctx, int64_t lo, int64_t hi, starpu_data_handle_t part)
{
  struct chunk_ctx *c = ctx;
  struct ew_chunk_args args = {.ew = *c->a, .lo = lo};
  args.ew.shape[0] = hi - lo;
  c->h[0] = part;
  return strata__submit_copy_arg(&ew_chunk_cl, &args, sizeof args, c->nbuffers, c->h, c->m);
}

int strata__ew_submit(const struct strata__ew_args *a, const starpu_data_handle_t *operands,
                      starpu_data_handle_t out)
{
  starpu_data_handle_t h[1 + STRATA__EW_MAXOPS] = {out};
  enum starpu_data_access_mode m[1 + STRATA__EW_MAXOPS] = {STARPU_W, STARPU_R, STARPU_R, STARPU_R};
  int n = narrays(a);
  if (n < 1 || n > STRATA__EW_MAXOPS)
    return STRATA_EINVAL;
  int64_t rows = a->ndim > 0 ? a->shape[0] : 1, row_elems = 1;
  for (int d = 1; d < a->ndim; d++)
    row_elems *= a->shape[d];
  int nchunks = strata__row_chunks(out, rows, row_elems);
  for (int k = 0; k < n; k++) {
    h[k + 1] = operands[k];
    nchunks = operands[k] == out ? 1 : nchunks; /* in place: the rows are read whole */
  }
  if (nchunks == 1)
    return strata__submit_copy_arg(&ew_cl, a, sizeof *a, n + 1, h, m);
  struct chunk_ctx c = {a, h, m, n + 1};
  return strata__rows_submit(out, rows, row_elems, nchunks, submit_chunk, &c);
}
