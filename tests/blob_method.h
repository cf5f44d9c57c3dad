/* The blob problem of the inference tests: Gaussian blobs on a uniform
 * hierarchy of 8^3 leaves of 8^3 cells, and the method over it with one
 * array per leaf and a fixed overdensity threshold. */
#ifndef STRATA_TEST_BLOB_METHOD_H
#define STRATA_TEST_BLOB_METHOD_H

#include <string.h>

#include <strata/infer.h>

#include "check.h"

/* Leaves of 8^3 cells, all refined to level `max_level`. */
static inline strata_amr *uniform_hierarchy(int max_level)
{
  strata_amr_params p;
  strata_amr_params_init(&p);
  p.block_cells = 8;
  p.max_level = max_level;
  strata_amr *amr = NULL;
  CHECK_EQ(strata_amr_create(&p, &amr), 0);
  for (int step = 0; step < max_level; step++) {
    int64_t n = strata_amr_num_leaves(amr);
    int8_t *flags = malloc((size_t)n);
    memset(flags, 1, (size_t)n);
    CHECK_EQ(strata_amr_adapt_flags(amr, flags, NULL), 0);
    free(flags);
  }
  return amr;
}

/* 8^3 leaves of 8^3 cells (level 2); the arrays are the leaves. */
static inline strata_amr *blob_hierarchy(int nblobs, const double *centres)
{
  strata_amr *amr = uniform_hierarchy(2);
  /* Density above 2 within 0.043 of a centre: inside half an array (0.0625). */
  double sigma[2] = {0.02, 0.02}, amp[2] = {10, 10};
  strata_amr_problem *problem;
  CHECK_EQ(strata_amr_problem_blobs(nblobs, centres, sigma, amp, &problem), 0);
  CHECK_EQ(strata_amr_fill(amr, problem), 0);
  CHECK_EQ(strata_amr_fill_ghosts(amr), 0);
  strata_amr_problem_destroy(problem);
  return amr;
}

static inline strata_infer *blob_method(strata_amr *amr, strata_model *model)
{
  strata_infer_params ip;
  strata_infer_params_init(&ip);
  ip.level_base = 1;
  ip.level_array = 2;
  ip.level_infer = 2;
  ip.model = model;
  ip.reference = STRATA_INFER_FIXED;
  ip.overdensity_threshold = 1.5;
  strata_infer *inf = NULL;
  CHECK_EQ(strata_infer_create(amr, &ip, &inf), 0);
  return inf;
}

#endif
