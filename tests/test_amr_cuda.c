/* CUDA AMR kernels against the CPU ones: copy, restriction and
 * prolongation (factors 2 and 4, 2-D and 3-D, float, double and double into
 * float, with buffer offsets), whole families (a parent and its children) and boundary
 * extrapolation on random data. Transfers and families agree bit for bit
 * (no fused multiply-adds, the CPU's order of additions). Exit 77 without
 * a GPU. */
#include <math.h>
#include <stdlib.h>

#include "cuda_check.h"
#include "kernels/amr_kernels.h"

/* n random values in [0, 1] as float64 (is_double) or float32. */
static void *random_values(size_t n, int is_double)
{
  return check_random_values((long long)n, is_double ? 8 : 4, 0, 1);
}

/* The largest |a[i] - b[i]| of two float64 or float32 arrays. */
static double max_difference(const void *a, const void *b, size_t n, int is_double)
{
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    double u = is_double ? ((const double *)a)[i] : ((const float *)a)[i];
    double w = is_double ? ((const double *)b)[i] : ((const float *)b)[i];
    worst = fmax(worst, fabs(u - w));
  }
  return worst;
}

/* Element types of a transfer: float32, float64, float64 into float32. */
enum types { F32, F64, F64_TO_F32 };

/* Same input on both sides; results compared as doubles. */
static void compare_xfer(int kind, int dim, int factor, enum types types)
{
  const int64_t n = 12, g = 1;
  struct strata__amr_xfer x = {.kind = kind,
                               .dim = dim,
                               .factor = factor,
                               .is_double = types != F32,
                               .dst_float = types == F64_TO_F32,
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
  const int dst_double = types == F64;
  const size_t es = types == F32 ? 4 : 8, ed = dst_double ? 8 : 4;
  size_t ns = (size_t)(x.src_dims[0] * x.src_dims[1] * x.src_dims[2] + x.src_offset);
  size_t nd = (size_t)(x.dst_dims[0] * x.dst_dims[1] * x.dst_dims[2] + x.dst_offset);
  void *src = random_values(ns, types != F32), *cpu = calloc(nd, ed), *gpu = calloc(nd, ed);
  strata__amr_xfer_cpu(&x, cpu, src);
  void *d_src = check_device_copy(src, ns * es), *d_dst = check_device_copy(gpu, nd * ed);
  CHECK_EQ(strata__amr_xfer_cuda(&x, d_dst, d_src, NULL), 0);
  CHECK_EQ(cudaMemcpy(gpu, d_dst, nd * ed, cudaMemcpyDeviceToHost), cudaSuccess);
  CHECK(max_difference(cpu, gpu, nd, dst_double) == 0);
  cudaFree(d_src);
  cudaFree(d_dst);
  free(src);
  free(cpu);
  free(gpu);
}

/* A family of 8^dim-cell blocks with `ghost` layers, in octant order (the
 * CPU pairs children along x) and reversed (it does not); every array is
 * compared whole, so stray writes count too. */
static void compare_family(int kind, int dim, int is_double, int ghost, int reversed)
{
  const int64_t m = 8, side = m + 2 * ghost;
  const int nchildren = 1 << dim;
  struct strata__amr_family f = {.nchildren = nchildren};
  for (int o = 0; o < nchildren; o++)
    f.x[o] =
        strata__amr_family_xfer(kind, dim, m, ghost, reversed ? nchildren - 1 - o : o, is_double);
  const size_t es = is_double ? 8 : 4, n = (size_t)(dim == 3 ? side * side * side : side * side);
  void *cpu[9], *gpu[9], *dev[9]; /* the parent, then the children */
  for (int b = 0; b <= nchildren; b++) {
    cpu[b] = random_values(n, is_double);
    gpu[b] = malloc(n * es);
    dev[b] = check_device_copy(cpu[b], n * es);
  }
  strata__amr_family_cpu(&f, cpu[0], cpu + 1);
  CHECK_EQ(strata__amr_family_cuda(&f, dev[0], dev + 1, NULL), 0);
  for (int b = 0; b <= nchildren; b++) {
    CHECK_EQ(cudaMemcpy(gpu[b], dev[b], n * es, cudaMemcpyDeviceToHost), cudaSuccess);
    CHECK(max_difference(cpu[b], gpu[b], n, is_double) == 0);
    cudaFree(dev[b]);
    free(cpu[b]);
    free(gpu[b]);
  }
}

static void compare_boundary(int dim, int is_double)
{
  struct strata__amr_boundary b = {.dim = dim,
                                   .ghost = 2,
                                   .is_double = is_double,
                                   .faces = 0x15,
                                   .dims = {9, 9, dim == 3 ? 9 : 1}};
  const size_t n = (size_t)(b.dims[0] * b.dims[1] * b.dims[2]), es = is_double ? 8 : 4;
  void *cpu = random_values(n, is_double), *gpu = malloc(n * es);
  void *d = check_device_copy(cpu, n * es);
  strata__amr_boundary_cpu(&b, cpu);
  CHECK_EQ(strata__amr_boundary_cuda(&b, d, NULL), 0);
  CHECK_EQ(cudaMemcpy(gpu, d, n * es, cudaMemcpyDeviceToHost), cudaSuccess);
  CHECK(max_difference(cpu, gpu, n, is_double) <= (is_double ? 1e-13 : 1e-5));
  cudaFree(d);
  free(cpu);
  free(gpu);
}

int main(void)
{
  check_cuda_device();
  srand(3);
  for (enum types types = F32; types <= F64_TO_F32; types++)
    for (int dim = 2; dim <= 3; dim++) {
      compare_xfer(STRATA__AMR_COPY, dim, 1, types);
      for (int factor = 2; factor <= 4; factor *= 2) {
        compare_xfer(STRATA__AMR_RESTRICT, dim, factor, types);
        compare_xfer(STRATA__AMR_PROLONG, dim, factor, types);
      }
    }
  for (int is_double = 0; is_double < 2; is_double++)
    for (int dim = 2; dim <= 3; dim++)
      for (int ghost = 1; ghost <= 2; ghost++)
        for (int reversed = 0; reversed < 2; reversed++) {
          compare_family(STRATA__AMR_RESTRICT, dim, is_double, ghost, reversed);
          compare_family(STRATA__AMR_PROLONG, dim, is_double, ghost, reversed);
        }
  for (int is_double = 0; is_double < 2; is_double++) {
    compare_boundary(2, is_double);
    compare_boundary(3, is_double);
  }
  return check_status();
}
