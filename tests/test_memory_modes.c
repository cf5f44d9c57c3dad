/* Memory modes and fusion of exported graphs: the refinement table, the
 * defaults (16384-byte threshold, read-twice nodes, constants, inputs and
 * outputs), user errors found at compile time, fused against eager results
 * on seeded random elementwise chains (mixed dtypes, broadcasting, scalars),
 * Hosted nodes and host transfers across runs, Constant nodes computed once,
 * the kernel cache (one kernel built, then reused) and the op-by-op fallback
 * when no C compiler can be run. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>
#include <strata/strata.h>

#include "check.h"

#define MODE(k, t, s) ((strata_memory_mode){(k), (t), (s)})
#define M(k)          MODE(STRATA_MEM_##k, STRATA_MEMTYPE_ANY, STRATA_SHARING_UNSET)
#define DEV(s)        MODE(STRATA_MEM_ON_DEVICE, STRATA_MEMTYPE_ANY, STRATA_SHARING_##s)
#define HOST(t)       MODE(STRATA_MEM_HOSTED, STRATA_MEMTYPE_##t, STRATA_SHARING_UNSET)
#define COD(s)        MODE(STRATA_MEM_HOSTED, STRATA_MEMTYPE_CHANGED_ON_DEVICES, STRATA_SHARING_##s)

static const char *mode_name(strata_memory_mode m)
{
  static char buf[4][64];
  static int k;
  k = (k + 1) % 4;
  strata_memory_mode_format(m, buf[k], sizeof buf[k]);
  return buf[k];
}

static const char *node_mode(const strata_graph *g, const char *node)
{
  strata_memory_mode m = M(UNDECIDED);
  if (strata_node_memory_mode(g, node, &m))
    return "(error)";
  return mode_name(m);
}

static strata_array *filled(int ndim, const int64_t *shape, strata_dtype t, double (*f)(int64_t))
{
  strata_array *a = NULL;
  void *p;
  CHECK_EQ(strata_array_create(ndim, shape, t, &a), 0);
  CHECK_EQ(strata_array_acquire(a, STRATA_WRITE, &p), 0);
  for (int64_t i = 0; i < strata_array_nelems(a); i++) {
    double v = f(i);
    switch (t) {
    case STRATA_FLOAT32: ((float *)p)[i] = (float)v; break;
    case STRATA_FLOAT64: ((double *)p)[i] = v; break;
    case STRATA_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case STRATA_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case STRATA_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    default: ((uint8_t *)p)[i] = (uint8_t)(t == STRATA_BOOL ? v != 0 : v); break;
    }
  }
  strata_array_release(a);
  return a;
}

static double ramp(int64_t i) { return (double)(i % 97) - 40; }

static double value_at(strata_array *a, int64_t i)
{
  double *p;
  strata_array *d = NULL;
  double v = NAN;
  if (strata_astype(NULL, a, STRATA_FLOAT64, &d) == 0 &&
      strata_array_acquire(d, STRATA_READ, (void **)&p) == 0) {
    v = p[i];
    strata_array_release(d);
  }
  strata_array_destroy(d);
  return v;
}

/* Tasks StarPU executed since the last call (profiling counters). */
static int executed_tasks(void)
{
  starpu_task_wait_for_all();
  int count = 0;
  for (unsigned w = 0; w < starpu_worker_get_count(); w++) {
    struct starpu_profiling_worker_info info;
    CHECK_EQ(starpu_profiling_worker_get_info((int)w, &info), 0); /* and reset */
    count += info.executed_tasks;
  }
  return count;
}

/* `nodes` steps in turn from input "x" to output "y": * 2, + 1, * 2, ...;
 * chain(): x -> multiply_1 = x * 2 -> add_2 = multiply_1 + 1 = "y". */
static strata_graph *chain_of(strata_array *x, int nodes)
{
  strata_context *ctx;
  strata_array *y = x;
  strata_graph *g = NULL;
  const char *in = "x", *out = "y";
  CHECK_EQ(strata_context_create(&ctx), 0);
  strata_deferred_begin(ctx, 1);
  for (int i = 0; i < nodes; i++) {
    strata_array *next;
    CHECK_EQ(i % 2 ? strata_binary_scalar(ctx, STRATA_FN_ADD, y, strata_float(1), 0, &next)
                   : strata_binary_scalar(ctx, STRATA_FN_MUL, y, strata_float(2), 0, &next),
             0);
    if (y != x)
      strata_array_destroy(y);
    y = next;
  }
  strata_deferred_end(ctx);
  CHECK_EQ(strata_graph_export(1, &x, &in, 1, &y, &out, &g), 0);
  strata_array_destroy(y);
  strata_context_destroy(ctx);
  return g;
}

static strata_graph *chain(strata_array *x) { return chain_of(x, 2); }

/* chain_of's value for v in float32: each step rounded once. */
static double chain_value(double v, int nodes)
{
  for (int i = 0; i < nodes; i++)
    v = (float)(i % 2 ? v + 1 : v * 2);
  return v;
}

/* The refinement table: a mode set on an undecided node, then another;
 * NULL expects STRATA_EINVAL and the first mode kept. */
