/* Deferred compute: every operation eager, lazy, and exported + saved as
 * JSON + loaded + replayed, against known answers; the design document's
 * example; triggers; export errors; in-place rule; dynamic shapes; replay
 * with other shapes. */
#include <stdlib.h>
#include <string.h>

#include "graph_cases.h"

/* Export `out` computed from `in`, round-trip through JSON, replay. */
static strata_array *replayed(const struct op_case *c, strata_array **in, strata_array *out)
{
  strata_graph *g = NULL, *back = NULL;
  strata_array *result = NULL;
  char *json = NULL;
  int ret = strata_graph_export(c->nin, in, NULL, 1, &out, NULL, &g);
  if (ret == 0)
    ret = strata_graph_to_json(g, &json);
  if (ret == 0)
    ret = strata_graph_from_json(json, strlen(json), &back);
  if (ret == 0)
    ret = strata_graph_run(back, in, &result);
  if (ret)
    fprintf(stderr, "%s: replay: %s (%s)\n", c->name, strata_strerror(ret), strata_error_message());
  free(json);
  strata_graph_destroy(g);
  strata_graph_destroy(back);
  return result;
}

static void test_op_cases(void)
{
  strata_context *ctx;
  CHECK_EQ(strata_context_create(&ctx), 0);
  for (int k = 0; k < N_OP_CASES; k++) {
    const struct op_case *c = &op_cases[k];
    strata_array *in[3] = {NULL, NULL, NULL}, *eager = NULL, *lazy = NULL, *again = NULL;
    for (int i = 0; i < c->nin; i++)
      in[i] = make_array(&c->in[i]);
    int ret = build_case(NULL, c, in, &eager);
    if (ret)
      fprintf(stderr, "%s: %s (%s)\n", c->name, strata_strerror(ret), strata_error_message());
    CHECK_EQ(ret, 0);
    CHECK(strata_is_deferred(eager) == 0);
    CHECK(matches(eager, &c->out, c->tol, c->name));

    CHECK_EQ(strata_deferred_begin(ctx, 1), 0);
    CHECK_EQ(build_case(ctx, c, in, &lazy), 0);
    CHECK_EQ(strata_deferred_end(ctx), 0);
    CHECK_EQ(strata_is_deferred(lazy), 1);
    again = replayed(c, in, lazy);
    CHECK(matches(again, &c->out, c->tol, c->name));
    CHECK(matches(lazy, &c->out, c->tol, c->name));
    CHECK(strata_is_deferred(lazy) == 0);
    for (int i = 0; i < c->nin; i++)
      strata_array_destroy(in[i]);
    strata_array_destroy(eager);
    strata_array_destroy(lazy);
    strata_array_destroy(again);
    CHECK_EQ(strata_graph_clear(ctx), 0);
  }
  CHECK_EQ(strata_context_destroy(ctx), 0);
}

static void fill_iota(strata_array *a)
{
  float *p;
  CHECK_EQ(strata_array_acquire(a, STRATA_WRITE, (void **)&p), 0);
  for (int64_t i = 0; i < strata_array_nelems(a); i++)
    p[i] = (float)i;
  strata_array_release(a);
}

