/* The global indexer's copies with rows of 4 and of 8 bytes: a Take and a
 * Put (last writer) of float32 items and the same of float64, each twice,
 * on 1000 random indices. A gather of 10^6 rows at random costs 1.5 ms
 * with 4-byte rows and 2.1 ms with 8-byte rows on this machine, so the
 * row size is part of the footprint. Run with STARPU_CALIBRATE=1, it
 * leaves the models in STARPU_HOME for count_footprints.sh, which expects
 * four gather footprints (each row size read in order, to pack, and at
 * random, to unpack Take's rows and pack Put's) and two of the put's
 * application (one per type). */
#include <stdlib.h>

#include <strata/gindexer.h>
#include <strata/strata.h>

#include "check.h"

enum { ITEMS = 1000 };

static strata_array *zeros(strata_dtype dtype, void **memory)
{
  strata_array *a = NULL;
  const int64_t shape[1] = {ITEMS};
  *memory = calloc(ITEMS, 8);
  CHECK(*memory != NULL);
  CHECK_EQ(strata_array_wrap(*memory, 1, shape, dtype, &a), 0);
  return a;
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  int64_t distrib[2] = {0, ITEMS}, idx[ITEMS];
  srand(7);
  for (int i = 0; i < ITEMS; i++)
    idx[i] = rand() % ITEMS;
  strata_gindexer *gi = NULL;
  CHECK_EQ(strata_gindexer_create(MPI_COMM_WORLD, distrib, idx, ITEMS, &gi), 0);
  const strata_dtype types[2] = {STRATA_FLOAT32, STRATA_FLOAT64};
  for (int round = 0; round < 2; round++)
    for (int t = 0; t < 2; t++) {
      void *dist_memory, *values_memory;
      strata_array *dist = zeros(types[t], &dist_memory), *values = zeros(types[t], &values_memory);
      strata_array *out = NULL;
      CHECK_EQ(strata_gindexer_take(gi, dist, 1, &out), 0);
      CHECK_EQ(strata_gindexer_put(gi, values, 1, STRATA_PUT_LAST, STRATA_SUM, &dist), 0);
      strata_array_destroy(out);
      strata_array_destroy(values);
      strata_array_destroy(dist);
      free(values_memory);
      free(dist_memory);
    }
  strata_gindexer_destroy(gi);
  strata_finalize();
  return check_status();
}
