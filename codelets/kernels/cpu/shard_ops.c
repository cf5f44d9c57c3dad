/* CPU kernels of the example sharded operations (shard_ops_kernels.h). */
#include <cblas.h>
#include <string.h>

#include "../shard_ops_kernels.h"

void strata__linear_cpu(int64_t rows, int64_t k, int64_t cols, const float *x, const float *w,
                        const float *bias, float *y)
{
  for (int64_t r = 0; r < rows; r++)
    memcpy(y + r * cols, bias, (size_t)cols * sizeof *y);
  if (rows > 0 && cols > 0 && k > 0)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)cols, (int)k, 1.0f, x,
                (int)k, w, (int)cols, 1.0f, y, (int)cols);
}

void strata__conv2d_cpu(const struct strata__conv2d_shape *s, const float *x, const float *kernel,
                        float *y)
{
  for (int64_t i = 0; i < s->yh; i++)
    for (int64_t j = 0; j < s->yw; j++) {
      float acc = 0.0f;
      for (int64_t a = 0; a < s->kh; a++) {
        int64_t p = i + a + s->off_h;
        if (p < 0 || p >= s->xh)
          continue;
        for (int64_t b = 0; b < s->kw; b++) {
          int64_t q = j + b + s->off_w;
          if (q >= 0 && q < s->xw)
            acc += kernel[a * s->kw + b] * x[p * s->xw + q];
        }
      }
      y[i * s->yw + j] = acc;
    }
}

void strata__axial_sum_cpu(int64_t outer, int64_t len, int64_t inner, const float *x, float *y)
{
  for (int64_t o = 0; o < outer; o++)
    for (int64_t l = 0; l < len; l++) {
      const float *row = x + (o * len + l) * inner;
      float *out = y + o * inner;
      for (int64_t i = 0; i < inner; i++)
        out[i] += row[i];
    }
}

void strata__broadcast_add_cpu(int64_t rows, int64_t cols, const float *x, const float *v, float *y)
{
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++)
      y[r * cols + c] = x[r * cols + c] + v[c];
}
