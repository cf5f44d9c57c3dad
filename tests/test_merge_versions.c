/* Merge of versions (1 to 4 ranks): the tree pairing for 1..8 replicas
 * (exact sequences), a data-parallel example (4 replicas of one exported
 * graph compute partial sums of squares of their chunk; merged, every
 * replica holds the serial result), the tree's floating-point order
 * reproduced bit for bit whatever the number of ranks, REDUX within ranks,
 * and one rank's bad argument giving every rank the same error. */
#include <math.h>
#include <string.h>

#include <strata/strata.h>

#include "check.h"

static int rank, size;

static void check_pairs(void)
{
  static const char *const want[] = {
      "",
      "1>0",
      "2>1 1>0",
      "2>0 3>1 1>0",
      "3>1 4>2 2>1 1>0",
      "3>0 4>1 5>2 2>1 1>0",
      "4>1 5>2 6>3 2>0 3>1 1>0",
      "4>0 5>1 6>2 7>3 2>0 3>1 1>0",
  };
  for (int n = 1; n <= 8; n++) {
    int src[8], dst[8];
    char got[128] = "";
    CHECK_EQ(strata_merge_tree_pairs(n, src, dst), n - 1);
    for (int k = 0; k < n - 1; k++)
      snprintf(got + strlen(got), sizeof got - strlen(got), "%s%d>%d", k ? " " : "", src[k],
               dst[k]);
    if (strcmp(got, want[n - 1]) != 0)
      fprintf(stderr, "n=%d: %s, want %s\n", n, got, want[n - 1]);
    CHECK(strcmp(got, want[n - 1]) == 0);
  }
  int s, d;
  CHECK_EQ(strata_merge_tree_pairs(0, &s, &d), STRATA_EINVAL);
  CHECK_EQ(strata_merge_tree_pairs(2, NULL, &d), STRATA_EINVAL);
}

enum { REPLICAS = 4, CHUNK = 1000 };

/* Replica i lives on rank i * size / REPLICAS. */
static int owner_of(int i) { return i * size / REPLICAS; }

static double element(int64_t i) { return 0.1 * (double)i + 0.01; }

/* The graph every replica runs: s = sum(x * x) over its chunk. */
static strata_graph *sum_of_squares_graph(void)
{
  int64_t n = CHUNK;
  strata_array *x, *sq, *s;
  strata_context *ctx;
  strata_graph *g = NULL;
  CHECK_EQ(strata_zeros(NULL, 1, &n, STRATA_FLOAT64, &x), 0);
  CHECK_EQ(strata_context_create(&ctx), 0);
  strata_deferred_begin(ctx, 1);
  CHECK_EQ(strata_binary(ctx, STRATA_FN_MUL, x, x, &sq), 0);
  CHECK_EQ(strata_reduce(ctx, STRATA_FN_SUM, sq, STRATA_ALL_AXES, NULL, 0, &s), 0);
  strata_deferred_end(ctx);
  CHECK_EQ(strata_graph_export(1, &x, NULL, 1, &s, NULL, &g), 0);
  strata_array_destroy(x);
  strata_array_destroy(sq);
  strata_array_destroy(s);
  strata_context_destroy(ctx);
  return g;
}

static double read_scalar(strata_array *a)
{
  double *p, v = -1;
  if (strata_array_acquire(a, STRATA_READ, (void **)&p) == 0) {
    v = p[0];
    strata_array_release(a);
  }
  return v;
}

/* Replica i's input: elements i * CHUNK ... */
static strata_array *chunk(int i)
{
  int64_t n = CHUNK;
  strata_array *x = NULL;
  double *p;
  CHECK_EQ(strata_array_create(1, &n, STRATA_FLOAT64, &x), 0);
  CHECK_EQ(strata_array_acquire(x, STRATA_WRITE, (void **)&p), 0);
  for (int64_t k = 0; k < n; k++)
    p[k] = element(i * CHUNK + k);
  strata_array_release(x);
  return x;
}

/* Each local replica runs the graph on its chunk; returns their count. */
static int run_replicas(strata_graph *g, strata_array **versions)
{
  int nlocal = 0;
  for (int i = 0; i < REPLICAS; i++) {
    if (owner_of(i) != rank)
      continue;
    strata_array *x = chunk(i);
    CHECK_EQ(strata_graph_run(g, &x, &versions[nlocal]), 0);
    nlocal++;
    strata_array_destroy(x);
  }
  return nlocal;
}

/* The partial sums in the graph's order, merged on the host in the tree's
 * order: what the tree method must give bit for bit. */
static double tree_reference(strata_graph *g)
{
  double part[REPLICAS];
  for (int i = 0; i < REPLICAS; i++) {
    strata_array *x = chunk(i), *s = NULL;
    CHECK_EQ(strata_graph_run(g, &x, &s), 0);
    part[i] = s ? read_scalar(s) : 0;
    strata_array_destroy(s);
    strata_array_destroy(x);
  }
  int src[REPLICAS], dst[REPLICAS];
  int npairs = strata_merge_tree_pairs(REPLICAS, src, dst);
  for (int k = 0; k < npairs; k++)
    part[dst[k]] += part[src[k]];
  return part[0];
}

