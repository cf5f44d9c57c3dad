/* The cosmology test problem on an AMR hierarchy, written to HDF5 as
 * <prefix>_<ranks>.h5: run on 1, 2, 3 and 4 ranks, the files must hold the
 * same hierarchy and bitwise-equal fields (tests/amr_compare.py checks).
 * Also the summary of `strata amr-info`, and its error on a non-HDF5 file. */
#include <stdlib.h>
#include <string.h>

#include <strata/amr.h>

#include "check.h"

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  if (argc != 2) {
    fprintf(stderr, "usage: %s PREFIX\n", argv[0]);
    return 2;
  }
  int rank, size;
  MPI_Comm_rank(strata_comm(), &rank);
  MPI_Comm_size(strata_comm(), &size);
  strata_cosmology_params cp;
  strata_cosmology_params_init(&cp);
  cp.seed = 2026;
  cp.sigma = 1.5;
  strata_amr_problem *problem;
  CHECK_EQ(strata_amr_problem_cosmology(64, &cp, &problem), 0);
  strata_amr_params p;
  strata_amr_params_init(&p);
  p.block_cells = 8;
  p.max_level = 4;
  p.nfields = 2;
  p.field_names[1] = "tracer"; /* same values, a second handle per block */
  strata_amr *amr;
  CHECK_EQ(strata_amr_create(&p, &amr), 0);
  strata_amr_criterion c;
  strata_amr_criterion_init(&c);
  c.min_refine = 0.15;
  c.max_coarsen = 0.05;
  CHECK_EQ(strata_amr_build(amr, problem, &c), 0);
  int64_t n = strata_amr_num_leaves(amr);
  strata_amr_block *leaves = malloc((size_t)n * sizeof *leaves);
  strata_amr_leaves(amr, leaves, n, &n);
  int deepest = 0;
  long long per_level[5] = {0};
  for (int64_t i = 0; i < n; i++) {
    deepest = leaves[i].level > deepest ? leaves[i].level : deepest;
    per_level[leaves[i].level]++;
  }
  CHECK_EQ(deepest, 4); /* clustered halos reach the finest level */
  CHECK(n < 2000);
  free(leaves);
  char path[512];
  snprintf(path, sizeof path, "%s_%d.h5", argv[1], size);
  CHECK_EQ(strata_amr_write_hdf5(amr, path), 0);
  CHECK_EQ(strata_amr_write_hdf5(amr, ""), STRATA_EINVAL);
  if (rank == 0) {
    FILE *out = tmpfile();
    CHECK_EQ(strata_amr_hdf5_summary(path, out), 0);
    rewind(out);
    /* The summary's counts per level and per rank match the hierarchy. */
    char line[512];
    int levels = 0;
    long long on_ranks = 0, count;
    int which;
    while (fgets(line, sizeof line, out)) {
      if (sscanf(line, "level %d: %lld blocks", &which, &count) == 2 && which >= 0 && which < 5) {
        CHECK_EQ(count, per_level[which]);
        levels++;
      } else if (sscanf(line, "rank %d: %lld blocks", &which, &count) == 2) {
        on_ranks += count;
      }
    }
    CHECK_EQ(levels, 5);
    CHECK_EQ(on_ranks, n);
    fclose(out);
    CHECK_EQ(strata_amr_hdf5_summary(argv[0], stderr), STRATA_EIO); /* not HDF5 */
  }
  strata_amr_problem_destroy(problem);
  CHECK_EQ(strata_amr_destroy(amr), 0);
  strata_finalize();
  return check_status();
}
