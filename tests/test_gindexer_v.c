/* Global indexer, variable-size and object exchanges and multi-list
 * indexers: the design document's Take_v / Put_v (with the 13.1 erratum)
 * and generic-object examples on 3 ranks with their exact values, then
 * randomized cases on any number of ranks against a serial reference
 * (empty blocks, empty ranks, 0 to 3 lists per rank, extend on and off,
 * initial blocks or none, preallocated and allocated outputs), and errors
 * agreed across ranks. */
#include <stdlib.h>
#include <string.h>

#include "gindexer_scenario.h"

/* ---- the design document's examples (3 ranks) ------------------------- */

/* One Put_v (the submit form when extending) and its expected result; the
 * outputs go to kept[0..1] when asked, else are destroyed. */
struct put_v_call {
  strata_gindexer *gi;
  strata_array *counts, *values;
  strata_put_rule rule;
  int extend;
  strata_array *init_counts, *init_data;
};

static void expect_put_v(const struct put_v_call *p, const int64_t *counts, int64_t n_counts,
                         const float *data, int64_t n_data, const char *what, strata_array **kept)
{
  strata_array *oc = NULL, *od = NULL;
  int (*put)(strata_gindexer *, strata_array *, strata_array *, strata_put_rule, int,
             strata_array *, strata_array *, strata_array **, strata_array **) =
      p->extend ? strata_gindexer_put_v_submit : strata_gindexer_put_v;
  CHECK_EQ(
      put(p->gi, p->counts, p->values, p->rule, p->extend, p->init_counts, p->init_data, &oc, &od),
      0);
  expect_int64(oc, counts, n_counts, what);
  expect_data(od, data, n_data, STRATA_FLOAT32, what);
  if (kept) {
    kept[0] = oc;
    kept[1] = od;
  } else {
    strata_array_destroy(oc);
    strata_array_destroy(od);
  }
}

static void check_design_v(strata_gindexer *gi)
{
  /* Take_v: counts [1,1] [1,2] [3] over the 5 items. */
  const int64_t counts[3][2] = {{1, 1}, {1, 2}, {3}},
                data[3][3] = {{1, 11}, {21, 12, 11}, {11, 12, 21}};
  const int64_t ndata[3] = {2, 3, 3}, dn[3] = {2, 2, 1};
  const int64_t taken_counts[3][2] = {{3, 1}, {1, 2}, {1}};
  const int64_t taken[3][4] = {{11, 12, 21, 1}, {11, 12, 11}, {1}}, ntaken[3] = {4, 3, 1};
  strata_array *c = from_int64(counts[rank], dn[rank]), *d = from_int64(data[rank], ndata[rank]);
  strata_array *oc = NULL, *od = NULL;
  CHECK_EQ(strata_gindexer_take_v(gi, c, d, &oc, &od), 0);
  expect_int64(oc, taken_counts[rank], strata_gindexer_part_size(gi), "Take_v counts");
  expect_int64(od, taken[rank], ntaken[rank], "Take_v data");
  strata_array_destroy(c);
  strata_array_destroy(d);
  strata_array_destroy(oc);
  strata_array_destroy(od);

  /* Put_v of float32 blocks: P0 writes 1 then 3 values at [4, 0], P1 0
   * then 1 at [1, 3], P2 2 at [0]. */
  const int64_t wcounts[3][2] = {{1, 3}, {0, 1}, {2}}, nwrite[3] = {4, 1, 2};
  const float wvalues[3][4] = {{4.1f, 0.1f, 0.2f, 0.3f}, {13.1f}, {20.1f, 20.2f}};
  const int64_t last_counts[3][2] = {{2, 0}, {0, 1}, {1}},
                first_counts[3][2] = {{3, 0}, {0, 1}, {1}};
  const int64_t ext_counts[3][2] = {{5, 0}, {0, 1}, {1}};
  const float last[3][2] = {{20.1f, 20.2f}, {13.1f}, {4.1f}},
              first[3][3] = {{0.1f, 0.2f, 0.3f}, {13.1f}, {4.1f}};
  /* The erratum: P1 wrote 13.1 (the document prints 30.1). */
  const float ext[3][5] = {{0.1f, 0.2f, 0.3f, 20.1f, 20.2f}, {13.1f}, {4.1f}};
  const int64_t nlast[3] = {2, 1, 1}, nfirst[3] = {3, 1, 1}, next[3] = {5, 1, 1};
  c = from_int64(wcounts[rank], strata_gindexer_part_size(gi));
  d = from_data(wvalues[rank], nwrite[rank], STRATA_FLOAT32);
  struct put_v_call call = {gi, c, d, STRATA_PUT_LAST, 0, NULL, NULL};
  expect_put_v(&call, last_counts[rank], dn[rank], last[rank], nlast[rank], "Put_v", NULL);
  call.rule = STRATA_PUT_FIRST;
  expect_put_v(&call, first_counts[rank], dn[rank], first[rank], nfirst[rank], "Put_v first", NULL);
  call.rule = STRATA_PUT_LAST;
  call.extend = 1;
  strata_array *kept[2];
  expect_put_v(&call, ext_counts[rank], dn[rank], ext[rank], next[rank], "Put_v extend", kept);
  /* Extend again onto that result: every written block comes twice. */
  strata_array *oc2 = NULL, *od2 = NULL;
  CHECK_EQ(strata_gindexer_put_v(gi, c, d, STRATA_PUT_LAST, 1, kept[0], kept[1], &oc2, &od2), 0);
  const int64_t twice_counts[3][2] = {{10, 0}, {0, 2}, {2}};
  const float twice[3][10] = {{0.1f, 0.2f, 0.3f, 20.1f, 20.2f, 0.1f, 0.2f, 0.3f, 20.1f, 20.2f},
                              {13.1f, 13.1f},
                              {4.1f, 4.1f}};
  expect_int64(oc2, twice_counts[rank], dn[rank], "Put_v extend twice counts");
  expect_data(od2, twice[rank], 2 * next[rank], STRATA_FLOAT32, "Put_v extend twice data");
  strata_array_destroy(oc2);
  strata_array_destroy(od2);
  strata_array_destroy(kept[0]);
  strata_array_destroy(kept[1]);
  strata_array_destroy(c);
  strata_array_destroy(d);
}

