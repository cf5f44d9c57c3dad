/* AMR codelets: region copy, restriction and prolongation (one codelet each,
 * so that each has its own performance model and trace name, sharing one
 * kernel entry), ghost-layer extrapolation at domain boundaries, and the
 * initial-conditions fill. History-based perf models keyed on the shape of
 * the work. */
#include <string.h>

#include "codelets.h"
#include "kernels/amr_kernels.h"

static void xfer_cpu(void *buffers[], void *cl_arg)
{
  strata__amr_xfer_cpu(cl_arg, (void *)STARPU_VECTOR_GET_PTR(buffers[1]),
                       (const void *)STARPU_VECTOR_GET_PTR(buffers[0]));
}

static void boundary_cpu(void *buffers[], void *cl_arg)
{
  strata__amr_boundary_cpu(cl_arg, (void *)STARPU_VECTOR_GET_PTR(buffers[0]));
}

#if STRATA__USE_CUDA
static void xfer_cuda(void *buffers[], void *cl_arg)
{
  strata__amr_xfer_cuda(cl_arg, (void *)STARPU_VECTOR_GET_PTR(buffers[1]),
                        (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                        starpu_cuda_get_local_stream());
}

static void boundary_cuda(void *buffers[], void *cl_arg)
{
  strata__amr_boundary_cuda(cl_arg, (void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                            starpu_cuda_get_local_stream());
}
#endif

/* Zero the block, then convert the fill function's rows of doubles into
 * its interior. */
static void fill_cpu(void *buffers[], void *cl_arg)
{
  const struct strata__amr_fill *f = cl_arg;
  const int64_t n = f->cells, side = n + 2 * f->ghost;
  const int64_t ny = f->dim >= 2 ? n : 1, nz = f->dim >= 3 ? n : 1;
  const int64_t gy = f->dim >= 2 ? f->ghost : 0, gz = f->dim >= 3 ? f->ghost : 0;
  const int64_t sy = f->dim >= 2 ? side : 1;
  void *data = (void *)STARPU_VECTOR_GET_PTR(buffers[0]);
  memset(data, 0, STARPU_VECTOR_GET_NX(buffers[0]) * STARPU_VECTOR_GET_ELEMSIZE(buffers[0]));
  if (!f->fn)
    return;
  enum { ROW = 256 };
  double row[ROW];
  for (int64_t z = 0; z < nz; z++)
    for (int64_t y = 0; y < ny; y++)
      for (int64_t x0 = 0; x0 < n; x0 += ROW) {
        int64_t m = n - x0 < ROW ? n - x0 : ROW;
        double centre[3] = {f->origin[0] + (double)x0 * f->h, f->origin[1] + (double)y * f->h,
                            f->origin[2] + (double)z * f->h};
        f->fn(f->ctx, f->field, centre, f->h, m, row);
        int64_t at = ((z + gz) * sy + y + gy) * side + f->ghost + x0;
        for (int64_t i = 0; i < m; i++) {
          if (f->is_double)
            ((double *)data)[at + i] = row[i];
          else
            ((float *)data)[at + i] = (float)row[i];
        }
      }
}

static uint32_t xfer_footprint(struct starpu_task *task)
{
  const struct strata__amr_xfer *x = task->cl_arg;
  uint32_t h =
      starpu_hash_crc32c_be((uint32_t)(x->factor * 4 + x->is_double * 2 + x->dst_float), 0);
  for (int d = 0; d < 3; d++)
    h = starpu_hash_crc32c_be((uint32_t)x->count[d], h);
  return h;
}

static uint32_t block_footprint(struct starpu_task *task)
{
  uint64_t n = starpu_vector_get_nx(STARPU_TASK_GET_HANDLE(task, 0));
  return starpu_hash_crc32c_be((uint32_t)n, (uint32_t)(n >> 32));
}

static struct starpu_perfmodel copy_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "strata_amr_copy", .footprint = xfer_footprint};
static struct starpu_perfmodel restrict_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "strata_amr_restrict", .footprint = xfer_footprint};
static struct starpu_perfmodel prolong_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "strata_amr_prolong", .footprint = xfer_footprint};
static struct starpu_perfmodel boundary_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "strata_amr_boundary", .footprint = block_footprint};
static struct starpu_perfmodel fill_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "strata_amr_fill", .footprint = block_footprint};

#if STRATA__USE_CUDA
#define XFER_CUDA .cuda_funcs = {xfer_cuda}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define XFER_CUDA
#endif
#define XFER_CODELET(kind_name, perf, trace_color)                                                 \
  {                                                                                                \
    .name = kind_name, .cpu_funcs = {xfer_cpu}, XFER_CUDA.nbuffers = 2,                            \
    .modes = {STARPU_R, STARPU_RW}, .model = &perf, .color = trace_color                           \
  }

/* Indexed by enum strata__amr_kind. */
static struct starpu_codelet xfer_cl[] = {
    XFER_CODELET("strata_amr_copy", copy_model, 0x74c476),
    XFER_CODELET("strata_amr_restrict", restrict_model, 0x238b45),
    XFER_CODELET("strata_amr_prolong", prolong_model, 0x00441b),
};

static struct starpu_codelet boundary_cl = {
    .name = "strata_amr_boundary",
    .color = 0xa1d99b,
    .cpu_funcs = {boundary_cpu},
#if STRATA__USE_CUDA
    .cuda_funcs = {boundary_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 1,
    .modes = {STARPU_RW},
    .model = &boundary_model,
};

static struct starpu_codelet fill_cl = {
    .name = "strata_amr_fill",
    .color = 0xc7e9c0,
    .cpu_funcs = {fill_cpu},
    .nbuffers = 1,
    .modes = {STARPU_W},
    .model = &fill_model,
};

/* Local or StarPU-MPI insertion with the codelet's own modes. */
static int submit(MPI_Comm comm, struct starpu_codelet *cl, const void *arg, size_t size,
                  int nbuffers, const starpu_data_handle_t *h)
{
  if (comm == MPI_COMM_NULL)
    return strata__submit_copy_arg(cl, arg, size, nbuffers, h, NULL);
  return strata__mpi_submit_copy_arg(comm, cl, arg, size, nbuffers, h, cl->modes);
}

int strata__amr_xfer_submit(MPI_Comm comm, starpu_data_handle_t src, starpu_data_handle_t dst,
                            const struct strata__amr_xfer *x)
{
  if (x->kind < STRATA__AMR_COPY || x->kind > STRATA__AMR_PROLONG)
    return STRATA_EINVAL;
  starpu_data_handle_t h[2] = {src, dst};
  return submit(comm, &xfer_cl[x->kind], x, sizeof *x, 2, h);
}

int strata__amr_boundary_submit(MPI_Comm comm, starpu_data_handle_t block,
                                const struct strata__amr_boundary *b)
{
  return submit(comm, &boundary_cl, b, sizeof *b, 1, &block);
}

int strata__amr_fill_submit(MPI_Comm comm, starpu_data_handle_t block,
                            const struct strata__amr_fill *f)
{
  return submit(comm, &fill_cl, f, sizeof *f, 1, &block);
}
