/* Repeated exchanges on one global indexer keep the heap flat. glibc's heap
 * in use (mallinfo2: everything malloc handed out, StarPU's and Open MPI's
 * included) is read after a warm-up and must stay within 1 % while:
 *   1. Takes fail the agreement (one rank passes another count): 10^4;
 *   2. Take, Put (last writer) and their _submit forms run: 10^5 in all;
 *   3. Take_v and Put_v run with block sizes that change from call to
 *      call, so that each plans its own mailboxes: 10^4 in all (on StarPU
 *      1.3, which keeps some bytes per such exchange, a bound per call).
 * The fixed exchanges keep their mailboxes, plans included, so 2. holds on
 * StarPU 1.3 too (docs/gindexer.md). The values taken are
 * checked, so the loop does real exchanges. First, 4200 indexers made and
 * destroyed in turn: more than the 4096 tag serials, which are reused;
 * then 4096 alive at once, and the next refused.
 *   test_gindexer_heap [exchanges]   (default 100000; failing: a tenth) */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>
#include <strata/gindexer.h>

#include "check.h"

enum { DN = 64, NIDX = 96 };

static double heap_bytes(void)
{
  struct mallinfo2 m = mallinfo2();
  return (double)(m.uordblks + m.hblkhd);
}

struct bench {
  strata_gindexer *gi;
  strata_array *dist, *taken, *back;
  const int64_t *idx; /* this rank's requests */
  char requested[DN]; /* whether some rank requests each owned index */
  long round;         /* of the variable-size exchanges: their block sizes */
};

/* Request i of rank r: every rank's elements, some twice. */
static int64_t request_of(int r, int i, int size)
{
  return (i * 37 + r * 11) % ((int64_t)size * DN);
}

/* A new 1-D int64 array holding values[0 .. n). */
static strata_array *int64_array(const int64_t *values, int64_t n)
{
  strata_array *a = NULL;
  int64_t *p;
  CHECK_EQ(strata_array_create(1, &n, STRATA_INT64, &a), 0);
  CHECK_EQ(strata_array_acquire(a, STRATA_WRITE, (void **)&p), 0);
  memcpy(p, values, (size_t)n * sizeof *p);
  strata_array_release(a);
  return a;
}

/* A Take that every rank refuses: rank 0 asks for count 1, the others 2. */
static int failing_take(struct bench *b)
{
  strata_array *none = NULL;
  CHECK_EQ(strata_gindexer_take(b->gi, b->dist, strata_rank() == 0 ? 1 : 2, &none), STRATA_EINVAL);
  CHECK(none == NULL);
  return 1;
}

/* A time step as an application runs it: the owned values change, then a
 * Take, a Put into `back`, and both again as _submit, waited for. (StarPU
 * keeps a record of every reader of a handle until the next writer: an
 * array only ever read would grow StarPU's lists, not Strata's.) */
static int round_trip(struct bench *b)
{
  int64_t *p;
  CHECK_EQ(strata_array_acquire(b->dist, STRATA_READWRITE, (void **)&p), 0);
  p[0] = 1000 * (strata_rank() * DN);
  CHECK_EQ(strata_array_release(b->dist), 0);
  CHECK_EQ(strata_gindexer_take(b->gi, b->dist, 1, &b->taken), 0);
  CHECK_EQ(strata_gindexer_put(b->gi, b->taken, 1, STRATA_PUT_LAST, STRATA_SUM, &b->back), 0);
  CHECK_EQ(strata_gindexer_take_submit(b->gi, b->dist, 1, &b->taken), 0);
  CHECK_EQ(strata_gindexer_put_submit(b->gi, b->taken, 1, STRATA_PUT_LAST, STRATA_SUM, &b->back),
           0);
  CHECK_EQ(strata_wait_all(), 0);
  return 4;
}

/* Take_v of blocks whose sizes change every round (element i of the
 * owner holds 1 + (i + round) % 3 values, each its global index), then
 * Put_v of the taken blocks back (last writer, no initial blocks): both
 * checked, the second against the owner's blocks (a requested index gets
 * its block back, the others none). */
