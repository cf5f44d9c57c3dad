/* The merge codelet through the public API: every (op, dtype) pair as a
 * task against the scalar reference, type and argument errors, identity
 * fill, and REDUX accumulation of 1000 tasks against the sequential result. */
#include <math.h>

#include "check.h"
#include "merge_reference.h"

static void apply_task(strata_op op, strata_dtype st, void *dst, const void *src, size_t n)
{
  int64_t len = (int64_t)n;
  strata_array *d, *s;
  CHECK_EQ(strata_array_wrap(dst, 1, &len, (strata_dtype)ref_result_dtype(op, st), &d), 0);
  CHECK_EQ(strata_array_wrap((void *)src, 1, &len, st, &s), 0);
  CHECK_EQ(strata_merge(d, s, op), 0);
  strata_array_destroy(s);
  strata_array_destroy(d); /* waits for the task; data back in dst */
}

static strata_array *new_array(int64_t n, strata_dtype t)
{
  strata_array *a = NULL;
  CHECK_EQ(strata_array_create(1, &n, t, &a), 0);
  return a;
}

static void check_errors(void)
{
  strata_dtype r;
  CHECK_EQ(strata_merge_result_dtype(STRATA_SUM, STRATA_BOOL, &r), 0);
  CHECK_EQ(r, STRATA_INT64);
  CHECK_EQ(strata_merge_result_dtype(STRATA_LOR, STRATA_FLOAT32, &r), 0);
  CHECK_EQ(r, STRATA_BOOL);
  CHECK_EQ(strata_merge_result_dtype(STRATA_PROD, STRATA_BOOL, &r), STRATA_ETYPE);
  CHECK_EQ(strata_merge_result_dtype(STRATA_BOR, STRATA_FLOAT64, &r), STRATA_ETYPE);
  CHECK_EQ(strata_merge_result_dtype(STRATA_NOPS, STRATA_INT8, &r), STRATA_EINVAL);
  CHECK_EQ(strata_merge_result_dtype(STRATA_SUM, STRATA_INT8, NULL), STRATA_EINVAL);
  double inf;
  CHECK_EQ(strata_merge_identity(STRATA_MIN, STRATA_FLOAT64, &inf), 0);
  CHECK(isinf(inf) && inf > 0);
  CHECK_EQ(strata_merge_identity(STRATA_MIN, STRATA_FLOAT64, NULL), STRATA_EINVAL);
  CHECK_EQ(strata_merge_identity(STRATA_MAX, STRATA_BOOL, &inf), STRATA_ETYPE);

  strata_array *f32 = new_array(8, STRATA_FLOAT32), *f32b = new_array(8, STRATA_FLOAT32);
  strata_array *b = new_array(8, STRATA_BOOL), *b2 = new_array(8, STRATA_BOOL);
  strata_array *i64 = new_array(8, STRATA_INT64), *short_f32 = new_array(4, STRATA_FLOAT32);
  CHECK_EQ(strata_merge(f32, f32b, STRATA_BAND), STRATA_ETYPE);
  CHECK_EQ(strata_merge(b, b2, STRATA_PROD), STRATA_ETYPE);
  CHECK_EQ(strata_merge(b, b2, STRATA_SUM), STRATA_ETYPE); /* bool SUM needs an int64 dst */
  CHECK_EQ(strata_merge(i64, b, STRATA_SUM), 0);
  CHECK_EQ(strata_merge(b, f32, STRATA_LAND), 0);
  CHECK_EQ(strata_merge(f32, short_f32, STRATA_SUM), STRATA_EINVAL);
  CHECK_EQ(strata_merge(f32, f32, STRATA_SUM), STRATA_EINVAL);
  CHECK_EQ(strata_merge(NULL, f32, STRATA_SUM), STRATA_EINVAL);
  CHECK_EQ(strata_merge(f32, NULL, STRATA_SUM), STRATA_EINVAL);
  CHECK_EQ(strata_merge(f32, f32b, (strata_op)42), STRATA_EINVAL);
  CHECK_EQ(strata_accumulate(f32, f32b, STRATA_BAND), STRATA_ETYPE);
  CHECK_EQ(strata_array_fill_identity(b, STRATA_SUM), STRATA_ETYPE); /* result is int64 */
  CHECK_EQ(strata_array_fill_identity(NULL, STRATA_SUM), STRATA_EINVAL);
  CHECK_EQ(strata_array_acquire(f32b, STRATA_READ, NULL), 0);
  CHECK_EQ(strata_merge(f32, f32b, STRATA_SUM), STRATA_ESTATE);
  CHECK_EQ(strata_array_release(f32b), 0);
  strata_array *all[] = {f32, f32b, b, b2, i64, short_f32};
  for (int i = 0; i < 6; i++)
    CHECK_EQ(strata_array_destroy(all[i]), 0);
}

