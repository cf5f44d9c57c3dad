/* Strided copies (reshape, slicing, indexing, transpose, broadcast,
 * concatenation pieces, split): source (R), destination (W, or RW when
 * several tasks fill parts of it). */
#include "view.h"

STRATA__IN_OUT_WRAPPERS(view)

/* An extent or a stride, rounded as strata__rounded_size() rounds sizes. */
static int64_t rounded_extent(int64_t x)
{
  return x < 0 ? -(int64_t)strata__rounded_size(0 - (uint64_t)x) /* INT64_MIN too */
               : (int64_t)strata__rounded_size((uint64_t)x);
}

/* Shape and strides drive the cost, not where the view starts; rounded, so
 * that the global indexer's pieces, whose sizes vary by a few items from
 * call to call, share their footprints. */
static uint32_t view_footprint(struct starpu_task *task)
{
  struct strata__view_args a = *(const struct strata__view_args *)task->cl_arg;
  a.src_offset = 0;
  a.dst_offset = 0;
  for (int d = 0; d < a.ndim && d < STRATA__ND_MAXDIMS; d++) {
    a.shape[d] = rounded_extent(a.shape[d]);
    a.src_stride[d] = rounded_extent(a.src_stride[d]);
    a.dst_stride[d] = rounded_extent(a.dst_stride[d]);
  }
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

int strata__copy_submit(starpu_data_handle_t src, starpu_data_handle_t dst)
{
  struct strata__view_args a = {.ndim = 1,
                                .elem = (int32_t)starpu_vector_get_elemsize(src),
                                .shape = {starpu_vector_get_nx(src)},
                                .src_stride = {1},
                                .dst_stride = {1}};
  return strata__view_submit(&a, src, dst, 0);
}
