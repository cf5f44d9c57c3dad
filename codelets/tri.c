/* Lower and upper triangles (tril, triu): input (R), result (W). */
#include "tri.h"

STRATA__IN_OUT_WRAPPERS(tri)

STRATA__CODELET(tri_cl, "strata_tri", 0x3182bd, tri_cpu, tri_cuda, strata__arg_footprint, NULL,
                .nbuffers = 2, .modes = {STARPU_R, STARPU_W});

int strata__tri_submit(const struct strata__tri_args *a, starpu_data_handle_t in,
                       starpu_data_handle_t out)
{
  starpu_data_handle_t h[2] = {in, out};
  return strata__submit_copy_arg(&tri_cl, a, sizeof *a, 2, h, NULL);
}