static void check_refinement_table(strata_array *x)
{
  static const struct {
    strata_memory_mode first, second;
    const char *result;
  } rows[] = {
      {M(UNDECIDED), M(UNDECIDED), "Undecided"},
      {M(EFFECTIVELY_CONSTANT), M(VIRTUAL), "Virtual"},
      {M(EFFECTIVELY_CONSTANT), M(NEVER_VIRTUAL), "Hosted(Constant)"},
      {M(EFFECTIVELY_CONSTANT), M(MATERIALIZED), "Hosted(Constant)"},
      {M(EFFECTIVELY_CONSTANT), M(LOCAL), NULL},
      {M(EFFECTIVELY_CONSTANT), HOST(NONCONSTANT), NULL},
      {M(VIRTUAL), M(NEVER_VIRTUAL), NULL},
      {M(VIRTUAL), M(EFFECTIVELY_CONSTANT), "Virtual"},
      {M(VIRTUAL), M(LOCAL), NULL},
      {M(VIRTUAL), HOST(ANY), NULL},
      {M(NEVER_VIRTUAL), M(VIRTUAL), NULL},
      {M(NEVER_VIRTUAL), M(DEVICE_ONLY), "Device_only"},
      {M(NEVER_VIRTUAL), M(MATERIALIZED), "Materialized"},
      {M(NEVER_VIRTUAL), M(EFFECTIVELY_CONSTANT), "Hosted(Constant)"},
      {M(NEVER_VIRTUAL), HOST(ANY), "Hosted"},
      {M(DEVICE_ONLY), M(MATERIALIZED), "On_device(Unset)"},
      {M(DEVICE_ONLY), M(LOCAL), "Local"},
      {M(DEVICE_ONLY), HOST(ANY), NULL},
      {M(DEVICE_ONLY), M(VIRTUAL), NULL},
      {M(MATERIALIZED), M(DEVICE_ONLY), "On_device(Unset)"},
      {M(MATERIALIZED), HOST(CONSTANT), "Hosted(Constant)"},
      {M(MATERIALIZED), M(LOCAL), NULL},
      {M(LOCAL), M(DEVICE_ONLY), "Local"},
      {M(LOCAL), M(NEVER_VIRTUAL), "Local"},
      {M(LOCAL), DEV(UNSET), NULL},
      {M(LOCAL), M(MATERIALIZED), NULL},
      {DEV(UNSET), DEV(PER_STREAM), "On_device(Per_stream)"},
      {DEV(UNSET), M(MATERIALIZED), "On_device(Unset)"},
      {DEV(PER_STREAM), DEV(SHARED), NULL},
      {DEV(SHARED), DEV(UNSET), "On_device(Shared_cross_streams)"},
      {DEV(UNSET), HOST(ANY), NULL},
      {HOST(ANY), M(NEVER_VIRTUAL), "Hosted"},
      {HOST(ANY), HOST(VOLATILE), "Hosted(Volatile)"},
      {HOST(ANY), M(DEVICE_ONLY), NULL},
      {HOST(NONCONSTANT), HOST(VOLATILE), "Hosted(Volatile)"},
      {HOST(NONCONSTANT), COD(UNSET), "Hosted(Changed_on_devices(Unset))"},
      {HOST(NONCONSTANT), HOST(CONSTANT), NULL},
      {COD(UNSET), COD(PER_STREAM), "Hosted(Changed_on_devices(Per_stream))"},
      {COD(PER_STREAM), COD(SHARED), NULL},
      {HOST(VOLATILE), COD(UNSET), NULL},
      {HOST(CONSTANT), M(EFFECTIVELY_CONSTANT), "Hosted(Constant)"},
      {HOST(CONSTANT), M(VIRTUAL), NULL},
  };
  for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
    strata_graph *g = chain(x);
    CHECK_EQ(strata_node_set_memory_mode(g, "multiply_1", rows[r].first), 0);
    const char *before = node_mode(g, "multiply_1");
    int ret = strata_node_set_memory_mode(g, "multiply_1", rows[r].second);
    int named = strstr(strata_error_message(), "multiply_1") != NULL;
    const char *got = node_mode(g, "multiply_1");
    if (rows[r].result) {
      CHECK_EQ(ret, 0);
      if (strcmp(got, rows[r].result) != 0)
        fprintf(stderr, "row %zu: %s then %s gave %s, want %s\n", r, mode_name(rows[r].first),
                mode_name(rows[r].second), got, rows[r].result);
      CHECK(strcmp(got, rows[r].result) == 0);
    } else {
      CHECK_EQ(ret, STRATA_EINVAL);
      CHECK(named);
      CHECK(strcmp(got, before) == 0);
    }
    strata_graph_destroy(g);
  }
  /* invalid arguments */
  strata_graph *g = chain(x);
  CHECK_EQ(strata_node_set_memory_mode(g, "nope", M(LOCAL)), STRATA_EINVAL);
  CHECK(strstr(strata_error_message(), "nope") != NULL);
  CHECK_EQ(strata_node_set_memory_mode(g, "y", MODE(99, 0, 0)), STRATA_EINVAL);
  CHECK_EQ(strata_node_set_memory_mode(NULL, "y", M(LOCAL)), STRATA_EINVAL);
  CHECK_EQ(strata_node_set_memory_mode(g, "y", MODE(STRATA_MEM_HOSTED, 7, 0)), STRATA_EINVAL);
  /* the output name and the node name are the same node */
  CHECK_EQ(strata_node_set_memory_mode(g, "add_2", COD(PER_STREAM)), 0);
  CHECK(strcmp(node_mode(g, "y"), "Hosted(Changed_on_devices(Per_stream))") == 0);
  strata_graph_destroy(g);
}

/* y = sum(x, axis 0) + 1 on x of shape (2, n): the sum is not inlinable;
 * its size decides Local or On_device. */
static void check_threshold(int64_t n, const char *want)
{
  int64_t shape[2] = {2, n};
  strata_array *x = filled(2, shape, STRATA_FLOAT32, ramp), *s, *y;
  strata_context *ctx;
  strata_graph *g = NULL;
  int axis = 0;
  CHECK_EQ(strata_context_create(&ctx), 0);
  strata_deferred_begin(ctx, 1);
  CHECK_EQ(strata_reduce(ctx, STRATA_FN_SUM, x, 1, &axis, 0, &s), 0);
  CHECK_EQ(strata_binary_scalar(ctx, STRATA_FN_ADD, s, strata_float(1), 0, &y), 0);
  strata_deferred_end(ctx);
  CHECK_EQ(strata_graph_export(1, &x, NULL, 1, &y, NULL, &g), 0);
  CHECK_EQ(strata_graph_compile(g), 0);
  const char *sum = strata_graph_node_name(g, 1);
  CHECK(strcmp(node_mode(g, sum), want) == 0);
  CHECK(strcmp(node_mode(g, strata_graph_input_name(g, 0)), "Hosted(Volatile)") == 0);
  CHECK(strcmp(node_mode(g, strata_graph_output_name(g, 0)),
               "Hosted(Changed_on_devices(Shared_cross_streams))") == 0);
  strata_array *out = NULL;
  for (int run = 0; run < 2; run++) { /* the second run reuses kept storage */
    CHECK_EQ(strata_graph_run(g, &x, &out), 0);
    CHECK(value_at(out, n - 1) == ramp(n - 1) + ramp(2 * n - 1) + 1);
    strata_array_destroy(out);
  }
  strata_graph_destroy(g);
  strata_array_destroy(s);
  strata_array_destroy(y);
  strata_array_destroy(x);
  strata_context_destroy(ctx);
}

