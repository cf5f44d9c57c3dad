/* Collective error agreement: for every collective API, bad input on one
 * rank only (first or last) must give every rank the same error code, and
 * the ranks must stay in step: after each case a real collective (a take
 * whose values are checked) runs on every rank. Run on 2, 3 and 4 ranks
 * with a timeout, so a rank left waiting fails the test. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <strata/strata.h>

#include "check.h"

static int rank, size;
static int64_t distrib[65];
static strata_gindexer *gi; /* each rank owns 4 indices and names 3 */
static strata_amr *amr;
static strata_model *model;

static strata_array *vector(strata_dtype t, int64_t n)
{
  strata_array *a = NULL;
  CHECK_EQ(strata_array_create(1, &n, t, &a), 0);
  if (a)
    CHECK_EQ(strata_array_fill_identity(a, STRATA_SUM), 0);
  return a;
}

/* ---- the cases: each returns this rank's code; `bad` on one rank only ---- */

static int create_distrib_differs(int bad)
{
  int64_t d[65], idx = 0;
  memcpy(d, distrib, sizeof d);
  d[size] += bad;
  strata_gindexer *g = NULL;
  int ret = strata_gindexer_create(strata_comm(), d, &idx, 1, &g);
  strata_gindexer_destroy(g);
  return ret;
}

static int create_index_out_of_range(int bad)
{
  int64_t idx = bad ? distrib[size] : 0;
  strata_gindexer *g = NULL;
  int ret = strata_gindexer_create(strata_comm(), distrib, &idx, 1, &g);
  strata_gindexer_destroy(g);
  return ret;
}

static int create_negative_count(int bad)
{
  int64_t idx = 0;
  strata_gindexer *g = NULL;
  int ret = strata_gindexer_create(strata_comm(), distrib, &idx, bad ? -1 : 1, &g);
  strata_gindexer_destroy(g);
  return ret;
}

static int create_multi_negative_lists(int bad)
{
  int64_t idx = 0, n = 1;
  const int64_t *lists[1] = {&idx};
  strata_gindexer *g = NULL;
  int ret = strata_gmindexer_create(strata_comm(), distrib, bad ? -1 : 1, lists, &n, &g);
  strata_gindexer_destroy(g);
  return ret;
}

static int take_with(strata_dtype t, int64_t extra, int64_t count, int null_dist,
                     strata_dtype out_type)
{
  strata_array *dist = vector(t, 4 * count + extra), *out = NULL;
  if (out_type != t)
    out = vector(out_type, 3 * count);
  int ret = strata_gindexer_take(gi, null_dist ? NULL : dist, count, &out);
  strata_array_destroy(out);
  strata_array_destroy(dist);
  return ret;
}

static int take_wrong_size(int bad) { return take_with(STRATA_FLOAT64, bad, 1, 0, STRATA_FLOAT64); }

static int take_type_differs(int bad)
{
  strata_dtype t = bad ? STRATA_FLOAT32 : STRATA_FLOAT64;
  return take_with(t, 0, 1, 0, t);
}

static int take_count_differs(int bad)
{
  return take_with(STRATA_FLOAT64, 0, 1 + bad, 0, STRATA_FLOAT64);
}

static int take_null_array(int bad) { return take_with(STRATA_FLOAT64, 0, 1, bad, STRATA_FLOAT64); }

static int take_output_type(int bad)
{
  return take_with(STRATA_FLOAT64, 0, 1, 0, bad ? STRATA_INT32 : STRATA_FLOAT64);
}

static int put_with(strata_put_rule rule, strata_op op)
{
  strata_array *values = vector(STRATA_FLOAT64, 3), *dist = NULL;
  int ret = strata_gindexer_put(gi, values, 1, rule, op, &dist);
  strata_array_destroy(dist);
  strata_array_destroy(values);
  return ret;
}

static int put_rule_differs(int bad)
{
  return put_with(bad ? STRATA_PUT_FIRST : STRATA_PUT_LAST, STRATA_SUM);
}

