/* Helpers of the AMR tests: this rank, the number of ranks, and a visit
 * of the leaves it owns with one field read as doubles. */
#ifndef STRATA_TEST_AMR_CHECK_H
#define STRATA_TEST_AMR_CHECK_H

#include <stdlib.h>

#include <strata/amr.h>

#include "check.h"

static inline int my_rank(void)
{
  int r;
  MPI_Comm_rank(strata_comm(), &r);
  return r;
}

static inline int num_ranks(void)
{
  int r;
  MPI_Comm_size(strata_comm(), &r);
  return r;
}

/* `steps` adaptations by flags: at step s, each leaf is refined where
 * refine(s, its info) says so (the octree keeps 2:1 balance). */
static inline void refine_where(strata_amr *amr, int steps,
                                int (*refine)(int step, const strata_amr_block_info *info))
{
  for (int step = 0; step < steps; step++) {
    int64_t n = strata_amr_num_leaves(amr);
    strata_amr_block *leaves = malloc((size_t)n * sizeof *leaves);
    int8_t *flags = calloc((size_t)n, 1);
    strata_amr_leaves(amr, leaves, n, &n);
    for (int64_t i = 0; i < n; i++) {
      strata_amr_block_info info;
      strata_amr_block_query(amr, &leaves[i], &info);
      flags[i] = (int8_t)refine(step, &info);
    }
    CHECK_EQ(strata_amr_adapt_flags(amr, flags, NULL), 0);
    free(leaves);
    free(flags);
  }
}

/* fn(ctx, block, info, values) on every leaf owned here, with field `field`
 * read as doubles (the whole ghosted array, or the interior only). */
static inline void for_owned_leaves(strata_amr *amr, int field, int ghosts,
                                    void (*fn)(void *ctx, const strata_amr_block *b,
                                               const strata_amr_block_info *info, const double *v),
                                    void *ctx)
{
  const strata_amr_params *p = strata_amr_get_params(amr);
  int64_t n = strata_amr_num_leaves(amr), side = p->block_cells + 2 * p->ghost_depth;
  strata_amr_block *leaves = malloc((size_t)n * sizeof *leaves);
  double *v = malloc((size_t)(side * side * side) * sizeof *v);
  strata_amr_leaves(amr, leaves, n, &n);
  for (int64_t i = 0; i < n; i++) {
    strata_amr_block_info info;
    strata_amr_block_query(amr, &leaves[i], &info);
    if (info.rank != my_rank())
      continue;
    CHECK_EQ(strata_amr_read(amr, &leaves[i], field, ghosts, v), 0);
    fn(ctx, &leaves[i], &info, v);
  }
  free(leaves);
  free(v);
}

#endif