static void check_defaults(strata_array *x)
{
  check_threshold(4096, "Local");
  check_threshold(4097, "On_device(Shared_cross_streams)");

  /* chain: the intermediate is Virtual, one kernel, drawn dashed inside
   * the fused kernel's cluster */
  strata_graph *g = chain(x);
  CHECK_EQ(strata_graph_nkernels(g), 1);
  CHECK(strcmp(node_mode(g, "multiply_1"), "Virtual") == 0);
  char *dot = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&dot, &len);
  CHECK_EQ(strata_graph_write_dot(g, f), 0);
  fclose(f);
  CHECK(strstr(dot, "cluster_fused0") && strstr(dot, "style=dashed, label=\"multiply_1"));
  free(dot);
  strata_graph_destroy(g);

  /* read twice (a * a): never Virtual; a constant: Hosted(Constant),
   * computed by the first run only */
  strata_context *ctx;
  strata_array *a, *sq, *c, *y;
  const char *in = "x", *out = "y";
  int64_t n = strata_array_nelems(x);
  CHECK_EQ(strata_context_create(&ctx), 0);
  strata_deferred_begin(ctx, 1);
  CHECK_EQ(strata_binary_scalar(ctx, STRATA_FN_ADD, x, strata_float(1), 0, &a), 0);
  CHECK_EQ(strata_binary(ctx, STRATA_FN_MUL, a, a, &sq), 0);
  CHECK_EQ(strata_full(ctx, 1, &n, STRATA_FLOAT32, 3, &c), 0);
  CHECK_EQ(strata_binary(ctx, STRATA_FN_SUB, sq, c, &y), 0);
  strata_deferred_end(ctx);
  CHECK_EQ(strata_graph_export(1, &x, &in, 1, &y, &out, &g), 0);
  CHECK_EQ(strata_graph_compile(g), 0);
  CHECK(strcmp(node_mode(g, "add_1"), "Local") == 0);
  CHECK(strcmp(node_mode(g, "multiply_2"), "Virtual") == 0);
  CHECK(strcmp(node_mode(g, "full_3"), "Hosted(Constant)") == 0);
  CHECK_EQ(strata_graph_nkernels(g), 3); /* add, full, fused multiply-subtract */
  /* add_1 is a scratch buffer of one task with the fused kernel reading it */
  CHECK_EQ(strata_graph_ntasks(g), 2);
  for (int run = 0; run < 2; run++) {
    strata_array *r = NULL;
    int tasks = strata_graph_ntasks(g);
    executed_tasks();
    CHECK_EQ(strata_graph_run(g, &x, &r), 0);
    CHECK_EQ(executed_tasks(), tasks);
    CHECK(value_at(r, 5) == (ramp(5) + 1) * (ramp(5) + 1) - 3);
    strata_array_destroy(r);
    CHECK_EQ(strata_graph_nkernels(g), 2); /* full is known */
    CHECK_EQ(strata_graph_ntasks(g), 1);
  }
  strata_graph_destroy(g);
  strata_array *held[] = {a, sq, c, y};
  for (int k = 0; k < 4; k++)
    strata_array_destroy(held[k]);
  strata_context_destroy(ctx);
}

/* Modes that cannot hold are refused by compile (and run), with the node's
 * name; the graph stays uncompiled and usable once the mode is dropped. */
static void check_compile_errors(strata_array *x)
{
  strata_graph *g = chain(x);
  CHECK_EQ(strata_node_set_memory_mode(g, "y", M(VIRTUAL)), 0);
  CHECK_EQ(strata_graph_compile(g), STRATA_EINVAL);
  CHECK(strstr(strata_error_message(), "add_2") != NULL);
  strata_array *out = NULL;
  CHECK_EQ(strata_graph_run(g, &x, &out), STRATA_EINVAL);
  CHECK(out == NULL);
  CHECK(strcmp(node_mode(g, "y"), "Virtual") == 0);
  strata_graph_destroy(g);

  g = chain(x);
  CHECK_EQ(strata_node_set_memory_mode(g, "x", DEV(UNSET)), 0);
  CHECK_EQ(strata_graph_compile(g), STRATA_EINVAL);
  CHECK(strstr(strata_error_message(), "'x'") != NULL);
  strata_graph_destroy(g);

  /* Virtual on a node read by a non-elementwise node */
  strata_context *ctx;
  strata_array *a, *s;
  strata_graph *h = NULL;
  CHECK_EQ(strata_context_create(&ctx), 0);
  strata_deferred_begin(ctx, 1);
  CHECK_EQ(strata_binary_scalar(ctx, STRATA_FN_MUL, x, strata_float(2), 0, &a), 0);
  CHECK_EQ(strata_reduce(ctx, STRATA_FN_SUM, a, 0, NULL, 0, &s), 0);
  strata_deferred_end(ctx);
  CHECK_EQ(strata_graph_export(1, &x, NULL, 1, &s, NULL, &h), 0);
  CHECK_EQ(strata_node_set_memory_mode(h, "multiply_1", M(VIRTUAL)), 0);
  CHECK_EQ(strata_graph_compile(h), STRATA_EINVAL);
  CHECK(strstr(strata_error_message(), "multiply_1") != NULL);
  CHECK_EQ(strata_graph_nkernels(h), STRATA_EINVAL);
  strata_graph_destroy(h);
  strata_array_destroy(a);
  strata_array_destroy(s);
  strata_context_destroy(ctx);
}

/* ---- fused against eager on random chains ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static int rnd(int n)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (int)(rng % (uint64_t)n);
}

/* Same dtype, shape and bytes (NaNs of any payload match). */
static int same_values(strata_array *a, strata_array *b)
{
  strata_dtype t = (strata_dtype)strata_array_dtype(a);
  if ((int)t != strata_array_dtype(b) || strata_array_nelems(a) != strata_array_nelems(b))
    return 0;
  const unsigned char *pa, *pb;
  if (strata_array_acquire(a, STRATA_READ, (void **)&pa))
    return 0;
  int same = strata_array_acquire(b, STRATA_READ, (void **)&pb) == 0;
  size_t es = strata_dtype_size(t);
  for (int64_t i = 0; same && i < strata_array_nelems(a); i++) {
    const unsigned char *x = pa + (size_t)i * es, *y = pb + (size_t)i * es;
    int both_nan = 0;
    if (t == STRATA_FLOAT32) {
      float fx, fy;
      memcpy(&fx, x, sizeof fx);
      memcpy(&fy, y, sizeof fy);
      both_nan = isnan(fx) && isnan(fy);
    } else if (t == STRATA_FLOAT64) {
      double dx, dy;
      memcpy(&dx, x, sizeof dx);
      memcpy(&dy, y, sizeof dy);
      both_nan = isnan(dx) && isnan(dy);
    }
    same = both_nan || memcmp(x, y, es) == 0;
  }
  if (pb)
    strata_array_release(b);
  strata_array_release(a);
  return same;
}

/* One random step on operands from the pool, eager (ctx NULL) or recorded:
 * both calls get the same choices from the same seed. */
