/* Sharded execution: every example operation with 1, 2, 3, 7 and 16 shards
 * (along each index dimension and mixed) against a direct computation in
 * this file and against the unsharded run; convolution windows under every
 * window policy; the cost model's choices; error codes. Runs on 1 to 4
 * ranks: the tensors are rank 0's, the other ranks' arrays hold NaN and
 * must not leak into the results. */
#include <math.h>
#include <string.h>

#include "check.h"

static int rank;

static float *acquire(strata_array *a, strata_access mode)
{
  void *p = NULL;
  CHECK(strata_array_acquire(a, mode, &p) == 0);
  return p;
}

static strata_array *make(int ndim, const int64_t *shape)
{
  strata_array *a = NULL;
  CHECK(strata_array_create(ndim, shape, STRATA_FLOAT32, &a) == 0);
  return a;
}

/* Root: deterministic values in [-1, 1) from `seed`; other ranks: NaN. */
static void fill(strata_array *a, unsigned seed)
{
  float *p = acquire(a, STRATA_WRITE);
  int64_t n = strata_array_nelems(a);
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    p[i] = rank == 0 ? (float)((seed >> 8) % 2000) / 1000.0f - 1.0f : NAN;
  }
  strata_array_release(a);
}

static void fill_value(strata_array *a, float v)
{
  float *p = acquire(a, STRATA_WRITE);
  for (int64_t i = 0; i < strata_array_nelems(a); i++)
    p[i] = rank == 0 ? v : NAN;
  strata_array_release(a);
}

/* Largest |a - b| / (1 + |b|) between the array and a reference; NaN or a
 * missing value counts as infinite. */
static double deviation(strata_array *a, const float *ref)
{
  const float *p = acquire(a, STRATA_READ);
  double worst = 0;
  for (int64_t i = 0; i < strata_array_nelems(a); i++) {
    double d = fabs((double)p[i] - ref[i]) / (1 + fabs(ref[i]));
    if (!(d <= worst))
      worst = isnan(d) ? INFINITY : d;
  }
  strata_array_release(a);
  return worst;
}

static void copy_out(strata_array *a, float *out)
{
  const float *p = acquire(a, STRATA_READ);
  memcpy(out, p, (size_t)strata_array_nbytes(a));
  strata_array_release(a);
}

static strata_sharding sharding(int ndim, int64_t c0, int64_t c1, int64_t c2)
{
  return (strata_sharding){ndim, {c0, c1, c2}};
}

/* The 2-D shardings: 1, 2, 3, 7 and 16 shards along each dimension, and
 * mixed ones. */
static const int64_t counts2[][2] = {{1, 1}, {2, 1},  {1, 2},  {3, 1}, {1, 3}, {7, 1},
                                     {1, 7}, {16, 1}, {1, 16}, {4, 4}, {2, 3}};
enum { NCOUNTS2 = sizeof counts2 / sizeof counts2[0] };

/* Runs `op` with every 2-D sharding; the output (tensor `out`) must match
 * `ref` within `tol` and, with `exact`, equal the unsharded result bit for
 * bit. `reset` re-initialises the output before each run. */
static void run_2d(const char *what, const strata_shard_op *op, int out, const float *ref,
                   double tol, int exact, void (*reset)(strata_array *))
{
  strata_array *y = op->tensor[out].array;
  float *unsharded = malloc((size_t)strata_array_nbytes(y)),
        *now = malloc((size_t)strata_array_nbytes(y));
  for (int k = 0; k < NCOUNTS2; k++) {
    reset(y);
    strata_sharding s = sharding(2, counts2[k][0], counts2[k][1], 0);
    int ret = strata_launch_sharded(op, &s, 0);
    if (ret) {
      fprintf(stderr, "%s %lldx%lld: %s\n", what, (long long)s.counts[0], (long long)s.counts[1],
              strata_strerror(ret));
      check_failures++;
      continue;
    }
    if (rank != 0)
      continue;
    double dev = deviation(y, ref);
    if (!(dev <= tol)) {
      fprintf(stderr, "%s %lldx%lld: deviation %g\n", what, (long long)s.counts[0],
              (long long)s.counts[1], dev);
      check_failures++;
    }
    copy_out(y, k == 0 ? unsharded : now);
    if (k > 0 && exact)
      CHECK(memcmp(unsharded, now, (size_t)strata_array_nbytes(y)) == 0);
  }
  free(unsharded);
  free(now);
}

static void reset_nan(strata_array *y) { fill_value(y, NAN); }