/* Strings as structured items: NULL (None) packs to no byte, a string to
 * its bytes and terminator. `fail_at`: unpacking that string fails. */
struct string_codec {
  const char *fail_at;
  int live; /* strings made minus strings released */
};

static int64_t string_pack(const void *item, void *buf, int64_t cap, void *user)
{
  (void)user;
  int64_t n = item ? (int64_t)strlen(item) + 1 : 0;
  if (cap >= n && n > 0)
    memcpy(buf, item, (size_t)n);
  return n;
}

static int string_unpack(const void *buf, int64_t size, void **item, void *user)
{
  struct string_codec *sc = user;
  if (size == 0)
    return 0; /* None */
  if (sc->fail_at && strcmp(buf, sc->fail_at) == 0)
    return STRATA_EINVAL;
  *item = strdup(buf);
  sc->live++;
  return *item ? 0 : STRATA_ENOMEM;
}

static void string_release(void *item, void *user)
{
  ((struct string_codec *)user)->live--;
  free(item);
}

static void expect_strings(void *const *got, const char *const *want, int n, const char *what)
{
  for (int i = 0; i < n; i++)
    if (!want[i] != !got[i] || (want[i] && strcmp(want[i], got[i]) != 0)) {
      fprintf(stderr, "rank %d %s[%d]: %s, want %s\n", rank, what, i,
              got[i] ? (char *)got[i] : "None", want[i] ? want[i] : "None");
      check_failures++;
    }
}

static int same_bytes(const strata_blob *b, const char *want)
{
  size_t n = strlen(want);
  return b->size == (int64_t)n && (n == 0 || memcmp(b->data, want, n) == 0);
}

