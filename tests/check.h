/* Minimal test helpers: CHECK records a failure and continues; tests exit
 * with 77 (CTest's skip) when StarPU finds no worker. */
#ifndef STRATA_TEST_CHECK_H
#define STRATA_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <strata/strata.h>

static int check_failures;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                     \
      check_failures++;                                                                            \
    }                                                                                              \
  } while (0)

/* Compare two integer expressions and show both values on failure. */
#define CHECK_EQ(a, b)                                                                             \
  do {                                                                                             \
    long long check_a_ = (long long)(a), check_b_ = (long long)(b);                                \
    if (check_a_ != check_b_) {                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s == %s (%lld vs %lld)\n", __FILE__, __LINE__, #a,    \
              #b, check_a_, check_b_);                                                             \
      check_failures++;                                                                            \
    }                                                                                              \
  } while (0)

/* strata_init, or exit 77 (skip) when there is no worker. */
static inline void check_init(int *argc, char ***argv)
{
  int ret = strata_init(argc, argv, NULL);
  if (ret == STRATA_ENODEV)
    exit(77);
  if (ret) {
    fprintf(stderr, "strata_init: %s\n", strata_strerror(ret));
    exit(1);
  }
}

/* A scratch directory for the files a test writes: check_scratch_open()
 * creates it, check_path() names a file in it, check_scratch_close()
 * removes it with its contents. */
static char check_scratch[64];

static inline void check_scratch_open(const char *prefix)
{
  snprintf(check_scratch, sizeof check_scratch, "/tmp/%s_XXXXXX", prefix);
  CHECK(mkdtemp(check_scratch) != NULL);
}

static inline const char *check_path(const char *name)
{
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", check_scratch, name);
  return path;
}

static inline void check_scratch_close(void)
{
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", check_scratch);
  CHECK_EQ(system(cmd), 0);
}

/* n random values from rand() in [lo, hi], float64 (size 8) or float32
 * (size 4); free() them. */
static inline void *check_random_values(long long n, size_t size, double lo, double hi)
{
  unsigned char *a = malloc((size_t)n * size);
  for (long long i = 0; i < n; i++) {
    double v = lo + (hi - lo) * ((double)rand() / RAND_MAX);
    if (size == 8)
      ((double *)a)[i] = v;
    else
      ((float *)a)[i] = (float)v;
  }
  return a;
}

/* Exit status of a test: 0 when every check passed. */
static inline int check_status(void)
{
  if (check_failures)
    fprintf(stderr, "%d check(s) failed\n", check_failures);
  return check_failures ? 1 : 0;
}

#endif
