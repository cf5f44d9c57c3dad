/* The distributed cosmology field on 1 to 4 ranks: each rank holds a slab
 * of whole planes, the slabs tile the grid, and the density sampled after
 * strata_amr_problem_prepare() is bit for bit the whole field's, whatever
 * the number of ranks (including grids that the bricks do not divide, and
 * ranks without a slab); NAN outside what was fetched and the rank's own
 * slab; a hierarchy built
 * and adapted from the distributed field holds the values of one built from
 * the whole field; bad arguments fail alike on every rank. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <strata/amr.h>
#include <strata/strata.h>

#include "amr_check.h"

/* A fold of the bits of every value of every leaf this rank owns, in leaf
 * order, with the leaf count: equal for equal hierarchies. */
struct fold {
  uint64_t bits;
  int64_t leaves, cells;
};

static void fold_leaf(void *ctx, const strata_amr_block *b, const strata_amr_block_info *info,
                      const double *v)
{
  (void)info;
  struct fold *f = ctx;
  f->bits = f->bits * 1000003u ^ (uint64_t)(b->level * 7919 + b->index[0]);
  for (int64_t k = 0; k < f->cells; k++) {
    uint64_t u;
    memcpy(&u, &v[k], sizeof u);
    f->bits = (f->bits ^ u) * 0x100000001B3ull;
  }
  f->leaves++;
}

static struct fold hierarchy_fold(strata_amr *amr)
{
  const strata_amr_params *p = strata_amr_get_params(amr);
  const int64_t side = p->block_cells + 2 * p->ghost_depth;
  struct fold f = {0, 0, side * side * side};
  for_owned_leaves(amr, 0, 1, fold_leaf, &f);
  return f;
}

/* Build (and adapt once, with a larger sigma) a hierarchy from the field. */
static struct fold build_from(const strata_cosmology_field *field)
{
  strata_amr_params p;
  strata_amr_params_init(&p);
  p.dim = 3;
  p.root_blocks = 2;
  p.block_cells = 8;
  p.max_level = 2;
  strata_amr *amr = NULL;
  CHECK_EQ(strata_amr_create(&p, &amr), 0);
  strata_amr_criterion c;
  strata_amr_criterion_init(&c);
  c.min_refine = 0.02;
  c.max_coarsen = 0.005;
  strata_amr_problem *first = NULL, *second = NULL;
  CHECK_EQ(strata_amr_problem_cosmology_field(field, 1.0, &first), 0);
  CHECK_EQ(strata_amr_build(amr, first, &c), 0);
  CHECK_EQ(strata_amr_problem_cosmology_field(field, 1.6, &second), 0);
  CHECK_EQ(strata_amr_fill(amr, second), 0);
  CHECK_EQ(strata_amr_adapt_problem(amr, &c, second, NULL), 0);
  struct fold f = hierarchy_fold(amr);
  strata_amr_problem_destroy(first);
  strata_amr_problem_destroy(second);
  CHECK_EQ(strata_amr_destroy(amr), 0);
  return f;
}

