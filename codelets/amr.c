/* AMR codelets: region copy, restriction and prolongation (one codelet each,
 * so that each has its own performance model and trace name, sharing one
 * kernel entry), families of them, a leaf's ghost fill (its transfers from
 * the neighbours, then extrapolation at domain boundaries), and the
 * initial-conditions fill. History-based perf models keyed on the shape of
 * the work. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "amr.h"
#include "kernels/amr_kernels.h"

/* A transfer task's argument: the transfer first (the footprint and the
 * CUDA function read it alone), then where its CPU time is added. */
struct xfer_arg {
  struct strata__amr_xfer x;
  int64_t *account;
};

static void xfer_cpu(void *buffers[], void *cl_arg)
{
  const struct xfer_arg *a = cl_arg;
  int64_t start = strata__thread_cpu_ns();
  strata__amr_xfer_cpu(&a->x, (void *)STARPU_VECTOR_GET_PTR(buffers[1]),
                       (const void *)STARPU_VECTOR_GET_PTR(buffers[0]));
  strata__charge_cpu(a->account, start);
}

/* A family task's arrays: buffer 0 the parent, 1 + o child o. */
static void *family_arrays(void *buffers[], const struct strata__amr_family *f, void *children[8])
{
  for (int o = 0; o < f->nchildren; o++)
    children[o] = (void *)STARPU_VECTOR_GET_PTR(buffers[1 + o]);
  return (void *)STARPU_VECTOR_GET_PTR(buffers[0]);
}

static void family_cpu(void *buffers[], void *cl_arg)
{
  void *children[8], *parent = family_arrays(buffers, cl_arg, children);
  strata__amr_family_cpu(cl_arg, parent, children);
}

static void ghosts_cpu(void *buffers[], void *cl_arg)
{
  const struct strata__amr_ghosts *g = cl_arg;
  void *leaf = (void *)STARPU_VECTOR_GET_PTR(buffers[0]);
  for (int k = 0; k < g->nxfers; k++)
    strata__amr_xfer_cpu(&g->xfer[k].x, leaf,
                         (const void *)STARPU_VECTOR_GET_PTR(buffers[g->xfer[k].src]));
  if (g->boundary.faces)
    strata__amr_boundary_cpu(&g->boundary, leaf);
}

