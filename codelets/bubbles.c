/* The bubble codelets: extraction, probability map (R) -> bubble table (W)
 * with scratch for the component labels and, for maps that are joined with
 * their neighbours, the border faces (W); and the links of a map's faces
 * with its neighbours' (R) into a link array (W). CPU and CUDA. */
#include "bubbles.h"
#include "kernels/bubble_kernels.h"

/* The map's extent and the table's capacity. */
static int64_t map_extent(void *buffers[], const struct strata__bubble_params *p, int64_t *capacity)
{
  *capacity = STARPU_VECTOR_GET_NX(buffers[1]) / strata__bubble_columns(p->values) - 1;
  return strata__cube_root(STARPU_VECTOR_GET_NX(buffers[0]) / (uint32_t)p->channels);
}

static void extract_cpu(void *buffers[], void *cl_arg, int32_t *faces)
{
  int64_t capacity, n = map_extent(buffers, cl_arg, &capacity);
  strata__bubbles_cpu((const float *)STARPU_VECTOR_GET_PTR(buffers[0]), n, cl_arg,
                      (void *)STARPU_VECTOR_GET_PTR(buffers[2]),
                      (double *)STARPU_VECTOR_GET_PTR(buffers[1]), capacity, faces);
}

static void bubbles_cpu(void *buffers[], void *cl_arg) { extract_cpu(buffers, cl_arg, NULL); }

static void bubbles_faces_cpu(void *buffers[], void *cl_arg)
{
  extract_cpu(buffers, cl_arg, (int32_t *)STARPU_VECTOR_GET_PTR(buffers[3]));
}

#if STRATA__USE_CUDA
static void extract_cuda(void *buffers[], void *cl_arg, int32_t *faces)
{
  int64_t capacity, n = map_extent(buffers, cl_arg, &capacity);
  strata__bubbles_cuda((const float *)STARPU_VECTOR_GET_PTR(buffers[0]), n, cl_arg,
                       (void *)STARPU_VECTOR_GET_PTR(buffers[2]),
                       (double *)STARPU_VECTOR_GET_PTR(buffers[1]), capacity, faces,
                       starpu_cuda_get_local_stream());
}

static void bubbles_cuda(void *buffers[], void *cl_arg) { extract_cuda(buffers, cl_arg, NULL); }

static void bubbles_faces_cuda(void *buffers[], void *cl_arg)
{
  extract_cuda(buffers, cl_arg, (int32_t *)STARPU_VECTOR_GET_PTR(buffers[3]));
}
#endif

static uint32_t bubbles_footprint(struct starpu_task *task)
{
  return starpu_vector_get_nx(STARPU_TASK_GET_HANDLE(task, 0));
}

STRATA__CODELET(bubbles_cl, "strata_bubbles", 0xfc8d59, bubbles_cpu, bubbles_cuda,
                bubbles_footprint, NULL, .nbuffers = 3,
                .modes = {STARPU_R, STARPU_W, STARPU_SCRATCH});
STRATA__CODELET_SHARING(bubbles_faces_cl, bubbles_cl, "strata_bubbles", 0xfc8d59, bubbles_faces_cpu,
                        bubbles_faces_cuda, NULL, .nbuffers = 4,
                        .modes = {STARPU_R, STARPU_W, STARPU_SCRATCH, STARPU_W});

uint64_t strata__bubbles_scratch_bytes(int64_t n, int values)
{
  uint64_t cpu = strata__bubbles_cpu_scratch_bytes(n);
#if STRATA_HAVE_CUDA_KERNELS
  uint64_t cuda = strata__bubbles_cuda_scratch_bytes(n, values);
  return cuda > cpu ? cuda : cpu;
#else
  (void)values;
  return cpu;
#endif
}

int strata__bubbles_submit(starpu_data_handle_t prob, starpu_data_handle_t table,
                           starpu_data_handle_t scratch, starpu_data_handle_t faces,
                           const struct strata__bubble_params *p)
{
  starpu_data_handle_t h[4] = {prob, table, scratch, faces};
  return strata__submit_copy_arg(faces ? &bubbles_faces_cl : &bubbles_cl, p, sizeof *p,
                                 faces ? 4 : 3, h, NULL);
}

/* ---- links between neighbouring maps ---- */

/* Buffers: links (W), the map's faces (R), the present neighbours' faces
 * (R), whose pointers go into b. */
static void neighbour_faces(void *buffers[], const struct strata__bubble_links_params *p,
                            const int32_t **b)
{
  int nb = 0;
  for (int k = 0; k < STRATA__BUBBLE_DIRECTIONS; k++)
    if (p->present[k]) {
      b[nb] = (const int32_t *)STARPU_VECTOR_GET_PTR(buffers[2 + nb]);
      nb++;
    }
}

static void links_cpu(void *buffers[], void *cl_arg)
{
  const int32_t *b[STRATA__BUBBLE_DIRECTIONS];
  neighbour_faces(buffers, cl_arg, b);
  strata__bubble_links_cpu(cl_arg, (const int32_t *)STARPU_VECTOR_GET_PTR(buffers[1]), b,
                           (int32_t *)STARPU_VECTOR_GET_PTR(buffers[0]));
}

#if STRATA__USE_CUDA
static void links_cuda(void *buffers[], void *cl_arg)
{
  const int32_t *b[STRATA__BUBBLE_DIRECTIONS];
  neighbour_faces(buffers, cl_arg, b);
  strata__bubble_links_cuda(cl_arg, (const int32_t *)STARPU_VECTOR_GET_PTR(buffers[1]), b,
                            (int32_t *)STARPU_VECTOR_GET_PTR(buffers[0]),
                            starpu_cuda_get_local_stream());
}
#endif

STRATA__CODELET(links_cl, "strata_bubble_links", 0xfdd0a2, links_cpu, links_cuda,
                strata__arg_footprint, NULL, .nbuffers = STARPU_VARIABLE_NBUFFERS);

int strata__bubble_links_submit(MPI_Comm comm, starpu_data_handle_t links,
                                starpu_data_handle_t faces, const starpu_data_handle_t *neighbours,
                                const struct strata__bubble_links_params *p)
{
  starpu_data_handle_t h[2 + STRATA__BUBBLE_DIRECTIONS] = {links, faces};
  enum starpu_data_access_mode modes[2 + STRATA__BUBBLE_DIRECTIONS] = {STARPU_W, STARPU_R};
  int nh = 2;
  for (int k = 0; k < STRATA__BUBBLE_DIRECTIONS; k++)
    if (p->present[k]) {
      modes[nh] = STARPU_R;
      h[nh++] = neighbours[k];
    }
  return strata__mpi_submit_copy_arg(comm, &links_cl, p, sizeof *p, nh, h, modes);
}