static void check_linear(void)
{
  enum { B = 32, I = 20, O = 24 };
  strata_array *x = make(2, (int64_t[]){B, I}), *w = make(2, (int64_t[]){I, O}),
               *bias = make(1, (int64_t[]){O}), *y = make(2, (int64_t[]){B, O});
  fill(x, 1);
  fill(w, 2);
  fill(bias, 3);
  float ref[B * O];
  if (rank == 0) {
    const float *px = acquire(x, STRATA_READ), *pw = acquire(w, STRATA_READ),
                *pb = acquire(bias, STRATA_READ);
    for (int b = 0; b < B; b++)
      for (int o = 0; o < O; o++) {
        double acc = pb[o];
        for (int i = 0; i < I; i++)
          acc += (double)px[b * I + i] * pw[i * O + o];
        ref[b * O + o] = (float)acc;
      }
    strata_array_release(x);
    strata_array_release(w);
    strata_array_release(bias);
  }
  strata_shard_op op;
  CHECK(strata_shard_op_linear(x, w, bias, y, &op) == 0);
  run_2d("linear", &op, 3, ref, 1e-5, 0, reset_nan);
  strata_array_destroy(x);
  strata_array_destroy(w);
  strata_array_destroy(bias);
  strata_array_destroy(y);
}

/* y (i, j) = sum k (a, b) x (i + a - KH/2, j + b - KW/2), outside cells by
 * the policy. */
static float conv_ref_cell(const float *x, const float *k, int H, int W, int KH, int KW, int i,
                           int j, strata_oob_policy policy)
{
  double acc = 0;
  for (int a = 0; a < KH; a++)
    for (int b = 0; b < KW; b++) {
      int p = i + a - KH / 2, q = j + b - KW / 2;
      if (policy == STRATA_OOB_WRAP) {
        p = (p % H + H) % H;
        q = (q % W + W) % W;
      } else if (p < 0 || p >= H || q < 0 || q >= W) {
        continue; /* PAD with 0, or CLIP */
      }
      acc += (double)k[a * KW + b] * x[p * W + q];
    }
  return (float)acc;
}

static void check_conv2d(strata_oob_policy policy, int KH, int KW)
{
  enum { H = 20, W = 18 };
  strata_array *x = make(2, (int64_t[]){H, W}), *k = make(2, (int64_t[]){KH, KW}),
               *y = make(2, (int64_t[]){H, W});
  fill(x, 4);
  fill(k, 5);
  float ref[H * W];
  if (rank == 0) {
    const float *px = acquire(x, STRATA_READ), *pk = acquire(k, STRATA_READ);
    for (int i = 0; i < H; i++)
      for (int j = 0; j < W; j++)
        ref[i * W + j] = conv_ref_cell(px, pk, H, W, KH, KW, i, j, policy);
    strata_array_release(x);
    strata_array_release(k);
  }
  strata_shard_op op;
  CHECK(strata_shard_op_conv2d(x, k, y, policy, &op) == 0);
  /* Neighbouring shards share KH-1 rows (KW-1 columns) of x: halos. */
  int64_t overlap[2];
  CHECK_EQ(strata_zproj_sharing(&op.tensor[0].proj, 0, overlap), STRATA_ZSHARE_PARTIAL);
  CHECK(overlap[0] == KH - 1 && overlap[1] == KW);
  CHECK_EQ(strata_zproj_sharing(&op.tensor[1].proj, 0, NULL), STRATA_ZSHARE_TOTAL);
  const char *names[] = {"conv2d error", "conv2d clip", "conv2d wrap", "conv2d negative",
                         "conv2d pad"};
  run_2d(names[policy], &op, 2, ref, 1e-5, 1, reset_nan);
  strata_array_destroy(x);
  strata_array_destroy(k);
  strata_array_destroy(y);
}

static void check_broadcast_add(void)
{
  enum { B = 17, N = 33 };
  strata_array *x = make(2, (int64_t[]){B, N}), *v = make(1, (int64_t[]){N}),
               *y = make(2, (int64_t[]){B, N});
  fill(x, 6);
  fill(v, 7);
  float ref[B * N];
  if (rank == 0) {
    const float *px = acquire(x, STRATA_READ), *pv = acquire(v, STRATA_READ);
    for (int b = 0; b < B; b++)
      for (int n = 0; n < N; n++)
        ref[b * N + n] = px[b * N + n] + pv[n];
    strata_array_release(x);
    strata_array_release(v);
  }
  strata_shard_op op;
  CHECK(strata_shard_op_broadcast_add(x, v, y, &op) == 0);
  CHECK_EQ(strata_zproj_sharing(&op.tensor[1].proj, 1, NULL), STRATA_ZSHARE_TOTAL);
  run_2d("broadcast_add", &op, 2, ref, 0, 1, reset_nan);
  strata_array_destroy(x);
  strata_array_destroy(v);
  strata_array_destroy(y);
}