#if STRATA__USE_CUDA
static void xfer_cuda(void *buffers[], void *cl_arg)
{
  const struct xfer_arg *a = cl_arg;
  strata__amr_xfer_cuda(&a->x, (void *)STARPU_VECTOR_GET_PTR(buffers[1]),
                        (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                        starpu_cuda_get_local_stream());
}

static void family_cuda(void *buffers[], void *cl_arg)
{
  void *children[8], *parent = family_arrays(buffers, cl_arg, children);
  strata__amr_family_cuda(cl_arg, parent, children, starpu_cuda_get_local_stream());
}

/* The transfers one launch after the other on the worker's stream. */
static void ghosts_cuda(void *buffers[], void *cl_arg)
{
  const struct strata__amr_ghosts *g = cl_arg;
  void *leaf = (void *)STARPU_VECTOR_GET_PTR(buffers[0]), *stream = starpu_cuda_get_local_stream();
  for (int k = 0; k < g->nxfers; k++)
    strata__amr_xfer_cuda(&g->xfer[k].x, leaf,
                          (const void *)STARPU_VECTOR_GET_PTR(buffers[g->xfer[k].src]), stream);
  if (g->boundary.faces)
    strata__amr_boundary_cuda(&g->boundary, leaf, stream);
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

static uint32_t xfer_hash(const struct strata__amr_xfer *x)
{
  uint32_t h =
      starpu_hash_crc32c_be((uint32_t)(x->factor * 4 + x->is_double * 2 + x->dst_float), 0);
  for (int d = 0; d < 3; d++)
    h = starpu_hash_crc32c_be((uint32_t)x->count[d], h);
  return h;
}

static uint32_t xfer_footprint(struct starpu_task *task)
{
  const struct xfer_arg *a = task->cl_arg;
  return xfer_hash(&a->x);
}

static uint32_t family_footprint(struct starpu_task *task)
{
  const struct strata__amr_family *f = task->cl_arg;
  return starpu_hash_crc32c_be((uint32_t)f->nchildren, xfer_hash(&f->x[0]));
}

/* The transfers' shapes in order, and the faces extrapolated. */
static uint32_t ghosts_footprint(struct starpu_task *task)
{
  const struct strata__amr_ghosts *g = task->cl_arg;
  uint32_t h = starpu_hash_crc32c_be((uint32_t)g->boundary.faces, (uint32_t)g->nxfers);
  for (int k = 0; k < g->nxfers; k++)
    h = starpu_hash_crc32c_be(xfer_hash(&g->xfer[k].x), h);
  return h;
}

static uint32_t fill_footprint(struct starpu_task *task)
{
  const struct strata__amr_fill *f = task->cl_arg;
  uint64_t n = starpu_vector_get_nx(STARPU_TASK_GET_HANDLE(task, 0));
  uint32_t h = starpu_hash_crc32c_be((uint32_t)n, (uint32_t)(n >> 32));
  if (!f->fn)
    return h;
  return starpu_hash_crc32c_be(f->cost_key, starpu_hash_crc32c_be((uint32_t)f->field, h));
}

/* Copy, restriction and prolongation, indexed by enum strata__amr_kind. */
STRATA__CODELET(copy_cl, "strata_amr_copy", 0x74c476, xfer_cpu, xfer_cuda, xfer_footprint, NULL,
                .nbuffers = 2, .modes = {STARPU_R, STARPU_RW});
STRATA__CODELET(restrict_cl, "strata_amr_restrict", 0x238b45, xfer_cpu, xfer_cuda, xfer_footprint,
                NULL, .nbuffers = 2, .modes = {STARPU_R, STARPU_RW});
STRATA__CODELET(prolong_cl, "strata_amr_prolong", 0x00441b, xfer_cpu, xfer_cuda, xfer_footprint,
                NULL, .nbuffers = 2, .modes = {STARPU_R, STARPU_RW});
static struct strata__codelet *const xfer_cl[] = {&copy_cl, &restrict_cl, &prolong_cl};

/* Restriction and prolongation families; modes per task. */
STRATA__CODELET(restrict_family_cl, "strata_amr_restrict_family", 0x238b45, family_cpu, family_cuda,
                family_footprint, NULL, .nbuffers = STARPU_VARIABLE_NBUFFERS);
STRATA__CODELET(prolong_family_cl, "strata_amr_prolong_family", 0x00441b, family_cpu, family_cuda,
                family_footprint, NULL, .nbuffers = STARPU_VARIABLE_NBUFFERS);
static struct strata__codelet *const family_cl[] = {&restrict_family_cl, &prolong_family_cl};

STRATA__CODELET(ghosts_cl, "strata_amr_ghosts", 0x41ab5d, ghosts_cpu, ghosts_cuda, ghosts_footprint,
                NULL, .nbuffers = STARPU_VARIABLE_NBUFFERS);

STRATA__CODELET(fill_cl, "strata_amr_fill", 0xc7e9c0, fill_cpu, NULL, fill_footprint, NULL,
                .nbuffers = 1, .modes = {STARPU_W});

/* Local or StarPU-MPI insertion, with the codelet's own modes unless
 * `modes` is given. */
static int submit(MPI_Comm comm, struct strata__codelet *cl, const void *arg, size_t size,
                  int nbuffers, const starpu_data_handle_t *h,
                  const enum starpu_data_access_mode *modes)
{
  if (comm == MPI_COMM_NULL)
    return strata__submit_copy_arg(cl, arg, size, nbuffers, h, modes);
  return strata__mpi_submit_copy_arg(comm, cl, arg, size, nbuffers, h,
                                     modes ? modes : cl->cl.modes);
}

/* One transfer task, with the codelet's modes (NULL) or `modes`. */
static int xfer(MPI_Comm comm, starpu_data_handle_t src, starpu_data_handle_t dst,
                const struct strata__amr_xfer *x, int64_t *account,
                const enum starpu_data_access_mode *modes)
{
  if (x->kind < STRATA__AMR_COPY || x->kind > STRATA__AMR_PROLONG)
    return STRATA_EINVAL;
  starpu_data_handle_t h[2] = {src, dst};
  const struct xfer_arg arg = {*x, account};
  return submit(comm, xfer_cl[x->kind], &arg, sizeof arg, 2, h, modes);
}

int strata__amr_xfer_submit(MPI_Comm comm, starpu_data_handle_t src, starpu_data_handle_t dst,
                            const struct strata__amr_xfer *x, int64_t *account)
{
  return xfer(comm, src, dst, x, account, NULL);
}

double strata__amr_xfer_expected_seconds(const struct strata__amr_xfer *x, int workerid)
{
  if (x->kind < STRATA__AMR_COPY || x->kind > STRATA__AMR_PROLONG)
    return NAN;
  return strata__expected_seconds(xfer_cl[x->kind], xfer_hash(x), workerid);
}

int strata__amr_pack_submit(starpu_data_handle_t src, starpu_data_handle_t outbox,
                            const struct strata__amr_xfer *x, int64_t *account)
{
  static const enum starpu_data_access_mode modes[2] = {STARPU_R, STARPU_RW | STARPU_COMMUTE};
  int previous = strata__submit_priority(STARPU_MAX_PRIO);
  int ret = xfer(MPI_COMM_NULL, src, outbox, x, account, modes);
  strata__submit_priority(previous);
  return ret;
}

int strata__amr_family_submit(MPI_Comm comm, starpu_data_handle_t parent,
                              const starpu_data_handle_t *children,
                              const struct strata__amr_family *f)
{
  const int n = f->nchildren, kind = n >= 1 ? f->x[0].kind : -1;
  if (n < 1 || n > 8 || (kind != STRATA__AMR_RESTRICT && kind != STRATA__AMR_PROLONG))
    return STRATA_EINVAL;
  const int restricting = kind == STRATA__AMR_RESTRICT;
  starpu_data_handle_t h[9] = {parent};
  enum starpu_data_access_mode modes[9] = {restricting ? STARPU_RW : STARPU_R};
  for (int o = 0; o < n; o++) {
    if (f->x[o].kind != kind)
      return STRATA_EINVAL;
    h[1 + o] = children[o];
    modes[1 + o] = restricting ? STARPU_R : STARPU_RW;
  }
  /* only the used transfers travel with the task */
  const size_t size = offsetof(struct strata__amr_family, x) + (size_t)n * sizeof f->x[0];
  return submit(comm, family_cl[restricting ? 0 : 1], f, size, n + 1, h, modes);
}

int strata__amr_ghosts_submit(starpu_data_handle_t leaf, const starpu_data_handle_t *sources,
                              int nsources, const struct strata__amr_ghosts *g)
{
  if (nsources < 0 || nsources > STRATA__AMR_GHOST_SOURCES || g->nxfers < 0)
    return STRATA_EINVAL;
  starpu_data_handle_t h[STRATA__MAX_BUFFERS] = {leaf};
  enum starpu_data_access_mode modes[STRATA__MAX_BUFFERS] = {STARPU_RW};
  for (int k = 0; k < nsources; k++) {
    h[1 + k] = sources[k];
    modes[1 + k] = STARPU_R;
  }
  for (int k = 0; k < g->nxfers; k++)
    if (g->xfer[k].src < 0 || g->xfer[k].src > nsources)
      return STRATA_EINVAL;
  const size_t size = sizeof *g + (size_t)g->nxfers * sizeof g->xfer[0];
  return strata__submit_copy_arg(&ghosts_cl, g, size, nsources + 1, h, modes);
}

int strata__amr_fill_submit(MPI_Comm comm, starpu_data_handle_t block,
                            const struct strata__amr_fill *f)
{
  return submit(comm, &fill_cl, f, sizeof *f, 1, &block, NULL);
}