static void check_grid(int64_t n)
{
  const int rank = my_rank(), size = num_ranks();
  strata_cosmology_params cp;
  strata_cosmology_params_init(&cp);
  cp.seed = 11;
  strata_cosmology_field *whole = NULL, *dist = NULL;
  CHECK_EQ(strata_cosmology_field_create(n, &cp, &whole), 0);
  CHECK_EQ(strata_cosmology_field_create_distributed(n, &cp, &dist), 0);

  /* The slabs tile the grid: contiguous, in rank order. */
  int64_t z0, z1, all[2 * 4];
  CHECK_EQ(strata_cosmology_field_planes(dist, &z0, &z1), 0);
  int64_t mine[2] = {z0, z1};
  MPI_Allgather(mine, 2, MPI_INT64_T, all, 2, MPI_INT64_T, strata_comm());
  CHECK_EQ(all[0], 0);
  CHECK_EQ(all[2 * size - 1], n);
  for (int r = 0; r < size; r++) {
    CHECK(all[2 * r] <= all[2 * r + 1]);
    if (r > 0)
      CHECK_EQ(all[2 * r], all[2 * r - 1]);
  }

  /* Sampled in a box that differs per rank, after prepare: bit for bit the
   * whole field's; a point far from it (and from this rank's requests) is
   * NAN. */
  strata_amr_problem *a = NULL, *b = NULL;
  CHECK_EQ(strata_amr_problem_cosmology_field(whole, 0.8, &a), 0);
  CHECK_EQ(strata_amr_problem_cosmology_field(dist, 0.8, &b), 0);
  const double lo = 0.1 + 0.2 * rank, width = 0.15;
  const double box[6] = {lo, 0.9 - lo, lo, lo + width, 0.9 - lo + width, lo + width};
  CHECK_EQ(strata_amr_problem_prepare(b, box, 1), 0);
  enum { SAMPLES = 37 };
  double va[SAMPLES], vb[SAMPLES];
  for (int j = 0; j < 5; j++) {
    const double at[3] = {box[0], box[1] + width * j / 5.0, box[2] + width * j / 7.0};
    CHECK_EQ(strata_amr_problem_eval(a, 0, at, width / SAMPLES, SAMPLES, va), 0);
    CHECK_EQ(strata_amr_problem_eval(b, 0, at, width / SAMPLES, SAMPLES, vb), 0);
    CHECK(memcmp(va, vb, sizeof va) == 0);
    CHECK(isfinite(vb[0]) && vb[0] > 0);
  }
  /* Away from the box and from this rank's own slab (whose bricks it
   * holds from the start), nothing is here: NAN. */
  int tested = 0;
  for (int64_t z = 0; z < n && !tested; z++) {
    const double at_z = ((double)z + 0.5) / (double)n, gap = fabs(at_z - (box[2] + width / 2));
    if ((z >= z0 - 2 && z < z1 + 2) || fmin(gap, 1 - gap) < width / 2 + 0.2)
      continue;
    const double far[3] = {box[0] + 0.5, box[1] + 0.5, at_z};
    CHECK_EQ(strata_amr_problem_eval(b, 0, far, 0.001, 1, vb), 0);
    CHECK(isnan(vb[0]));
    tested = 1;
  }
  /* Some rank must have such a point whenever there are several. */
  int ranks_tested = tested;
  MPI_Allreduce(MPI_IN_PLACE, &ranks_tested, 1, MPI_INT, MPI_SUM, strata_comm());
  CHECK(size == 1 || ranks_tested >= 1);

  /* Bad input: the same error on every rank, nothing left half-done. */
  CHECK_EQ(strata_amr_problem_prepare(rank == 0 ? NULL : b, box, 1), STRATA_EINVAL);
  const double bad[6] = {0, 0, NAN, 1, 1, 1};
  CHECK_EQ(strata_amr_problem_prepare(b, rank == size - 1 ? bad : box, 1), STRATA_EINVAL);
  CHECK_EQ(strata_amr_problem_prepare(b, box, 1), 0);
  strata_amr_problem_destroy(a);
  strata_amr_problem_destroy(b);

  /* Whole hierarchies, built and adapted: the same leaves and values. */
  struct fold fw = build_from(whole), fd = build_from(dist);
  CHECK(fw.leaves > 0);
  CHECK_EQ(fw.leaves, fd.leaves);
  CHECK(fw.bits == fd.bits);
  int64_t leaves = fw.leaves;
  MPI_Allreduce(MPI_IN_PLACE, &leaves, 1, MPI_INT64_T, MPI_SUM, strata_comm());
  if (rank == 0)
    fprintf(stderr, "grid %lld on %d ranks: slab [%lld, %lld), %lld leaves, NAN seen on %d\n",
            (long long)n, size, (long long)z0, (long long)z1, (long long)leaves, ranks_tested);
  CHECK(leaves > 8); /* it refined */
  strata_cosmology_field_destroy(whole);
  strata_cosmology_field_destroy(dist);
}

int main(int argc, char **argv)
{
  strata_config cfg;
  strata_config_init(&cfg);
  cfg.ncuda = 0;
  if (strata_init(&argc, &argv, &cfg) != 0)
    return 1;
  check_grid(32);
  check_grid(20); /* bricks of 8: the last layer has 4 planes; on 4 ranks one has none */

  strata_cosmology_field *none = NULL;
  const int rank = my_rank();
  CHECK_EQ(strata_cosmology_field_create_distributed(rank == 0 ? 1 : 32, NULL, &none),
           STRATA_EINVAL);
  CHECK(none == NULL);
  CHECK_EQ(strata_cosmology_field_create_distributed(32, NULL, NULL), STRATA_EINVAL);
  int64_t z0, z1;
  CHECK_EQ(strata_cosmology_field_planes(NULL, &z0, &z1), STRATA_EINVAL);
  strata_finalize();
  return check_status();
}
