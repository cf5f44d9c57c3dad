/* Global indexer kernels (gindexer_kernels.h). */
#include <string.h>

#include "../gindexer_kernels.h"
#include "../merge_kernels.h"

void strata__gather_rows_cpu(void *dst, const void *src, const int64_t *map, int64_t n, size_t row)
{
  for (int64_t k = 0; k < n; k++)
    memcpy((char *)dst + (size_t)k * row, (const char *)src + (size_t)map[k] * row, row);
}

void strata__scatter_rows_cpu(void *dst, const void *src, const int64_t *map, int64_t n, size_t row)
{
  for (int64_t k = 0; k < n; k++)
    memcpy((char *)dst + (size_t)map[k] * row, (const char *)src + (size_t)k * row, row);
}

void strata__copy_segments_cpu(void *dst, const void *src, const int64_t *seg, int64_t n,
                               size_t item)
{
  for (int64_t s = 0; s < n; s++, seg += 3)
    memcpy((char *)dst + (size_t)seg[1] * item, (const char *)src + (size_t)seg[0] * item,
           (size_t)seg[2] * item);
}

void strata__put_apply_cpu(enum strata__put_rule rule, strata_op op, strata_dtype dtype,
                           int64_t count, void *dist, const void *inbox, const int64_t *csr,
                           const int64_t *req, int64_t dn)
{
  size_t row = (size_t)count * strata_dtype_size(dtype);
  for (int64_t i = 0; i < dn; i++) {
    int64_t lo = csr[i], hi = csr[i + 1];
    if (lo == hi)
      continue;
    char *out = (char *)dist + (size_t)i * row;
    if (rule != STRATA__PUT_REDUCE) {
      int64_t j = rule == STRATA__PUT_LAST ? hi - 1 : lo;
      memcpy(out, (const char *)inbox + (size_t)req[j] * row, row);
      continue;
    }
    for (int64_t j = lo; j < hi; j++)
      strata__merge_cpu(op, dtype, out, (const char *)inbox + (size_t)req[j] * row, (size_t)count);
  }
}