static int put_invalid_rule(int bad)
{
  return put_with(bad ? (strata_put_rule)42 : STRATA_PUT_LAST, STRATA_SUM);
}

static int put_invalid_op(int bad)
{
  return put_with(STRATA_PUT_REDUCE, bad ? (strata_op)99 : STRATA_SUM);
}

static int put_op_differs(int bad)
{
  return put_with(STRATA_PUT_REDUCE, bad ? STRATA_MAX : STRATA_SUM);
}

static int take_v_negative_count(int bad)
{
  strata_array *counts = vector(STRATA_INT64, 4), *data = vector(STRATA_FLOAT64, 4);
  strata_array *out_counts = NULL, *out_data = NULL;
  int64_t *c = NULL;
  CHECK_EQ(strata_array_acquire(counts, STRATA_WRITE, (void **)&c), 0);
  for (int i = 0; c && i < 4; i++)
    c[i] = i == 0 && bad ? -1 : 1;
  strata_array_release(counts);
  int ret = strata_gindexer_take_v(gi, counts, data, &out_counts, &out_data);
  strata_array_destroy(out_counts);
  strata_array_destroy(out_data);
  strata_array_destroy(counts);
  strata_array_destroy(data);
  return ret;
}

static int put_v_counts_type(int bad)
{
  strata_array *counts = vector(bad ? STRATA_INT32 : STRATA_INT64, 3);
  strata_array *values = vector(STRATA_FLOAT64, 0), *out_counts = NULL, *out_data = NULL;
  int ret = strata_gindexer_put_v(gi, counts, values, STRATA_PUT_LAST, 0, NULL, NULL, &out_counts,
                                  &out_data);
  strata_array_destroy(out_counts);
  strata_array_destroy(out_data);
  strata_array_destroy(counts);
  strata_array_destroy(values);
  return ret;
}

static int take_submit_wrong_size(int bad)
{
  strata_array *dist = vector(STRATA_FLOAT64, 4 + bad), *out = NULL;
  int ret = strata_gindexer_take_submit(gi, dist, 1, &out);
  strata_array_destroy(out);
  strata_array_destroy(dist);
  return ret;
}

static int put_v_extend_reduce(int bad)
{
  strata_array *counts = vector(STRATA_INT64, 3), *values = vector(STRATA_FLOAT64, 0);
  strata_array *out_counts = NULL, *out_data = NULL;
  int ret = strata_gindexer_put_v(gi, counts, values, bad ? STRATA_PUT_REDUCE : STRATA_PUT_LAST, 1,
                                  NULL, NULL, &out_counts, &out_data);
  strata_array_destroy(out_counts);
  strata_array_destroy(out_data);
  strata_array_destroy(counts);
  strata_array_destroy(values);
  return ret;
}

static int take_blobs_null(int bad)
{
  strata_blob dist[4] = {{0}}, out[3] = {{0}};
  int ret = strata_gindexer_take_blobs(gi, bad ? NULL : dist, out);
  for (int p = 0; p < 3; p++)
    free(out[p].data);
  return ret;
}

static int multi_take_no_outputs(int bad)
{
  strata_array *dist = vector(STRATA_FLOAT64, 4), *outs[1] = {NULL};
  int ret = strata_gmindexer_take(gi, dist, 1, bad ? NULL : outs);
  strata_array_destroy(outs[0]);
  strata_array_destroy(dist);
  return ret;
}

static int64_t pack_nothing(const void *item, void *buf, int64_t cap, void *user)
{
  (void)item, (void)buf, (void)cap, (void)user;
  return 0;
}

static int unpack_nothing(const void *buf, int64_t size, void **item, void *user)
{
  (void)buf, (void)size, (void)user;
  *item = NULL;
  return 0;
}

static int take_objects_no_codec(int bad)
{
  void *dist[4] = {NULL}, *out[3] = {NULL};
  strata_codec codec = {pack_nothing, unpack_nothing, NULL, NULL};
  return strata_gindexer_take_objects(gi, dist, bad ? NULL : &codec, out);
}