/* y = (x + 5) * (x + 5), z = x ** 2; export inputs ['x'], outputs ['y', 'z']. */
static void test_design_example(void)
{
  strata_context *ctx;
  strata_array *x, *x5a, *x5b, *y, *z, *out[2];
  strata_graph *g;
  int64_t shape[2] = {8, 10};
  CHECK_EQ(strata_context_create(&ctx), 0);
  CHECK_EQ(strata_array_create(2, shape, STRATA_FLOAT32, &x), 0);
  fill_iota(x);
  CHECK_EQ(strata_deferred_begin(ctx, 1), 0);
  CHECK_EQ(strata_deferred_active(ctx), 1);
  CHECK_EQ(strata_binary_scalar(ctx, STRATA_FN_ADD, x, strata_int(5), 0, &x5a), 0);
  CHECK_EQ(strata_binary_scalar(ctx, STRATA_FN_ADD, x, strata_int(5), 0, &x5b), 0);
  CHECK_EQ(strata_binary(ctx, STRATA_FN_MUL, x5a, x5b, &y), 0);
  CHECK_EQ(strata_binary_scalar(ctx, STRATA_FN_POW, x, strata_int(2), 0, &z), 0);
  CHECK_EQ(strata_deferred_end(ctx), 0);
  CHECK_EQ(strata_deferred_active(ctx), 0);
  /* shapes and dtypes are known at once, nothing computed */
  int64_t s[2];
  CHECK_EQ(strata_array_shape(y, s), 0);
  CHECK(s[0] == 8 && s[1] == 10 && strata_array_dtype(y) == STRATA_FLOAT32);
  CHECK_EQ(strata_is_deferred(y), 1);
  CHECK_EQ(strata_is_deferred(z), 1);

  const char *in_names[] = {"x"}, *out_names[] = {"y", "z"};
  strata_array *outs[2] = {y, z};
  CHECK_EQ(strata_graph_export(1, &x, in_names, 2, outs, out_names, &g), 0);
  CHECK_EQ(strata_graph_ninputs(g), 1);
  CHECK_EQ(strata_graph_noutputs(g), 2);
  CHECK(strcmp(strata_graph_input_name(g, 0), "x") == 0);
  CHECK(strcmp(strata_graph_output_name(g, 0), "y") == 0);
  CHECK(strcmp(strata_graph_output_name(g, 1), "z") == 0);
  CHECK_EQ(strata_graph_nnodes(g), 5); /* x, x+5 twice, product, power */
  /* exporting leaves the arrays lazy; export twice gives the same graph */
  CHECK_EQ(strata_is_deferred(y), 1);
  strata_graph *g2;
  char *j1, *j2;
  CHECK_EQ(strata_graph_export(1, &x, in_names, 2, outs, out_names, &g2), 0);
  CHECK_EQ(strata_graph_to_json(g, &j1), 0);
  CHECK_EQ(strata_graph_to_json(g2, &j2), 0);
  CHECK(strcmp(j1, j2) == 0);
  CHECK(strstr(j1, "\"multiply_3\"") != NULL); /* stable generated names */
  free(j1);
  free(j2);
  strata_graph_destroy(g2);

  /* reading y computes y only */
  float *p;
  CHECK_EQ(strata_array_acquire(y, STRATA_READ, (void **)&p), 0);
  for (int i = 0; i < 80; i++)
    CHECK(p[i] == (float)((i + 5) * (i + 5)));
  strata_array_release(y);
  CHECK_EQ(strata_is_deferred(z), 1);
  CHECK_EQ(strata_compute(&z, 1), 0);
  CHECK_EQ(strata_is_deferred(z), 0);
  CHECK_EQ(strata_array_acquire(z, STRATA_READ, (void **)&p), 0);
  for (int i = 0; i < 80; i++)
    CHECK(p[i] == (float)(i * i));
  strata_array_release(z);

  /* replay on other shapes, zero-size included */
  int64_t shapes[3][2] = {{8, 10}, {3, 4}, {0, 5}};
  for (int k = 0; k < 3; k++) {
    strata_array *x2;
    CHECK_EQ(strata_array_create(2, shapes[k], STRATA_FLOAT32, &x2), 0);
    fill_iota(x2);
    CHECK_EQ(strata_graph_run(g, &x2, out), 0);
    int64_t n = shapes[k][0] * shapes[k][1], got[2];
    CHECK_EQ(strata_array_shape(out[0], got), 0);
    CHECK(got[0] == shapes[k][0] && got[1] == shapes[k][1]);
    CHECK_EQ(strata_array_acquire(out[0], STRATA_READ, (void **)&p), 0);
    for (int64_t i = 0; i < n; i++)
      CHECK(p[i] == (float)((i + 5) * (i + 5)));
    strata_array_release(out[0]);
    CHECK_EQ(strata_array_acquire(out[1], STRATA_READ, (void **)&p), 0);
    for (int64_t i = 0; i < n; i++)
      CHECK(p[i] == (float)(i * i));
    strata_array_release(out[1]);
    strata_array_destroy(out[0]);
    strata_array_destroy(out[1]);
    strata_array_destroy(x2);
  }
  /* other dtypes re-infer too: float64 input gives float64 outputs */
  strata_array *xd;
  CHECK_EQ(strata_zeros(NULL, 1, (int64_t[]){3}, STRATA_FLOAT64, &xd), 0);
  CHECK_EQ(strata_graph_run(g, &xd, out), 0);
  CHECK_EQ(strata_array_dtype(out[0]), STRATA_FLOAT64);
  strata_array_destroy(out[0]);
  strata_array_destroy(out[1]);
  strata_array_destroy(xd);

  strata_graph_destroy(g);
  strata_array_destroy(x5a);
  strata_array_destroy(x5b);
  strata_array_destroy(y);
  strata_array_destroy(z);
  strata_array_destroy(x);
  CHECK_EQ(strata_context_destroy(ctx), 0);
}

