/* The exchange layer's host-side records and the agreements that ride on
 * collective calls: records arrive rank after rank in sending order, the
 * total is every rank's, an error on one rank reaches every rank as the
 * smallest code, and an exchange with nothing anywhere moves nothing. Run
 * on 1 to 4 ranks under a timeout, so a rank left waiting fails it. */
#include <stdint.h>
#include <stdlib.h>

#include <strata/strata.h>

#include "check.h"
#include "internal/exchange.h"
#include "internal/runtime.h"

enum { WIDTH = 3 };

/* Rank `from` sends from + to + 1 records to rank `to`: (from, to, k). */
static void check_records(int rank, int size)
{
  int64_t n = 0;
  for (int to = 0; to < size; to++)
    n += rank + to + 1;
  int64_t *rec = malloc((size_t)n * WIDTH * sizeof *rec);
  int *dest = malloc((size_t)n * sizeof *dest);
  /* Interleaved destinations: the layer groups them by rank, in order. */
  int64_t i = 0, sent[4] = {0};
  for (int64_t k = 0; i < n; k++)
    for (int to = size - 1; to >= 0; to--)
      if (k < rank + to + 1) {
        rec[WIDTH * i] = rank, rec[WIDTH * i + 1] = to, rec[WIDTH * i + 2] = sent[to]++;
        dest[i++] = to;
      }
  int64_t *got = NULL, ngot = -1, total = -1;
  CHECK_EQ(
      strata__exchange_records(strata__coll_comm(), 0, rec, dest, n, WIDTH, &got, &ngot, &total),
      0);
  int64_t expect_total = 0, expect_got = 0;
  for (int from = 0; from < size; from++)
    for (int to = 0; to < size; to++)
      expect_total += from + to + 1;
  for (int from = 0; from < size; from++)
    expect_got += from + rank + 1;
  CHECK_EQ(total, expect_total);
  CHECK_EQ(ngot, expect_got);
  CHECK(got != NULL);
  int64_t at = 0;
  for (int from = 0; got && from < size; from++)
    for (int64_t k = 0; k < from + rank + 1 && at < ngot; k++, at++) {
      CHECK_EQ(got[WIDTH * at], from);
      CHECK_EQ(got[WIDTH * at + 1], rank);
      CHECK_EQ(got[WIDTH * at + 2], k);
    }
  free(got), free(rec), free(dest);
}

/* Errors ride on the all-to-all of counts: the smallest code everywhere,
 * and nothing received (NULL); an exchange of nothing costs one call and
 * still gives a buffer, which callers sort and search (qsort and bsearch
 * take no NULL); another communicator than Strata's is a call site's
 * mistake. */
static void check_errors(int rank, int size)
{
  int64_t rec[WIDTH] = {1, 2, 3}, *got = NULL, ngot = -1, total = -1;
  int dest = (rank + 1) % size;
  int local = rank == size - 1 ? STRATA_EIO : rank == 0 && size > 2 ? STRATA_ERANGE : 0;
  CHECK_EQ(strata__exchange_records(strata__coll_comm(), local, rec, &dest, 1, WIDTH, &got, &ngot,
                                    &total),
           STRATA_EIO);
  CHECK(got == NULL);
  CHECK_EQ(ngot, 0);
  CHECK_EQ(total, 0);
  got = rec;
  CHECK_EQ(
      strata__exchange_records(strata__coll_comm(), 0, rec, &dest, 0, WIDTH, &got, &ngot, &total),
      0);
  CHECK(got != NULL && got != rec);
  CHECK_EQ(ngot, 0);
  CHECK_EQ(total, 0);
  free(got);
  /* Only rank 0 sends, to itself: the others receive nothing, a buffer. */
  dest = 0;
  CHECK_EQ(strata__exchange_records(strata__coll_comm(), 0, rec, &dest, rank == 0, WIDTH, &got,
                                    &ngot, &total),
           0);
  CHECK(got != NULL);
  CHECK_EQ(ngot, rank == 0);
  CHECK_EQ(total, 1);
  free(got);
  CHECK_EQ(strata__exchange_records(strata_comm(), 0, rec, &dest, 0, WIDTH, &got, &ngot, NULL),
           STRATA_EINVAL);
}

static void check_agree_gather(int rank, int size)
{
  const int64_t mine[3] = {rank, 10 * rank + 1, -rank};
  const int64_t *all = NULL;
  CHECK_EQ(strata__agree_gather(0, mine, 3, &all), 0);
  CHECK(all != NULL);
  for (int r = 0; r < size; r++) {
    CHECK_EQ(all[4 * r], r);
    CHECK_EQ(all[4 * r + 1], 10 * r + 1);
    CHECK_EQ(all[4 * r + 2], -r);
  }
  /* Two failing ranks with different codes: the smaller everywhere. */
  int local = rank == size - 1 ? STRATA_ENOMEM : rank == 0 ? STRATA_EINVAL : 0;
  CHECK_EQ(strata__agree_gather(local, mine, 3, &all), STRATA_ENOMEM);
  CHECK(all == NULL);
  CHECK_EQ(strata__agree_gather(0, mine, 4, &all), STRATA_EINVAL);
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  const int rank = strata_rank(), size = strata_size();
  if (size > 4) {
    fprintf(stderr, "at most 4 ranks\n");
    return 1;
  }
  check_records(rank, size);
  check_errors(rank, size);
  check_agree_gather(rank, size);
  check_records(rank, size); /* still in step */
  strata_finalize();
  const int64_t *all = NULL, mine[1] = {rank};
  CHECK_EQ(strata__agree_gather(0, mine, 1, &all), STRATA_ESTATE); /* no values: no success */
  CHECK(all == NULL);
  if (!check_failures)
    printf("exchange layer: records, errors and sums agree on %d rank(s)\n", size);
  return check_failures ? 1 : 0;
}