static int reduce_root_out_of_range(int bad)
{
  strata_array *a = vector(STRATA_FLOAT64, 5);
  int ret = strata_array_reduce(a, STRATA_SUM, bad ? size : 0);
  strata_array_destroy(a);
  return ret;
}

static int reduce_type_differs(int bad)
{
  strata_array *a = vector(bad ? STRATA_FLOAT32 : STRATA_FLOAT64, 5);
  int ret = strata_array_reduce(a, STRATA_SUM, 0);
  strata_array_destroy(a);
  return ret;
}

static int reduce_size_differs(int bad)
{
  strata_array *a = vector(STRATA_FLOAT64, 5 + bad);
  int ret = strata_array_reduce(a, STRATA_SUM, 0);
  strata_array_destroy(a);
  return ret;
}

static int merge_versions_size_differs(int bad)
{
  strata_array *v[2] = {vector(STRATA_FLOAT32, 6), vector(STRATA_FLOAT32, 6 + bad)};
  int ret = strata_merge_versions(v, 2, STRATA_SUM, STRATA_MERGE_TREE);
  strata_array_destroy(v[0]);
  strata_array_destroy(v[1]);
  return ret;
}

static int merge_versions_bad_method(int bad)
{
  strata_array *v = vector(STRATA_FLOAT32, 6);
  int ret =
      strata_merge_versions(&v, 1, STRATA_SUM, bad ? (strata_merge_method)7 : STRATA_MERGE_TREE);
  strata_array_destroy(v);
  return ret;
}

static void small_amr_params(strata_amr_params *p)
{
  strata_amr_params_init(p);
  p->block_cells = 8;
  p->max_level = 2;
}

static int amr_create_params_differ(int bad)
{
  strata_amr_params p;
  small_amr_params(&p);
  p.block_cells += 4 * bad;
  strata_amr *a = NULL;
  int ret = strata_amr_create(&p, &a);
  strata_amr_destroy(a);
  return ret;
}

static int amr_create_invalid(int bad)
{
  strata_amr_params p;
  small_amr_params(&p);
  if (bad)
    p.ghost_depth = 99;
  strata_amr *a = NULL;
  int ret = strata_amr_create(&p, &a);
  strata_amr_destroy(a);
  return ret;
}

static int amr_fill_null_problem(int bad)
{
  strata_amr_problem *problem = NULL;
  CHECK_EQ(strata_amr_problem_linear((const double[4]){1, 0, 0, 0}, &problem), 0);
  int ret = strata_amr_fill(amr, bad ? NULL : problem);
  strata_amr_problem_destroy(problem);
  return ret;
}

static int amr_build_null_problem(int bad)
{
  strata_amr_params p;
  small_amr_params(&p);
  strata_amr *a = NULL;
  CHECK_EQ(strata_amr_create(&p, &a), 0);
  strata_amr_problem *problem = NULL;
  CHECK_EQ(strata_amr_problem_linear((const double[4]){1, 0, 0, 0}, &problem), 0);
  strata_amr_criterion c;
  strata_amr_criterion_init(&c);
  int ret = strata_amr_build(a, bad ? NULL : problem, &c);
  strata_amr_problem_destroy(problem);
  strata_amr_destroy(a);
  return ret;
}

static int amr_adapt_bad_criterion(int bad)
{
  strata_amr_criterion c;
  strata_amr_criterion_init(&c);
  c.field = bad ? 7 : 0;
  c.min_refine = 1e30; /* nothing changes when the call is accepted */
  int64_t changed = 0;
  return strata_amr_adapt(amr, &c, &changed);
}

static int amr_adapt_no_flags(int bad)
{
  int64_t n = strata_amr_num_leaves(amr), changed = 0;
  int8_t *keep = calloc((size_t)n + 1, 1);
  int ret = strata_amr_adapt_flags(amr, bad ? NULL : keep, &changed);
  free(keep);
  return ret;
}