static void check_design_objects(strata_gindexer *gi)
{
  struct string_codec sc = {0};
  strata_codec codec = {string_pack, string_unpack, string_release, &sc};
  const char *dist[3][2] = {{"3.14", NULL}, {"chars", "['a', 'list']"}, {"42"}};
  const char *taken[3][2] = {{"42", "3.14"}, {NULL, "['a', 'list']"}, {"3.14"}};
  void *out[2] = {NULL, NULL};
  CHECK_EQ(strata_gindexer_take_objects(gi, (void *const *)dist[rank], &codec, out), 0);
  expect_strings(out, taken[rank], (int)strata_gindexer_part_size(gi), "take");
  for (int i = 0; i < 2; i++)
    if (out[i])
      string_release(out[i], &sc);
  /* put: P2 writes .314 at 0 after P0's 3.14; index 2 is not written. */
  const char *data[3][2] = {{"42", "3.14"}, {NULL, "['A', 'LIST']"}, {".314"}};
  const char *put[3][2] = {{".314", NULL}, {NULL, "['A', 'LIST']"}, {"42"}};
  void *owned[2] = {NULL, NULL};
  CHECK_EQ(
      strata_gindexer_put_objects(gi, (void *const *)data[rank], STRATA_PUT_LAST, &codec, owned),
      0);
  expect_strings(owned, put[rank], (int)strata_gindexer_dist_size(gi), "put");
  /* Unpacking "42" fails: in the put on P2 (owner of index 4, which P0
   * writes), in the take on P0 (which reads index 4). Every rank fails,
   * nothing changes and nothing leaks. */
  sc.fail_at = "42";
  CHECK_EQ(
      strata_gindexer_put_objects(gi, (void *const *)data[rank], STRATA_PUT_LAST, &codec, owned),
      STRATA_EINVAL);
  expect_strings(owned, put[rank], (int)strata_gindexer_dist_size(gi), "put after failure");
  out[0] = out[1] = NULL;
  CHECK_EQ(strata_gindexer_take_objects(gi, (void *const *)dist[rank], &codec, out), STRATA_EINVAL);
  CHECK(out[0] == NULL && out[1] == NULL);
  for (int i = 0; i < 2; i++)
    if (owned[i])
      string_release(owned[i], &sc);
  CHECK_EQ(sc.live, 0);

  /* Blobs: the same strings as bytes without terminators; extend appends. */
  strata_blob mine[2] = {{NULL, 0}, {NULL, 0}}, got[2];
  for (int i = 0; i < 2 && i < strata_gindexer_dist_size(gi); i++)
    if (dist[rank][i]) {
      mine[i].size = (int64_t)strlen(dist[rank][i]);
      mine[i].data = malloc((size_t)mine[i].size);
      memcpy(mine[i].data, dist[rank][i], (size_t)mine[i].size);
    }
  CHECK_EQ(strata_gindexer_take_blobs(gi, mine, got), 0);
  for (int p = 0; p < strata_gindexer_part_size(gi); p++)
    CHECK(same_bytes(&got[p], taken[rank][p] ? taken[rank][p] : ""));
  CHECK_EQ(strata_gindexer_put_blobs(gi, got, STRATA_PUT_LAST, 1, mine), 0);
  /* Index 0: "3.14" then P0's and P2's "3.14"; 1: "" and P1's ""; 2 is
   * not written; 3 and 4 get their own bytes twice. */
  const char *want[3][2] = {
      {"3.143.143.14", ""}, {"chars", "['a', 'list']['a', 'list']"}, {"4242"}};
  for (int i = 0; i < strata_gindexer_dist_size(gi); i++)
    CHECK(same_bytes(&mine[i], want[rank][i]));
  for (int i = 0; i < 2; i++) {
    free(mine[i].data);
    if (i < strata_gindexer_part_size(gi))
      free(got[i].data);
  }
}

static void check_design_examples(void)
{
  const int64_t distrib[4] = {0, 2, 4, 5};
  const int64_t idx[3][2] = {{4, 0}, {1, 3}, {0}}, nidx[3] = {2, 2, 1};
  strata_gindexer *gi;
  CHECK_EQ(strata_gindexer_create(strata_comm(), distrib, idx[rank], nidx[rank], &gi), 0);
  check_design_v(gi);
  check_design_objects(gi);
  strata_gindexer_destroy(gi);
}