/* Export's errors, each with its own code. */
static void test_export_errors(void)
{
  strata_context *ctx;
  strata_array *x, *w, *y, *v, *u;
  strata_graph *g = NULL;
  int64_t n = 4;
  CHECK_EQ(strata_context_create(&ctx), 0);
  CHECK_EQ(strata_zeros(NULL, 1, &n, STRATA_FLOAT32, &x), 0);
  CHECK_EQ(strata_ones(NULL, 1, &n, STRATA_FLOAT32, &w), 0);
  CHECK_EQ(strata_deferred_begin(ctx, 1), 0);
  CHECK_EQ(strata_binary(ctx, STRATA_FN_ADD, x, w, &y), 0);
  CHECK_EQ(strata_unary(ctx, STRATA_FN_EXP, y, &v), 0);
  CHECK_EQ(strata_deferred_end(ctx), 0);
  const char *xname[] = {"x"}, *two[] = {"a", "b"}, *same[] = {"a", "a"};

  /* an output without recorded history */
  CHECK_EQ(strata_graph_export(1, &x, xname, 1, &w, NULL, &g), STRATA_ENOHISTORY);
  CHECK(g == NULL);
  /* an output depending on w, neither listed nor recorded */
  CHECK_EQ(strata_graph_export(1, &x, xname, 1, &v, NULL, &g), STRATA_EUNBOUND);
  CHECK(strstr(strata_error_message(), "output0") != NULL);
  /* a listed input not connected to any output */
  strata_array *xw_u[3] = {x, w, NULL};
  CHECK_EQ(strata_zeros(NULL, 1, &n, STRATA_FLOAT32, &u), 0);
  xw_u[2] = u;
  const char *three[] = {"x", "w", "u"};
  CHECK_EQ(strata_graph_export(3, xw_u, three, 1, &v, NULL, &g), STRATA_EUNUSED);
  CHECK(strstr(strata_error_message(), "'u'") != NULL);
  /* one array under two names; two arrays under one name; two outputs one name */
  strata_array *xx[2] = {x, x}, *xw[2] = {x, w}, *vv[2] = {v, y};
  CHECK_EQ(strata_graph_export(2, xx, two, 1, &y, NULL, &g), STRATA_EREBIND);
  CHECK_EQ(strata_graph_export(2, xw, same, 1, &y, NULL, &g), STRATA_EINVAL);
  CHECK_EQ(strata_graph_export(2, xw, two, 2, vv, same, &g), STRATA_EINVAL);
  /* the same array twice under one name is one input */
  const char *twice[] = {"x", "x"};
  strata_array *xxw[3] = {x, x, w};
  const char *xxw_names[] = {"x", "x", "w"};
  CHECK_EQ(strata_graph_export(2, xx, twice, 1, &x, NULL, &g), 0);
  CHECK_EQ(strata_graph_ninputs(g), 1);
  strata_graph_destroy(g);
  /* inputs may be outputs; an intermediate may be an input */
  strata_array *outs[2] = {v, x};
  CHECK_EQ(strata_graph_export(3, xxw, xxw_names, 2, outs, NULL, &g), 0);
  strata_array *res[2];
  CHECK_EQ(strata_graph_run(g, xw, res), 0);
  struct spec want_v = {
      STRATA_FLOAT32,
      1,
      {4},
      {2.718281828459045, 2.718281828459045, 2.718281828459045, 2.718281828459045}};
  struct spec want_x = {STRATA_FLOAT32, 1, {4}, {0, 0, 0, 0}};
  CHECK(matches(res[0], &want_v, 1e-6, "v"));
  CHECK(matches(res[1], &want_x, 0, "x copy"));
  CHECK(res[1] != x);
  strata_array_destroy(res[0]);
  strata_array_destroy(res[1]);
  strata_graph_destroy(g);
  const char *yname[] = {"y"};
  CHECK_EQ(strata_graph_export(1, &y, yname, 1, &v, NULL, &g), 0);
  CHECK_EQ(strata_graph_nnodes(g), 2);
  strata_graph_destroy(g);
  /* graphs with zero inputs */
  strata_array *r;
  CHECK_EQ(strata_deferred_begin(ctx, 1), 0);
  CHECK_EQ(strata_arange(ctx, 0, 4, 1, STRATA_INT32, &r), 0);
  CHECK_EQ(strata_deferred_end(ctx), 0);
  CHECK_EQ(strata_graph_export(0, NULL, NULL, 1, &r, NULL, &g), 0);
  strata_array *r2;
  CHECK_EQ(strata_graph_run(g, NULL, &r2), 0);
  struct spec want_r = {STRATA_INT32, 1, {4}, {0, 1, 2, 3}};
  CHECK(matches(r2, &want_r, 0, "arange replay"));
  strata_array_destroy(r2);
  strata_graph_destroy(g);
  /* outputs of two contexts */
  strata_context *other;
  strata_array *o;
  CHECK_EQ(strata_context_create(&other), 0);
  CHECK_EQ(strata_deferred_begin(other, 1), 0);
  CHECK_EQ(strata_unary(other, STRATA_FN_NEG, x, &o), 0);
  CHECK_EQ(strata_deferred_end(other), 0);
  strata_array *mixed[2] = {v, o};
  CHECK_EQ(strata_graph_export(2, xw, two, 2, mixed, NULL, &g), STRATA_EINVAL);
  CHECK_EQ(strata_graph_export(-1, xw, NULL, 1, &v, NULL, &g), STRATA_EINVAL);
  CHECK_EQ(strata_graph_export(1, xw, NULL, 0, &v, NULL, &g), STRATA_EINVAL);

  strata_array *all[] = {x, w, y, v, u, r, o};
  for (size_t k = 0; k < sizeof all / sizeof *all; k++)
    strata_array_destroy(all[k]);
  CHECK_EQ(strata_context_destroy(other), 0);
  CHECK_EQ(strata_context_destroy(ctx), 0);
}

