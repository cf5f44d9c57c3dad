/* CUDA kernels of the array operations against the CPU ones: elementwise
 * with broadcasting, scalars, where and conversions; strided copies;
 * reductions; fills; triangles; matmul (cuBLAS and integer); take;
 * flatnonzero; fused programs. Exit 77 without a GPU. */
#include <cublas_v2.h>
#include <math.h>
#include <string.h>

#include "cuda_check.h"
#include "kernels/fused_kernels.h"
#include "kernels/ndarray_kernels.h"
#include "kernels/ndarray_scalar.h"

/* n elements of dtype t with varied values (some zeros, some negative). */
static void *values(strata_dtype t, int64_t n, int seed)
{
  void *v = malloc((size_t)(n ? n : 1) * strata_dtype_size(t));
  for (int64_t i = 0; i < n; i++)
    strata__store_d(v, t, i, (double)((i * 37 + seed * 11) % 23) / 3.0 - 3.0);
  return v;
}

/* Compare a device result with the CPU one, element by element. */
static void same(const char *what, strata_dtype t, int64_t n, const void *cpu, const void *dev,
                 double tol)
{
  size_t bytes = (size_t)n * strata_dtype_size(t);
  void *host = malloc(bytes ? bytes : 1);
  CHECK_EQ(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  for (int64_t i = 0; i < n; i++) {
    double a = strata__load_d(cpu, t, i), b = strata__load_d(host, t, i);
    if (!(a == b || (a != a && b != b) || fabs(a - b) <= tol * (1 + fabs(a)))) {
      fprintf(stderr, "%s: element %lld: cpu %g, cuda %g\n", what, (long long)i, a, b);
      check_failures++;
      break;
    }
  }
  free(host);
}

static void *device_alloc(size_t bytes)
{
  void *d = NULL;
  CHECK_EQ(cudaMalloc(&d, bytes ? bytes : 1), cudaSuccess);
  return d;
}

static void check_elementwise(void)
{
  /* out [16, 33] = fn(a [16, 33], b [33]) over several functions and types */
  const int fns[] = {STRATA_FN_ADD,     STRATA_FN_DIV, STRATA_FN_POW,
                     STRATA_FN_MINIMUM, STRATA_FN_LT,  STRATA_FN_WHERE};
  const strata_dtype types[] = {STRATA_FLOAT32, STRATA_INT32, STRATA_INT8, STRATA_FLOAT64};
  for (size_t f = 0; f < sizeof fns / sizeof *fns; f++)
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
      struct strata__ew_args a;
      memset(&a, 0, sizeof a);
      strata_dtype ty = types[t];
      int is_float = ty == STRATA_FLOAT32 || ty == STRATA_FLOAT64;
      a.fn = fns[f];
      a.nops = fns[f] == STRATA_FN_WHERE ? 3 : 2;
      a.scalar_at = fns[f] == STRATA_FN_POW ? 1 : -1; /* power by a scalar */
      a.scalar = 3;
      a.exact_int = !is_float && fns[f] != STRATA_FN_DIV;
      a.out_dtype = fns[f] == STRATA_FN_LT                 ? STRATA_BOOL
                    : fns[f] == STRATA_FN_DIV && !is_float ? STRATA_FLOAT64
                                                           : ty;
      a.ndim = 2;
      a.shape[0] = 16;
      a.shape[1] = 33;
      int narrays = a.nops - (a.scalar_at >= 0);
      void *in[3], *din[3];
      for (int k = 0; k < narrays; k++) {
        int vector = k == narrays - 1 && narrays > 1; /* the last operand broadcasts */
        a.in_dtype[k] = ty;
        a.stride[k][0] = vector ? 0 : 33;
        a.stride[k][1] = 1;
        in[k] = values(ty, vector ? 33 : 16 * 33, k + 1);
        din[k] = check_device_copy(in[k], (size_t)(vector ? 33 : 16 * 33) * strata_dtype_size(ty));
      }
      size_t bytes = 16 * 33 * strata_dtype_size((strata_dtype)a.out_dtype);
      void *cpu = malloc(bytes), *dev = device_alloc(bytes);
      strata__ew_cpu(&a, cpu, (const void *const *)in);
      CHECK_EQ(strata__ew_cuda(&a, dev, (const void *const *)din, NULL), 0);
      char what[32];
      snprintf(what, sizeof what, "function %d on dtype %d", fns[f], (int)ty);
      same(what, (strata_dtype)a.out_dtype, 16 * 33, cpu, dev, 1e-6);
      for (int k = 0; k < narrays; k++) {
        free(in[k]);
        cudaFree(din[k]);
      }
      free(cpu);
      cudaFree(dev);
    }
}