static int sharded_root_out_of_range(int bad)
{
  strata_array *x = vector(STRATA_FLOAT32, 8), *y = NULL;
  CHECK_EQ(strata_array_create(0, NULL, STRATA_FLOAT32, &y), 0);
  strata_shard_op op;
  CHECK_EQ(strata_shard_op_axial_sum(x, 0, y, &op), 0);
  strata_sharding s = {1, {2}};
  int ret = strata_launch_sharded(&op, &s, bad ? size : 0);
  strata_array_destroy(x);
  strata_array_destroy(y);
  return ret;
}

static int amr_write_paths_differ(int bad)
{
  return strata_amr_write_hdf5(amr, bad ? "/nonexistent/agreement.h5" : "/tmp/agreement.h5");
}

/* Rank 0 writes: an unwritable path fails on every rank. */
static int amr_write_unwritable(int bad)
{
  (void)bad;
  return strata_amr_write_hdf5(amr, "/nonexistent/agreement.h5");
}

static int infer_create_levels_differ(int bad)
{
  strata_infer_params p;
  strata_infer_params_init(&p);
  p.level_base = 0;
  p.level_array = 1 - bad;
  p.level_infer = 2;
  p.model = model;
  strata_infer *inf = NULL;
  int ret = strata_infer_create(amr, &p, &inf);
  strata_infer_destroy(inf);
  return ret;
}

static int infer_create_no_model(int bad)
{
  strata_infer_params p;
  strata_infer_params_init(&p);
  p.level_base = 0;
  p.level_array = 1;
  p.level_infer = 2;
  p.model = bad ? NULL : model;
  strata_infer *inf = NULL;
  int ret = strata_infer_create(amr, &p, &inf);
  strata_infer_destroy(inf);
  return ret;
}

struct error_case {
  const char *name;
  int expect;
  int (*run)(int bad);
};

static const struct error_case cases[] = {
    {"gindexer_create: distribution differs", STRATA_EINVAL, create_distrib_differs},
    {"gindexer_create: index out of range", STRATA_ERANGE, create_index_out_of_range},
    {"gindexer_create: negative count", STRATA_EINVAL, create_negative_count},
    {"gmindexer_create: negative list count", STRATA_EINVAL, create_multi_negative_lists},
    {"take: wrong size", STRATA_EINVAL, take_wrong_size},
    {"take: type differs", STRATA_ETYPE, take_type_differs},
    {"take: count differs", STRATA_EINVAL, take_count_differs},
    {"take: NULL array", STRATA_EINVAL, take_null_array},
    {"take: output of another type", STRATA_ETYPE, take_output_type},
    {"put: rule differs", STRATA_EINVAL, put_rule_differs},
    {"put: invalid rule", STRATA_EINVAL, put_invalid_rule},
    {"put: invalid operator", STRATA_EINVAL, put_invalid_op},
    {"put: operator differs", STRATA_EINVAL, put_op_differs},
    {"take_v: negative count", STRATA_EINVAL, take_v_negative_count},
    {"put_v: counts not int64", STRATA_ETYPE, put_v_counts_type},
    {"take_submit: wrong size", STRATA_EINVAL, take_submit_wrong_size},
    {"put_v: extend with a reduction", STRATA_EINVAL, put_v_extend_reduce},
    {"take_blobs: NULL items", STRATA_EINVAL, take_blobs_null},
    {"gmindexer_take: no outputs", STRATA_EINVAL, multi_take_no_outputs},
    {"take_objects: no codec", STRATA_EINVAL, take_objects_no_codec},
    {"array_reduce: root out of range", STRATA_EINVAL, reduce_root_out_of_range},
    {"array_reduce: type differs", STRATA_EINVAL, reduce_type_differs},
    {"array_reduce: size differs", STRATA_EINVAL, reduce_size_differs},
    {"merge_versions: size differs", STRATA_EINVAL, merge_versions_size_differs},
    {"merge_versions: invalid method", STRATA_EINVAL, merge_versions_bad_method},
    {"amr_create: parameters differ", STRATA_EINVAL, amr_create_params_differ},
    {"amr_create: invalid ghost depth", STRATA_EINVAL, amr_create_invalid},
    {"amr_build: NULL problem", STRATA_EINVAL, amr_build_null_problem},
    {"amr_fill: NULL problem", STRATA_EINVAL, amr_fill_null_problem},
    {"amr_adapt: criterion field out of range", STRATA_EINVAL, amr_adapt_bad_criterion},
    {"amr_adapt_flags: no flags", STRATA_EINVAL, amr_adapt_no_flags},
    {"launch_sharded: root out of range", STRATA_EINVAL, sharded_root_out_of_range},
    {"amr_write_hdf5: paths differ", STRATA_EINVAL, amr_write_paths_differ},
    {"amr_write_hdf5: unwritable on rank 0", STRATA_EIO, amr_write_unwritable},
    {"infer_create: levels differ", STRATA_EINVAL, infer_create_levels_differ},
    {"infer_create: no model", STRATA_EINVAL, infer_create_no_model},
};

