/* Global indexer against hand-written MPI in the same program: every rank
 * owns N items and names N random global indices; protocol creation, Take,
 * Put (last writer) and Put summing every write, with count 1 and 4,
 * against one MPI_Alltoallv of the same payload with its local pack and
 * unpack loops (the protocol's maps reused). Take_v and Put_v (last writer)
 * move the same payload as variable-size items (every count equal; the
 * code does not know it) against their hand-written form: an
 * MPI_Alltoallv of the counts, then one of the data, packed and unpacked
 * through prefix sums of the counts. `worst_ratio` is the largest ratio
 * of the run; `results_match_baselines` says whether every exchange gave
 * the hand-written one's values. Medians of the rounds; JSON on rank 0.
 *   mpiexec -n P bench_gindexer [--rounds R] [--quick] [--items N]
 * (N = 10^6 items a rank; --quick: 10^4) */
#include <string.h>

#include <strata/strata.h>

#include "bench_util.h"

/* The baseline's plan, built with MPI only (as a hand-written code would),
 * and its exchange buffers, kept across exchanges. */
struct baseline {
  int size;
  int *scount, *sdispl, *rcount, *rdispl;
  int64_t *order, *local, nin;
  float *send, *recv;
  /* the variable exchanges: counts in flight, prefix sums, last writers */
  int64_t *csend, *crecv, *soff, *roff, *displ, *winner;
  int *vc; /* data counts and displacements, 4 x size */
};

static void baseline_build(struct baseline *b, const int64_t *distrib, const int64_t *idx,
                           int64_t n, int rank)
{
  int size = b->size;
  b->scount = calloc((size_t)size, sizeof(int));
  b->sdispl = calloc((size_t)size, sizeof(int));
  b->rcount = calloc((size_t)size, sizeof(int));
  b->rdispl = calloc((size_t)size, sizeof(int));
  int *owner = malloc((size_t)n * sizeof *owner), *at = calloc((size_t)size, sizeof *at);
  int64_t *sorted = malloc((size_t)n * sizeof *sorted);
  b->order = malloc((size_t)n * sizeof *b->order);
  for (int64_t p = 0; p < n; p++) {
    owner[p] = (int)(idx[p] / (distrib[1] - distrib[0]));
    b->scount[owner[p]]++;
  }
  for (int r = 1; r < size; r++)
    b->sdispl[r] = b->sdispl[r - 1] + b->scount[r - 1];
  memcpy(at, b->sdispl, (size_t)size * sizeof *at);
  for (int64_t p = 0; p < n; p++) {
    b->order[p] = at[owner[p]]++;
    sorted[b->order[p]] = idx[p] - distrib[owner[p]];
  }
  MPI_Alltoall(b->scount, 1, MPI_INT, b->rcount, 1, MPI_INT, MPI_COMM_WORLD);
  b->nin = 0;
  for (int r = 0; r < size; r++) {
    b->rdispl[r] = (int)b->nin;
    b->nin += b->rcount[r];
  }
  b->local = malloc((size_t)(b->nin + 1) * sizeof *b->local);
  MPI_Alltoallv(sorted, b->scount, b->sdispl, MPI_INT64_T, b->local, b->rcount, b->rdispl,
                MPI_INT64_T, MPI_COMM_WORLD);
  (void)rank;
  free(owner);
  free(at);
  free(sorted);
}

/* The variable exchanges' index buffers, touched once. */
static void baseline_v_buffers(struct baseline *b, int64_t n)
{
  size_t most = (size_t)((n > b->nin ? n : b->nin) + 1) * sizeof(int64_t);
  int64_t **bufs[] = {&b->csend, &b->crecv, &b->soff, &b->roff, &b->displ, &b->winner};
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
    *bufs[i] = memset(malloc(most), 0, most);
  b->vc = calloc((size_t)b->size * 4, sizeof *b->vc);
}

static void baseline_v_free(struct baseline *b)
{
  int64_t *bufs[] = {b->csend, b->crecv, b->soff, b->roff, b->displ, b->winner};
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
    free(bufs[i]);
  free(b->vc);
}

/* Exclusive prefix sums of v[0..n) into off[0..n]; per-rank totals of the
 * consecutive ranges of counts[r] entries into tot[r] (int, as MPI wants)
 * and their displacements into tot[size + r]. */
