/* CUDA AMR kernels against the CPU ones: copy, restriction and
 * prolongation (factors 2 and 4, 2-D and 3-D, float and double, with buffer
 * offsets), whole families (a parent and its children) and boundary
 * extrapolation on random data. Exit 77 without a GPU. Also built against
 * the emulated runtime of tests/cuda_emulation (test_amr_cuda_emulated),
 * which runs the kernels on the CPU where there is no GPU. */
#include <math.h>
#include <stdlib.h>

#include "cuda_check.h"
#include "kernels/amr_kernels.h"

static double *random_doubles(size_t n)
{
  double *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++)
    v[i] = (double)rand() / RAND_MAX;
  return v;
}

/* Same input on both sides; results compared as doubles. */
static void compare_xfer(int kind, int dim, int factor, int is_double)
{
  const int64_t n = 12, g = 1;
  struct strata__amr_xfer x = {.kind = kind,
                               .dim = dim,
                               .factor = factor,
                               .is_double = is_double,
                               .dst_offset = 5,
                               .src_offset = 3};
  for (int a = 0; a < 3; a++) {
    int used = a < dim;
    x.count[a] = used ? n : 1;
    x.dst_dims[a] = used ? n + 2 : 1;
    x.dst_start[a] = used ? 1 : 0;
    x.src_dims[a] = !used ? 1 : kind == STRATA__AMR_RESTRICT ? n * factor : n / factor + 2 * g + 2;
    x.src_start[a] = used && kind == STRATA__AMR_PROLONG ? g * factor : 0;
  }
  size_t es = is_double ? 8 : 4;
  size_t ns = (size_t)(x.src_dims[0] * x.src_dims[1] * x.src_dims[2] + x.src_offset);
  size_t nd = (size_t)(x.dst_dims[0] * x.dst_dims[1] * x.dst_dims[2] + x.dst_offset);
  double *sd = random_doubles(ns);
  void *src = malloc(ns * es), *cpu = calloc(nd, es), *gpu = calloc(nd, es);
  for (size_t i = 0; i < ns; i++) {
    if (is_double)
      ((double *)src)[i] = sd[i];
    else
      ((float *)src)[i] = (float)sd[i];
  }
  strata__amr_xfer_cpu(&x, cpu, src);
  void *d_src = check_device_copy(src, ns * es), *d_dst = check_device_copy(gpu, nd * es);
  CHECK_EQ(strata__amr_xfer_cuda(&x, d_dst, d_src, NULL), 0);
  CHECK_EQ(cudaMemcpy(gpu, d_dst, nd * es, cudaMemcpyDeviceToHost), cudaSuccess);
  double worst = 0;
  for (size_t i = 0; i < nd; i++) {
    double a = is_double ? ((double *)cpu)[i] : ((float *)cpu)[i];
    double b = is_double ? ((double *)gpu)[i] : ((float *)gpu)[i];
    worst = fmax(worst, fabs(a - b));
  }
  CHECK(worst <= (is_double ? 1e-14 : 1e-6));
  cudaFree(d_src);
  cudaFree(d_dst);
  free(sd);
  free(src);
  free(cpu);
  free(gpu);
}

/* A family of 8^3-cell blocks with one ghost layer, in octant order (the
 * CPU pairs children along x) and reversed (it does not). */
static void compare_family(int kind, int dim, int is_double, int reversed)
{
  const int64_t m = 8, ghost = 1, side = m + 2 * ghost;
  const int nchildren = 1 << dim;
  struct strata__amr_family f = {.nchildren = nchildren};
  for (int o = 0; o < nchildren; o++)
    f.x[o] =
        strata__amr_family_xfer(kind, dim, m, ghost, reversed ? nchildren - 1 - o : o, is_double);
  const size_t es = is_double ? 8 : 4, n = (size_t)(dim == 3 ? side * side * side : side * side);
  void *cpu[9], *gpu[9], *dev[9]; /* the parent, then the children */
  for (int b = 0; b <= nchildren; b++) {
    double *v = random_doubles(n);
    cpu[b] = malloc(n * es);
    gpu[b] = malloc(n * es);
    for (size_t i = 0; i < n; i++) {
      if (is_double)
        ((double *)cpu[b])[i] = v[i];
      else
        ((float *)cpu[b])[i] = (float)v[i];
    }
    dev[b] = check_device_copy(cpu[b], n * es);
    free(v);
  }
  strata__amr_family_cpu(&f, cpu[0], cpu + 1);
  CHECK_EQ(strata__amr_family_cuda(&f, dev[0], dev + 1, NULL), 0);
  double worst = 0;
  for (int b = 0; b <= nchildren; b++) {
    CHECK_EQ(cudaMemcpy(gpu[b], dev[b], n * es, cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t i = 0; i < n; i++) {
      double u = is_double ? ((double *)cpu[b])[i] : ((float *)cpu[b])[i];
      double w = is_double ? ((double *)gpu[b])[i] : ((float *)gpu[b])[i];
      worst = fmax(worst, fabs(u - w));
    }
    cudaFree(dev[b]);
    free(cpu[b]);
    free(gpu[b]);
  }
  CHECK(worst <= (is_double ? 1e-14 : 1e-6));
}

static void compare_boundary(int dim)
{
  struct strata__amr_boundary b = {
      .dim = dim, .ghost = 2, .is_double = 1, .faces = 0x15, .dims = {9, 9, dim == 3 ? 9 : 1}};
  size_t n = (size_t)(b.dims[0] * b.dims[1] * b.dims[2]);
  double *cpu = random_doubles(n), *gpu = malloc(n * sizeof *gpu);
  void *d = check_device_copy(cpu, n * sizeof *cpu);
  strata__amr_boundary_cpu(&b, cpu);
  CHECK_EQ(strata__amr_boundary_cuda(&b, d, NULL), 0);
  CHECK_EQ(cudaMemcpy(gpu, d, n * sizeof *gpu, cudaMemcpyDeviceToHost), cudaSuccess);
  for (size_t i = 0; i < n; i++)
    CHECK(fabs(cpu[i] - gpu[i]) <= 1e-13);
  cudaFree(d);
  free(cpu);
  free(gpu);
}

int main(void)
{
  check_cuda_device();
  srand(3);
  for (int is_double = 0; is_double < 2; is_double++)
    for (int dim = 2; dim <= 3; dim++) {
      compare_xfer(STRATA__AMR_COPY, dim, 1, is_double);
      for (int factor = 2; factor <= 4; factor *= 2) {
        compare_xfer(STRATA__AMR_RESTRICT, dim, factor, is_double);
        compare_xfer(STRATA__AMR_PROLONG, dim, factor, is_double);
      }
      for (int reversed = 0; reversed < 2; reversed++) {
        compare_family(STRATA__AMR_RESTRICT, dim, is_double, reversed);
        compare_family(STRATA__AMR_PROLONG, dim, is_double, reversed);
      }
    }
  compare_boundary(2);
  compare_boundary(3);
  return check_status();
}