static void check_fill_identity(void)
{
  strata_array *f = new_array(5, STRATA_FLOAT32), *i = new_array(5, STRATA_INT32);
  CHECK_EQ(strata_array_fill_identity(f, STRATA_MIN), 0);
  CHECK_EQ(strata_array_fill_identity(i, STRATA_BAND), 0);
  float *fp;
  int32_t *ip;
  CHECK_EQ(strata_array_acquire(f, STRATA_READ, (void **)&fp), 0);
  CHECK_EQ(strata_array_acquire(i, STRATA_READ, (void **)&ip), 0);
  for (int k = 0; k < 5; k++) {
    CHECK(isinf(fp[k]) && fp[k] > 0);
    CHECK_EQ(ip[k], -1);
  }
  strata_array_release(f);
  strata_array_release(i);
  strata_array_destroy(f);
  strata_array_destroy(i);
}

enum { NTASKS = 1000, N = 64 };

/* Contribution of task t to element i. */
static double contrib_f64(int t, int i) { return sin(0.37 * t + 0.11 * i); }
static int64_t contrib_i64(int t, int i) { return (int64_t)t * (i + 1) - 7 * i; }

/* 1000 REDUX tasks into one array, starting from a non-neutral value,
 * against the sequential merge of the same values. */
static void check_redux(strata_dtype t, strata_op op)
{
  strata_array *acc = new_array(N, t), *src[NTASKS];
  double want[N];
  void *p;
  CHECK_EQ(strata_array_acquire(acc, STRATA_WRITE, &p), 0);
  for (int i = 0; i < N; i++) {
    want[i] = t == STRATA_BOOL ? 1 : i + 0.5 * (t == STRATA_FLOAT64);
    ref_set(t, p, (size_t)i, want[i], (int64_t)want[i]);
  }
  strata_array_release(acc);
  for (int k = 0; k < NTASKS; k++) {
    src[k] = new_array(N, t);
    CHECK_EQ(strata_array_acquire(src[k], STRATA_WRITE, &p), 0);
    for (int i = 0; i < N; i++) {
      double v = t == STRATA_FLOAT64 ? contrib_f64(k, i)
                 : t == STRATA_BOOL  ? (k != 500 || i != 3)
                                     : (double)contrib_i64(k, i);
      ref_set(t, p, (size_t)i, v, (int64_t)v);
      if (op == STRATA_SUM)
        want[i] += v;
      else if (op == STRATA_MIN)
        want[i] = v < want[i] ? v : want[i];
      else /* LAND */
        want[i] = want[i] && v;
    }
    strata_array_release(src[k]);
    CHECK_EQ(strata_accumulate(acc, src[k], op), 0);
  }
  CHECK_EQ(strata_array_acquire(acc, STRATA_READ, &p), 0);
  int bad = 0;
  for (int i = 0; i < N; i++) {
    double got = ref_get(t, p, (size_t)i);
    /* Summation order is not fixed in REDUX: floats within a tolerance. */
    double tol = t == STRATA_FLOAT64 ? 1e-11 : 0;
    bad += fabs(got - want[i]) > tol;
  }
  CHECK_EQ(bad, 0);
  strata_array_release(acc);
  for (int k = 0; k < NTASKS; k++)
    strata_array_destroy(src[k]);
  strata_array_destroy(acc);
}

/* Switching the operator between reads completes the pending accumulations
 * with the old operator first. */
static void check_redux_op_change(void)
{
  int64_t n = 4;
  strata_array *acc = new_array(n, STRATA_INT32), *src[6];
  int32_t *p;
  strata_array_acquire(acc, STRATA_WRITE, (void **)&p);
  for (int i = 0; i < 4; i++)
    p[i] = 100;
  strata_array_release(acc);
  for (int k = 0; k < 6; k++) {
    src[k] = new_array(n, STRATA_INT32);
    strata_array_acquire(src[k], STRATA_WRITE, (void **)&p);
    for (int i = 0; i < 4; i++)
      p[i] = k < 3 ? 10 * (k + 1) : 50 * k * (i == 2);
    strata_array_release(src[k]);
    CHECK_EQ(strata_accumulate(acc, src[k], k < 3 ? STRATA_SUM : STRATA_MAX), 0);
  }
  strata_array_acquire(acc, STRATA_READ, (void **)&p);
  /* 100 + 10 + 20 + 30 = 160, then max with 0 (or 250 at i = 2). */
  CHECK(p[0] == 160 && p[1] == 160 && p[2] == 250 && p[3] == 160);
  strata_array_release(acc);
  for (int k = 0; k < 6; k++)
    strata_array_destroy(src[k]);
  strata_array_destroy(acc);
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  CHECK_EQ(ref_check_all_pairs(apply_task, 1000), 0);
  check_errors();
  check_fill_identity();
  check_redux(STRATA_FLOAT64, STRATA_SUM);
  check_redux(STRATA_INT64, STRATA_SUM);
  check_redux(STRATA_INT32, STRATA_MIN);
  check_redux(STRATA_BOOL, STRATA_LAND);
  check_redux_op_change();
  strata_finalize();
  return check_status();
}
