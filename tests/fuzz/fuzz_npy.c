/* Fuzzing target: the .npy loader. Properties: an accepted file holds
 * exactly the bytes its header announces, and saving it again gives a file
 * that loads to the same array; nothing is left alive either way. */
#include <strata/io.h>

#include "fuzz_util.h"

static char in_path[128], out_path[128];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc, (void)argv;
  fuzz_start_strata();
  snprintf(in_path, sizeof in_path, "%s/in.npy", fuzz_scratch());
  snprintf(out_path, sizeof out_path, "%s/out.npy", fuzz_scratch());
  return 0;
}

static int same_arrays(strata_array *a, strata_array *b)
{
  int64_t sa[STRATA_MAX_DIMS], sb[STRATA_MAX_DIMS];
  if (strata_array_dtype(a) != strata_array_dtype(b) ||
      strata_array_ndim(a) != strata_array_ndim(b) || strata_array_shape(a, sa) ||
      strata_array_shape(b, sb) || memcmp(sa, sb, sizeof(int64_t) * (size_t)strata_array_ndim(a)))
    return 0;
  void *pa, *pb;
  if (strata_array_acquire(a, STRATA_READ, &pa) || strata_array_acquire(b, STRATA_READ, &pb))
    fuzz_fail("acquire");
  size_t bytes = (size_t)strata_array_nbytes(a);
  int same = bytes == 0 || memcmp(pa, pb, bytes) == 0;
  strata_array_release(a);
  strata_array_release(b);
  return same;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size > (1 << 20))
    return 0;
  fuzz_write(in_path, data, size);
  strata_array *a = NULL, *back = NULL;
  if (strata_npy_load(in_path, &a) == 0) {
    size_t bytes = (size_t)strata_array_nbytes(a);
    if (bytes > size)
      fuzz_fail("%zu data bytes from a %zu-byte file", bytes, size);
    if (strata_npy_save(out_path, a) != 0 || strata_npy_load(out_path, &back) != 0)
      fuzz_fail("an accepted array does not save and load again");
    if (!same_arrays(a, back))
      fuzz_fail("save and load changed the array");
  } else if (a)
    fuzz_fail("a rejected file left an array");
  strata_array_destroy(back);
  strata_array_destroy(a);
  fuzz_check_no_live_objects();
  return 0;
}