static int random_op(strata_context *ctx, strata_array **pool, int npool, uint64_t seed,
                     strata_array **out)
{
  uint64_t saved = rng;
  rng = seed;
  strata_array *a = pool[rnd(npool)], *b = pool[rnd(npool)], *c = pool[rnd(npool)];
  int kind = rnd(5), ret;
  static const strata_fn unary[] = {STRATA_FN_NEG, STRATA_FN_ABS, STRATA_FN_EXP, STRATA_FN_LOG,
                                    STRATA_FN_SQRT};
  strata_fn binary = (strata_fn)(STRATA_FN_ADD + rnd(STRATA_FN_GE - STRATA_FN_ADD + 1));
  strata_scalar s = rnd(2) ? strata_int(rnd(7) - 3) : strata_float((rnd(13) - 6) * 0.75);
  switch (kind) {
  case 0: ret = strata_unary(ctx, unary[rnd(5)], a, out); break;
  case 1: ret = strata_binary(ctx, binary, a, b, out); break;
  case 2: ret = strata_binary_scalar(ctx, binary, a, s, rnd(2), out); break;
  case 3: ret = strata_where(ctx, a, b, c, out); break;
  default: ret = strata_astype(ctx, a, (strata_dtype)rnd(STRATA_NDTYPES), out); break;
  }
  rng = saved;
  return ret;
}

/* Shared objects in the kernel cache ($STRATA_JIT_CACHE: CTest sets a
 * shared one, check_kernel_cache() fresh ones; unset: the default of
 * graphs/jit.c, when the test runs on its own). */
static int count_built_kernels(void)
{
  const char *dir = getenv("STRATA_JIT_CACHE"), *xdg = getenv("XDG_CACHE_HOME");
  char path[4096];
  if (!dir) {
    snprintf(path, sizeof path, xdg ? "%s/strata/jit" : "%s/.cache/strata/jit",
             xdg              ? xdg
             : getenv("HOME") ? getenv("HOME")
                              : ".");
    dir = path;
  }
  DIR *d = opendir(dir);
  int count = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    count += strstr(e->d_name, ".so") != NULL;
  if (d)
    closedir(d);
  return count;
}

static double small_ints(int64_t i) { return (double)((i * 7) % 11) - 5; }

/* Set STRATA_JIT_CC to `cc` (NULL: unset); returns the previous value
 * (to free). */
static char *swap_compiler(const char *cc)
{
  const char *now = getenv("STRATA_JIT_CC");
  char *saved = now ? strdup(now) : NULL;
  cc ? setenv("STRATA_JIT_CC", cc, 1) : unsetenv("STRATA_JIT_CC");
  return saved;
}

/* With `program`, no C compiler: fused groups run as programs. Generated
 * kernels cost a compiler run per graph (seconds under the sanitizers), so
 * fewer cases take that path. */
static void check_random_chains(int program)
{
  char *saved_cc = program ? swap_compiler("/nonexistent/cc") : NULL;
  const int ncases = program ? 150 : 40;
  static const int64_t shapes[][2] = {{3, 4}, {1, 4}, {3, 1}};
  int fused_kernels = 0, nodes = 0, tasks = 0;
  for (int c = 0; c < ncases; c++) {
    strata_array *eager[24], *lazy[24];
    int np = 0;
    for (int k = 0; k < 2; k++) {
      strata_dtype t = (strata_dtype)rnd(STRATA_NDTYPES);
      eager[np] = lazy[np] = filled(2, shapes[k == 0 ? 0 : rnd(3)], t, small_ints);
      np++;
    }
    strata_context *ctx;
    CHECK_EQ(strata_context_create(&ctx), 0);
    int len = 2 + rnd(12), ninputs = np;
    for (int step = 0; step < len && np < 24; step++) {
      uint64_t seed = ((uint64_t)(c * 64 + step) * 0x9e3779b97f4a7c15ull) | 1;
      strata_array *e = NULL, *l = NULL;
      int re = random_op(NULL, eager, np, seed, &e);
      strata_deferred_begin(ctx, 1);
      int rl = random_op(ctx, lazy, np, seed, &l);
      strata_deferred_end(ctx);
      CHECK_EQ(rl, re);
      if (re || rl) {
        strata_array_destroy(e);
        strata_array_destroy(l);
        continue;
      }
      eager[np] = e;
      lazy[np++] = l;
    }
    if (np == ninputs) {
      strata_array_destroy(eager[0]);
      strata_array_destroy(eager[1]);
      strata_context_destroy(ctx);
      continue;
    }
    /* outputs: the last value, and one earlier value half of the time */
    strata_array *outs[2] = {lazy[np - 1], lazy[ninputs + rnd(np - ninputs)]};
    int nout = rnd(2) && outs[1] != outs[0] ? 2 : 1;
    strata_graph *g = NULL;
    strata_array *bound[2] = {lazy[0], lazy[1]};
    int nin = 2, ret = strata_graph_export(nin, bound, NULL, nout, outs, NULL, &g);
    for (int k = 0; ret == STRATA_EUNUSED && k < 2 && !g; k++) { /* one input is unused */
      bound[0] = lazy[k];
      nin = 1;
      if ((ret = strata_graph_export(nin, bound, NULL, nout, outs, NULL, &g)) == STRATA_EUNBOUND)
        ret = STRATA_EUNUSED; /* the output needs the other one */
    }
    CHECK_EQ(ret, 0);
    fused_kernels += g ? strata_graph_nkernels(g) : 0;
    tasks += g ? strata_graph_ntasks(g) : 0;
    nodes += g ? strata_graph_nnodes(g) - nin : 0;
    for (int run = 0; g && run < 2; run++) {
      strata_array *got[2] = {NULL, NULL};
      CHECK_EQ(strata_graph_run(g, bound, got), 0);
      int idx[2] = {np - 1, -1};
      for (int k = ninputs; k < np; k++)
        if (lazy[k] == outs[1])
          idx[1] = k;
      for (int o = 0; o < nout; o++) {
        int same = got[o] && same_values(got[o], eager[idx[o]]);
        if (!same)
          fprintf(stderr, "case %d output %d differs from eager\n", c, o);
        CHECK(same);
        strata_array_destroy(got[o]);
      }
    }
    strata_graph_destroy(g);
    for (int k = 0; k < np; k++) {
      strata_array_destroy(eager[k]);
      if (k >= ninputs)
        strata_array_destroy(lazy[k]);
    }
    strata_context_destroy(ctx);
  }
  /* fusion happened: fewer kernels than operation nodes, built into the
   * cache (not the node-by-node fallback) */
  printf("random chains%s: %d operation nodes ran as %d kernels in %d tasks\n",
         program ? " (programs)" : "", nodes, fused_kernels, tasks);
  CHECK(fused_kernels < nodes);
  CHECK(tasks < fused_kernels); /* small nodes read twice are Local: sequences */
  if (program) {
    free(swap_compiler(saved_cc));
    free(saved_cc);
  } else {
    CHECK(count_built_kernels() > 0);
  }
}

/* ---- fused groups cut across workers ---- */

