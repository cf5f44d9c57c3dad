/* Fuzzing target: the zr[...] range parser. Properties: a parsed range is
 * valid (start <= end), formats back to text that parses to the same range,
 * and parse never reads past the terminating NUL. */
#include <strata/zspace.h>

#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc, (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size > 4096)
    return 0;
  char *text = malloc(size + 1);
  if (!text)
    return 0;
  memcpy(text, data, size);
  text[size] = 0;
  strata_zrange r, back;
  if (strata_zrange_parse(text, &r) == 0) {
    if (r.ndim < 0 || r.ndim > STRATA_ZMAX_DIMS)
      fuzz_fail("parsed ndim %d", r.ndim);
    for (int d = 0; d < r.ndim; d++)
      if (r.start[d] > r.end[d])
        fuzz_fail("parsed start > end in dim %d", d);
    char buf[1024];
    int len = strata_zrange_format(&r, buf, sizeof buf);
    if (len < 0 || len >= (int)sizeof buf)
      fuzz_fail("format gave %d", len);
    if (strata_zrange_parse(buf, &back) != 0 || back.ndim != r.ndim ||
        memcmp(back.start, r.start, sizeof(int64_t) * (size_t)r.ndim) ||
        memcmp(back.end, r.end, sizeof(int64_t) * (size_t)r.ndim))
      fuzz_fail("'%s' does not parse back to itself", buf);
    int64_t n = strata_zrange_size(&r);
    if (n < 0 && n != STRATA_ERANGE)
      fuzz_fail("size %lld", (long long)n);
  }
  free(text);
  return 0;
}