/* ---- randomized, with lists ------------------------------------------- */

/* Rank r's lists: one list of the scenario's requests, or (multi) 0 to 3
 * lists of 0 to 8 requests. */
static int lists_of(const struct scenario *s, int r, int multi)
{
  return multi ? (int)(mix(s->seed * 13 + (uint64_t)r) % 4) : 1;
}

static int64_t list_len(const struct scenario *s, int r, int l, int multi)
{
  if (s->n == 0)
    return 0;
  return multi ? (int64_t)(mix(s->seed * 17 + (uint64_t)r * 5 + (uint64_t)l) % 9) : s->nidx[r];
}

static int64_t req_idx(const struct scenario *s, int r, int l, int64_t q)
{
  return idx_of(s, r, l * 1000 + q);
}

/* Block sizes (0 to 3) and element values (< 100: every type holds them). */
static int64_t owned_len(const struct scenario *s, int64_t g)
{
  return (int64_t)(mix(s->seed * 3 + (uint64_t)g) % 4);
}
static double owned_val(int64_t g, int64_t e) { return (double)((g * 7 + e) % 97); }
static int64_t init_len(const struct scenario *s, int64_t g)
{
  return (int64_t)(mix(s->seed * 11 + (uint64_t)g) % 3);
}
static double init_val(int64_t g, int64_t e) { return (double)(50 + (g * 5 + e) % 49); }
static uint64_t writer_key(const struct scenario *s, int r, int l, int64_t q)
{
  return mix(s->seed ^ ((uint64_t)r << 40) ^ ((uint64_t)l << 32) ^ (uint64_t)q);
}
static int64_t write_len(const struct scenario *s, int r, int l, int64_t q)
{
  return (int64_t)(writer_key(s, r, l, q) % 4);
}
static double write_val(const struct scenario *s, int r, int l, int64_t q, int64_t e)
{
  return (double)((writer_key(s, r, l, q) >> 8) % 90 + (uint64_t)e);
}

/* A growing list of doubles: the reference blocks. */
struct block {
  double *v;
  int64_t n, cap;
};

static void block_push(struct block *b, double v)
{
  if (b->n == b->cap) {
    b->cap = b->cap ? 2 * b->cap : 16;
    b->v = realloc(b->v, (size_t)b->cap * sizeof *b->v);
  }
  b->v[b->n++] = v;
}

static strata_array *typed(const struct block *b, int dtype)
{
  strata_array *a;
  CHECK_EQ(strata_array_create(1, &b->n, (strata_dtype)dtype, &a), 0);
  void *p = acquire(a, STRATA_WRITE);
  for (int64_t i = 0; i < b->n; i++)
    set(p, dtype, i, b->v[i]);
  strata_array_release(a);
  return a;
}

static void expect_block(strata_array *a, const struct block *want, int dtype, const char *what,
                         const struct scenario *s)
{
  if (strata_array_nelems(a) != want->n) {
    fprintf(stderr, "rank %d seed %llu %s: %lld elements, want %lld\n", rank,
            (unsigned long long)s->seed, what, (long long)strata_array_nelems(a),
            (long long)want->n);
    check_failures++;
    return;
  }
  const void *p = acquire(a, STRATA_READ);
  for (int64_t i = 0; i < want->n; i++)
    if (ref_get((strata_dtype)dtype, p, (size_t)i) != want->v[i]) {
      fprintf(stderr, "rank %d seed %llu %s[%lld]: %g, want %g\n", rank,
              (unsigned long long)s->seed, what, (long long)i,
              ref_get((strata_dtype)dtype, p, (size_t)i), want->v[i]);
      check_failures++;
      break;
    }
  strata_array_release(a);
}

/* No rank has a list: an allocated output would have no known type. */
static int typeless(const struct scenario *s, int multi)
{
  for (int r = 0; r < size; r++)
    if (lists_of(s, r, multi) > 0)
      return 0;
  return 1;
}