static void prefix_by_rank(const int64_t *v, int64_t n, const int *counts, int size, int64_t *off,
                           int *tot)
{
  off[0] = 0;
  for (int64_t k = 0; k < n; k++)
    off[k + 1] = off[k] + v[k];
  for (int r = 0, k = 0; r < size; k += counts[r], r++) {
    tot[r] = (int)(off[k + counts[r]] - off[k]);
    tot[size + r] = (int)off[k];
  }
}

/* A block copy as Strata's kernel does it: a constant-size copy for the
 * common small blocks instead of a call each (no easier baseline). */
static void copy_block(float *dst, const float *src, int64_t count)
{
  size_t bytes = (size_t)count * sizeof *dst;
  if (bytes == 4)
    memcpy(dst, src, 4);
  else if (bytes == 16)
    memcpy(dst, src, 16);
  else
    memcpy(dst, src, bytes);
}

/* Take_v by hand: the owner sends each requested block's count, then the
 * blocks; the requester unpacks them in request order. */
static double baseline_take_v(struct baseline *b, const int64_t *counts, int64_t dn,
                              const float *dist, int64_t *out_counts, float *out, int64_t n)
{
  int size = b->size, *sc = b->vc, *rc = b->vc + 2 * size;
  double t0 = bench_now();
  b->displ[0] = 0;
  for (int64_t i = 0; i < dn; i++)
    b->displ[i + 1] = b->displ[i] + counts[i];
  for (int64_t k = 0; k < b->nin; k++)
    b->csend[k] = counts[b->local[k]];
  MPI_Alltoallv(b->csend, b->rcount, b->rdispl, MPI_INT64_T, b->crecv, b->scount, b->sdispl,
                MPI_INT64_T, MPI_COMM_WORLD);
  prefix_by_rank(b->csend, b->nin, b->rcount, size, b->soff, sc);
  prefix_by_rank(b->crecv, n, b->scount, size, b->roff, rc);
  for (int64_t k = 0; k < b->nin; k++)
    copy_block(b->send + b->soff[k], dist + b->displ[b->local[k]], b->csend[k]);
  MPI_Alltoallv(b->send, sc, sc + size, MPI_FLOAT, b->recv, rc, rc + size, MPI_FLOAT,
                MPI_COMM_WORLD);
  for (int64_t p = 0, at = 0; p < n; p++) {
    int64_t j = b->order[p];
    out_counts[p] = b->crecv[j];
    copy_block(out + at, b->recv + b->roff[j], b->crecv[j]);
    at += b->crecv[j];
  }
  return bench_now() - t0;
}

/* Put_v by hand (last writer, no initial blocks): the requester sends each
 * block's count, then the blocks; the owner keeps the last writer's block
 * of every index (arrival order is writer order) and builds the new
 * counts and data. */
static double baseline_put_v(struct baseline *b, const int64_t *counts, const float *values,
                             int64_t n, int64_t dn, int64_t *new_counts, float *new_data)
{
  int size = b->size, *sc = b->vc, *rc = b->vc + 2 * size;
  double t0 = bench_now();
  b->displ[0] = 0; /* the requester's blocks */
  for (int64_t p = 0; p < n; p++) {
    b->displ[p + 1] = b->displ[p] + counts[p];
    b->csend[b->order[p]] = counts[p];
  }
  MPI_Alltoallv(b->csend, b->scount, b->sdispl, MPI_INT64_T, b->crecv, b->rcount, b->rdispl,
                MPI_INT64_T, MPI_COMM_WORLD);
  prefix_by_rank(b->csend, n, b->scount, size, b->soff, sc);
  prefix_by_rank(b->crecv, b->nin, b->rcount, size, b->roff, rc);
  for (int64_t p = 0; p < n; p++)
    copy_block(b->send + b->soff[b->order[p]], values + b->displ[p], counts[p]);
  MPI_Alltoallv(b->send, sc, sc + size, MPI_FLOAT, b->recv, rc, rc + size, MPI_FLOAT,
                MPI_COMM_WORLD);
  for (int64_t i = 0; i < dn; i++)
    b->winner[i] = -1;
  for (int64_t k = 0; k < b->nin; k++)
    b->winner[b->local[k]] = k;
  for (int64_t i = 0, at = 0; i < dn; i++) {
    int64_t k = b->winner[i];
    new_counts[i] = k < 0 ? 0 : b->crecv[k];
    if (k >= 0)
      copy_block(new_data + at, b->recv + b->roff[k], new_counts[i]);
    at += new_counts[i];
  }
  return bench_now() - t0;
}

/* Buffers for `count` values per item, touched once, outside the timings:
 * large enough for either direction. */
