/* Strided copies (reshape, slicing, indexing, transpose, broadcast,
 * concatenation pieces, split): source (R), destination (W, or RW when
 * several tasks fill parts of it). */
#include "view.h"

static void view_cpu(void *buffers[], void *cl_arg)
{
  strata__view_cpu(cl_arg, (void *)STARPU_VECTOR_GET_PTR(buffers[1]),
                   (const void *)STARPU_VECTOR_GET_PTR(buffers[0]));
}

#if STRATA__USE_CUDA
static void view_cuda(void *buffers[], void *cl_arg)
{
  strata__view_cuda(cl_arg, (void *)STARPU_VECTOR_GET_PTR(buffers[1]),
                    (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
                    starpu_cuda_get_local_stream());
}
#endif

/* Shape and strides drive the cost, not where the view starts. */
static uint32_t view_footprint(struct starpu_task *task)
{
  struct strata__view_args a = *(const struct strata__view_args *)task->cl_arg;
  a.src_offset = 0;
  a.dst_offset = 0;
  return starpu_hash_crc32c_be_n(&a, sizeof a, 0);
}

STRATA__CODELET(view_cl, "strata_view", 0xc6dbef, view_cpu, view_cuda, view_footprint, NULL,
                .nbuffers = 2, .modes = {STARPU_R, STARPU_W});
/* Into part of the destination (RW). */
STRATA__CODELET_SHARING(view_partial_cl, view_cl, "strata_view", 0xc6dbef, view_cpu, view_cuda,
                        NULL, .nbuffers = 2, .modes = {STARPU_R, STARPU_RW});

int strata__view_submit(const struct strata__view_args *a, starpu_data_handle_t src,
                        starpu_data_handle_t dst, int partial)
{
  starpu_data_handle_t h[2] = {src, dst};
  return strata__submit_copy_arg(partial ? &view_partial_cl : &view_cl, a, sizeof *a, 2, h, NULL);
}