static double row_index(int64_t i) { return (double)(i / 1000 % 13) - 6; }
static double column_index(int64_t i) { return (double)(i % 1000) * 0.25; }

/* A chain built twice by build(c, in): eagerly (c NULL), its result into
 * *eager, then recorded in ctx, its (lazy) result into *recorded. */
static void eager_and_recorded(strata_context *ctx,
                               strata_array *(*build)(strata_context *, strata_array *const *),
                               strata_array *const *in, strata_array **eager,
                               strata_array **recorded)
{
  *eager = build(NULL, in);
  strata_deferred_begin(ctx, 1);
  *recorded = build(ctx, in);
  strata_deferred_end(ctx);
}

/* 100 nodes, alternately y * 0.5 and y + 1: on 10^6 floats, several fused
 * groups, each result above the chunking size and read by the next. */
static strata_array *halving_chain(strata_context *c, strata_array *const *in)
{
  strata_array *y = in[0];
  for (int i = 0; i < 100 && y; i++) {
    strata_array *next = NULL;
    CHECK_EQ(i % 2 ? strata_binary_scalar(c, STRATA_FN_ADD, y, strata_float(1), 0, &next)
                   : strata_binary_scalar(c, STRATA_FN_MUL, y, strata_float(0.5), 0, &next),
             0);
    if (y != in[0])
      strata_array_destroy(y);
    y = next;
  }
  return y;
}

/* max(x * 0.5 + 1): a fused group whose intermediate result (4 MB, cut in
 * chunks) is read by a reduction, not by another group. */
static strata_array *max_of_group(strata_context *c, strata_array *const *in)
{
  strata_array *half = NULL, *y = NULL, *m = NULL;
  CHECK_EQ(strata_binary_scalar(c, STRATA_FN_MUL, in[0], strata_float(0.5), 0, &half), 0);
  CHECK_EQ(strata_binary_scalar(c, STRATA_FN_ADD, half, strata_float(1), 0, &y), 0);
  CHECK_EQ(strata_reduce(c, STRATA_FN_MAX, y, STRATA_ALL_AXES, NULL, 0, &m), 0);
  strata_array_destroy(half);
  strata_array_destroy(y);
  return m;
}

/* The chain build(x) built eagerly (result into *eager) and recorded in ctx,
 * its lazy result checked against the eager one; the recording's graph. */
static strata_graph *export_checked(strata_context *ctx,
                                    strata_array *(*build)(strata_context *, strata_array *const *),
                                    strata_array *x, strata_array **eager)
{
  strata_array *lazy = NULL;
  strata_graph *g = NULL;
  eager_and_recorded(ctx, build, &x, eager, &lazy);
  CHECK_EQ(strata_graph_export(1, &x, NULL, 1, &lazy, NULL, &g), 0);
  CHECK(lazy && same_values(lazy, *eager));
  strata_array_destroy(lazy);
  return g;
}

/* Fused intermediates above the chunking size on 2 workers, lazily and
 * replayed against eager: read by the next group of a long chain, and by a
 * reduction. */
static void check_chunked_intermediates(void)
{
  const int64_t n = 1000000;
  strata_array *x = NULL, *eager = NULL, *got = NULL;
  CHECK_EQ(strata_full(NULL, 1, &n, STRATA_FLOAT32, 3, &x), 0);
  strata_context *ctx;
  CHECK_EQ(strata_context_create(&ctx), 0);
  strata_graph *g = export_checked(ctx, halving_chain, x, &eager);
  int kernels = strata_graph_nkernels(g), tasks = 0;
  for (int run = 0; run < 2; run++) {
    executed_tasks();
    CHECK_EQ(strata_graph_run(g, &x, &got), 0);
    CHECK(got && same_values(got, eager));
    tasks = executed_tasks();
    strata_array_destroy(got);
    got = NULL;
  }
  printf("chain of 100 nodes on 10^6: %d kernels in %d tasks\n", kernels, tasks);
  CHECK(kernels > 1);
  CHECK_EQ(tasks, 2 * kernels); /* intermediates are chunked too */
  strata_graph_destroy(g);
  strata_array_destroy(eager);
  g = export_checked(ctx, max_of_group, x, &eager);
  CHECK_EQ(strata_graph_run(g, &x, &got), 0);
  CHECK(got && same_values(got, eager));
  float *m = NULL;
  if (eager && strata_array_acquire(eager, STRATA_READ, (void **)&m) == 0) {
    CHECK_EQ(m[0], 2.5f);
    strata_array_release(eager);
  }
  strata_array_destroy(got);
  strata_graph_destroy(g);
  strata_array_destroy(eager);
  strata_context_destroy(ctx);
  strata_array_destroy(x);
}

/* (x * col + row) * x - col, col and row broadcast along either dimension. */
static strata_array *broadcast_chain(strata_context *c, strata_array *const *in)
{
  strata_array *v[3] = {NULL, NULL, NULL}, *y = NULL;
  CHECK_EQ(strata_binary(c, STRATA_FN_MUL, in[0], in[1], &v[0]), 0);
  CHECK_EQ(strata_binary(c, STRATA_FN_ADD, v[0], in[2], &v[1]), 0);
  CHECK_EQ(strata_binary(c, STRATA_FN_MUL, v[1], in[0], &v[2]), 0);
  CHECK_EQ(strata_binary(c, STRATA_FN_SUB, v[2], in[1], &y), 0);
  for (int k = 0; k < 3; k++)
    strata_array_destroy(v[k]);
  return y;
}

/* A chain on a result of 300 x 1000 float32 (above the 1 MiB from which a
 * fused group is cut into one chunk of rows per worker) with leaves
 * broadcast along either dimension: (x * col + row) * x - col, fused, in
 * chunks (one task per worker; STARPU_NCPU is 2 here), against the same
 * operations run eagerly. With `program`, no C compiler: the chunks run
 * the group's program. */
static void check_chunked_fusion(int program)
{
  char *saved_cc = program ? swap_compiler("/nonexistent/cc") : NULL;
  const int64_t shape[2] = {300, 1000}, col_shape[2] = {1, 1000}, row_shape[2] = {300, 1};
  strata_array *x = filled(2, shape, STRATA_FLOAT32, ramp),
               *col = filled(2, col_shape, STRATA_FLOAT32, column_index),
               *row = filled(2, row_shape, STRATA_FLOAT32, row_index);
  strata_array *in[3] = {x, col, row}, *eager = NULL, *y = NULL, *got = NULL;
  strata_context *ctx;
  CHECK_EQ(strata_context_create(&ctx), 0);
  eager_and_recorded(ctx, broadcast_chain, in, &eager, &y);
  strata_graph *g = NULL;
  CHECK_EQ(strata_graph_export(3, in, NULL, 1, &y, NULL, &g), 0);
  strata_array_destroy(y);
  CHECK_EQ(strata_graph_nkernels(g), 1);
  executed_tasks();
  CHECK_EQ(strata_graph_run(g, in, &got), 0);
  int tasks = executed_tasks();
  printf("fused chain on 300 x 1000%s: %d tasks\n", program ? " (program)" : "", tasks);
  CHECK_EQ(tasks, 2); /* one chunk per worker */
  CHECK(got && same_values(got, eager));
  strata_array_destroy(got);
  strata_graph_destroy(g);
  strata_array_destroy(eager);
  strata_context_destroy(ctx);
  strata_array_destroy(x);
  strata_array_destroy(col);
  strata_array_destroy(row);
  if (program) {
    free(swap_compiler(saved_cc));
    free(saved_cc);
  }
}