static void check_view_reduce_fill_tri(void)
{
  enum { A = 4, B = 5, C = 6, N = A * B * C };
  float *x = values(STRATA_FLOAT32, N, 2);
  float *dx = check_device_copy(x, N * sizeof *x);
  /* transpose (2, 0, 1) into a buffer with an offset */
  struct strata__view_args v = {.ndim = 3,
                                .elem = 4,
                                .src_offset = 0,
                                .dst_offset = 7,
                                .shape = {C, A, B},
                                .src_stride = {1, B * C, C},
                                .dst_stride = {A * B, B, 1}};
  float cpu[N + 7] = {0}, *dev = device_alloc(sizeof cpu);
  cudaMemset(dev, 0, sizeof cpu);
  strata__view_cpu(&v, cpu, x);
  CHECK_EQ(strata__view_cuda(&v, dev, dx, NULL), 0);
  same("view", STRATA_FLOAT32, N + 7, cpu, dev, 0);

  /* sum, min and mean over axes 0 and 2 */
  const int fns[] = {STRATA_FN_SUM, STRATA_FN_MIN, STRATA_FN_MEAN};
  for (int f = 0; f < 3; f++) {
    struct strata__reduce_args r;
    memset(&r, 0, sizeof r);
    r.fn = fns[f];
    r.in_dtype = r.out_dtype = STRATA_FLOAT32;
    r.nkeep = 1;
    r.keep_shape[0] = B;
    r.keep_stride[0] = C;
    r.nred = 2;
    r.red_shape[0] = A;
    r.red_stride[0] = B * C;
    r.red_shape[1] = C;
    r.red_stride[1] = 1;
    float rc[B], *rd = device_alloc(sizeof rc);
    strata__reduce_cpu(&r, rc, x);
    CHECK_EQ(strata__reduce_cuda(&r, rd, dx, NULL), 0);
    same(fns[f] == STRATA_FN_SUM   ? "sum"
         : fns[f] == STRATA_FN_MIN ? "min"
                                   : "mean",
         STRATA_FLOAT32, B, rc, rd, 1e-6);
    cudaFree(rd);
  }

  struct strata__affine_fill_args fa = {.dtype = STRATA_INT32, .start = -4, .step = 3, .n = 50};
  int32_t fc[50], *fd = device_alloc(sizeof fc);
  strata__affine_fill_cpu(&fa, fc);
  CHECK_EQ(strata__affine_fill_cuda(&fa, fd, NULL), 0);
  same("arange", STRATA_INT32, 50, fc, fd, 0);

  struct strata__tri_args ta = {.elem = 4, .upper = 1, .k = -1, .batch = A, .rows = B, .cols = C};
  float tc[N], *td = device_alloc(sizeof tc);
  strata__tri_cpu(&ta, tc, x);
  CHECK_EQ(strata__tri_cuda(&ta, td, dx, NULL), 0);
  same("triu", STRATA_FLOAT32, N, tc, td, 0);
  free(x);
  cudaFree(dx);
  cudaFree(dev);
  cudaFree(fd);
  cudaFree(td);
}

static void check_matmul(void)
{
  cublasHandle_t h;
  CHECK_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  const strata_dtype types[] = {STRATA_FLOAT32, STRATA_FLOAT64, STRATA_INT32};
  for (int t = 0; t < 3; t++) {
    struct strata__matmul_args m = {
        .dtype = types[t], .m = 7, .k = 5, .n = 3, .batch = 4, .a_step = 35, .b_step = 0};
    size_t e = strata_dtype_size(types[t]);
    void *x = values(types[t], 4 * 35, 1), *y = values(types[t], 15, 2);
    void *dxm = check_device_copy(x, 4 * 35 * e), *dy = check_device_copy(y, 15 * e);
    void *c = malloc(4 * 21 * e), *dc = device_alloc(4 * 21 * e);
    strata__matmul_cpu(&m, c, x, y);
    CHECK_EQ(strata__matmul_cuda(&m, dc, dxm, dy, h, NULL), 0);
    same("matmul", types[t], 4 * 21, c, dc, 1e-5);
    free(x);
    free(y);
    free(c);
    cudaFree(dxm);
    cudaFree(dy);
    cudaFree(dc);
  }
  cublasDestroy(h);
}

static void check_take_nonzero(void)
{
  enum { OUTER = 3, LEN = 7, INNER = 4, NIDX = 9 };
  float *x = values(STRATA_FLOAT32, OUTER * LEN * INNER, 3);
  int64_t idx[NIDX] = {0, 6, -1, 7, -8, 3, 100, -100, 2};
  float *dx = check_device_copy(x, sizeof(float) * OUTER * LEN * INNER);
  int64_t *didx = check_device_copy(idx, sizeof idx);
  for (int mode = 0; mode < 2; mode++) {
    struct strata__take_args ta = {.elem = 4,
                                   .idx_dtype = STRATA_INT64,
                                   .mode = mode,
                                   .outer = OUTER,
                                   .len = LEN,
                                   .inner = INNER,
                                   .nidx = NIDX};
    float out[OUTER * NIDX * INNER], *dout = device_alloc(sizeof out);
    strata__take_cpu(&ta, out, x, idx);
    CHECK_EQ(strata__take_cuda(&ta, dout, dx, didx, NULL), 0);
    same(mode ? "take clip" : "take wrap", STRATA_FLOAT32, OUTER * NIDX * INNER, out, dout, 0);
    cudaFree(dout);
  }
  enum { M = 5000 };
  float *z = values(STRATA_FLOAT32, M, 5); /* about one in 23 is 0 */
  float *dz = check_device_copy(z, sizeof(float) * M);
  int64_t count = strata__count_nonzero_cpu(STRATA_FLOAT32, M, z), *dcount = device_alloc(8);
  CHECK_EQ(strata__count_nonzero_cuda(STRATA_FLOAT32, M, dz, dcount, NULL), 0);
  same("count_nonzero", STRATA_INT64, 1, &count, dcount, 0);
  int64_t *pos = malloc((size_t)count * sizeof *pos), *dpos = device_alloc((size_t)count * 8);
  strata__flatnonzero_cpu(STRATA_FLOAT32, M, z, pos);
  CHECK_EQ(strata__flatnonzero_cuda(STRATA_FLOAT32, M, dz, dpos, NULL), 0);
  same("flatnonzero", STRATA_INT64, count, pos, dpos, 0);
  free(x);
  free(z);
  free(pos);
  cudaFree(dx);
  cudaFree(didx);
  cudaFree(dz);
  cudaFree(dcount);
  cudaFree(dpos);
}

