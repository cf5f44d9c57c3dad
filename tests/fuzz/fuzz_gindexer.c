/* Fuzzing target: the global indexer's argument validation and exchanges on
 * one rank, against a serial reference. Input: byte 0 the global size (as a
 * signed byte: negative sizes must be refused), byte 1 flags, byte 2 the
 * items per index, then one signed byte per requested index. Properties:
 * create returns exactly the code the reference predicts (EINVAL for a bad
 * distribution, ERANGE for an index out of range); Take and Put (last writer
 * wins) give the reference's values; bad counts, sizes and types are
 * refused with the documented codes and leave nothing alive. */
#include <strata/gindexer.h>

#include "fuzz_util.h"

enum { BAD_ORIGIN = 1, BAD_TYPE = 2, BAD_SIZE = 4 };

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc, (void)argv;
  fuzz_start_strata();
  return 0;
}

static strata_array *int64_array(int64_t n)
{
  strata_array *a = NULL;
  if (strata_array_create(1, &n, STRATA_INT64, &a))
    fuzz_fail("array of %lld", (long long)n);
  return a;
}

static int64_t *host(strata_array *a, strata_access mode)
{
  void *p = NULL;
  if (strata_array_acquire(a, mode, &p))
    fuzz_fail("acquire");
  return p;
}

static void check_take(strata_gindexer *gi, int64_t n, const int64_t *idx, int64_t nidx,
                       int64_t count)
{
  strata_array *dist = int64_array(n * count), *out = NULL;
  int64_t *d = host(dist, STRATA_WRITE);
  for (int64_t i = 0; i < n * count; i++)
    d[i] = 1000 * (i / count) + i % count;
  strata_array_release(dist);
  if (strata_gindexer_take(gi, dist, count, &out))
    fuzz_fail("take refused valid arguments");
  const int64_t *o = host(out, STRATA_READ);
  for (int64_t p = 0; p < nidx * count; p++)
    if (o[p] != 1000 * idx[p / count] + p % count)
      fuzz_fail("take: item %lld is %lld", (long long)p, (long long)o[p]);
  strata_array_release(out);
  strata_array_destroy(out);
  strata_array_destroy(dist);
}

static void check_put(strata_gindexer *gi, int64_t n, const int64_t *idx, int64_t nidx,
                      int64_t count)
{
  strata_array *values = int64_array(nidx * count), *dist = int64_array(n * count);
  int64_t *v = host(values, STRATA_WRITE), *want = malloc((size_t)(n * count + 1) * sizeof *want);
  if (!want)
    fuzz_fail("malloc");
  for (int64_t p = 0; p < nidx * count; p++)
    v[p] = 10 * (p / count) + p % count;
  strata_array_release(values);
  int64_t *d = host(dist, STRATA_WRITE);
  for (int64_t i = 0; i < n * count; i++)
    d[i] = want[i] = -1; /* unreferenced indices keep their value */
  strata_array_release(dist);
  for (int64_t p = 0; p < nidx; p++) /* the last writer wins */
    for (int64_t c = 0; c < count; c++)
      want[idx[p] * count + c] = 10 * p + c;
  if (strata_gindexer_put(gi, values, count, STRATA_PUT_LAST, STRATA_SUM, &dist))
    fuzz_fail("put refused valid arguments");
  d = host(dist, STRATA_READ);
  for (int64_t i = 0; i < n * count; i++)
    if (d[i] != want[i])
      fuzz_fail("put: item %lld is %lld, not %lld", (long long)i, (long long)d[i],
                (long long)want[i]);
  strata_array_release(dist);
  free(want);
  strata_array_destroy(values);
  strata_array_destroy(dist);
}

/* Wrong sizes and types: refused, nothing allocated. */
static void check_refusals(strata_gindexer *gi, int64_t n, int64_t count, unsigned flags)
{
  strata_array *out = NULL, *dist;
  if (flags & BAD_SIZE) {
    dist = int64_array(n * count + 1);
    if (strata_gindexer_take(gi, dist, count, &out) != STRATA_EINVAL || out)
      fuzz_fail("take accepted a distributed array of the wrong size");
    strata_array_destroy(dist);
  }
  dist = int64_array(n * count);
  if (strata_gindexer_take(gi, dist, 0, &out) != STRATA_EINVAL || out)
    fuzz_fail("take accepted count 0");
  if (flags & BAD_TYPE) {
    int64_t m = strata_gindexer_part_size(gi) * count;
    if (strata_array_create(1, &m, STRATA_FLOAT32, &out))
      fuzz_fail("array");
    if (strata_gindexer_take(gi, dist, count, &out) != STRATA_ETYPE)
      fuzz_fail("take accepted an output of another type");
    strata_array_destroy(out);
  }
  strata_array_destroy(dist);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 3 || size > 3 + 512)
    return 0;
  int64_t n = (int8_t)data[0];
  unsigned flags = data[1];
  int64_t count = 1 + data[2] % 3, nidx = (int64_t)size - 3;
  int64_t distrib[2] = {flags & BAD_ORIGIN ? 1 : 0, n}, idx[512];
  int expect = 0;
  if (distrib[0] != 0 || n < 0)
    expect = STRATA_EINVAL;
  for (int64_t p = 0; p < nidx; p++) {
    idx[p] = (int8_t)data[3 + p];
    if (!expect && (idx[p] < 0 || idx[p] >= n))
      expect = STRATA_ERANGE;
  }
  strata_gindexer *gi = NULL;
  int ret = strata_gindexer_create(strata_comm(), distrib, idx, nidx, &gi);
  if (ret != expect)
    fuzz_fail("create gave %d, the reference %d", ret, expect);
  if (!ret) {
    if (strata_gindexer_dist_size(gi) != n || strata_gindexer_part_size(gi) != nidx)
      fuzz_fail("sizes");
    check_take(gi, n, idx, nidx, count);
    check_put(gi, n, idx, nidx, count);
    check_refusals(gi, n, count, flags);
    strata_gindexer_destroy(gi);
  } else if (gi)
    fuzz_fail("a refused create left an indexer");
  fuzz_check_no_live_objects();
  return 0;
}
