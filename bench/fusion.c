/* Fusion: chains of 2, 4, 8 and 16 elementwise nodes (cycling y * 0.5,
 * y + 1, sqrt(y), y - 0.25) on float32 arrays, replayed from one recording
 * exported twice: with the default memory modes (intermediates Virtual: one
 * fused kernel) and with every intermediate Never_virtual (one task per
 * node, the time baseline: `speedup`); and the chain run eagerly, each
 * temporary destroyed once its reader is submitted, as NumPy frees them
 * (the memory baseline: `peak_memory_saved`, and `speedup_vs_eager`). Each
 * variant runs in its own child process so that its peak resident memory
 * (VmHWM above the resident size before its first run, which includes kept
 * storage) is its own; times are medians of the rounds after a warm-up run
 * (which compiles the kernel). The results are compared by checksum.
 * Small nodes: a 64 x 64 normalisation graph whose intermediates are Local
 * runs as one task (a sequence, Local nodes in scratch buffers) against the
 * same graph with them On_device (one task per kernel). */
#include <math.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <strata/strata.h>

#include "bench_util.h"

extern char **environ;

static int step(strata_context *ctx, int i, strata_array *y, strata_array **out)
{
  switch (i % 4) {
  case 0: return strata_binary_scalar(ctx, STRATA_FN_MUL, y, strata_float(0.5), 0, out);
  case 1: return strata_binary_scalar(ctx, STRATA_FN_ADD, y, strata_float(1), 0, out);
  case 2: return strata_unary(ctx, STRATA_FN_SQRT, y, out);
  default: return strata_binary_scalar(ctx, STRATA_FN_SUB, y, strata_float(0.25), 0, out);
  }
}

/* A status line of /proc/self/status in kB. */
static double status_kb(const char *key)
{
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  double v = NAN;
  size_t n = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0)
      v = atof(line + n + 1);
  if (f)
    fclose(f);
  return v;
}

/* Reset VmHWM to the current resident size (Linux >= 4.0). */
static void reset_peak(void)
{
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (f) {
    fputs("5", f);
    fclose(f);
  }
}

static double checksum(strata_array *a)
{
  float *p;
  if (strata_array_acquire(a, STRATA_READ, (void **)&p) != 0)
    return NAN;
  double s = 0;
  for (int64_t i = 0; i < strata_array_nelems(a); i++)
    s += p[i];
  strata_array_release(a);
  return s;
}

/* The chain run eagerly, each intermediate destroyed once the next node
 * is submitted, as NumPy frees a temporary: the memory baseline. Its
 * output in *out. */
static int run_eager(strata_context *ctx, int nodes, strata_array *x, strata_array **out)
{
  strata_array *y = x;
  int ret = 0;
  for (int i = 0; i < nodes && !ret; i++) {
    strata_array *next = NULL;
    ret = step(ctx, i, y, &next);
    if (y != x)
      strata_array_destroy(y); /* freed once the node that reads it is done */
    y = next;
  }
  *out = y;
  return ret;
}

/* One variant in this process (fused, unfused or eager): prints
 * {"seconds", "peak_mb", "kernels", "checksum"}. */