/* y starts at 0.5 everywhere: a reduction keeps the output's initial value. */
static void reset_half(strata_array *y) { fill_value(y, 0.5f); }

static void check_axial_sum(void)
{
  enum { A = 6, L = 16, C = 5 };
  strata_array *x = make(3, (int64_t[]){A, L, C}), *y = make(2, (int64_t[]){A, C});
  fill(x, 8);
  float ref[A * C];
  if (rank == 0) {
    const float *px = acquire(x, STRATA_READ);
    for (int a = 0; a < A; a++)
      for (int c = 0; c < C; c++) {
        double acc = 0.5;
        for (int l = 0; l < L; l++)
          acc += px[(a * L + l) * C + c];
        ref[a * C + c] = (float)acc;
      }
    strata_array_release(x);
  }
  strata_shard_op op;
  CHECK(strata_shard_op_axial_sum(x, -2, y, &op) == 0);
  /* Along the axis: 1, 2, 3, 7, 16 shards (all reduce into the whole y);
   * across it (disjoint parts of y); mixed (partial reductions per part). */
  const int64_t counts[][3] = {{1, 1, 1}, {1, 2, 1}, {1, 3, 1}, {1, 7, 1}, {1, 16, 1},
                               {2, 1, 1}, {3, 1, 5}, {2, 8, 1}, {1, 4, 4}, {6, 2, 1}};
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
    reset_half(y);
    strata_sharding s = sharding(3, counts[k][0], counts[k][1], counts[k][2]);
    CHECK_EQ(strata_launch_sharded(&op, &s, 0), 0);
    if (rank == 0 && !(deviation(y, ref) <= 1e-5)) {
      fprintf(stderr, "axial sum %zu: deviation %g\n", k, deviation(y, ref));
      check_failures++;
    }
  }
  strata_array_destroy(x);
  strata_array_destroy(y);

  /* A 1-D array into a 0-dimensional one. */
  strata_array *v = make(1, (int64_t[]){40}), *total = make(0, NULL);
  fill(v, 9);
  float sum = 0.5f;
  if (rank == 0) {
    const float *pv = acquire(v, STRATA_READ);
    double acc = 0.5;
    for (int i = 0; i < 40; i++)
      acc += pv[i];
    sum = (float)acc;
    strata_array_release(v);
  }
  CHECK(strata_shard_op_axial_sum(v, 0, total, &op) == 0);
  const int64_t ns[] = {1, 2, 3, 7, 16};
  for (int k = 0; k < 5; k++) {
    reset_half(total);
    strata_sharding s = sharding(1, ns[k], 0, 0);
    CHECK_EQ(strata_launch_sharded(&op, &s, 0), 0);
    if (rank == 0)
      CHECK(deviation(total, &sum) <= 1e-5);
  }
  strata_array_destroy(v);
  strata_array_destroy(total);
}

/* Seeded random shapes and shardings: each launch against the same
 * operation run as one shard, bit for bit where the sharding cannot change
 * the order of the arithmetic (broadcast add), within 1e-5 where it does
 * (axial sums split along the axis, BLAS blocking of the linear layer). */
static uint32_t next_random(uint32_t *state)
{
  *state = *state * 1664525u + 1013904223u;
  return *state >> 8;
}