/* Scopes, per-context flags, in-place rule, freeing needed arrays, triggers. */
static void test_rules(void)
{
  strata_context *a, *b;
  strata_array *x, *y, *z, *w, *e;
  int64_t n = 3;
  CHECK_EQ(strata_context_create(&a), 0);
  CHECK_EQ(strata_context_create(&b), 0);
  CHECK_EQ(strata_deferred_end(a), STRATA_ESTATE);
  CHECK_EQ(strata_deferred_begin(a, 1), 0);
  CHECK_EQ(strata_deferred_begin(a, 0), 0);
  CHECK_EQ(strata_deferred_active(a), 0);
  CHECK_EQ(strata_deferred_end(a), 0);
  CHECK_EQ(strata_deferred_active(a), 1);
  CHECK_EQ(strata_deferred_active(b), 0); /* flags are per context */
  CHECK_EQ(strata_deferred_begin(a, 2), STRATA_EINVAL);

  CHECK_EQ(strata_full(NULL, 1, &n, STRATA_FLOAT64, 2, &x), 0);
  CHECK_EQ(strata_binary_scalar(a, STRATA_FN_MUL, x, strata_float(3), 0, &y), 0);
  CHECK_EQ(strata_binary_scalar(a, STRATA_FN_ADD, y, strata_float(1), 0, &z), 0);
  CHECK_EQ(strata_unary(a, STRATA_FN_SQRT, y, &w), 0);
  CHECK_EQ(strata_unary(b, STRATA_FN_NEG, x, &e), 0); /* b does not record */
  CHECK_EQ(strata_is_deferred(e), 0);
  CHECK_EQ(strata_deferred_end(a), 0);

  /* errors leave *out NULL */
  strata_array *bad = x, *boolarr;
  CHECK_EQ(strata_zeros(NULL, 1, &n, STRATA_BOOL, &boolarr), 0);
  CHECK_EQ(strata_deferred_begin(a, 1), 0);
  CHECK_EQ(strata_unary(a, STRATA_FN_NEG, boolarr, &bad), STRATA_ETYPE);
  CHECK(bad == NULL);
  CHECK_EQ(strata_deferred_end(a), 0);

  /* in-place writes to arrays with history are refused */
  void *p;
  CHECK_EQ(strata_array_acquire(y, STRATA_WRITE, &p), STRATA_EINPLACE);
  CHECK_EQ(strata_array_acquire(y, STRATA_READWRITE, &p), STRATA_EINPLACE);
  CHECK_EQ(strata_array_fill_identity(y, STRATA_SUM), STRATA_EINPLACE);

  /* y is freed by the application, z still needs it */
  CHECK_EQ(strata_array_destroy(y), 0);
  struct spec want_z = {STRATA_FLOAT64, 1, {3}, {7, 7, 7}};
  CHECK(matches(z, &want_z, 0, "z after freeing y"));
  CHECK_EQ(strata_is_deferred(w), 1); /* only what z needs was computed */
  /* a lazy input outside recording is computed first */
  strata_array *w2;
  CHECK_EQ(strata_binary(NULL, STRATA_FN_MUL, w, w, &w2), 0);
  struct spec want_w2 = {STRATA_FLOAT64, 1, {3}, {6, 6, 6}};
  CHECK(matches(w2, &want_w2, 1e-15, "w*w"));
  CHECK_EQ(strata_is_deferred(w), 0);

  /* clearing releases history: writes are allowed again */
  CHECK_EQ(strata_graph_clear(a), 0);
  CHECK_EQ(strata_array_acquire(z, STRATA_WRITE, &p), 0);
  strata_array_release(z);
  /* clearing computes arrays still lazy */
  strata_array *q;
  CHECK_EQ(strata_deferred_begin(a, 1), 0);
  CHECK_EQ(strata_unary(a, STRATA_FN_ABS, x, &q), 0);
  CHECK_EQ(strata_deferred_end(a), 0);
  CHECK_EQ(strata_context_destroy(a), 0);
  CHECK_EQ(strata_is_deferred(q), 0);
  struct spec want_q = {STRATA_FLOAT64, 1, {3}, {2, 2, 2}};
  CHECK(matches(q, &want_q, 0, "abs after destroying the context"));

  strata_array *all[] = {x, z, w, e, w2, q, boolarr};
  for (size_t k = 0; k < sizeof all / sizeof *all; k++)
    strata_array_destroy(all[k]);
  CHECK_EQ(strata_context_destroy(b), 0);
}

