/* Sharding example: the four shipped operations and one written here (a
 * 1-D moving sum with a user kernel), each shown with its projections, what
 * neighbouring shards share, and the shard counts the cost model picks for
 * a few machines; then run with that choice on strata_comm() and compared
 * with the unsharded run. Rank 0 prints; any mismatch exits 1.
 *
 *   [mpiexec -n R] sharding
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata/strata.h>

/* The user kernel: y[i] = x[i-1] + x[i] + x[i+1] over the shard's cells,
 * x's buffer covering [start(y) - 1, end(y) + 1) clipped to the tensor. */
static void moving_sum(const strata_shard *s, void *const *buffers, const void *arg)
{
  (void)arg;
  const float *x = buffers[0];
  float *y = buffers[1];
  int64_t x0 = s->region[0].start[0], x1 = s->region[0].end[0];
  for (int64_t i = s->region[1].start[0]; i < s->region[1].end[0]; i++) {
    float acc = 0;
    for (int64_t j = i - 1; j <= i + 1; j++)
      acc += j >= x0 && j < x1 ? x[j - x0] : 0.0f;
    y[i - s->region[1].start[0]] = acc;
  }
}

static strata_array *make(int ndim, const int64_t *shape, unsigned seed)
{
  strata_array *a;
  if (strata_array_create(ndim, shape, STRATA_FLOAT32, &a))
    exit(1);
  float *p;
  strata_array_acquire(a, STRATA_WRITE, (void **)&p);
  for (int64_t i = 0; i < strata_array_nelems(a); i++) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = (float)(seed >> 20) / 4096.0f - 0.5f;
  }
  strata_array_release(a);
  return a;
}

static void print_plan(const strata_shard_op *op)
{
  printf("%s: index space", op->name);
  for (int d = 0; d < op->index.ndim; d++)
    printf(" %lld", (long long)(op->index.end[d] - op->index.start[d]));
  printf("\n");
  static const char *share[] = {"none", "halo", "all"};
  for (int t = 0; t < op->ntensors; t++) {
    char json[512];
    strata_zproj_to_json(&op->tensor[t].proj, json, sizeof json);
    printf("  tensor %d %s, shared along each index dim:", t, json);
    for (int d = 0; d < op->index.ndim; d++)
      printf(" %s", share[strata_zproj_sharing(&op->tensor[t].proj, d, NULL)]);
    printf("\n");
  }
  const strata_shard_machine machines[] = {
      {.workers = 2, .ranks = 1}, {.workers = 2, .ranks = 2}, {.workers = 16, .ranks = 1}};
  for (int m = 0; m < 3; m++) {
    strata_sharding s;
    strata_shard_cost c;
    if (strata_shard_choose(op, &machines[m], &s, &c))
      exit(1);
    printf("  %2d workers x %d ranks: chunks", machines[m].workers, machines[m].ranks);
    for (int d = 0; d < s.ndim; d++)
      printf(" %lld", (long long)s.counts[d]);
    printf(" (%lld shards), predicted %.3g s, largest shard %lld B, copies %lld B\n",
           (long long)c.shards, c.seconds, (long long)c.shard_bytes, (long long)c.copy_bytes);
  }
}

/* Run with the cost model's choice and with one shard; 0 when they agree. */
static int run_and_compare(const strata_shard_op *op, strata_array *out, double tol)
{
  int64_t n = strata_array_nelems(out), one[STRATA_ZMAX_DIMS] = {1, 1, 1, 1, 1, 1, 1, 1};
  float *ref = malloc((size_t)n * sizeof *ref), *p;
  strata_sharding single = {op->index.ndim, {0}};
  memcpy(single.counts, one, sizeof single.counts);
  int ret = strata_launch_sharded(op, &single, 0);
  strata_array_acquire(out, STRATA_READ, (void **)&p);
  memcpy(ref, p, (size_t)n * sizeof *ref);
  strata_array_release(out);
  if (!ret)
    ret = strata_launch_sharded(op, NULL, 0);
  double worst = 0;
  strata_array_acquire(out, STRATA_READ, (void **)&p);
  for (int64_t i = 0; i < n; i++)
    worst = fmax(worst, fabs((double)p[i] - ref[i]));
  strata_array_release(out);
  free(ref);
  if (strata_rank() == 0)
    printf("  sharded vs unsharded: max difference %g %s\n", worst, worst <= tol ? "ok" : "FAILED");
  return ret || (strata_rank() == 0 && !(worst <= tol));
}