static void check_random(int seeds)
{
  int cases = 0;
  for (int seed = 1; seed <= seeds; seed++) {
    uint32_t st = (uint32_t)seed * 2654435761u;
    int64_t a = 1 + next_random(&st) % 24, b = 1 + next_random(&st) % 24,
            c = 1 + next_random(&st) % 12;
    strata_array *t[4] = {NULL, NULL, NULL, NULL};
    strata_shard_op op;
    int out, exact = 0, ndim = 2;
    int64_t space[3]; /* the operation's index space, which the sharding cuts */
    switch (seed % 3) {
    case 0: /* y[a, b] = x[a, b] + v[b] */
      t[0] = make(2, (int64_t[]){a, b}), t[1] = make(1, (int64_t[]){b});
      t[2] = make(2, (int64_t[]){a, b});
      CHECK_EQ(strata_shard_op_broadcast_add(t[0], t[1], t[2], &op), 0);
      out = 2, exact = 1;
      space[0] = a, space[1] = b;
      break;
    case 1: /* y[a, c] = sum over b of x[a, b, c] */
      t[0] = make(3, (int64_t[]){a, b, c}), t[1] = make(2, (int64_t[]){a, c});
      CHECK_EQ(strata_shard_op_axial_sum(t[0], 1, t[1], &op), 0);
      out = 1, ndim = 3;
      space[0] = a, space[1] = b, space[2] = c;
      break;
    default: /* y[a, c] = x[a, b] w[b, c] + bias[c] */
      t[0] = make(2, (int64_t[]){a, b}), t[1] = make(2, (int64_t[]){b, c});
      t[2] = make(1, (int64_t[]){c}), t[3] = make(2, (int64_t[]){a, c});
      CHECK_EQ(strata_shard_op_linear(t[0], t[1], t[2], t[3], &op), 0);
      out = 3;
      space[0] = a, space[1] = c;
    }
    for (int k = 0; k < 4; k++)
      if (t[k] && k != out)
        fill(t[k], (unsigned)(seed * 4 + k));
    strata_array *y = t[out];
    float *whole = malloc((size_t)strata_array_nbytes(y));
    for (int run = 0; run < 4; run++) {
      strata_sharding s = {ndim, {1, 1, 1}};
      for (int d = 0; run > 0 && d < ndim; d++)
        s.counts[d] = 1 + next_random(&st) % (space[d] < 9 ? space[d] : 9);
      fill_value(y, 0.5f);
      CHECK_EQ(strata_launch_sharded(&op, &s, 0), 0);
      if (rank != 0)
        continue;
      if (run == 0) {
        copy_out(y, whole);
        continue;
      }
      double dev = deviation(y, whole);
      const float *p = acquire(y, STRATA_READ);
      int same = memcmp(p, whole, (size_t)strata_array_nbytes(y)) == 0;
      strata_array_release(y);
      if (exact ? !same : !(dev <= 1e-5)) {
        fprintf(stderr,
                "random seed %d (op %d, %lldx%lldx%lld) sharding %lldx%lldx%lld: "
                "deviation %g\n",
                seed, seed % 3, (long long)a, (long long)b, (long long)c, (long long)s.counts[0],
                (long long)s.counts[1], (long long)s.counts[2], dev);
        check_failures++;
      }
      cases++;
    }
    free(whole);
    for (int k = 0; k < 4; k++)
      strata_array_destroy(t[k]);
  }
  if (rank == 0)
    printf("%d random shardings (%d seeds) match the one-shard run\n", cases, seeds);
}

/* The cost model: the linear layer splits along the batch (no copies,
 * every tensor in place) on 2 workers; splitting the outputs' columns
 * would copy w's and y's columns. */
static void check_cost_model(void)
{
  enum { B = 512, I = 256, O = 256 };
  strata_array *x = make(2, (int64_t[]){B, I}), *w = make(2, (int64_t[]){I, O}),
               *bias = make(1, (int64_t[]){O}), *y = make(2, (int64_t[]){B, O});
  strata_shard_op op;
  CHECK(strata_shard_op_linear(x, w, bias, y, &op) == 0);
  strata_shard_machine m = {.workers = 2, .ranks = 1};
  strata_sharding best;
  strata_shard_cost cost;
  CHECK_EQ(strata_shard_choose(&op, &m, &best, &cost), 0);
  CHECK(best.counts[0] >= 2 && best.counts[1] == 1);
  CHECK_EQ(cost.copy_bytes, 0);
  CHECK_EQ(cost.shards, best.counts[0]);
  strata_sharding columns = sharding(2, 1, 2, 0);
  strata_shard_cost c2;
  CHECK_EQ(strata_shard_estimate(&op, &columns, &m, &c2), 0);
  CHECK(c2.copy_bytes > 0 && c2.seconds > cost.seconds);
  /* More workers, more shards. */
  strata_shard_machine big = {.workers = 16, .ranks = 1};
  strata_sharding wide;
  CHECK_EQ(strata_shard_choose(&op, &big, &wide, NULL), 0);
  CHECK(wide.counts[0] * wide.counts[1] >= 16);
  /* The single-shard estimate costs the whole flop count in one wave. */
  strata_sharding one = sharding(2, 1, 1, 0);
  CHECK_EQ(strata_shard_estimate(&op, &one, &m, &c2), 0);
  CHECK(fabs(c2.shard_flops - 2.0 * B * I * O) < 1);
  CHECK_EQ(c2.shard_bytes, 4 * (B * I + I * O + O + B * O));
  strata_array_destroy(x);
  strata_array_destroy(w);
  strata_array_destroy(bias);
  strata_array_destroy(y);
}