static int round_trip_v(struct bench *b)
{
  const int64_t first = strata_rank() * DN;
  int64_t counts[DN], values[3 * DN], total = 0;
  for (int i = 0; i < DN; i++) {
    counts[i] = 1 + (i + b->round) % 3;
    for (int64_t v = 0; v < counts[i]; v++)
      values[total++] = first + i;
  }
  strata_array *dc = int64_array(counts, DN), *dd = int64_array(values, total);
  strata_array *tc = NULL, *td = NULL, *pc = NULL, *pd = NULL;
  CHECK_EQ(strata_gindexer_take_v(b->gi, dc, dd, &tc, &td), 0);
  const int64_t *c, *v;
  CHECK_EQ(strata_array_acquire(tc, STRATA_READ, (void **)&c), 0);
  CHECK_EQ(strata_array_acquire(td, STRATA_READ, (void **)&v), 0);
  for (int p = 0, at = 0; p < NIDX; at += (int)c[p], p++) {
    CHECK_EQ(c[p], 1 + (b->idx[p] % DN + b->round) % 3);
    CHECK_EQ(v[at], b->idx[p]);
  }
  strata_array_release(td);
  strata_array_release(tc);
  b->round++;
  CHECK_EQ(strata_gindexer_put_v(b->gi, tc, td, STRATA_PUT_LAST, 0, NULL, NULL, &pc, &pd), 0);
  CHECK_EQ(strata_array_acquire(pc, STRATA_READ, (void **)&c), 0);
  CHECK_EQ(strata_array_acquire(pd, STRATA_READ, (void **)&v), 0);
  for (int i = 0, at = 0; i < DN; at += (int)c[i], i++) {
    CHECK_EQ(c[i], b->requested[i] ? counts[i] : 0);
    for (int64_t k = 0; k < c[i]; k++)
      CHECK_EQ(v[at + k], first + i);
  }
  strata_array_release(pd);
  strata_array_release(pc);
  strata_array *made[] = {dc, dd, tc, td, pc, pd};
  for (int k = 0; k < 6; k++)
    strata_array_destroy(made[k]);
  return 2;
}

/* Heap growth (fraction, the largest over the ranks) over `total` calls of
 * `step` after a warm-up of a tenth of them, and in bytes per call. */
static double growth(struct bench *b, int (*step)(struct bench *), long total, double *per_call)
{
  long done = 0;
  while (done < total / 10)
    done += step(b);
  double before = heap_bytes();
  long counted = done;
  while (done < total)
    done += step(b);
  double g[2] = {(heap_bytes() - before) / before, (heap_bytes() - before) / (done - counted)};
  MPI_Allreduce(MPI_IN_PLACE, g, 2, MPI_DOUBLE, MPI_MAX, strata_comm());
  if (per_call)
    *per_call = g[1];
  return g[0];
}

/* More indexers over a run than tag serials (4096): each destroyed one's
 * serial serves again, and the last still exchanges correctly. */