static int child(int nodes, const char *variant, int64_t n, int rounds)
{
  const int fused = strcmp(variant, "fused") == 0, eager = strcmp(variant, "eager") == 0;
  if (strata_init(NULL, NULL, NULL) != 0)
    return 1;
  strata_array *x;
  float *p;
  strata_array_create(1, &n, STRATA_FLOAT32, &x);
  strata_array_acquire(x, STRATA_WRITE, (void **)&p);
  for (int64_t i = 0; i < n; i++)
    p[i] = 1.0f + (float)(i % 1000) / 1000.0f;
  strata_array_release(x);
  strata_context *ctx;
  strata_context_create(&ctx);
  strata_graph *g = NULL;
  int ret = 0;
  if (!eager) {
    strata_deferred_begin(ctx, 1);
    strata_array *y = x, **ys = calloc((size_t)nodes, sizeof *ys);
    for (int i = 0; i < nodes; i++) {
      step(ctx, i, y, &ys[i]);
      y = ys[i];
    }
    strata_deferred_end(ctx);
    ret = strata_graph_export(1, &x, NULL, 1, &y, NULL, &g);
    strata_memory_mode never_virtual = {STRATA_MEM_NEVER_VIRTUAL, 0, 0};
    /* unfused: every node but the input (0) and the output (last) kept */
    for (int i = 1; !ret && !fused && i + 1 < strata_graph_nnodes(g); i++)
      ret = strata_node_set_memory_mode(g, strata_graph_node_name(g, i), never_virtual);
    for (int i = 0; i < nodes; i++)
      strata_array_destroy(ys[i]);
    free(ys);
  }
  double base_kb = status_kb("VmRSS:");
  reset_peak();
  double *t = calloc((size_t)rounds, sizeof *t), sum = NAN;
  for (int r = -1; !ret && r < rounds; r++) { /* r = -1: warm-up */
    strata_array *out = NULL;
    double t0 = bench_now();
    ret = eager ? run_eager(ctx, nodes, x, &out) : strata_graph_run(g, &x, &out);
    if (!ret && (ret = strata_array_acquire(out, STRATA_READ, (void **)&p)) == 0)
      strata_array_release(out); /* waits for the run */
    if (r >= 0)
      t[r] = bench_now() - t0;
    if (!ret && r == rounds - 1)
      sum = checksum(out);
    strata_array_destroy(out);
  }
  double peak_mb = (status_kb("VmHWM:") - base_kb) / 1024.0;
  int kernels = eager ? nodes : strata_graph_nkernels(g);
  if (ret)
    fprintf(stderr, "bench_fusion: %s (%s)\n", strata_strerror(ret), strata_error_message());
  else
    printf("{\"seconds\": %.9g, \"peak_mb\": %.6g, \"kernels\": %d, \"checksum\": %.17g}\n",
           bench_median(t, rounds), peak_mb, kernels, sum);
  free(t);
  strata_graph_destroy(g);
  strata_context_destroy(ctx);
  strata_array_destroy(x);
  strata_finalize();
  return ret ? 1 : 0;
}

/* ---- small nodes: Local nodes in one task (sequence) or one task each ---- */

/* y = d / sum(d * d) with d = s - mean(s), s = sqrt(x * 0.5 + 1), over
 * axis 0 of an n x n float32 array: five intermediates of at most 16 KiB,
 * Local by default. */
static strata_graph *normalise_graph(strata_array *x)
{
  strata_context *ctx;
  strata_array *v[9];
  int axis = 0;
  strata_graph *g = NULL;
  strata_context_create(&ctx);
  strata_deferred_begin(ctx, 1);
  int ret = strata_binary_scalar(ctx, STRATA_FN_MUL, x, strata_float(0.5), 0, &v[0]);
  ret = ret ? ret : strata_binary_scalar(ctx, STRATA_FN_ADD, v[0], strata_float(1), 0, &v[1]);
  ret = ret ? ret : strata_unary(ctx, STRATA_FN_SQRT, v[1], &v[2]);
  ret = ret ? ret : strata_reduce(ctx, STRATA_FN_MEAN, v[2], 1, &axis, 1, &v[3]);
  ret = ret ? ret : strata_binary(ctx, STRATA_FN_SUB, v[2], v[3], &v[4]);
  ret = ret ? ret : strata_binary(ctx, STRATA_FN_MUL, v[4], v[4], &v[5]);
  ret = ret ? ret : strata_reduce(ctx, STRATA_FN_SUM, v[5], 1, &axis, 1, &v[6]);
  ret = ret ? ret : strata_binary(ctx, STRATA_FN_DIV, v[4], v[6], &v[7]);
  strata_deferred_end(ctx);
  if (!ret)
    ret = strata_graph_export(1, &x, NULL, 1, &v[7], NULL, &g);
  for (int k = 0; k < 8; k++)
    strata_array_destroy(v[k]);
  strata_context_destroy(ctx);
  return ret ? NULL : g;
}