static void baseline_buffers(struct baseline *b, int64_t n, int count)
{
  int64_t most = n > b->nin ? n : b->nin; /* Put_v sends n rows, Take nin */
  size_t send = (size_t)(most * count + 1) * sizeof(float), recv = send;
  free(b->send);
  free(b->recv);
  b->send = memset(malloc(send), 0, send);
  b->recv = memset(malloc(recv), 0, recv);
}

/* Take by hand: pack owned rows, Alltoallv, unpack into request order. */
static double baseline_take(const struct baseline *b, const float *dist, float *out, int64_t n,
                            int count)
{
  int size = b->size, sc[4 * size];
  double t0 = bench_now();
  for (int r = 0; r < size; r++) {
    sc[r] = b->rcount[r] * count;
    sc[size + r] = b->rdispl[r] * count;
    sc[2 * size + r] = b->scount[r] * count;
    sc[3 * size + r] = b->sdispl[r] * count;
  }
  for (int64_t k = 0; k < b->nin; k++)
    memcpy(b->send + k * count, dist + b->local[k] * count, (size_t)count * sizeof *b->send);
  MPI_Alltoallv(b->send, sc, sc + size, MPI_FLOAT, b->recv, sc + 2 * size, sc + 3 * size, MPI_FLOAT,
                MPI_COMM_WORLD);
  for (int64_t p = 0; p < n; p++)
    memcpy(out + p * count, b->recv + b->order[p] * count, (size_t)count * sizeof *out);
  return bench_now() - t0;
}

/* Whether an exchange's result holds the baseline's values (on this rank). */
static int same_bytes(strata_array *a, const void *want, size_t bytes)
{
  const void *got = NULL;
  int same = a &&
             (size_t)strata_array_nelems(a) * strata_dtype_size(strata_array_dtype(a)) == bytes &&
             strata_array_acquire(a, STRATA_READ, (void **)&got) == 0 &&
             (bytes == 0 || memcmp(got, want, bytes) == 0);
  if (got)
    strata_array_release(a);
  return same;
}

static int same_values(strata_array *a, const float *want, int64_t n)
{
  return same_bytes(a, want, (size_t)n * sizeof *want);
}

static int same_counts(strata_array *a, const int64_t *want, int64_t n)
{
  return same_bytes(a, want, (size_t)n * sizeof *want);
}

static double max_over_ranks(double t)
{
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return t;
}

