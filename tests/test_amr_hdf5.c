/* The cosmology test problem on an AMR hierarchy, written to HDF5 as
 * <prefix>_<ranks>.h5: run on 1, 2, 3 and 4 ranks, the files must hold the
 * same hierarchy and bitwise-equal fields (tests/amr_compare.py checks).
 * Each file is also written the serial way (gathered to rank 0) as
 * <prefix>_serial_<ranks>.h5, which must equal it.
 * Also the summary of `strata amr-info`, and its error on a non-HDF5 file;
 * a one-leaf hierarchy (ranks that write no block) read back equal; and a
 * write refused for annotations that differ between ranks, which leaves the
 * earlier file as it was. */
#include <stdlib.h>
#include <string.h>

#include <strata/amr.h>

#include "check.h"

/* One leaf on rank 0, the other ranks with none: written, read back, and
 * the leaf's cells compared with the original's. */
static void one_leaf_round_trip(const char *prefix, int rank, int size)
{
  strata_amr_params p;
  strata_amr_params_init(&p);
  p.root_blocks = 1;
  p.max_level = 0;
  p.block_cells = 8;
  strata_amr *amr, *back;
  CHECK_EQ(strata_amr_create(&p, &amr), 0);
  const double c[4] = {1.5, 0.25, -2.0, 4.0}; /* a linear field: every cell differs */
  strata_amr_problem *linear;
  CHECK_EQ(strata_amr_problem_linear(c, &linear), 0);
  strata_amr_criterion crit;
  strata_amr_criterion_init(&crit);
  CHECK_EQ(strata_amr_build(amr, linear, &crit), 0);
  CHECK_EQ(strata_amr_num_leaves(amr), 1);
  char path[512];
  snprintf(path, sizeof path, "%s_one_leaf_%d.h5", prefix, size);
  CHECK_EQ(strata_amr_write_hdf5(amr, path), 0);
  CHECK_EQ(strata_amr_read_hdf5(path, &back), 0);
  CHECK_EQ(strata_amr_num_leaves(back), 1);
  const strata_amr_block root = {0, {0, 0, 0}};
  strata_amr_block_info was, now;
  CHECK_EQ(strata_amr_block_query(amr, &root, &was), 0);
  CHECK_EQ(strata_amr_block_query(back, &root, &now), 0);
  CHECK_EQ(now.rank, was.rank); /* both by Strata's distribution: compared on one rank */
  if (rank == was.rank) {
    double a[512], b[512];
    CHECK_EQ(strata_amr_read(amr, &root, 0, 0, a), 0);
    CHECK_EQ(strata_amr_read(back, &root, 0, 0, b), 0);
    int same = 1;
    for (int k = 0; k < 512; k++)
      same &= a[k] == b[k];
    CHECK(same);
    CHECK(a[0] != a[511]);
  }
  CHECK_EQ(strata_amr_destroy(back), 0);
  strata_amr_problem_destroy(linear);
  CHECK_EQ(strata_amr_destroy(amr), 0);
}

/* Annotations are the run's parameters: every rank must pass the same. */
static void annotations_must_agree(strata_amr *amr, const char *path, int rank, int size)
{
  const char *keys[] = {"run"}, *same[] = {"a"}, *other[] = {"b"};
  CHECK_EQ(strata_amr_write_hdf5_annotated(amr, path, keys, same, 1), 0);
  FILE *before = fopen(path, "rb");
  CHECK(before != NULL);
  long size_before = before && !fseek(before, 0, SEEK_END) ? ftell(before) : -1;
  if (before)
    fclose(before);
  int bad = rank == size - 1;
  int expect = size > 1 ? STRATA_EINVAL : 0;
  CHECK_EQ(strata_amr_write_hdf5_annotated(amr, path, keys, bad ? other : same, 1), expect);
  FILE *after = fopen(path, "rb");
  CHECK(after != NULL);
  long size_after = after && !fseek(after, 0, SEEK_END) ? ftell(after) : -2;
  if (after)
    fclose(after);
  CHECK_EQ(size_after, size_before);
}

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
  /* The same file written the serial way (amr_compare.py requires it equal),
   * and a way that does not exist, refused on every rank. */
  char serial[512];
  snprintf(serial, sizeof serial, "%s_serial_%d.h5", argv[1], size);
  setenv("STRATA_HDF5_WRITE", "serial", 1);
  CHECK_EQ(strata_amr_write_hdf5(amr, serial), 0);
  setenv("STRATA_HDF5_WRITE", "by-pigeon", 1);
  CHECK_EQ(strata_amr_write_hdf5(amr, serial), STRATA_EINVAL);
  unsetenv("STRATA_HDF5_WRITE");
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
  char annotated[512];
  snprintf(annotated, sizeof annotated, "%s_annotated_%d.h5", argv[1], size);
  annotations_must_agree(amr, annotated, rank, size);
  one_leaf_round_trip(argv[1], rank, size);
  strata_amr_problem_destroy(problem);
  CHECK_EQ(strata_amr_destroy(amr), 0);
  strata_finalize();
  return check_status();
}