/* Median seconds per run of g (after a warm-up), and a checksum. */
static double time_runs(strata_graph *g, strata_array *x, int runs, double *sum)
{
  double *t = calloc((size_t)runs, sizeof *t), m = NAN;
  for (int r = -1; t && r < runs; r++) {
    strata_array *out = NULL;
    float *p;
    double t0 = bench_now();
    if (strata_graph_run(g, &x, &out) != 0 || strata_array_acquire(out, STRATA_READ, (void **)&p))
      break;
    strata_array_release(out);
    if (r >= 0)
      t[r] = bench_now() - t0;
    if (r == runs - 1) {
      *sum = checksum(out);
      m = bench_median(t, runs);
    }
    strata_array_destroy(out);
  }
  free(t);
  return m;
}

/* The normalisation graph on n x n with its Local nodes in one task, and
 * with them On_device (a task each), in this process. */
static cJSON *small_nodes(int64_t n, int runs)
{
  if (strata_init(NULL, NULL, NULL) != 0)
    return NULL;
  int64_t shape[2] = {n, n};
  strata_array *x;
  float *p;
  cJSON *r = NULL;
  if (strata_array_create(2, shape, STRATA_FLOAT32, &x) == 0 &&
      strata_array_acquire(x, STRATA_WRITE, (void **)&p) == 0) {
    for (int64_t i = 0; i < n * n; i++)
      p[i] = (float)(i % 97) / 16.0f;
    strata_array_release(x);
    strata_graph *seq = normalise_graph(x), *each = normalise_graph(x);
    /* the same kernels; what compile made Local is On_device instead */
    strata_memory_mode on_device = {STRATA_MEM_ON_DEVICE, 0, 0}, mode;
    strata_graph_compile(seq);
    for (int i = 0; seq && each && i < strata_graph_nnodes(seq); i++) {
      const char *name = strata_graph_node_name(seq, i);
      if (strata_node_memory_mode(seq, name, &mode) == 0 && mode.kind == STRATA_MEM_LOCAL)
        strata_node_set_memory_mode(each, name, on_device);
    }
    double sum_seq = NAN, sum_each = NAN;
    double t_seq = seq && each ? time_runs(seq, x, runs, &sum_seq) : NAN;
    double t_each = seq && each ? time_runs(each, x, runs, &sum_each) : NAN;
    r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "n", (double)n);
    cJSON_AddNumberToObject(r, "kernels", seq ? strata_graph_nkernels(seq) : -1);
    cJSON_AddNumberToObject(r, "sequence_tasks", seq ? strata_graph_ntasks(seq) : -1);
    cJSON_AddNumberToObject(r, "separate_tasks", each ? strata_graph_ntasks(each) : -1);
    cJSON_AddNumberToObject(r, "sequence_us", 1e6 * t_seq);
    cJSON_AddNumberToObject(r, "separate_us", 1e6 * t_each);
    cJSON_AddNumberToObject(r, "speedup", t_each / t_seq);
    cJSON_AddBoolToObject(r, "same_result", sum_seq == sum_each);
    strata_graph_destroy(seq);
    strata_graph_destroy(each);
    strata_array_destroy(x);
  }
  strata_finalize();
  return r;
}

/* Run this program as a child for one variant and parse its report. */
static cJSON *spawn_variant(const char *self, int nodes, const char *variant, int64_t n, int rounds)
{
  char a_nodes[16], a_n[32], a_rounds[16];
  snprintf(a_nodes, sizeof a_nodes, "%d", nodes);
  snprintf(a_n, sizeof a_n, "%lld", (long long)n);
  snprintf(a_rounds, sizeof a_rounds, "%d", rounds);
  char *argv[] = {(char *)self, "--child", a_nodes, (char *)variant, a_n, a_rounds, NULL};
  int fd[2];
  if (pipe(fd) != 0)
    return NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
  posix_spawn_file_actions_addclose(&fa, fd[0]);
  pid_t pid;
  int ok = posix_spawn(&pid, self, &fa, NULL, argv, environ) == 0;
  posix_spawn_file_actions_destroy(&fa);
  close(fd[1]);
  char buf[4096] = {0};
  size_t len = 0;
  ssize_t got;
  while (ok && len + 1 < sizeof buf && (got = read(fd[0], buf + len, sizeof buf - 1 - len)) > 0)
    len += (size_t)got;
  close(fd[0]);
  int status = 1;
  if (ok)
    waitpid(pid, &status, 0);
  return ok && status == 0 ? cJSON_Parse(buf) : NULL;
}