static double quarter_of_column(int64_t j) { return (double)(j % 300) * 0.25; }
static double centred_row(int64_t i) { return (double)(i % 13) - 6; }

/* Eager operations on results of 1 MiB or more run as one chunk of rows
 * per worker too (STARPU_NCPU is 2 here): x + row (float32 + float64, row
 * broadcast down), times col (int32, broadcast across), times 0.5, each
 * element against its value computed here (exact in doubles). */
static void check_chunked_eager(void)
{
  const int64_t shape[2] = {1000, 300}, row_shape[2] = {1, 300}, col_shape[2] = {1000, 1};
  strata_array *x = filled(2, shape, STRATA_FLOAT32, ramp),
               *row = filled(2, row_shape, STRATA_FLOAT64, quarter_of_column),
               *col = filled(2, col_shape, STRATA_INT32, centred_row), *y = NULL, *z = NULL,
               *w = NULL;
  executed_tasks();
  CHECK_EQ(strata_binary(NULL, STRATA_FN_ADD, x, row, &y), 0);
  CHECK_EQ(strata_binary(NULL, STRATA_FN_MUL, y, col, &z), 0);
  CHECK_EQ(strata_binary_scalar(NULL, STRATA_FN_MUL, z, strata_float(0.5), 0, &w), 0);
  int tasks = executed_tasks();
  printf("three eager operations on 1000 x 300 float64: %d tasks\n", tasks);
  CHECK_EQ(tasks, 6);
  const double *p = NULL;
  int64_t wrong = 0;
  int read = w && strata_array_acquire(w, STRATA_READ, (void **)&p) == 0;
  CHECK(read);
  if (read) {
    CHECK_EQ(strata_array_dtype(w), STRATA_FLOAT64);
    for (int64_t i = 0; i < shape[0]; i++)
      for (int64_t j = 0; j < shape[1]; j++)
        wrong += p[i * shape[1] + j] !=
                 (ramp(i * shape[1] + j) + quarter_of_column(j)) * centred_row(i) * 0.5;
    strata_array_release(w);
  }
  CHECK_EQ(wrong, 0);
  strata_array_destroy(w);
  strata_array_destroy(z);
  strata_array_destroy(y);
  strata_array_destroy(x);
  strata_array_destroy(row);
  strata_array_destroy(col);
}

/* ---- host transfers, Hosted intermediates ---- */

static double twice(int64_t i) { return 2.0 * (double)i; }

static void check_host_transfers(void)
{
  int64_t n = 1000;
  strata_array *x = filled(1, &n, STRATA_FLOAT64, ramp), *out = NULL, *mid = NULL;
  strata_graph *g = chain(x);
  CHECK_EQ(strata_graph_node_value(g, "multiply_1", &mid), STRATA_ESTATE);
  CHECK_EQ(strata_node_set_memory_mode(g, "multiply_1", HOST(ANY)), 0);
  CHECK_EQ(strata_graph_run(g, &x, &out), 0);
  CHECK_EQ(strata_graph_nkernels(g), 2);
  CHECK(value_at(out, 7) == 2 * ramp(7) + 1);
  CHECK_EQ(strata_graph_node_value(g, "multiply_1", &mid), 0);
  CHECK(mid && value_at(mid, 7) == 2 * ramp(7));
  CHECK_EQ(strata_graph_node_value(g, "y", &mid), STRATA_ESTATE); /* outputs are run results */
  strata_array_destroy(out);
  strata_array_destroy(mid);

  /* the host writes the input: the next run sees the new values */
  double *p;
  CHECK_EQ(strata_array_acquire(x, STRATA_WRITE, (void **)&p), 0);
  for (int64_t i = 0; i < n; i++)
    p[i] = twice(i);
  strata_array_release(x);
  CHECK_EQ(strata_graph_run(g, &x, &out), 0);
  CHECK(value_at(out, 999) == 2 * twice(999) + 1);
  CHECK_EQ(strata_graph_node_value(g, "multiply_1", &mid), 0);
  CHECK(value_at(mid, 999) == 2 * twice(999));
  strata_array_destroy(mid);
  strata_array_destroy(out);
  strata_graph_destroy(g);

  /* an On_device intermediate across runs with changing inputs; a Local
   * one has no kept value */
  g = chain(x);
  CHECK_EQ(strata_node_set_memory_mode(g, "multiply_1", DEV(UNSET)), 0);
  for (int run = 0; run < 3; run++) {
    CHECK_EQ(strata_array_acquire(x, STRATA_WRITE, (void **)&p), 0);
    for (int64_t i = 0; i < n; i++)
      p[i] = (double)(run * 10 + i);
    strata_array_release(x);
    CHECK_EQ(strata_graph_run(g, &x, &out), 0);
    CHECK(value_at(out, 3) == 2.0 * (run * 10 + 3) + 1);
    strata_array_destroy(out);
  }
  CHECK_EQ(strata_graph_node_value(g, "multiply_1", &mid), STRATA_EINVAL);
  strata_graph_destroy(g);
  strata_array_destroy(x);
}

/* A chain of `nodes` run twice with the given compiler and extra flags
 * (NULL: the environment's) and the kernel cache `cache` (a fresh one: the
 * shared one may hold this kernel already); returns the shared objects the
 * cache holds afterwards. */