static void check_serials_reused(const int64_t *distrib, const int64_t *idx)
{
  strata_gindexer *gi = NULL;
  for (int k = 0; k < 4200; k++) {
    if (strata_gindexer_create(strata_comm(), distrib, idx, NIDX, &gi) != 0) {
      CHECK(!"an indexer created and destroyed in turn");
      return;
    }
    if (k < 4199)
      strata_gindexer_destroy(gi);
  }
  /* 4096 alive at once: the next one is refused rather than sharing tags. */
  enum { SERIALS = 4096 };
  strata_gindexer **live = malloc(SERIALS * sizeof *live);
  int made = 1;
  live[0] = gi;
  while (made < SERIALS &&
         strata_gindexer_create(strata_comm(), distrib, idx, NIDX, &live[made]) == 0)
    made++;
  CHECK_EQ(made, SERIALS);
  strata_gindexer *extra = NULL;
  CHECK_EQ(strata_gindexer_create(strata_comm(), distrib, idx, NIDX, &extra), STRATA_ENOMEM);
  CHECK(extra == NULL &&
        strstr(strata_error_message(), "4096 objects holding StarPU-MPI tags are alive"));
  for (int k = 1; k < made; k++)
    strata_gindexer_destroy(live[k]);
  free(live);
  strata_array *dist, *taken = NULL;
  const int64_t dn = DN;
  CHECK_EQ(strata_array_create(1, &dn, STRATA_INT64, &dist), 0);
  int64_t *p;
  CHECK_EQ(strata_array_acquire(dist, STRATA_WRITE, (void **)&p), 0);
  for (int i = 0; i < DN; i++)
    p[i] = strata_rank() * DN + i;
  strata_array_release(dist);
  CHECK_EQ(strata_gindexer_take(gi, dist, 1, &taken), 0);
  CHECK_EQ(strata_array_acquire(taken, STRATA_READ, (void **)&p), 0);
  for (int i = 0; i < NIDX; i++)
    CHECK_EQ(p[i], idx[i]);
  strata_array_release(taken);
  strata_array_destroy(taken);
  strata_array_destroy(dist);
  strata_gindexer_destroy(gi);
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  long total = argc > 1 ? atol(argv[1]) : 100000;
  int rank = strata_rank(), size = strata_size();
  int64_t *distrib = malloc((size_t)(size + 1) * sizeof *distrib);
  for (int r = 0; r <= size; r++)
    distrib[r] = (int64_t)r * DN;
  int64_t idx[NIDX];
  for (int i = 0; i < NIDX; i++)
    idx[i] = request_of(rank, i, size);
  check_serials_reused(distrib, idx);
  /* A sanitizer's or valgrind's allocator leaves glibc's counts at zero:
   * nothing to measure (skip, as CTest's 77, once the serials are checked). */
  if (heap_bytes() == 0) {
    if (rank == 0)
      printf("heap not measurable under this allocator: skipped\n");
    free(distrib);
    strata_finalize();
    return check_failures ? 1 : 77;
  }
  struct bench b = {0};
  CHECK_EQ(strata_gindexer_create(strata_comm(), distrib, idx, NIDX, &b.gi), 0);
  const int64_t dn = DN;
  CHECK_EQ(strata_array_create(1, &dn, STRATA_INT64, &b.dist), 0);
  CHECK_EQ(strata_array_create(1, &dn, STRATA_INT64, &b.back), 0);
  int64_t *p;
  CHECK_EQ(strata_array_acquire(b.dist, STRATA_WRITE, (void **)&p), 0);
  for (int i = 0; i < DN; i++)
    p[i] = 1000 * (rank * DN + i);
  strata_array_release(b.dist);

  double failed = growth(&b, failing_take, total / 10, NULL);
  double exchanged = growth(&b, round_trip, total, NULL);
  b.idx = idx;
  for (int r = 0; r < size; r++)
    for (int i = 0; i < NIDX; i++)
      if (request_of(r, i, size) / DN == rank)
        b.requested[request_of(r, i, size) % DN] = 1;
  double per_call, variable = growth(&b, round_trip_v, total / 10, &per_call);
  CHECK_EQ(strata_array_acquire(b.taken, STRATA_READ, (void **)&p), 0);
  for (int i = 0; i < NIDX; i++) /* each index's owner value */
    CHECK_EQ(p[i], 1000 * idx[i]);
  strata_array_release(b.taken);
  int major, minor, release;
  starpu_get_version(&major, &minor, &release);
  if (rank == 0)
    printf("%ld failing takes: heap %+.3f %%; %ld exchanges: heap %+.3f %%; %ld variable-size "
           "exchanges: heap %+.3f %%, %+.0f B per call (StarPU %d.%d.%d) on %d ranks\n",
           total / 10, 100 * failed, total, 100 * exchanged, total / 10, 100 * variable, per_call,
           major, minor, release, size);
  CHECK(failed <= 0.01);
  CHECK(exchanged <= 0.01);
  /* StarPU 1.3 keeps 48 bytes for good per short-lived handle that a
   * request waited on, about 127 bytes per variable-size exchange
   * (docs/reliability.md); 1.4 keeps none. Cleaning each plan before its
   * unpartition had run, as Strata did, doubled that and fails the 1.3
   * bound. */
  if (major > 1 || minor >= 4)
    CHECK(variable <= 0.01);
  else
    CHECK(per_call <= 160);
  strata_array_destroy(b.dist);
  strata_array_destroy(b.back);
  strata_array_destroy(b.taken);
  strata_gindexer_destroy(b.gi);
  free(distrib);
  strata_finalize();
  return check_failures ? 1 : 0;
}
