/* Object lifetimes. Destroying an indexer whose exchange is still in flight
 * waits for it (the result is complete and right). strata_finalize() with
 * one live object of every kind (an acquired array and a lazy result among
 * them): each is reported at debug level and destroyed, newest first, and
 * nothing hangs. The CTest regex checks the report; the sanitizer leg
 * checks that nothing leaked. */
#include <string.h>

#include <strata/strata.h>

#include "check.h"

/* A take submitted, its indexer destroyed at once, then the result read. */
static void check_destroy_in_flight(void)
{
  int size = strata_size(), rank = strata_rank();
  int64_t distrib[65], n = 1000, idx[1000];
  for (int r = 0; r <= size && r < 65; r++)
    distrib[r] = n * r;
  for (int64_t p = 0; p < n; p++) /* the next rank's items, reversed */
    idx[p] = ((rank + 1) % size) * n + (n - 1 - p);
  strata_gindexer *g = NULL;
  strata_array *dist = NULL, *out = NULL;
  CHECK_EQ(strata_gindexer_create(strata_comm(), distrib, idx, n, &g), 0);
  CHECK_EQ(strata_gindexer_empty_dist(g, 1, STRATA_INT64, &dist), 0);
  int64_t *d = NULL;
  CHECK_EQ(strata_array_acquire(dist, STRATA_WRITE, (void **)&d), 0);
  for (int64_t i = 0; d && i < n; i++)
    d[i] = rank * n + i;
  strata_array_release(dist);
  CHECK_EQ(strata_gindexer_take_submit(g, dist, 1, &out), 0);
  CHECK_EQ(strata_gindexer_destroy(g), 0);
  CHECK_EQ(strata_array_destroy(dist), 0);
  const int64_t *o = NULL;
  CHECK_EQ(strata_array_acquire(out, STRATA_READ, (void **)&o), 0);
  int64_t wrong = 0;
  for (int64_t p = 0; o && p < n; p++)
    wrong += o[p] != idx[p];
  CHECK_EQ(wrong, 0);
  strata_array_release(out);
  strata_array_destroy(out);
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  check_destroy_in_flight();
  int64_t n = 8;
  strata_array *x, *lazy;
  strata_context *ctx;
  strata_graph *g;
  strata_gindexer *gi;
  strata_model *model;
  strata_amr *amr;
  strata_infer *inf;
  CHECK_EQ(strata_array_create(1, &n, STRATA_FLOAT32, &x), 0);
  void *data = NULL;
  CHECK_EQ(strata_array_acquire(x, STRATA_WRITE, &data), 0);
  if (data)
    memset(data, 0, 8 * sizeof(float));
  CHECK_EQ(strata_array_release(x), 0);
  CHECK_EQ(strata_context_create(&ctx), 0);
  CHECK_EQ(strata_deferred_begin(ctx, 1), 0);
  CHECK_EQ(strata_unary(ctx, STRATA_FN_EXP, x, &lazy), 0); /* recorded, never computed */

  static const char json[] =
      "{\"format\": \"strata-graph\", \"version\": 1, \"nodes\": [{\"name\": \"x\", \"op\": "
      "\"input\", \"inputs\": [], \"dtype\": \"float32\", \"shape\": [2]}, {\"name\": \"y\", "
      "\"op\": \"exp\", \"inputs\": [0], \"dtype\": \"float32\", \"shape\": [2]}], \"inputs\": "
      "[0], \"outputs\": [{\"name\": \"y\", \"node\": 1}]}";
  CHECK_EQ(strata_graph_from_json(json, strlen(json), &g), 0);

  int size = strata_size(), rank = strata_rank();
  int64_t distrib[65], idx[2] = {0, 4 * (int64_t)size - 1};
  for (int r = 0; r <= size && r < 65; r++)
    distrib[r] = 4 * (int64_t)r;
  CHECK_EQ(strata_gindexer_create(strata_comm(), distrib, idx, rank % 2 ? 2 : 1, &gi), 0);

  CHECK_EQ(strata_model_load_default(&model), 0);
  strata_amr_params ap;
  strata_amr_params_init(&ap);
  ap.block_cells = 8;
  ap.max_level = 2;
  CHECK_EQ(strata_amr_create(&ap, &amr), 0);
  strata_infer_params ip;
  strata_infer_params_init(&ip);
  ip.level_base = 0;
  ip.level_array = 1;
  ip.level_infer = 2;
  ip.model = model;
  CHECK_EQ(strata_infer_create(amr, &ip, &inf), 0);
  CHECK_EQ(strata_array_acquire(x, STRATA_READ, NULL), 0); /* still held at finalize */

  CHECK_EQ(strata_finalize(), 0);
  CHECK(!strata_initialized());
  if (check_failures)
    return 1;
  printf("test_finalize: ok\n");
  return 0;
}