static void check_errors(void)
{
  strata_array *x = make(2, (int64_t[]){8, 4}), *v = make(1, (int64_t[]){4}),
               *y = make(2, (int64_t[]){8, 4}), *i32 = NULL;
  fill(x, 1);
  fill(v, 2);
  CHECK(strata_array_create(1, (int64_t[]){4}, STRATA_INT32, &i32) == 0);
  strata_shard_op op, bad;
  CHECK(strata_shard_op_broadcast_add(x, v, y, &op) == 0);
  CHECK_EQ(strata_shard_op_broadcast_add(x, i32, y, &bad), STRATA_ETYPE);
  CHECK_EQ(strata_shard_op_broadcast_add(x, y, y, &bad), STRATA_EINVAL);
  CHECK_EQ(strata_shard_op_axial_sum(x, 2, v, &bad), STRATA_EINVAL);
  CHECK_EQ(strata_launch_sharded(NULL, NULL, 0), STRATA_EINVAL);
  strata_sharding s = sharding(2, 9, 1, 0); /* more chunks than rows */
  CHECK_EQ(strata_launch_sharded(&op, &s, 0), STRATA_EINVAL);
  s = sharding(1, 1, 0, 0);
  CHECK_EQ(strata_launch_sharded(&op, &s, 0), STRATA_EINVAL);
  s = sharding(2, 2, 2, 0);
  CHECK_EQ(strata_launch_sharded(&op, &s, strata_size()), STRATA_EINVAL);
  bad = op; /* projection rank differs from the array's */
  bad.tensor[1].proj.map.out_dims = 2;
  CHECK_EQ(strata_launch_sharded(&bad, &s, 0), STRATA_EINVAL);
  bad = op; /* an empty region shape */
  bad.tensor[0].proj.shape[1] = 0;
  CHECK_EQ(strata_launch_sharded(&bad, &s, 0), STRATA_EINVAL);
  bad = op; /* the same array twice */
  bad.tensor[2].array = x;
  CHECK_EQ(strata_launch_sharded(&bad, &s, 0), STRATA_EINVAL);
  bad = op; /* outputs cannot wrap */
  bad.tensor[2].policy = STRATA_OOB_WRAP;
  CHECK_EQ(strata_launch_sharded(&bad, &s, 0), STRATA_EINVAL);
  bad = op; /* a logical reduction does not keep float32 */
  bad.tensor[2].access = STRATA_SHARD_REDUCE;
  bad.tensor[2].op = STRATA_LAND;
  CHECK_EQ(strata_launch_sharded(&bad, &s, 0), STRATA_ETYPE);
  bad = op; /* a window leaving the tensor under the ERROR policy */
  bad.tensor[0].proj.map.offset[0] = -1;
  CHECK_EQ(strata_launch_sharded(&bad, &s, 0), STRATA_ERANGE);
  bad = op;
  bad.cpu = NULL;
  CHECK_EQ(strata_launch_sharded(&bad, &s, 0), STRATA_EINVAL);
  /* Ranks that disagree on the sharding all get the error. */
  if (strata_size() > 1) {
    s = sharding(2, 1 + (rank == 1), 1, 0);
    CHECK_EQ(strata_launch_sharded(&op, &s, 0), STRATA_EINVAL);
  }
  /* Still usable afterwards. */
  s = sharding(2, 2, 2, 0);
  CHECK_EQ(strata_launch_sharded(&op, &s, 0), 0);
  strata_array_destroy(x);
  strata_array_destroy(v);
  strata_array_destroy(y);
  strata_array_destroy(i32);
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  rank = strata_rank();
  check_linear();
  check_conv2d(STRATA_OOB_PAD, 3, 5);
  check_conv2d(STRATA_OOB_WRAP, 5, 4);
  check_conv2d(STRATA_OOB_CLIP, 4, 3);
  check_broadcast_add();
  check_axial_sum();
  check_random(60);
  check_cost_model();
  check_errors();
  strata_finalize();
  if (check_failures)
    fprintf(stderr, "rank %d: %d checks failed\n", rank, check_failures);
  return check_failures ? 1 : 0;
}