/* Operation errors: codes, no recording. */
static void test_op_errors(void)
{
  strata_array *a, *b, *i32, *out = (strata_array *)1;
  int64_t s23[2] = {2, 3}, s4 = 4;
  CHECK_EQ(strata_zeros(NULL, 2, s23, STRATA_FLOAT32, &a), 0);
  CHECK_EQ(strata_zeros(NULL, 1, &s4, STRATA_FLOAT32, &b), 0);
  CHECK_EQ(strata_zeros(NULL, 1, &s4, STRATA_INT32, &i32), 0);
  CHECK_EQ(strata_binary(NULL, STRATA_FN_ADD, a, b, &out), STRATA_EINVAL);
  CHECK(out == NULL);
  CHECK_EQ(strata_binary(NULL, STRATA_FN_EXP, a, a, &out), STRATA_EINVAL);
  CHECK_EQ(strata_unary(NULL, STRATA_FN_ADD, a, &out), STRATA_EINVAL);
  CHECK_EQ(strata_index(NULL, a, 1, (strata_slice[]){{5, 0, 0, 1}}, &out), STRATA_ERANGE);
  CHECK_EQ(strata_index(NULL, a, 1, (strata_slice[]){{0, 1, 0, 0}}, &out), STRATA_EINVAL);
  CHECK_EQ(
      strata_index(NULL, a, 3, (strata_slice[]){{0, 1, 1, 0}, {0, 1, 1, 0}, {0, 1, 1, 0}}, &out),
      STRATA_EINVAL);
  CHECK_EQ(strata_reshape(NULL, a, 2, (int64_t[]){4, -1}, &out), STRATA_EINVAL);
  CHECK_EQ(strata_reshape(NULL, a, 2, (int64_t[]){-1, -1}, &out), STRATA_EINVAL);
  CHECK_EQ(strata_matmul(NULL, a, i32, &out), STRATA_ETYPE);
  CHECK_EQ(strata_matmul(NULL, a, a, &out), STRATA_EINVAL);
  CHECK_EQ(strata_transpose(NULL, a, 2, (int[]){0, 0}, &out), STRATA_EINVAL);
  CHECK_EQ(strata_broadcast_to(NULL, b, 1, (int64_t[]){5}, &out), STRATA_EINVAL);
  CHECK_EQ(strata_reduce(NULL, STRATA_FN_SUM, a, 1, (int[]){2}, 0, &out), STRATA_EINVAL);
  CHECK_EQ(strata_reduce(NULL, STRATA_FN_ADD, a, 1, (int[]){0}, 0, &out), STRATA_EINVAL);
  CHECK_EQ(strata_concat(NULL, 2, (strata_array *[]){a, b}, 0, &out), STRATA_EINVAL);
  CHECK_EQ(strata_concat(NULL, 2, (strata_array *[]){b, i32}, 0, &out), STRATA_ETYPE);
  CHECK_EQ(strata_take(NULL, a, b, 0, STRATA_TAKE_WRAP, &out), STRATA_ETYPE);
  CHECK_EQ(strata_tril(NULL, b, 0, &out), STRATA_EINVAL);
  CHECK_EQ(strata_arange(NULL, 0, 1, 0, STRATA_FLOAT32, &out), STRATA_EINVAL);
  CHECK_EQ(strata_astype(NULL, a, STRATA_NDTYPES, &out), STRATA_ETYPE);
  CHECK_EQ(strata_full(NULL, 1, (int64_t[]){-1}, STRATA_FLOAT32, 0, &out), STRATA_EINVAL);
  CHECK_EQ(strata_binary_scalar(NULL, STRATA_FN_ADD, a, (strata_scalar){STRATA_INT8, 1}, 0, &out),
           STRATA_EINVAL);
  strata_array *empty;
  CHECK_EQ(strata_zeros(NULL, 1, (int64_t[]){0}, STRATA_FLOAT32, &empty), 0);
  CHECK_EQ(strata_reduce(NULL, STRATA_FN_MAX, empty, STRATA_ALL_AXES, NULL, 0, &out),
           STRATA_EINVAL);
  CHECK_EQ(strata_binary(NULL, STRATA_FN_ADD, NULL, a, &out), STRATA_EINVAL);
  CHECK_EQ(strata_binary(NULL, STRATA_FN_ADD, a, a, NULL), STRATA_EINVAL);
  strata_array_destroy(a);
  strata_array_destroy(b);
  strata_array_destroy(i32);
  strata_array_destroy(empty);
}

