/* Footprint sizes: exact below 128, and otherwise to within 1/128, so that
 * the pieces of a global indexer's exchange, whose sizes differ by a few
 * items from call to call, share one footprint while sizes that cost
 * visibly more do not. */
#include <stdint.h>

#include "check.h"
#include "codelets.h"

int main(void)
{
  for (uint64_t n = 0; n < 128; n++)
    CHECK_EQ(strata__rounded_size(n), n);
  /* A piece of 10^6 items, and the same piece a few hundred items larger
   * or smaller, as random indices make it (2 ranks: a standard deviation
   * of about 700). */
  const uint64_t piece = 1000000;
  for (int64_t d = -2000; d <= 2000; d += 100)
    CHECK_EQ(strata__rounded_size(piece + (uint64_t)d), strata__rounded_size(piece));
  CHECK(strata__rounded_size(piece) != strata__rounded_size(piece + piece / 50));
  /* Within 1/128 of the size, and never smaller for a larger size. */
  uint64_t last = 0;
  for (uint64_t n = 128; n < ((uint64_t)1 << 40); n += n / 7 + 1) {
    const uint64_t r = strata__rounded_size(n);
    CHECK(r >= last);
    CHECK((r > n ? r - n : n - r) * 128 <= n);
    last = r;
  }
  if (!check_failures)
    printf("footprint sizes rounded to within 1/128\n");
  return check_status();
}