static strata_gindexer *make_indexer(const struct scenario *s, int multi)
{
  int n = lists_of(s, rank, multi);
  int64_t *idx[3] = {NULL}, len[3] = {0};
  for (int l = 0; l < n; l++) {
    len[l] = list_len(s, rank, l, multi);
    idx[l] = malloc((size_t)(len[l] + 1) * sizeof *idx[l]);
    for (int64_t q = 0; q < len[l]; q++)
      idx[l][q] = req_idx(s, rank, l, q);
  }
  strata_gindexer *gi = NULL;
  CHECK_EQ(
      strata_gmindexer_create(strata_comm(), s->distrib, n, (const int64_t *const *)idx, len, &gi),
      0);
  CHECK_EQ(strata_gindexer_list_count(gi), n);
  for (int l = 0; l < n; l++) {
    CHECK_EQ(strata_gindexer_list_size(gi, l), len[l]);
    free(idx[l]);
  }
  return gi;
}

static void check_take_v(const struct scenario *s, strata_gindexer *gi, int multi, int dtype,
                         int preallocated)
{
  int64_t lo = s->distrib[rank], dn = s->distrib[rank + 1] - lo;
  struct block counts = {0}, data = {0};
  for (int64_t g = lo; g < lo + dn; g++) {
    block_push(&counts, (double)owned_len(s, g));
    for (int64_t e = 0; e < owned_len(s, g); e++)
      block_push(&data, owned_val(g, e));
  }
  strata_array *c = typed(&counts, STRATA_INT64), *d = typed(&data, dtype);
  int n = lists_of(s, rank, multi);
  strata_array *oc[3] = {NULL}, *od[3] = {NULL};
  struct block want_c[3] = {{0}}, want_d[3] = {{0}};
  for (int l = 0; l < n; l++) {
    for (int64_t q = 0; q < list_len(s, rank, l, multi); q++) {
      int64_t g = req_idx(s, rank, l, q);
      block_push(&want_c[l], (double)owned_len(s, g));
      for (int64_t e = 0; e < owned_len(s, g); e++)
        block_push(&want_d[l], owned_val(g, e));
    }
    if (preallocated) {
      CHECK_EQ(strata_array_create(1, &want_c[l].n, STRATA_INT64, &oc[l]), 0);
      CHECK_EQ(strata_array_create(1, &want_d[l].n, (strata_dtype)dtype, &od[l]), 0);
    }
  }
  CHECK_EQ(multi ? strata_gmindexer_take_v(gi, c, d, oc, od)
                 : strata_gindexer_take_v(gi, c, d, oc, od),
           0);
  for (int l = 0; l < n; l++) {
    expect_block(oc[l], &want_c[l], STRATA_INT64, "take_v counts", s);
    expect_block(od[l], &want_d[l], dtype, "take_v data", s);
    strata_array_destroy(oc[l]);
    strata_array_destroy(od[l]);
    free(want_c[l].v);
    free(want_d[l].v);
  }
  strata_array_destroy(c);
  strata_array_destroy(d);
  free(counts.v);
  free(data.v);
}

