/* Minimal test helpers: CHECK records a failure and continues; tests exit
 * with 77 (CTest's skip) when StarPU finds no worker. */
#ifndef STRATA_TEST_CHECK_H
#define STRATA_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

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

/* Exit status of a test: 0 when every check passed. */
static inline int check_status(void)
{
  if (check_failures)
    fprintf(stderr, "%d check(s) failed\n", check_failures);
  return check_failures ? 1 : 0;
}

#endif