static void check_data_parallel(strata_merge_method method)
{
  strata_graph *g = sum_of_squares_graph();
  double serial = 0;
  for (int64_t i = 0; i < REPLICAS * CHUNK; i++)
    serial += element(i) * element(i);
  double tree = tree_reference(g);
  strata_array *versions[REPLICAS] = {NULL};
  int nlocal = run_replicas(g, versions);
  CHECK_EQ(strata_merge_versions(versions, nlocal, STRATA_SUM, method), 0);
  for (int k = 0; k < nlocal; k++) {
    double v = read_scalar(versions[k]);
    CHECK(fabs(v - serial) <= 1e-10 * serial); /* summation order differs */
    if (method == STRATA_MERGE_TREE)
      CHECK(v == tree); /* the fixed order, on any number of ranks */
    strata_array_destroy(versions[k]);
  }
  strata_graph_destroy(g);
}

/* Integer versions with MAX and PROD: exact results. */
static void check_integer_ops(void)
{
  strata_array *v[REPLICAS];
  int nlocal = 0;
  for (int i = 0; i < REPLICAS; i++)
    if (owner_of(i) == rank) {
      int64_t n = 3;
      CHECK_EQ(strata_full(NULL, 1, &n, STRATA_INT64, (double)(i + 2), &v[nlocal++]), 0);
    }
  CHECK_EQ(strata_merge_versions(v, nlocal, STRATA_PROD, STRATA_MERGE_TREE), 0);
  CHECK_EQ(strata_merge_versions(v, nlocal, STRATA_MAX, STRATA_MERGE_REDUX), 0);
  for (int k = 0; k < nlocal; k++) {
    int64_t *p;
    CHECK_EQ(strata_array_acquire(v[k], STRATA_READ, (void **)&p), 0);
    CHECK(p[0] == 2 * 3 * 4 * 5 && p[2] == 120);
    strata_array_release(v[k]);
    strata_array_destroy(v[k]);
  }
}

/* Bad input on one rank only: every rank gets the same code, no hang. */
static void check_agreement(void)
{
  int64_t n = 4, m = 5;
  strata_array *a, *b, *flag;
  CHECK_EQ(strata_zeros(NULL, 1, &n, STRATA_FLOAT64, &a), 0);
  CHECK_EQ(strata_zeros(NULL, 1, rank == size - 1 ? &m : &n, STRATA_FLOAT64, &b), 0);
  CHECK_EQ(strata_zeros(NULL, 1, &n, STRATA_BOOL, &flag), 0);
  strata_array *one[1] = {rank == size - 1 ? b : a};
  /* size mismatch on the last rank (alone: within one rank) */
  strata_array *two[2] = {a, b};
  CHECK_EQ(
      strata_merge_versions(size > 1 ? one : two, size > 1 ? 1 : 2, STRATA_SUM, STRATA_MERGE_TREE),
      STRATA_EINVAL);
  /* type mismatch across ranks (int64 on rank 0, float64 elsewhere) */
  strata_array *ints;
  CHECK_EQ(strata_zeros(NULL, 1, &n, STRATA_INT64, &ints), 0);
  strata_array *typed[2] = {rank == 0 ? ints : a, a};
  CHECK_EQ(strata_merge_versions(typed, size > 1 ? 1 : 2, STRATA_SUM, STRATA_MERGE_TREE),
           STRATA_EINVAL);
  strata_array_destroy(ints);
  /* an op that does not keep the type: SUM of bool gives int64 */
  strata_array *flags[1] = {flag};
  CHECK_EQ(strata_merge_versions(flags, 1, STRATA_SUM, STRATA_MERGE_TREE), STRATA_ETYPE);
  /* a bad method or NULL versions on one rank */
  CHECK_EQ(strata_merge_versions(&a, 1, STRATA_SUM, rank == 0 ? (strata_merge_method)7 : 0),
           STRATA_EINVAL);
  CHECK_EQ(strata_merge_versions(rank == size - 1 ? NULL : &a, 1, STRATA_SUM, STRATA_MERGE_TREE),
           STRATA_EINVAL);
  /* no replica anywhere */
  CHECK_EQ(strata_merge_versions(NULL, 0, STRATA_SUM, STRATA_MERGE_TREE), STRATA_EINVAL);
  /* an acquired version */
  void *p;
  CHECK_EQ(strata_array_acquire(a, STRATA_READ, &p), 0);
  CHECK_EQ(strata_merge_versions(&a, 1, STRATA_SUM, STRATA_MERGE_TREE), STRATA_ESTATE);
  strata_array_release(a);
  strata_array_destroy(a);
  strata_array_destroy(b);
  strata_array_destroy(flag);
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  rank = strata_rank();
  size = strata_size();
  check_pairs();
  check_data_parallel(STRATA_MERGE_TREE);
  check_data_parallel(STRATA_MERGE_REDUX);
  check_integer_ops();
  check_agreement();
  strata_finalize();
  return check_status();
}