/* rule 0 last, 1 first; `with_init`: initial blocks on the owners. */
static void check_put_v(const struct scenario *s, strata_gindexer *gi, int multi, int dtype,
                        int rule, int extend, int with_init)
{
  int64_t lo = s->distrib[rank], dn = s->distrib[rank + 1] - lo;
  int n = lists_of(s, rank, multi);
  strata_array *c[3] = {NULL}, *d[3] = {NULL};
  for (int l = 0; l < n; l++) {
    struct block wc = {0}, wd = {0};
    for (int64_t q = 0; q < list_len(s, rank, l, multi); q++) {
      block_push(&wc, (double)write_len(s, rank, l, q));
      for (int64_t e = 0; e < write_len(s, rank, l, q); e++)
        block_push(&wd, write_val(s, rank, l, q, e));
    }
    c[l] = typed(&wc, STRATA_INT64);
    d[l] = typed(&wd, dtype);
    free(wc.v);
    free(wd.v);
  }
  /* The reference, owned index by owned index, writers in order. */
  struct block want_c = {0}, want_d = {0}, ic = {0}, id = {0};
  for (int64_t g = lo; g < lo + dn; g++) {
    struct block b = {0};
    int written = 0;
    if (with_init) {
      block_push(&ic, (double)init_len(s, g));
      for (int64_t e = 0; e < init_len(s, g); e++) {
        block_push(&id, init_val(g, e));
        block_push(&b, init_val(g, e));
      }
    }
    for (int r = 0; r < size; r++)
      for (int l = 0; l < lists_of(s, r, multi); l++)
        for (int64_t q = 0; q < list_len(s, r, l, multi); q++) {
          if (req_idx(s, r, l, q) != g || (!extend && rule == 1 && written))
            continue;
          if (!extend)
            b.n = 0;
          written = 1;
          for (int64_t e = 0; e < write_len(s, r, l, q); e++)
            block_push(&b, write_val(s, r, l, q, e));
        }
    block_push(&want_c, (double)b.n);
    for (int64_t e = 0; e < b.n; e++)
      block_push(&want_d, b.v[e]);
    free(b.v);
  }
  strata_array *init_c = with_init ? typed(&ic, STRATA_INT64) : NULL;
  strata_array *init_d = with_init ? typed(&id, dtype) : NULL, *oc = NULL, *od = NULL;
  strata_put_rule pr = rule ? STRATA_PUT_FIRST : STRATA_PUT_LAST;
  int want_ret = !with_init && typeless(s, multi) ? STRATA_EINVAL : 0;
  CHECK_EQ(multi ? strata_gmindexer_put_v(gi, c, d, pr, extend, init_c, init_d, &oc, &od)
                 : strata_gindexer_put_v(gi, c[0], d[0], pr, extend, init_c, init_d, &oc, &od),
           want_ret);
  if (!want_ret) {
    expect_block(oc, &want_c, STRATA_INT64, "put_v counts", s);
    expect_block(od, &want_d, dtype, "put_v data", s);
  }
  for (int l = 0; l < n; l++) {
    strata_array_destroy(c[l]);
    strata_array_destroy(d[l]);
  }
  strata_array_destroy(init_c);
  strata_array_destroy(init_d);
  strata_array_destroy(oc);
  strata_array_destroy(od);
  free(want_c.v);
  free(want_d.v);
  free(ic.v);
  free(id.v);
}

/* Fixed-size Take and Put on a multi-list indexer (count components). */
static void check_lists_fixed(const struct scenario *s, strata_gindexer *gi, int dtype, int rule)
{
  int64_t lo = s->distrib[rank], dn = s->distrib[rank + 1] - lo, k = s->count;
  int n = lists_of(s, rank, 1);
  struct block owned = {0};
  for (int64_t g = lo; g < lo + dn; g++)
    for (int64_t c = 0; c < k; c++)
      block_push(&owned, owned_val(g, c));
  strata_array *dist = typed(&owned, dtype), *outs[3] = {NULL}, *vals[3] = {NULL};
  CHECK_EQ(strata_gmindexer_take(gi, dist, k, outs), 0);
  for (int l = 0; l < n; l++) {
    struct block want = {0}, w = {0};
    for (int64_t q = 0; q < list_len(s, rank, l, 1); q++)
      for (int64_t c = 0; c < k; c++) {
        block_push(&want, owned_val(req_idx(s, rank, l, q), c));
        block_push(&w, write_val(s, rank, l, q, c));
      }
    expect_block(outs[l], &want, dtype, "gm take", s);
    vals[l] = typed(&w, dtype);
    free(want.v);
    free(w.v);
  }
  /* Put: rule 0 last, 1 first, 2 SUM, on an allocated array. */
  struct block want = {0};
  for (int64_t g = lo; g < lo + dn; g++)
    for (int64_t c = 0; c < k; c++) {
      double v = 0;
      int written = 0;
      for (int r = 0; r < size; r++)
        for (int l = 0; l < lists_of(s, r, 1); l++)
          for (int64_t q = 0; q < list_len(s, r, l, 1); q++)
            if (req_idx(s, r, l, q) == g && !(rule == 1 && written)) {
              v = rule == 2 ? v + write_val(s, r, l, q, c) : write_val(s, r, l, q, c);
              written = 1;
            }
      block_push(&want, v);
    }
  strata_array *put = NULL;
  strata_put_rule pr = rule == 0   ? STRATA_PUT_LAST
                       : rule == 1 ? STRATA_PUT_FIRST
                                   : STRATA_PUT_REDUCE;
  CHECK_EQ(strata_gmindexer_put_submit(gi, vals, k, pr, STRATA_SUM, &put),
           typeless(s, 1) ? STRATA_EINVAL : 0);
  if (put)
    expect_block(put, &want, dtype, "gm put", s);
  for (int l = 0; l < n; l++) {
    strata_array_destroy(outs[l]);
    strata_array_destroy(vals[l]);
  }
  strata_array_destroy(put);
  strata_array_destroy(dist);
  free(owned.v);
  free(want.v);
}