static int run_with_cache(strata_array *x, int nodes, const char *compiler, const char *flags,
                          const char *cache)
{
  const char *saved_cc = getenv("STRATA_JIT_CC"), *saved_cache = getenv("STRATA_JIT_CACHE"),
             *saved_flags = getenv("STRATA_JIT_FLAGS");
  char *cc = saved_cc ? strdup(saved_cc) : NULL, *old = saved_cache ? strdup(saved_cache) : NULL,
       *old_flags = saved_flags ? strdup(saved_flags) : NULL;
  if (compiler)
    setenv("STRATA_JIT_CC", compiler, 1);
  if (flags)
    setenv("STRATA_JIT_FLAGS", flags, 1);
  setenv("STRATA_JIT_CACHE", cache, 1);
  strata_graph *g = chain_of(x, nodes);
  for (int run = 0; run < 2; run++) {
    strata_array *out = NULL;
    CHECK_EQ(strata_graph_run(g, &x, &out), 0);
    CHECK(value_at(out, 11) == chain_value(ramp(11), nodes));
    strata_array_destroy(out);
  }
  strata_graph_destroy(g);
  int built = count_built_kernels();
  cc ? setenv("STRATA_JIT_CC", cc, 1) : unsetenv("STRATA_JIT_CC");
  old_flags ? setenv("STRATA_JIT_FLAGS", old_flags, 1) : unsetenv("STRATA_JIT_FLAGS");
  old ? setenv("STRATA_JIT_CACHE", old, 1) : unsetenv("STRATA_JIT_CACHE");
  free(cc);
  free(old);
  free(old_flags);
  return built;
}

/* The chain's one kernel is built once and reused; without a usable C
 * compiler nothing is built and the group runs node by node. Extra flags
 * (STRATA_JIT_FLAGS) reach the compiler: a flag it rejects builds nothing,
 * other flags build a second kernel next to the first. A chain of 96 nodes
 * fuses into three groups of 32 alike but for their nodes: one kernel. */
static void check_kernel_cache(strata_array *x)
{
  check_scratch_open("strata_jit");
  CHECK_EQ(run_with_cache(x, 2, NULL, NULL, check_path("built")), 1);
  CHECK_EQ(run_with_cache(x, 2, "/nonexistent/cc", NULL, check_path("none")), 0);
  CHECK_EQ(run_with_cache(x, 2, NULL, "-fno-such-flag-for-strata", check_path("bad_flag")), 0);
  CHECK_EQ(run_with_cache(x, 2, NULL, " -O1  -g ", check_path("built")), 2);
  CHECK_EQ(run_with_cache(x, 2, NULL, "-O1 -g", check_path("built")), 2);
  CHECK_EQ(run_with_cache(x, 96, NULL, NULL, check_path("alike")), 1);
  check_scratch_close();
}

/* y = a * a + sum(b) with a = x + 1, b = a * 2, in the modes given for a,
 * b and the sum (a * a is Virtual in y's fused kernel). */
static strata_graph *sum_graph(strata_array *x, const strata_memory_mode *mode)
{
  strata_context *ctx;
  strata_array *a, *b, *s, *sq, *y;
  strata_graph *g = NULL;
  const char *in = "x", *out = "y", *names[] = {"add_1", "multiply_2", "sum_3"};
  CHECK_EQ(strata_context_create(&ctx), 0);
  strata_deferred_begin(ctx, 1);
  CHECK_EQ(strata_binary_scalar(ctx, STRATA_FN_ADD, x, strata_float(1), 0, &a), 0);
  CHECK_EQ(strata_binary_scalar(ctx, STRATA_FN_MUL, a, strata_float(2), 0, &b), 0);
  CHECK_EQ(strata_reduce(ctx, STRATA_FN_SUM, b, STRATA_ALL_AXES, NULL, 0, &s), 0);
  CHECK_EQ(strata_binary(ctx, STRATA_FN_MUL, a, a, &sq), 0);
  CHECK_EQ(strata_binary(ctx, STRATA_FN_ADD, sq, s, &y), 0);
  strata_deferred_end(ctx);
  CHECK_EQ(strata_graph_export(1, &x, &in, 1, &y, &out, &g), 0);
  for (int k = 0; k < 3; k++)
    CHECK_EQ(strata_node_set_memory_mode(g, names[k], mode[k]), 0);
  strata_array *held[] = {a, b, s, sq, y};
  for (int k = 0; k < 5; k++)
    strata_array_destroy(held[k]);
  strata_context_destroy(ctx);
  return g;
}

/* Local nodes run in one task with their readers (checked with StarPU's
 * count of executed tasks); where a task outside them sits between the
 * readers, the default falls back to On_device and a user's Local is
 * refused. Without a C compiler the fused group runs as a program, inside
 * the sequence too. */
static void check_local_sequences(strata_array *x)
{
  static const struct {
    strata_memory_mode mode[3]; /* add_1, multiply_2, sum_3 */
    const char *add_1, *sum_3;  /* decisions; NULL: compile fails */
    int ntasks;
  } cases[] = {
      /* all small: Local, the four kernels one task */
      {{M(UNDECIDED), M(UNDECIDED), M(UNDECIDED)}, "Local", "Local", 1},
      /* an On_device node inside the task, written before it is read */
      {{M(UNDECIDED), DEV(UNSET), M(UNDECIDED)}, "Local", "Local", 1},
      /* sum_3 outside reads multiply_2 and feeds add_5: add_1 cannot be
       * a scratch buffer of both */
      {{M(UNDECIDED), DEV(UNSET), DEV(UNSET)},
       "On_device(Shared_cross_streams)",
       "On_device(Shared_cross_streams)",
       4},
      {{M(LOCAL), DEV(UNSET), DEV(UNSET)}, NULL, NULL, 0},
  };
  int64_t n = strata_array_nelems(x);
  double sum = 0;
  for (int64_t i = 0; i < n; i++)
    sum += 2 * (ramp(i) + 1);
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    strata_graph *g = sum_graph(x, cases[c].mode);
    if (!cases[c].add_1) {
      CHECK_EQ(strata_graph_compile(g), STRATA_EINVAL);
      CHECK(strstr(strata_error_message(), "'add_1' cannot be Local"));
      CHECK(strcmp(node_mode(g, "add_1"), "Local") == 0); /* unchanged */
      strata_graph_destroy(g);
      continue;
    }
    CHECK_EQ(strata_graph_compile(g), 0);
    CHECK(strcmp(node_mode(g, "add_1"), cases[c].add_1) == 0);
    CHECK(strcmp(node_mode(g, "sum_3"), cases[c].sum_3) == 0);
    CHECK_EQ(strata_graph_nkernels(g), 4);
    CHECK_EQ(strata_graph_ntasks(g), cases[c].ntasks);
    for (int run = 0; run < 2; run++) {
      strata_array *y = NULL;
      executed_tasks();
      CHECK_EQ(strata_graph_run(g, &x, &y), 0);
      CHECK_EQ(executed_tasks(), cases[c].ntasks);
      for (int64_t i = 0; i < n; i++) /* small integers: exact */
        CHECK(value_at(y, i) == (ramp(i) + 1) * (ramp(i) + 1) + sum);
      strata_array_destroy(y);
    }
    strata_graph_destroy(g);
    g = sum_graph(x, cases[c].mode);
    char *cc = swap_compiler("/nonexistent/cc");
    strata_array *y = NULL;
    executed_tasks();
    CHECK_EQ(strata_graph_run(g, &x, &y), 0);
    CHECK_EQ(executed_tasks(), cases[c].ntasks); /* the fused group as a program */
    for (int64_t i = 0; i < n; i++)
      CHECK(value_at(y, i) == (ramp(i) + 1) * (ramp(i) + 1) + sum);
    strata_array_destroy(y);
    strata_graph_destroy(g);
    free(swap_compiler(cc));
    free(cc);
  }
}