int main(int argc, char **argv)
{
  int rounds = 5, quick = 0;
  int64_t n = 0; /* --items N, taken out before the common options */
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--items") == 0) {
      char *end = NULL;
      n = strtoll(argv[i + 1], &end, 10);
      if (*end || n < 1 || n > ((int64_t)1 << 31)) {
        fprintf(stderr, "bench_gindexer: --items takes a count of 1 to 2^31\n");
        return 2;
      }
      memmove(&argv[i], &argv[i + 2], (size_t)(argc - i - 1) * sizeof *argv); /* NULL too */
      argc -= 2;
      break;
    }
  if (bench_options(argc, argv, "bench_gindexer [--items N]", &rounds, &quick))
    return 2;
  if (strata_init(&argc, &argv, NULL))
    return 1;
  int rank = strata_rank(), size = strata_size();
  n = n ? n : quick ? 10000 : 1000000;
  int64_t *distrib = malloc((size_t)(size + 1) * sizeof *distrib),
          *idx = malloc((size_t)n * sizeof *idx);
  for (int r = 0; r <= size; r++)
    distrib[r] = r * n;
  uint64_t x = 88172645463325252ull + (uint64_t)rank;
  for (int64_t p = 0; p < n; p++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    idx[p] = (int64_t)(x % (uint64_t)(size * n));
  }
  cJSON *root = cJSON_CreateObject(), *cases = cJSON_AddArrayToObject(root, "counts");
  cJSON_AddStringToObject(root, "benchmark", "global indexer vs MPI_Alltoallv");
  cJSON_AddNumberToObject(root, "ranks", size);
  cJSON_AddNumberToObject(root, "items_per_rank", (double)n);
  double *tc = malloc((size_t)rounds * sizeof *tc), *tb = malloc((size_t)rounds * sizeof *tb),
         *tt = malloc((size_t)rounds * sizeof *tt), *tp = malloc((size_t)rounds * sizeof *tp),
         *tv = malloc((size_t)rounds * sizeof *tv), *ts = malloc((size_t)rounds * sizeof *ts),
         *tpv = malloc((size_t)rounds * sizeof *tpv), *tbv = malloc((size_t)rounds * sizeof *tbv),
         *tbpv = malloc((size_t)rounds * sizeof *tbpv), worst = 0;
  strata_gindexer *gi = NULL;
  struct baseline b = {.size = size};
  int match = 1; /* every result equals the hand-written exchange's */
  for (int r = 0; r < rounds; r++) {
    strata_gindexer_destroy(gi);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = bench_now();
    if (strata_gindexer_create(strata_comm(), distrib, idx, n, &gi))
      return 1;
    tc[r] = max_over_ranks(bench_now() - t0);
  }
  double create = bench_median(tc, rounds);
  baseline_build(&b, distrib, idx, n, rank);
  baseline_v_buffers(&b, n);
  cJSON_AddNumberToObject(root, "create_s", create);
  for (int count = 1; count <= 4; count += 3) {
    strata_array *dist, *out, *back;
    strata_gindexer_empty_dist(gi, count, STRATA_FLOAT32, &dist);
    strata_gindexer_empty_part(gi, count, STRATA_FLOAT32, &out);
    strata_gindexer_empty_dist(gi, count, STRATA_FLOAT32, &back);
    float *pd, *plain = malloc((size_t)(n * count) * sizeof *plain),
               *plain_dist = malloc((size_t)(n * count) * sizeof *plain);
    /* the hand-written Take_v's counts, which its Put_v writes back into
     * new counts per owned item */
    int64_t *plain_counts = malloc((size_t)n * sizeof *plain_counts),
            *plain_new_counts = malloc((size_t)n * sizeof *plain_new_counts);
    strata_array_acquire(dist, STRATA_WRITE, (void **)&pd);
    for (int64_t i = 0; i < n * count; i++)
      pd[i] = (float)(rank * n * count + i);
    strata_array_release(dist);
    strata_array_acquire(back, STRATA_WRITE, NULL);
    strata_array_release(back);
    strata_array *counts;
    int64_t *pc;
    strata_gindexer_empty_dist(gi, 1, STRATA_INT64, &counts);
    strata_array_acquire(counts, STRATA_WRITE, (void **)&pc);
    for (int64_t i = 0; i < n; i++)
      pc[i] = count;
    strata_array_release(counts);
    strata_array *part_counts; /* the requesters' blocks for Put_v: every count equal too */
    strata_gindexer_empty_part(gi, 1, STRATA_INT64, &part_counts);
    strata_array_acquire(part_counts, STRATA_WRITE, (void **)&pc);
    for (int64_t i = 0; i < n; i++)
      pc[i] = count;
    strata_array_release(part_counts);
    baseline_buffers(&b, n, count);
    for (int r = 0; r < rounds + 1; r++) {
      /* Every exchange starts together on all ranks, like the baseline. */
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = bench_now();
      strata_gindexer_take(gi, dist, count, &out);
      double t1 = bench_now();
      MPI_Barrier(MPI_COMM_WORLD);
      double t1_put = bench_now();
      strata_gindexer_put(gi, out, count, STRATA_PUT_LAST, STRATA_SUM, &back);
      double t2 = bench_now();
      MPI_Barrier(MPI_COMM_WORLD);
      double t2_sum = bench_now();
      strata_gindexer_put(gi, out, count, STRATA_PUT_REDUCE, STRATA_SUM, &back);
      double t2_end = bench_now();
      strata_array_acquire(dist, STRATA_READ, (void **)&pd);
      MPI_Barrier(MPI_COMM_WORLD);
      double base = baseline_take(&b, pd, plain, n, count);
      strata_array_release(dist);
      match = match && same_values(out, plain, n * count);
      /* Last, so that its large temporaries do not disturb the others. */
      strata_array *vc = NULL, *vd = NULL; /* the same payload as variable items */
      MPI_Barrier(MPI_COMM_WORLD);
      double t3 = bench_now();
      strata_gindexer_take_v(gi, counts, dist, &vc, &vd);
      double t4 = bench_now();
      strata_array *pvc = NULL, *pvd = NULL; /* Put_v's new counts and data */
      MPI_Barrier(MPI_COMM_WORLD);
      double t5 = bench_now();
      strata_gindexer_put_v(gi, part_counts, out, STRATA_PUT_LAST, 0, NULL, NULL, &pvc, &pvd);
      double t6 = bench_now();
      const int64_t *cd;
      strata_array_acquire(dist, STRATA_READ, (void **)&pd);
      strata_array_acquire(counts, STRATA_READ, (void **)&cd);
      MPI_Barrier(MPI_COMM_WORLD);
      double base_take_v = baseline_take_v(&b, cd, n, pd, plain_counts, plain, n);
      MPI_Barrier(MPI_COMM_WORLD);
      double base_put_v =
          baseline_put_v(&b, plain_counts, plain, n, n, plain_new_counts, plain_dist);
      strata_array_release(counts);
      strata_array_release(dist);
      /* The same results as the hand-written exchanges, outside the timings. */
      int64_t kept = 0; /* Put_v's data: the blocks of the written items */
      for (int64_t i = 0; i < n; i++)
        kept += plain_new_counts[i];
      match = match && same_values(vd, plain, n * count) && same_counts(vc, plain_counts, n) &&
              same_values(pvd, plain_dist, kept) && same_counts(pvc, plain_new_counts, n);
      strata_array *made[4] = {vc, vd, pvc, pvd};
      for (int k = 0; k < 4; k++)
        strata_array_destroy(made[k]);
      if (r > 0) { /* the first round warms up */
        tt[r - 1] = max_over_ranks(t1 - t0);
        tp[r - 1] = max_over_ranks(t2 - t1_put);
        ts[r - 1] = max_over_ranks(t2_end - t2_sum);
        tv[r - 1] = max_over_ranks(t4 - t3);
        tpv[r - 1] = max_over_ranks(t6 - t5);
        tbv[r - 1] = max_over_ranks(base_take_v);
        tbpv[r - 1] = max_over_ranks(base_put_v);
        tb[r - 1] = max_over_ranks(base);
      }
    }
    double take = bench_median(tt, rounds), put = bench_median(tp, rounds),
           put_sum = bench_median(ts, rounds), base = bench_median(tb, rounds),
           take_v = bench_median(tv, rounds), put_v = bench_median(tpv, rounds),
           base_take_v = bench_median(tbv, rounds), base_put_v = bench_median(tbpv, rounds);
    double ratios[5] = {take / base, put / base, put_sum / base, take_v / base_take_v,
                        put_v / base_put_v};
    for (int i = 0; i < 5; i++)
      worst = ratios[i] > worst ? ratios[i] : worst;
    cJSON *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "count", count);
    cJSON_AddNumberToObject(c, "take_s", take);
    cJSON_AddNumberToObject(c, "put_s", put);
    cJSON_AddNumberToObject(c, "put_sum_s", put_sum);
    cJSON_AddNumberToObject(c, "alltoallv_s", base);
    cJSON_AddNumberToObject(c, "take_v_s", take_v);
    cJSON_AddNumberToObject(c, "put_v_s", put_v);
    cJSON_AddNumberToObject(c, "baseline_take_v_s", base_take_v);
    cJSON_AddNumberToObject(c, "baseline_put_v_s", base_put_v);
    cJSON_AddNumberToObject(c, "take_vs_alltoallv", ratios[0]);
    cJSON_AddNumberToObject(c, "put_vs_alltoallv", ratios[1]);
    cJSON_AddNumberToObject(c, "put_sum_vs_alltoallv", ratios[2]);
    cJSON_AddNumberToObject(c, "take_v_vs_baseline", ratios[3]);
    cJSON_AddNumberToObject(c, "put_v_vs_baseline", ratios[4]);
    cJSON_AddItemToArray(cases, c);
    strata_array_destroy(dist);
    strata_array_destroy(out);
    strata_array_destroy(back);
    strata_array_destroy(counts);
    strata_array_destroy(part_counts);
    free(plain);
    free(plain_dist);
    free(plain_counts);
    free(plain_new_counts);
  }
  cJSON_AddNumberToObject(root, "worst_ratio", worst);
  MPI_Allreduce(MPI_IN_PLACE, &match, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  cJSON_AddBoolToObject(root, "results_match_baselines", match);
  if (rank == 0)
    bench_print_json(root);
  else
    cJSON_Delete(root);
  strata_gindexer_destroy(gi);
  free(b.scount);
  free(b.sdispl);
  free(b.rcount);
  free(b.rdispl);
  free(b.order);
  free(b.local);
  free(b.send);
  free(b.recv);
  baseline_v_free(&b);
  free(distrib);
  free(idx);
  free(tc);
  free(tb);
  free(tt);
  free(tp);
  free(tv);
  free(ts);
  free(tpv);
  free(tbv);
  free(tbpv);
  strata_finalize();
  return 0;
}
