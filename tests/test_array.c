/* Arrays: creation, wrapping, queries, host access, bad input, and destroy
 * waiting for pending tasks. With the argument "leak", creates an array and
 * leaves it to strata_finalize (which reports it at log level debug). */
#include <string.h>

#include "check.h"

static void check_queries(void)
{
  for (int t = 0; t < STRATA_NDTYPES; t++) {
    int64_t shape[3] = {2, 3, 5}, got[3] = {0};
    strata_array *a;
    CHECK_EQ(strata_array_create(3, shape, (strata_dtype)t, &a), 0);
    CHECK_EQ(strata_array_ndim(a), 3);
    CHECK_EQ(strata_array_shape(a, got), 0);
    CHECK(memcmp(shape, got, sizeof got) == 0);
    CHECK_EQ(strata_array_dtype(a), t);
    CHECK_EQ(strata_array_nelems(a), 30);
    CHECK_EQ(strata_array_nbytes(a), 30 * (int64_t)strata_dtype_size((strata_dtype)t));
    CHECK_EQ(strata_array_destroy(a), 0);
  }
  strata_array *s, *e;
  CHECK_EQ(strata_array_create(0, NULL, STRATA_FLOAT64, &s), 0); /* a scalar */
  CHECK_EQ(strata_array_nelems(s), 1);
  CHECK_EQ(strata_array_nbytes(s), 8);
  int64_t empty_shape[2] = {4, 0};
  CHECK_EQ(strata_array_create(2, empty_shape, STRATA_INT32, &e), 0);
  CHECK_EQ(strata_array_nelems(e), 0);
  void *p = NULL;
  CHECK_EQ(strata_array_acquire(e, STRATA_READWRITE, &p), 0);
  CHECK(p != NULL);
  CHECK_EQ(strata_array_release(e), 0);
  strata_array *e2;
  CHECK_EQ(strata_array_create(2, empty_shape, STRATA_INT32, &e2), 0);
  CHECK_EQ(strata_merge(e, e2, STRATA_SUM), 0);
  CHECK_EQ(strata_array_destroy(e2), 0);
  CHECK_EQ(strata_array_destroy(e), 0);
  CHECK_EQ(strata_array_destroy(s), 0);
  CHECK_EQ(strata_array_destroy(NULL), 0);
  CHECK_EQ(strata_array_ndim(NULL), STRATA_EINVAL);
  CHECK_EQ(strata_array_dtype(NULL), STRATA_EINVAL);
  CHECK_EQ(strata_array_nelems(NULL), STRATA_EINVAL);
  CHECK_EQ(strata_array_nbytes(NULL), STRATA_EINVAL);
  CHECK_EQ(strata_array_shape(NULL, empty_shape), STRATA_EINVAL);
}