/* A real collective after each case: a take whose values are checked. */
static void check_in_step(const char *after)
{
  strata_array *dist = NULL, *out = NULL;
  CHECK_EQ(strata_gindexer_empty_dist(gi, 1, STRATA_INT64, &dist), 0);
  int64_t *d = NULL;
  CHECK_EQ(strata_array_acquire(dist, STRATA_WRITE, (void **)&d), 0);
  for (int i = 0; d && i < 4; i++)
    d[i] = 4 * rank + i;
  strata_array_release(dist);
  int ret = strata_gindexer_take(gi, dist, 1, &out);
  CHECK_EQ(ret, 0);
  const int64_t *o = NULL;
  if (!ret && strata_array_acquire(out, STRATA_READ, (void **)&o) == 0) {
    for (int p = 0; p < 3; p++)
      if (o[p] != (4 * rank + 4 * (p + 1) + p) % (4 * size)) {
        fprintf(stderr, "rank %d: out of step after '%s'\n", rank, after);
        check_failures++;
        break;
      }
    strata_array_release(out);
  }
  strata_array_destroy(out);
  strata_array_destroy(dist);
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  rank = strata_rank();
  size = strata_size();
  for (int r = 0; r <= size; r++)
    distrib[r] = 4 * (int64_t)r;
  int64_t idx[3];
  for (int p = 0; p < 3; p++) /* the next ranks' indices, wrapping round */
    idx[p] = (4 * rank + 4 * (p + 1) + p) % (4 * size);
  CHECK_EQ(strata_gindexer_create(strata_comm(), distrib, idx, 3, &gi), 0);
  strata_amr_params ap;
  small_amr_params(&ap);
  CHECK_EQ(strata_amr_create(&ap, &amr), 0);
  CHECK_EQ(strata_model_load_default(&model), 0);

  int ncases = (int)(sizeof cases / sizeof *cases), *codes = malloc((size_t)size * sizeof *codes);
  for (int k = 0; k < ncases; k++)
    for (int pass = 0; pass < 2; pass++) {
      int bad_rank = pass == 0 ? 0 : size - 1, code = cases[k].run(rank == bad_rank);
      MPI_Allgather(&code, 1, MPI_INT, codes, 1, MPI_INT, strata_comm());
      for (int r = 0; r < size; r++)
        if (codes[r] != cases[k].expect) {
          if (rank == 0)
            fprintf(stderr, "%s (bad rank %d): rank %d got %s, expected %s\n", cases[k].name,
                    bad_rank, r, strata_strerror(codes[r]), strata_strerror(cases[k].expect));
          check_failures++;
        }
      check_in_step(cases[k].name);
    }
  free(codes);
  strata_model_destroy(model);
  strata_amr_destroy(amr);
  strata_gindexer_destroy(gi);
  if (rank == 0 && !check_failures)
    printf("%d collective error cases agree on %d rank(s)\n", ncases, size);
  strata_finalize();
  return check_failures != 0;
}
