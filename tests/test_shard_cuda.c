/* CUDA kernels of sharded execution against the CPU ones: box copy, merge
 * and fill, the linear layer (cuBLAS), the convolution window, the axial
 * sum and the broadcast add. Exit 77 without a GPU. */
#include <cublas_v2.h>
#include <math.h>
#include <string.h>

#include "cuda_check.h"
#include "kernels/box_kernels.h"
#include "kernels/shard_ops_kernels.h"

static float *from_device(const void *d, size_t n)
{
  float *h = malloc(n * sizeof *h);
  CHECK_EQ(cudaMemcpy(h, d, n * sizeof *h, cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

static void check_close(const float *a, const float *b, size_t n, float tol)
{
  for (size_t i = 0; i < n; i++)
    if (!(fabsf(a[i] - b[i]) <= tol * (1 + fabsf(b[i])))) {
      fprintf(stderr, "cell %zu: %g vs %g\n", i, a[i], b[i]);
      check_failures++;
      return;
    }
}

static void ramp(float *v, size_t n, int seed)
{
  for (size_t i = 0; i < n; i++)
    v[i] = (float)((i * 37 + (size_t)seed * 11) % 23) / 7.0f - 1.5f;
}

static void check_boxes(void)
{
  enum { N = 4 * 9 * 10, NSRC = 3 * 7 * 12 }; /* row and plane pitches differ */
  float src[NSRC], cpu[N], cpu_merge[N];
  ramp(src, NSRC, 1);
  ramp(cpu, N, 2);
  memcpy(cpu_merge, cpu, sizeof cpu);
  const int64_t extent[3] = {2, 5, 6};
  struct strata__box dst = {{4, 9, 10}, {1, 3, 2}}, sb = {{3, 7, 12}, {1, 2, 5}};
  float *d_src = check_device_copy(src, sizeof src), *d_dst = check_device_copy(cpu, sizeof cpu),
        *d_merge = check_device_copy(cpu, sizeof cpu);
  strata__box_copy_cpu(3, extent, 4, cpu, &dst, src, &sb);
  strata__box_merge_cpu(3, extent, STRATA_SUM, STRATA_FLOAT32, cpu_merge, &dst, src, &sb);
  CHECK_EQ(strata__box_copy_cuda(3, extent, 4, d_dst, &dst, d_src, &sb, NULL), 0);
  CHECK_EQ(strata__box_merge_cuda(3, extent, STRATA_SUM, STRATA_FLOAT32, d_merge, &dst, d_src, &sb,
                                  NULL),
           0);
  float *got = from_device(d_dst, N), *got_merge = from_device(d_merge, N);
  CHECK(memcmp(got, cpu, sizeof cpu) == 0);
  check_close(got_merge, cpu_merge, N, 0);
  double v = -3.25;
  CHECK_EQ(strata__fill_cuda(d_dst, N / 2, sizeof v, &v, NULL), 0);
  double *filled = (double *)(void *)from_device(d_dst, N);
  for (int i = 0; i < N / 2; i++)
    CHECK(filled[i] == v);
  free(got);
  free(got_merge);
  free(filled);
  cudaFree(d_src);
  cudaFree(d_dst);
  cudaFree(d_merge);
}

static void check_ops(cublasHandle_t h)
{
  enum { R = 33, K = 40, C = 17, XH = 12, XW = 15 };
  float x[R * K], w[K * C], bias[C], y[R * C];
  ramp(x, R * K, 3);
  ramp(w, K * C, 4);
  ramp(bias, C, 5);
  float *dx = check_device_copy(x, sizeof x), *dw = check_device_copy(w, sizeof w),
        *db = check_device_copy(bias, sizeof bias), *dy = check_device_copy(y, sizeof y);
  strata__linear_cpu(R, K, C, x, w, bias, y);
  CHECK_EQ(strata__linear_cuda(R, K, C, dx, dw, db, dy, h, NULL), 0);
  float *got = from_device(dy, R * C);
  check_close(got, y, R * C, 1e-4f);
  free(got);

  /* Convolution window, offsets into a clipped buffer. */
  float img[XH * XW], k[3 * 4], out[10 * 13];
  ramp(img, XH * XW, 6);
  ramp(k, 12, 7);
  struct strata__conv2d_shape s = {10, 13, XH, XW, 3, 4, -1, 1};
  float *dimg = check_device_copy(img, sizeof img), *dk = check_device_copy(k, sizeof k),
        *dout = check_device_copy(out, sizeof out);
  strata__conv2d_cpu(&s, img, k, out);
  CHECK_EQ(strata__conv2d_cuda(&s, dimg, dk, dout, NULL), 0);
  got = from_device(dout, 10 * 13);
  check_close(got, out, 10 * 13, 1e-5f);
  free(got);

  /* Axial sum into an output holding earlier partials; broadcast add. */
  float sums[XH] = {0}, added[XH * XW];
  ramp(sums, XH, 8);
  float *dsums = check_device_copy(sums, sizeof sums),
        *dadded = check_device_copy(added, sizeof added);
  strata__axial_sum_cpu(1, XW, XH, img, sums); /* img read as [1, XW, XH] */
  CHECK_EQ(strata__axial_sum_cuda(1, XW, XH, dimg, dsums, NULL), 0);
  got = from_device(dsums, XH);
  check_close(got, sums, XH, 1e-5f);
  free(got);
  strata__broadcast_add_cpu(XH, XW, img, img, added);
  CHECK_EQ(strata__broadcast_add_cuda(XH, XW, dimg, dimg, dadded, NULL), 0);
  got = from_device(dadded, XH * XW);
  check_close(got, added, XH * XW, 0);
  free(got);
  cudaFree(dx);
  cudaFree(dw);
  cudaFree(db);
  cudaFree(dy);
  cudaFree(dimg);
  cudaFree(dk);
  cudaFree(dout);
  cudaFree(dsums);
  cudaFree(dadded);
}

int main(void)
{
  check_cuda_device();
  cublasHandle_t h;
  CHECK_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  check_boxes();
  check_ops(h);
  cudaDeviceSynchronize();
  cublasDestroy(h);
  return check_status();
}