/* A member of a fused program: fn on array operands src (leaves >= 0,
 * members -1 - m) of dtype t, with a scalar at scalar_at (-1: none). */
static struct strata__fused_member member(int fn, int nops, int scalar_at, double scalar,
                                          strata_dtype t, strata_dtype out, int s0, int s1)
{
  struct strata__fused_member m = {
      .op = {.fn = fn, .nops = nops, .scalar_at = scalar_at, .out_dtype = out, .scalar = scalar},
      .src = {s0, s1, 0}};
  m.op.in_dtype[0] = m.op.in_dtype[1] = t;
  return m;
}

/* out [16, 33] = where(a > b, sqrt(a * 0.5 + b), astype(a, float64) - 1)
 * with a [16, 33] float32, b [33] float32 broadcast: six members, two
 * dtypes, a scalar, a three-operand member. */
static void check_fused(void)
{
  struct strata__fused_program p = {.ndim = 2, .shape = {16, 33}, .nleaves = 2, .nmembers = 6};
  p.leaf_dtype[0] = p.leaf_dtype[1] = STRATA_FLOAT32;
  p.leaf_stride[0][0] = 33;
  p.leaf_stride[0][1] = p.leaf_stride[1][1] = 1;
  const strata_dtype f32 = STRATA_FLOAT32, f64 = STRATA_FLOAT64;
  p.member[0] = member(STRATA_FN_MUL, 2, 1, 0.5, f32, f32, 0, 0);  /* a * 0.5 */
  p.member[1] = member(STRATA_FN_ADD, 2, -1, 0, f32, f32, -1, 1);  /* + b */
  p.member[2] = member(STRATA_FN_SQRT, 1, -1, 0, f32, f64, -2, 0); /* sqrt, as float64 */
  p.member[3] = member(STRATA_FN_GT, 2, -1, 0, f32, STRATA_BOOL, 0, 1);
  p.member[4] = member(STRATA_FN_SUB, 2, 1, 1, f32, f64, 0, 0); /* a - 1 in float64 */
  p.member[5] = member(STRATA_FN_WHERE, 3, -1, 0, f64, f64, -4, -3);
  p.member[5].src[2] = -5;
  p.member[5].op.in_dtype[0] = STRATA_BOOL;
  p.member[5].op.in_dtype[2] = f64;
  float *a = values(f32, 16 * 33, 1), *b = values(f32, 33, 2);
  const void *leaves[2] = {a, b}, *dleaves[2] = {check_device_copy(a, 16 * 33 * sizeof *a),
                                                 check_device_copy(b, 33 * sizeof *b)};
  double *cpu = malloc(16 * 33 * sizeof *cpu), *dev = device_alloc(16 * 33 * sizeof *cpu);
  strata__fused_cpu(&p, leaves, cpu, 0, 16 * 33);
  /* the CPU program against the formula */
  int wrong = 0;
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 33; j++) {
      float x = a[i * 33 + j], y = b[j];
      double want = x > y ? sqrt((double)(x * 0.5f + y)) : (double)x - 1;
      wrong += !(cpu[i * 33 + j] == want || (want != want && cpu[i * 33 + j] != cpu[i * 33 + j]));
    }
  CHECK_EQ(wrong, 0);
  CHECK_EQ(strata__fused_cuda(&p, dleaves, dev, NULL), 0);
  same("fused program", f64, 16 * 33, cpu, dev, 1e-6);
  free(a);
  free(b);
  free(cpu);
  cudaFree((void *)dleaves[0]);
  cudaFree((void *)dleaves[1]);
  cudaFree(dev);
}

int main(void)
{
  check_cuda_device();
  check_elementwise();
  check_view_reduce_fill_tri();
  check_matmul();
  check_take_nonzero();
  check_fused();
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  if (check_failures)
    fprintf(stderr, "%d check(s) failed\n", check_failures);
  return check_failures ? 1 : 0;
}