static double field(const cJSON *o, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

int main(int argc, char **argv)
{
  if (argc == 6 && strcmp(argv[1], "--child") == 0)
    return child(atoi(argv[2]), argv[3], atoll(argv[4]), atoi(argv[5]));
  int rounds = 5, quick = 0;
  if (bench_options(argc, argv, "bench_fusion", &rounds, &quick))
    return 2;
  int64_t n = quick ? 100000 : 10000000;
  const int chains[] = {2, 4, 8, 16};
  int nchains = quick ? 2 : 4, failures = 0;
  cJSON *root = cJSON_CreateObject(), *results = cJSON_CreateArray();
  cJSON_AddStringToObject(root, "benchmark", "fusion");
  cJSON_AddNumberToObject(root, "elements", (double)n);
  cJSON_AddStringToObject(root, "dtype", "float32");
  cJSON_AddNumberToObject(root, "rounds", rounds);
  for (int c = 0; c < nchains; c++) {
    cJSON *f = spawn_variant("/proc/self/exe", chains[c], "fused", n, rounds);
    cJSON *u = spawn_variant("/proc/self/exe", chains[c], "unfused", n, rounds);
    cJSON *e = spawn_variant("/proc/self/exe", chains[c], "eager", n, rounds);
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "nodes", chains[c]);
    double tf = field(f, "seconds"), tu = field(u, "seconds");
    double mf = field(f, "peak_mb"), mu = field(u, "peak_mb"), me = field(e, "peak_mb");
    double te = field(e, "seconds");
    int same = f && u && e && field(f, "checksum") == field(u, "checksum") &&
               field(f, "checksum") == field(e, "checksum");
    failures += !same;
    cJSON_AddNumberToObject(r, "fused_kernels", field(f, "kernels"));
    cJSON_AddNumberToObject(r, "unfused_kernels", field(u, "kernels"));
    cJSON_AddNumberToObject(r, "fused_ms", 1e3 * tf);
    cJSON_AddNumberToObject(r, "unfused_ms", 1e3 * tu);
    cJSON_AddNumberToObject(r, "eager_ms", 1e3 * te);
    cJSON_AddNumberToObject(r, "speedup", tu / tf);
    cJSON_AddNumberToObject(r, "speedup_vs_eager", te / tf);
    cJSON_AddNumberToObject(r, "fused_peak_mb", mf);
    cJSON_AddNumberToObject(r, "unfused_peak_mb", mu); /* every intermediate kept */
    cJSON_AddNumberToObject(r, "eager_peak_mb", me);   /* temporaries freed, as NumPy */
    cJSON_AddNumberToObject(r, "peak_memory_saved", 1 - mf / me);
    cJSON_AddBoolToObject(r, "same_result", same);
    cJSON_AddItemToArray(results, r);
    cJSON_Delete(f);
    cJSON_Delete(u);
    cJSON_Delete(e);
  }
  cJSON_AddItemToObject(root, "results", results);
  /* after the children: this process's StarPU does not share their cores */
  cJSON *small = small_nodes(64, quick ? 20 : 50 * rounds);
  const cJSON *same = cJSON_GetObjectItemCaseSensitive(small, "same_result");
  failures += !cJSON_IsTrue(same);
  cJSON_AddItemToObject(root, "small_nodes", small ? small : cJSON_CreateNull());
  cJSON_AddBoolToObject(root, "results_match_unfused", failures == 0);
  bench_print_json(root);
  return failures ? 1 : 0;
}