int main(int argc, char **argv)
{
  if (strata_init(&argc, &argv, NULL))
    return 1;
  int failed = 0, quiet = strata_rank() != 0;
  strata_shard_op op;

  strata_array *x = make(2, (int64_t[]){2048, 512}, 1), *w = make(2, (int64_t[]){512, 256}, 2),
               *b = make(1, (int64_t[]){256}, 3), *y = make(2, (int64_t[]){2048, 256}, 0);
  strata_shard_op_linear(x, w, b, y, &op);
  if (!quiet)
    print_plan(&op);
  failed |= run_and_compare(&op, y, 1e-4);

  strata_array *img = make(2, (int64_t[]){512, 512}, 4), *k = make(2, (int64_t[]){5, 5}, 5),
               *conv = make(2, (int64_t[]){512, 512}, 0);
  strata_shard_op_conv2d(img, k, conv, STRATA_OOB_PAD, &op);
  if (!quiet)
    print_plan(&op);
  failed |= run_and_compare(&op, conv, 0);

  strata_array *cube = make(3, (int64_t[]){64, 256, 64}, 6),
               *sums = make(2, (int64_t[]){64, 64}, 0);
  strata_shard_op_axial_sum(cube, 1, sums, &op);
  if (!quiet)
    print_plan(&op);
  strata_array_fill_identity(sums, STRATA_SUM); /* the axial sum adds to y */
  strata_sharding single = {3, {1, 1, 1}};
  failed |= strata_launch_sharded(&op, &single, 0) != 0;
  failed |= strata_launch_sharded(&op, NULL, 0) != 0; /* sums now hold twice the sum */
  float *twice, *p;
  strata_array_acquire(sums, STRATA_READ, (void **)&twice);
  strata_array_acquire(cube, STRATA_READ, (void **)&p);
  double worst = 0;
  for (int i = 0; i < 64; i++)
    for (int j = 0; j < 64; j++) {
      double acc = 0;
      for (int l = 0; l < 256; l++)
        acc += p[(i * 256 + l) * 64 + j];
      worst = fmax(worst, fabs(twice[i * 64 + j] - 2 * acc));
    }
  strata_array_release(cube);
  strata_array_release(sums);
  if (!quiet)
    printf("  two runs vs twice the direct sum: max difference %g %s\n", worst,
           worst < 1e-3 ? "ok" : "FAILED");
  failed |= !quiet && !(worst < 1e-3);

  strata_array *v = make(1, (int64_t[]){256}, 7), *shifted = make(2, (int64_t[]){2048, 256}, 0);
  strata_shard_op_broadcast_add(y, v, shifted, &op);
  if (!quiet)
    print_plan(&op);
  failed |= run_and_compare(&op, shifted, 0);

  /* A user operation: y = 3-point moving sum of x, halos clipped. */
  strata_array *line = make(1, (int64_t[]){100000}, 8), *smooth = make(1, (int64_t[]){100000}, 0);
  strata_shard_op user = {
      .name = "moving_sum", .ntensors = 2, .cpu = moving_sum, .flops_per_point = 2};
  strata_zrange_init(&user.index, 1, (int64_t[]){0}, (int64_t[]){100000});
  strata_zaffine centred;
  strata_zaffine_init(&centred, 1, 1, (int64_t[]){1}, (int64_t[]){-1});
  strata_zproj_init(&user.tensor[0].proj, &centred, (int64_t[]){3});
  user.tensor[0] = (strata_shard_tensor){.array = line,
                                         .proj = user.tensor[0].proj,
                                         .access = STRATA_SHARD_READ,
                                         .policy = STRATA_OOB_CLIP};
  strata_zaffine identity;
  strata_zaffine_init(&identity, 1, 1, (int64_t[]){1}, NULL);
  strata_zproj_init(&user.tensor[1].proj, &identity, (int64_t[]){1});
  user.tensor[1] = (strata_shard_tensor){
      .array = smooth, .proj = user.tensor[1].proj, .access = STRATA_SHARD_WRITE};
  if (!quiet)
    print_plan(&user);
  failed |= run_and_compare(&user, smooth, 0);

  strata_array *all[] = {x, w, b, y, img, k, conv, cube, sums, v, shifted, line, smooth};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    strata_array_destroy(all[i]);
  strata_finalize();
  return failed;
}