/* flatnonzero: shape queries compute; recording after it works; replay
 * gives lengths that follow the data. */
static void test_dynamic_shapes(void)
{
  strata_context *ctx;
  strata_array *x, *nz, *twice;
  struct spec xs = {STRATA_INT32, 1, {6}, {0, 3, 0, 0, 5, 1}};
  CHECK_EQ(strata_context_create(&ctx), 0);
  x = make_array(&xs);
  CHECK_EQ(strata_deferred_begin(ctx, 1), 0);
  CHECK_EQ(strata_flatnonzero(ctx, x, &nz), 0);
  CHECK_EQ(strata_is_deferred(nz), 1);
  CHECK_EQ(strata_binary_scalar(ctx, STRATA_FN_MUL, nz, strata_int(2), 0, &twice), 0);
  CHECK_EQ(strata_is_deferred(nz), 0); /* its shape was needed */
  CHECK_EQ(strata_is_deferred(twice), 1);
  CHECK_EQ(strata_deferred_end(ctx), 0);
  CHECK_EQ(strata_array_nelems(twice), 3);
  struct spec want = {STRATA_INT64, 1, {3}, {2, 8, 10}};
  CHECK(matches(twice, &want, 0, "2 * flatnonzero"));

  strata_graph *g;
  strata_array *out, *x2;
  CHECK_EQ(strata_graph_export(1, &x, NULL, 1, &twice, NULL, &g), 0);
  struct spec xs2 = {STRATA_FLOAT32, 2, {2, 2}, {1, 1, 0, 1}};
  x2 = make_array(&xs2);
  CHECK_EQ(strata_graph_run(g, &x2, &out), 0);
  struct spec want2 = {STRATA_INT64, 1, {3}, {0, 2, 6}};
  CHECK(matches(out, &want2, 0, "replayed on new data"));
  strata_array_destroy(out);
  strata_array_destroy(x2);
  struct spec none = {STRATA_FLOAT32, 1, {3}, {0, 0, 0}};
  x2 = make_array(&none);
  CHECK_EQ(strata_graph_run(g, &x2, &out), 0);
  CHECK_EQ(strata_array_nelems(out), 0);
  strata_array_destroy(out);
  strata_array_destroy(x2);

  /* a lazy flatnonzero asked for its shape */
  strata_array *nz2;
  CHECK_EQ(strata_deferred_begin(ctx, 1), 0);
  CHECK_EQ(strata_flatnonzero(ctx, x, &nz2), 0);
  CHECK_EQ(strata_deferred_end(ctx), 0);
  int64_t len;
  CHECK_EQ(strata_array_shape(nz2, &len), 0);
  CHECK_EQ(len, 3);
  strata_graph_destroy(g);
  strata_array *all[] = {x, nz, twice, nz2};
  for (size_t k = 0; k < sizeof all / sizeof *all; k++)
    strata_array_destroy(all[k]);
  CHECK_EQ(strata_context_destroy(ctx), 0);
}