static void check_bad_input(void)
{
  int64_t ok[2] = {3, 4}, neg[2] = {3, -1}, huge[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
  int64_t big_bytes[1] = {INT64_MAX / 4}, too_long[1] = {INT64_C(1) << 33};
  int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  int32_t mem[12];
  strata_array *a = (strata_array *)ok;
  CHECK_EQ(strata_array_create(2, ok, STRATA_FLOAT32, NULL), STRATA_EINVAL);
  CHECK_EQ(strata_array_create(-1, ok, STRATA_FLOAT32, &a), STRATA_EINVAL);
  CHECK(a == NULL); /* *out is cleared on failure */
  CHECK_EQ(strata_array_create(9, nine, STRATA_FLOAT32, &a), STRATA_EINVAL);
  CHECK_EQ(strata_array_create(2, NULL, STRATA_FLOAT32, &a), STRATA_EINVAL);
  CHECK_EQ(strata_array_create(2, neg, STRATA_FLOAT32, &a), STRATA_EINVAL);
  CHECK_EQ(strata_array_create(2, huge, STRATA_FLOAT32, &a), STRATA_EINVAL);
  CHECK_EQ(strata_array_create(1, big_bytes, STRATA_FLOAT64, &a), STRATA_EINVAL);
  CHECK_EQ(strata_array_create(1, too_long, STRATA_UINT8, &a), STRATA_EINVAL);
  CHECK_EQ(strata_array_create(2, ok, STRATA_NDTYPES, &a), STRATA_EINVAL);
  CHECK_EQ(strata_array_create(2, ok, (strata_dtype)-3, &a), STRATA_EINVAL);
  CHECK_EQ(strata_array_wrap(NULL, 2, ok, STRATA_INT32, &a), STRATA_EINVAL);
  CHECK_EQ(strata_array_wrap(mem, 2, neg, STRATA_INT32, &a), STRATA_EINVAL);
  CHECK_EQ(strata_array_wrap(mem, 2, ok, STRATA_INT32, NULL), STRATA_EINVAL);
  CHECK(a == NULL);
}

static void check_access(void)
{
  int64_t n = 6;
  strata_array *a;
  CHECK_EQ(strata_array_create(1, &n, STRATA_INT64, &a), 0);
  int64_t *p;
  CHECK_EQ(strata_array_acquire(a, (strata_access)0, (void **)&p), STRATA_EINVAL);
  CHECK_EQ(strata_array_acquire(NULL, STRATA_READ, (void **)&p), STRATA_EINVAL);
  CHECK_EQ(strata_array_release(a), STRATA_ESTATE);
  CHECK_EQ(strata_array_release(NULL), STRATA_EINVAL);
  CHECK_EQ(strata_array_acquire(a, STRATA_WRITE, (void **)&p), 0);
  for (int i = 0; i < 6; i++)
    p[i] = 10 * i;
  CHECK_EQ(strata_array_acquire(a, STRATA_READ, (void **)&p), STRATA_ESTATE);
  /* The code's text is general, the message says which state. */
  CHECK(!strstr(strata_strerror(STRATA_ESTATE), "initialised"));
  CHECK(strstr(strata_error_message(), "acquired already"));
  /* A later call that fails without details leaves none of the earlier. */
  CHECK_EQ(strata_array_create(1, &n, STRATA_INT64, NULL), STRATA_EINVAL);
  CHECK(strata_error_message()[0] == '\0');
  CHECK_EQ(strata_array_destroy(a), STRATA_ESTATE);
  CHECK(strstr(strata_error_message(), "release it first"));
  CHECK_EQ(strata_array_release(a), 0);
  CHECK_EQ(strata_array_acquire(a, STRATA_READ, (void **)&p), 0);
  for (int i = 0; i < 6; i++)
    CHECK_EQ(p[i], 10 * i);
  CHECK_EQ(strata_array_release(a), 0);
  CHECK_EQ(strata_array_destroy(a), 0);
}

/* Destroy right after submitting 200 merges into wrapped memory: destroy
 * must wait for them and leave the final values in the user's buffer. */
static void check_destroy_waits(void)
{
  int64_t n = 1024;
  double *mine = malloc((size_t)n * sizeof *mine);
  for (int64_t i = 0; i < n; i++)
    mine[i] = (double)i;
  strata_array *acc, *one;
  CHECK_EQ(strata_array_wrap(mine, 1, &n, STRATA_FLOAT64, &acc), 0);
  CHECK_EQ(strata_array_create(1, &n, STRATA_FLOAT64, &one), 0);
  double *p;
  strata_array_acquire(one, STRATA_WRITE, (void **)&p);
  for (int64_t i = 0; i < n; i++)
    p[i] = 1.0;
  strata_array_release(one);
  for (int k = 0; k < 200; k++)
    CHECK_EQ(strata_merge(acc, one, STRATA_SUM), 0);
  CHECK_EQ(strata_array_destroy(acc), 0);
  int bad = 0;
  for (int64_t i = 0; i < n; i++)
    bad += mine[i] != (double)i + 200.0;
  CHECK_EQ(bad, 0);
  strata_array_destroy(one);
  free(mine);
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  if (argc > 1 && strcmp(argv[1], "leak") == 0) {
    int64_t n = 3;
    strata_array *leaked;
    CHECK_EQ(strata_array_create(1, &n, STRATA_FLOAT32, &leaked), 0);
    CHECK_EQ(strata_array_acquire(leaked, STRATA_WRITE, NULL), 0); /* even acquired */
    strata_finalize();
    return check_status();
  }
  check_queries();
  check_bad_input();
  check_access();
  check_destroy_waits();
  strata_finalize();
  return check_status();
}