static const int v_types[] = {STRATA_INT8,  STRATA_UINT8,   STRATA_INT32,
                              STRATA_INT64, STRATA_FLOAT32, STRATA_FLOAT64};

static void check_random(int seeds)
{
  for (int seed = 1; seed <= seeds; seed++) {
    struct scenario s;
    make_scenario(&s, (uint64_t)seed + 500);
    int dtype = v_types[seed % 6];
    for (int multi = 0; multi < 2; multi++) {
      strata_gindexer *gi = make_indexer(&s, multi);
      check_take_v(&s, gi, multi, dtype, (seed + multi) % 2);
      for (int variant = 0; variant < 4; variant++) /* rule x extend, initial blocks alternating */
        check_put_v(&s, gi, multi, dtype, variant % 2, variant / 2, (seed + variant) % 2);
      if (multi)
        check_lists_fixed(&s, gi, dtype, seed % 3);
      random_exchanges += 5 + multi;
      strata_gindexer_destroy(gi);
    }
  }
}

/* ---- errors agreed across ranks ---------------------------------------- */

static void check_errors(void)
{
  int64_t distrib[17];
  for (int r = 0; r <= size; r++)
    distrib[r] = 2 * r;
  int64_t idx[1] = {(2 * rank + 3) % (2 * size)};
  strata_gindexer *gi;
  CHECK_EQ(strata_gindexer_create(strata_comm(), distrib, idx, 1, &gi), 0);
  int64_t ones[2] = {1, 1}, bad[2] = {1, rank == size - 1 ? -1 : 1};
  double vals[3] = {1, 2, 3};
  strata_array *c = from_int64(ones, 2), *neg = from_int64(bad, 2), *d, *oc = NULL, *od = NULL;
  int64_t two = 2, three = 3;
  CHECK_EQ(strata_array_create(1, &two, STRATA_FLOAT64, &d), 0);
  memcpy(acquire(d, STRATA_WRITE), vals, 2 * sizeof *vals);
  strata_array_release(d);
  /* A negative count on one rank. */
  CHECK_EQ(strata_gindexer_take_v(gi, neg, d, &oc, &od), STRATA_EINVAL);
  CHECK(oc == NULL && od == NULL);
  /* Counts that do not sum to the data on one rank. */
  strata_array *d3;
  CHECK_EQ(strata_array_create(1, &three, STRATA_FLOAT64, &d3), 0);
  memcpy(acquire(d3, STRATA_WRITE), vals, sizeof vals);
  strata_array_release(d3);
  CHECK_EQ(strata_gindexer_take_v(gi, c, rank == 0 ? d3 : d, &oc, &od), STRATA_EINVAL);
  /* Counts that are not int64. */
  strata_array *fc;
  CHECK_EQ(strata_array_create(1, &two, STRATA_FLOAT64, &fc), 0);
  memcpy(acquire(fc, STRATA_WRITE), vals, 2 * sizeof *vals);
  strata_array_release(fc);
  CHECK_EQ(strata_gindexer_take_v(gi, rank == 0 ? fc : c, d, &oc, &od), STRATA_ETYPE);
  /* Put_v: a reduction, an output that is not NULL, a negative count. */
  strata_array *pc = from_int64(ones, 1), *pd;
  int64_t one = 1;
  CHECK_EQ(strata_array_create(1, &one, STRATA_FLOAT64, &pd), 0);
  memcpy(acquire(pd, STRATA_WRITE), vals, sizeof *vals);
  strata_array_release(pd);
  CHECK_EQ(strata_gindexer_put_v(gi, pc, pd, STRATA_PUT_REDUCE, 0, NULL, NULL, &oc, &od),
           STRATA_EINVAL);
  strata_array *keep = d;
  CHECK_EQ(strata_gindexer_put_v(gi, pc, pd, STRATA_PUT_LAST, 0, NULL, NULL, &oc,
                                 rank == 0 ? &keep : &od),
           STRATA_EINVAL);
  /* Rules that differ between ranks. */
  if (size > 1)
    CHECK_EQ(strata_gindexer_put_v(gi, pc, pd, rank ? STRATA_PUT_FIRST : STRATA_PUT_LAST, 0, NULL,
                                   NULL, &oc, &od),
             STRATA_EINVAL);
  CHECK(oc == NULL && od == NULL);
  /* Still usable: the design's plain exchange works. */
  CHECK_EQ(strata_gindexer_take_v(gi, c, d, &oc, &od), 0);
  strata_array_destroy(oc);
  strata_array_destroy(od);
  strata_gindexer_destroy(gi);

  /* A multi-list indexer with two lists on rank 0: the single-list calls
   * are refused everywhere; gm Put lets ranks without lists adopt the
   * type of the others, and refuses types that differ. */
  const int64_t *lists[2] = {idx, idx};
  int64_t lens[2] = {1, 1};
  CHECK_EQ(strata_gmindexer_create(strata_comm(), distrib, rank == 0 ? 2 : 1, lists, lens, &gi), 0);
  strata_array *dist2;
  CHECK_EQ(strata_gindexer_empty_dist(gi, 1, STRATA_FLOAT64, &dist2), 0);
  memcpy(acquire(dist2, STRATA_WRITE), vals, 2 * sizeof *vals);
  strata_array_release(dist2);
  strata_array *single = NULL;
  if (size > 1)
    CHECK_EQ(strata_gindexer_take(gi, dist2, 1, &single), STRATA_EINVAL);
  strata_gindexer_destroy(gi);
  CHECK_EQ(strata_gmindexer_create(strata_comm(), distrib, rank == 0 ? 0 : 1, lists, lens, &gi), 0);
  strata_array *parts[1] = {NULL}, *put = NULL;
  CHECK_EQ(strata_gmindexer_empty_parts(gi, 1, rank == 1 ? STRATA_FLOAT32 : STRATA_FLOAT64, parts),
           0);
  if (parts[0]) {
    acquire(parts[0], STRATA_WRITE);
    strata_array_release(parts[0]);
  }
  if (size > 2)
    CHECK_EQ(strata_gmindexer_put(gi, parts, 1, STRATA_PUT_LAST, STRATA_SUM, &put), STRATA_ETYPE);
  CHECK(put == NULL);
  strata_array_destroy(parts[0]);
  parts[0] = NULL;
  CHECK_EQ(strata_gmindexer_empty_parts(gi, 1, STRATA_INT32, parts), 0);
  if (parts[0]) {
    int32_t *p = acquire(parts[0], STRATA_WRITE);
    p[0] = 7;
    strata_array_release(parts[0]);
  }
  if (size > 1) {
    CHECK_EQ(strata_gmindexer_put(gi, parts, 1, STRATA_PUT_REDUCE, STRATA_SUM, &put), 0);
    CHECK_EQ(strata_array_dtype(put), STRATA_INT32);
    strata_array_destroy(put);
  }
  strata_array_destroy(parts[0]);
  strata_array_destroy(dist2);
  strata_gindexer_destroy(gi);
  strata_array_destroy(c);
  strata_array_destroy(neg);
  strata_array_destroy(d);
  strata_array_destroy(d3);
  strata_array_destroy(fc);
  strata_array_destroy(pc);
  strata_array_destroy(pd);
}

int main(int argc, char **argv)
{
  return gindexer_test_main(argc, argv, check_design_examples, check_random, check_errors);
}
