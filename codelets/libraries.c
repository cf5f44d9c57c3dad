/* Start and stop of the codelet layer: codelet tables and the per-worker
 * libraries the codelets call. */
#include <cblas.h>

#include "merge.h"

#if STRATA__USE_CUDA
#include <starpu_cublas_v2.h>

#include "kernels/cnn_kernels.h"

static void release_cuda_libraries(void *unused)
{
  (void)unused;
  strata__cnn_cuda_release();
}
#endif

void strata__codelets_start(void)
{
  strata__merge_codelets_init();
  openblas_set_num_threads(1); /* StarPU's workers are the parallelism */
#if STRATA__USE_CUDA
  starpu_cublas_init();
#endif
}

void strata__codelets_stop(void)
{
#if STRATA__USE_CUDA
  starpu_execute_on_each_worker(release_cuda_libraries, NULL, STARPU_CUDA);
  starpu_cublas_shutdown();
#endif
}
