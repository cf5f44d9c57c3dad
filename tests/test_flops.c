/* Tasks carry their flop count (STARPU_FLOPS) where it is known, so that
 * StarPU's GFlop/s statistics count Strata's work: StarPU's per-worker
 * profiling sums the flops of the tasks each worker ran. A matmul of a
 * [3, 4, 5] stack by a [5, 6] matrix is 2 * 3 * 4 * 5 * 6 flops; a model's
 * convolutions scale with the volume (8x from 32^3 to 64^3); an
 * elementwise task declares none. */
#include <starpu.h>

#include "check.h"

/* Flops counted by every worker since the last call (reading resets). */
static double worker_flops(void)
{
  double sum = 0;
  for (unsigned w = 0; w < starpu_worker_get_count(); w++) {
    struct starpu_profiling_worker_info info;
    if (starpu_profiling_worker_get_info((int)w, &info) == 0)
      sum += info.flops;
  }
  return sum;
}

static strata_array *filled(int ndim, const int64_t *shape)
{
  strata_array *a = NULL;
  CHECK_EQ(strata_array_create(ndim, shape, STRATA_FLOAT32, &a), 0);
  float *p;
  CHECK_EQ(strata_array_acquire(a, STRATA_WRITE, (void **)&p), 0);
  for (int64_t i = 0; i < strata_array_nelems(a); i++)
    p[i] = (float)(i % 7) * 0.25f;
  CHECK_EQ(strata_array_release(a), 0);
  return a;
}

static double model_flops(strata_model *m, int64_t n)
{
  int64_t shape[4] = {1, n, n, n};
  strata_array *in = filled(4, shape), *out = filled(4, shape);
  CHECK_EQ(strata_wait_all(), 0);
  worker_flops();
  CHECK_EQ(strata_model_apply(m, in, out), 0);
  CHECK_EQ(strata_wait_all(), 0);
  double f = worker_flops();
  strata_array_destroy(in);
  strata_array_destroy(out);
  return f;
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  starpu_profiling_status_set(STARPU_PROFILING_ENABLE);

  int64_t sa[3] = {3, 4, 5}, sb[2] = {5, 6};
  strata_array *a = filled(3, sa), *b = filled(2, sb), *c = NULL, *d = NULL;
  CHECK_EQ(strata_wait_all(), 0);
  worker_flops();
  CHECK_EQ(strata_matmul(NULL, a, b, &c), 0);
  CHECK_EQ(strata_wait_all(), 0);
  CHECK_EQ(worker_flops(), 2 * 3 * 4 * 5 * 6);

  CHECK_EQ(strata_binary(NULL, STRATA_FN_ADD, a, a, &d), 0);
  CHECK_EQ(strata_wait_all(), 0);
  CHECK_EQ(worker_flops(), 0);

  strata_model *m = NULL;
  CHECK_EQ(strata_model_load_default(&m), 0);
  double f32 = model_flops(m, 32), f64 = model_flops(m, 64);
  CHECK(f32 > 0);
  CHECK(f64 == 8 * f32);
  strata_model_destroy(m);

  strata_array_destroy(a);
  strata_array_destroy(b);
  strata_array_destroy(c);
  strata_array_destroy(d);
  strata_finalize();
  return check_status();
}