/* Files: save/load, malformed documents, DOT. */
static void test_files(const char *dir)
{
  strata_context *ctx;
  strata_array *x, *y, *out;
  strata_graph *g, *back;
  char path[512], dot[512];
  snprintf(path, sizeof path, "%s/graph.json", dir);
  snprintf(dot, sizeof dot, "%s/graph.dot", dir);
  struct spec xs = {STRATA_FLOAT32, 2, {2, 2}, {1, 2, 3, 4}};
  x = make_array(&xs);
  CHECK_EQ(strata_context_create(&ctx), 0);
  CHECK_EQ(strata_deferred_begin(ctx, 1), 0);
  strata_array *t, *s;
  CHECK_EQ(strata_transpose(ctx, x, 0, NULL, &t), 0);
  CHECK_EQ(strata_matmul(ctx, x, t, &s), 0);
  CHECK_EQ(strata_reduce(ctx, STRATA_FN_SUM, s, 1, (int[]){0}, 1, &y), 0);
  CHECK_EQ(strata_deferred_end(ctx), 0);
  CHECK_EQ(strata_graph_export(1, &x, (const char *[]){"x"}, 1, &y, (const char *[]){"y"}, &g), 0);
  CHECK_EQ(strata_graph_save(g, path), 0);
  CHECK_EQ(strata_graph_load(path, &back), 0);
  CHECK_EQ(strata_graph_run(back, &x, &out), 0);
  /* x x^T = [[5, 11], [11, 25]], column sums [16, 36] */
  struct spec want = {STRATA_FLOAT32, 2, {1, 2}, {16, 36}};
  CHECK(matches(out, &want, 0, "loaded graph"));
  FILE *f = fopen(dot, "w");
  CHECK(f != NULL);
  CHECK_EQ(strata_graph_write_dot(back, f), 0);
  fclose(f);
  f = fopen(dot, "r");
  char text[4096] = {0};
  CHECK(fread(text, 1, sizeof text - 1, f) > 0);
  fclose(f);
  CHECK(strstr(text, "digraph") != NULL && strstr(text, "matmul") != NULL &&
        strstr(text, "label=\"y\"") != NULL);
  strata_graph_destroy(back);

  static const char *const bad[] = {
      "{",
      "[]",
      "{\"format\": \"strata-graph\", \"version\": 2, \"nodes\": [], \"inputs\": [], "
      "\"outputs\": []}",
      "{\"format\": \"strata-graph\", \"version\": 1, \"nodes\": [{\"name\": \"x\", \"op\": "
      "\"input\", \"inputs\": [], \"dtype\": \"float32\", \"shape\": [2]}], \"inputs\": [], "
      "\"outputs\": []}",
      "{\"format\": \"strata-graph\", \"version\": 1, \"nodes\": [{\"name\": \"x\", \"op\": "
      "\"input\", \"inputs\": [], \"dtype\": \"float32\", \"shape\": [2]}, {\"name\": \"y\", "
      "\"op\": \"exp\", \"inputs\": [0], \"dtype\": \"float32\", \"shape\": [3]}], \"inputs\": "
      "[0], \"outputs\": [{\"name\": \"y\", \"node\": 1}]}",
      "{\"format\": \"strata-graph\", \"version\": 1, \"nodes\": [{\"name\": \"y\", \"op\": "
      "\"exp\", \"inputs\": [0], \"dtype\": \"float32\", \"shape\": [3]}], \"inputs\": [], "
      "\"outputs\": []}",
      "{\"format\": \"strata-graph\", \"version\": 1, \"nodes\": [{\"name\": \"y\", \"op\": "
      "\"frobnicate\", \"inputs\": [], \"dtype\": \"float32\", \"shape\": []}], \"inputs\": [], "
      "\"outputs\": []}",
  };
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    strata_graph *gb = (strata_graph *)1;
    CHECK_EQ(strata_graph_from_json(bad[k], strlen(bad[k]), &gb), STRATA_EIO);
    CHECK(gb == NULL);
  }
  CHECK_EQ(strata_graph_load("/nonexistent/graph.json", &back), STRATA_EIO);
  strata_graph_destroy(g);
  strata_array *all[] = {x, y, out, t, s};
  for (size_t k = 0; k < sizeof all / sizeof *all; k++)
    strata_array_destroy(all[k]);
  CHECK_EQ(strata_context_destroy(ctx), 0);
}

/* MXNet's test_dc_inplace_error case: b = a + 1 recorded, then a[:5] = 0
 * written through an acquire. The write first computes b from the old a
 * (docs/deferred.md), as an eager run would have; a lazy c = b * 2 that
 * depends on a through b is computed too, and so is a pending result of a
 * second context. Writing a recorded result stays STRATA_EINPLACE. */