/* Lazy computation compiles what it runs: intermediates the application
 * dropped fuse into their reader's kernel, the ones it holds are kept. */
static void check_lazy_fusion(strata_array *x)
{
  for (int hold = 0; hold < 2; hold++) {
    strata_context *ctx;
    strata_array *a, *b, *y;
    CHECK_EQ(strata_context_create(&ctx), 0);
    strata_deferred_begin(ctx, 1);
    CHECK_EQ(strata_binary_scalar(ctx, STRATA_FN_MUL, x, strata_float(2), 0, &a), 0);
    CHECK_EQ(strata_binary_scalar(ctx, STRATA_FN_ADD, a, strata_float(1), 0, &b), 0);
    CHECK_EQ(strata_binary(ctx, STRATA_FN_MUL, b, b, &y), 0);
    strata_deferred_end(ctx);
    if (!hold) {
      strata_array_destroy(a);
      strata_array_destroy(b);
    }
    executed_tasks();
    CHECK_EQ(strata_compute(&y, 1), 0);
    /* dropped: a is Virtual in b's kernel, b (read twice, small) shares
     * y's task; held: one task each */
    CHECK_EQ(executed_tasks(), hold ? 3 : 1);
    for (int64_t i = 0; i < strata_array_nelems(x); i++)
      CHECK(value_at(y, i) == (2 * ramp(i) + 1) * (2 * ramp(i) + 1));
    if (hold) {
      CHECK(value_at(a, 3) == 2 * ramp(3) && value_at(b, 3) == 2 * ramp(3) + 1);
      strata_array_destroy(a);
      strata_array_destroy(b);
    }
    strata_array_destroy(y);
    strata_context_destroy(ctx);
  }
}

/* Every mode's name parses back to the same mode; other text is refused. */
static void check_mode_names(void)
{
  int named = 0;
  for (int k = STRATA_MEM_UNDECIDED; k <= STRATA_MEM_HOSTED; k++)
    for (int t = STRATA_MEMTYPE_ANY; t <= STRATA_MEMTYPE_VOLATILE; t++)
      for (int s = STRATA_SHARING_UNSET; s <= STRATA_SHARING_SHARED; s++) {
        strata_memory_mode m = MODE(k, t, s), back;
        char name[64];
        if (strata_memory_mode_format(m, name, sizeof name) <= 0)
          continue;
        CHECK_EQ(strata_memory_mode_parse(name, &back), 0);
        CHECK(strcmp(mode_name(back), name) == 0);
        named++;
      }
  CHECK(named >= 19); /* the table of docs/memory-modes.md */
  const char *bad[] = {"", "virtual", "Local(", "On_device", "Hosted(Volatile) ", "Hosted()"};
  strata_memory_mode m;
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
    CHECK_EQ(strata_memory_mode_parse(bad[k], &m), STRATA_EINVAL);
  CHECK_EQ(strata_memory_mode_parse(NULL, &m), STRATA_EINVAL);
}

/* A graph reloaded from its JSON has the same mode on every node. */
static strata_graph *reloaded(const strata_graph *g)
{
  char *json = NULL;
  strata_graph *back = NULL;
  CHECK_EQ(strata_graph_to_json(g, &json), 0);
  CHECK_EQ(strata_graph_from_json(json, strlen(json), &back), 0);
  const char *nodes[] = {"x", "multiply_1", "y"};
  for (int k = 0; k < 3; k++)
    CHECK(strcmp(node_mode(back, nodes[k]), node_mode(g, nodes[k])) == 0);
  free(json);
  return back;
}

/* Modes travel in the JSON: user refinements, then compiled decisions. */
static void check_json_modes(strata_array *x)
{
  strata_graph *g = chain(x);
  char *json = NULL;
  CHECK_EQ(strata_node_set_memory_mode(g, "multiply_1", M(NEVER_VIRTUAL)), 0);
  CHECK_EQ(strata_graph_to_json(g, &json), 0);
  CHECK(strstr(json, "\"memory_mode\":\t\"Never_virtual\""));
  CHECK(!strstr(json, "Undecided")); /* undecided nodes say nothing */
  free(json);
  strata_graph *back = reloaded(g);
  CHECK(strcmp(node_mode(back, "multiply_1"), "Never_virtual") == 0);
  CHECK_EQ(strata_graph_nkernels(back), 2); /* still not Virtual after a reload */
  strata_graph_destroy(back);

  CHECK_EQ(strata_graph_compile(g), 0);
  back = reloaded(g);
  CHECK(strcmp(node_mode(back, "multiply_1"), "Local") == 0);
  CHECK(strcmp(node_mode(back, "y"), "Hosted(Changed_on_devices(Shared_cross_streams))") == 0);
  CHECK_EQ(strata_graph_compile(back), 0);
  CHECK_EQ(strata_graph_nkernels(back), strata_graph_nkernels(g));
  strata_graph_destroy(back);
  strata_graph_destroy(g);

  const char *bad = "{\"format\": \"strata-graph\", \"version\": 1, \"inputs\": [0], "
                    "\"outputs\": [{\"name\": \"y\", \"node\": 0}], \"nodes\": [{\"name\": "
                    "\"x\", \"op\": \"input\", \"inputs\": [], \"dtype\": \"float32\", "
                    "\"shape\": [4], \"memory_mode\": \"Hosted(Sometimes)\"}]}";
  strata_graph *none = NULL;
  CHECK_EQ(strata_graph_from_json(bad, strlen(bad), &none), STRATA_EIO);
  CHECK(none == NULL && strstr(strata_error_message(), "memory_mode"));
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
  int64_t n = 64;
  strata_array *x = filled(1, &n, STRATA_FLOAT32, ramp);
  check_refinement_table(x);
  check_defaults(x);
  check_compile_errors(x);
  check_local_sequences(x);
  check_lazy_fusion(x);
  check_mode_names();
  check_json_modes(x);
  check_random_chains(0);
  check_random_chains(1);
  check_chunked_fusion(0);
  check_chunked_fusion(1);
  check_chunked_intermediates();
  check_chunked_eager();
  check_host_transfers();
  check_kernel_cache(x);
  strata_array_destroy(x);
  strata_finalize();
  return check_status();
}