static void test_inplace_input(void)
{
  strata_context *ctx, *other;
  strata_array *a, *b, *c, *d;
  const int64_t shape[1] = {8};
  CHECK_EQ(strata_context_create(&ctx), 0);
  CHECK_EQ(strata_context_create(&other), 0);
  CHECK_EQ(strata_array_create(1, shape, STRATA_FLOAT64, &a), 0);
  double *p;
  CHECK_EQ(strata_array_acquire(a, STRATA_WRITE, (void **)&p), 0);
  for (int i = 0; i < 8; i++)
    p[i] = 10 + i;
  CHECK_EQ(strata_array_release(a), 0);
  CHECK_EQ(strata_deferred_begin(ctx, 1), 0);
  CHECK_EQ(strata_binary_scalar(ctx, STRATA_FN_ADD, a, strata_float(1), 0, &b), 0);
  CHECK_EQ(strata_binary_scalar(ctx, STRATA_FN_MUL, b, strata_float(2), 0, &c), 0);
  CHECK_EQ(strata_deferred_end(ctx), 0);
  CHECK_EQ(strata_deferred_begin(other, 1), 0);
  CHECK_EQ(strata_binary_scalar(other, STRATA_FN_SUB, a, strata_float(10), 0, &d), 0);
  CHECK_EQ(strata_deferred_end(other), 0);
  CHECK_EQ(strata_is_deferred(b), 1);
  CHECK_EQ(strata_array_acquire(a, STRATA_READWRITE, (void **)&p), 0);
  CHECK_EQ(strata_is_deferred(b), 0);
  CHECK_EQ(strata_is_deferred(c), 0);
  CHECK_EQ(strata_is_deferred(d), 0);
  for (int i = 0; i < 5; i++)
    p[i] = 0;
  CHECK_EQ(strata_array_release(a), 0);
  const double *q;
  CHECK_EQ(strata_array_acquire(b, STRATA_READ, (void **)&q), 0);
  for (int i = 0; i < 8; i++)
    CHECK(q[i] == 11 + i);
  CHECK_EQ(strata_array_release(b), 0);
  CHECK_EQ(strata_array_acquire(c, STRATA_READ, (void **)&q), 0);
  for (int i = 0; i < 8; i++)
    CHECK(q[i] == 2 * (11 + i));
  CHECK_EQ(strata_array_release(c), 0);
  CHECK_EQ(strata_array_acquire(d, STRATA_READ, (void **)&q), 0);
  for (int i = 0; i < 8; i++)
    CHECK(q[i] == i);
  CHECK_EQ(strata_array_release(d), 0);
  CHECK_EQ(strata_array_acquire(b, STRATA_WRITE, (void **)&p), STRATA_EINPLACE);
  CHECK_EQ(strata_context_destroy(other), 0);
  CHECK_EQ(strata_context_destroy(ctx), 0);
  /* No context reads a any more: a plain write. */
  CHECK_EQ(strata_array_acquire(a, STRATA_WRITE, (void **)&p), 0);
  CHECK_EQ(strata_array_release(a), 0);
  strata_array_destroy(d);
  strata_array_destroy(c);
  strata_array_destroy(b);
  strata_array_destroy(a);
}

/* A chain of `n` negations after one input, as strata-graph JSON; the last
 * node named like the first when `repeat`. */
static char *chain_json(int n, int repeat)
{
  size_t cap = 200 + (size_t)n * 96, len = 0;
  char *t = malloc(cap);
  if (!t)
    return NULL;
  len += (size_t)snprintf(t + len, cap - len,
                          "{\"format\":\"strata-graph\",\"version\":1,\"inputs\":[0],"
                          "\"outputs\":[{\"name\":\"y\",\"node\":%d}],\"nodes\":[{\"name\":"
                          "\"n0\",\"op\":\"input\",\"inputs\":[],\"dtype\":\"float64\","
                          "\"shape\":[4]}",
                          n);
  for (int i = 1; i <= n; i++)
    len += (size_t)snprintf(t + len, cap - len,
                            ",{\"name\":\"n%d\",\"op\":\"negative\",\"inputs\":[%d],"
                            "\"dtype\":\"float64\",\"shape\":[4]}",
                            repeat && i == n ? 0 : i, i - 1);
  snprintf(t + len, cap - len, "]}");
  return t;
}

/* Loading checks names in O(n log n): 200 000 nodes load (quadratic checks
 * took 44 s for 80 000, so the test's timeout catches a regression), a
 * repeated name among them is found, and a file without end is refused at
 * STRATA_GRAPH_MAX_BYTES. */
static void test_large_graphs(void)
{
  enum { N = 200000 };
  strata_graph *g = NULL;
  char *text = chain_json(N, 0);
  CHECK(text != NULL);
  CHECK_EQ(strata_graph_from_json(text, strlen(text), &g), 0);
  CHECK_EQ(strata_graph_nnodes(g), N + 1);
  strata_graph_destroy(g);
  free(text);
  g = NULL;
  text = chain_json(N, 1);
  CHECK_EQ(strata_graph_from_json(text, strlen(text), &g), STRATA_EIO);
  CHECK(g == NULL && strstr(strata_error_message(), "two nodes named 'n0'"));
  free(text);
  CHECK_EQ(strata_graph_load("/dev/zero", &g), STRATA_EIO);
  CHECK(g == NULL && strstr(strata_error_message(), "larger than 256 MiB"));
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  test_op_cases();
  test_design_example();
  test_export_errors();
  test_rules();
  test_op_errors();
  test_dynamic_shapes();
  test_inplace_input();
  test_large_graphs();
  test_files(argc > 1 ? argv[1] : ".");
  strata_finalize();
  if (check_failures)
    fprintf(stderr, "%d check(s) failed\n", check_failures);
  return check_failures ? 1 : 0;
}
