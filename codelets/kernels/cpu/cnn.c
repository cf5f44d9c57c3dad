/* The network runner on the CPU: conv3d as im2col + OpenBLAS SGEMM over
 * slabs of output planes, and the element-wise, pooling, upsampling and
 * concatenation layers. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "../cnn_kernels.h"

/* im2col slab size: at most this many floats (16 MiB), at least one plane. */
#define COL_TARGET_FLOATS ((size_t)4 << 20)

static int64_t cube(int64_t n) { return n * n * n; }

int strata__layer_in_channels(const struct strata__network *net, int l)
{
  int src = net->layers[l].inputs[0];
  return src == STRATA__NETWORK_INPUT ? net->in_channels : net->layers[src].channels;
}

/* Rows of im2col: in_channels * k^3; planes per slab for extent n. */
static int64_t col_rows(const struct strata__network *net, int l)
{
  int64_t k = net->layers[l].kernel;
  return strata__layer_in_channels(net, l) * k * k * k;
}

int64_t strata__conv3d_slab_planes(int64_t rows, int64_t n, size_t col_floats)
{
  int64_t planes = (int64_t)(col_floats / (size_t)(rows * n * n));
  return planes < 1 ? 1 : planes > n ? n : planes;
}

size_t strata__cnn_scratch_floats(const struct strata__network *net, int64_t n)
{
  size_t total = 0, col = 0;
  for (int l = 0; l < net->nlayers; l++) {
    const struct strata__layer *L = &net->layers[l];
    int64_t nl = n >> L->level;
    if (l < net->nlayers - 1)
      total += (size_t)(L->channels * cube(nl));
    if (L->kind == STRATA__LAYER_CONV3D && L->kernel > 1) {
      int64_t rows = col_rows(net, l);
      size_t need =
          (size_t)(rows * strata__conv3d_slab_planes(rows, nl, COL_TARGET_FLOATS) * nl * nl);
      col = need > col ? need : col;
    }
  }
  return total + col;
}

double strata__cnn_flops(const struct strata__network *net, int64_t n)
{
  double flops = 0;
  for (int l = 0; l < net->nlayers; l++) {
    const struct strata__layer *L = &net->layers[l];
    if (L->kind == STRATA__LAYER_CONV3D)
      flops += 2.0 * (double)L->channels * (double)col_rows(net, l) * (double)cube(n >> L->level);
  }
  return flops;
}

/* Fill rows of the im2col matrix for output planes [z0, z0 + nz): row
 * (c, kz, ky, kx), column (z, y, x) holds in[c][z + kz d - p][y + ky d - p]
 * [x + kx d - p], or 0 outside (same padding; for even k the extra pad is
 * after). */
static void im2col(const float *in, int cin, int64_t n, int k, int d, int64_t z0, int64_t nz,
                   float *col)
{
  int64_t pad = (int64_t)d * (k - 1) / 2, plane = n * n, ncols = nz * plane;
  float *row = col;
  for (int c = 0; c < cin; c++)
    for (int kz = 0; kz < k; kz++)
      for (int ky = 0; ky < k; ky++)
        for (int kx = 0; kx < k; kx++, row += ncols) {
          int64_t dz = kz * d - pad, dy = ky * d - pad, dx = kx * d - pad;
          /* x range whose source x + dx lies inside [0, n) */
          int64_t x0 = dx < 0 ? -dx : 0, x1 = dx > 0 ? n - dx : n;
          if (x1 < x0)
            x1 = x0;
          for (int64_t z = 0; z < nz; z++) {
            int64_t sz = z0 + z + dz;
            for (int64_t y = 0; y < n; y++) {
              float *dst = row + z * plane + y * n;
              int64_t sy = y + dy;
              if (sz < 0 || sz >= n || sy < 0 || sy >= n) {
                memset(dst, 0, (size_t)n * sizeof *dst);
                continue;
              }
              const float *src = in + ((c * n + sz) * n + sy) * n;
              memset(dst, 0, (size_t)x0 * sizeof *dst);
              memcpy(dst + x0, src + x0 + dx, (size_t)(x1 - x0) * sizeof *dst);
              memset(dst + x1, 0, (size_t)(n - x1) * sizeof *dst);
            }
          }
        }
}

void strata__conv3d_cpu(const float *in, int cin, int64_t n, const float *w, const float *bias,
                        int cout, int k, int dilation, float *out, float *col, size_t col_floats)
{
  int64_t vol = cube(n), plane = n * n;
  if (k == 1 && cin * cout <= 4) { /* tiny pointwise layer: direct loops */
    for (int o = 0; o < cout; o++) {
      float *dst = out + o * vol;
      float b = bias ? bias[o] : 0.0f;
      for (int64_t i = 0; i < vol; i++)
        dst[i] = b;
      for (int c = 0; c < cin; c++) {
        const float *src = in + c * vol;
        float wc = w[o * cin + c];
        for (int64_t i = 0; i < vol; i++)
          dst[i] += wc * src[i];
      }
    }
    return;
  }
  if (k == 1) /* pointwise: the input already is the im2col matrix */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, cout, (int)vol, cin, 1.0f, w, cin, in,
                (int)vol, 0.0f, out, (int)vol);
  else {
    int64_t rows = (int64_t)cin * k * k * k;
    int64_t planes = strata__conv3d_slab_planes(rows, n, col_floats);
    for (int64_t z0 = 0; z0 < n; z0 += planes) {
      int64_t nz = z0 + planes > n ? n - z0 : planes;
      im2col(in, cin, n, k, dilation, z0, nz, col);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, cout, (int)(nz * plane), (int)rows,
                  1.0f, w, (int)rows, col, (int)(nz * plane), 0.0f, out + z0 * plane, (int)vol);
    }
  }
  if (bias)
    for (int o = 0; o < cout; o++)
      for (int64_t i = 0; i < vol; i++)
        out[o * vol + i] += bias[o];
}

static void maxpool(const float *in, int channels, int64_t n, float *out)
{
  int64_t m = n / 2;
  for (int64_t c = 0; c < channels; c++)
    for (int64_t z = 0; z < m; z++)
      for (int64_t y = 0; y < m; y++)
        for (int64_t x = 0; x < m; x++) {
          float best = -INFINITY;
          for (int dz = 0; dz < 2; dz++)
            for (int dy = 0; dy < 2; dy++)
              for (int dx = 0; dx < 2; dx++) {
                float v = in[((c * n + 2 * z + dz) * n + 2 * y + dy) * n + 2 * x + dx];
                best = v > best || v != v ? v : best;
              }
          out[((c * m + z) * m + y) * m + x] = best;
        }
}

static void upsample(const float *in, int channels, int64_t n, float *out)
{
  int64_t m = 2 * n;
  for (int64_t c = 0; c < channels; c++)
    for (int64_t z = 0; z < m; z++)
      for (int64_t y = 0; y < m; y++)
        for (int64_t x = 0; x < m; x++)
          out[((c * m + z) * m + y) * m + x] = in[((c * n + z / 2) * n + y / 2) * n + x / 2];
}

static void pointwise(const struct strata__layer *L, const float *in, int64_t count, float *out)
{
  for (int64_t i = 0; i < count; i++) {
    float v = in[i];
    switch (L->kind) {
    case STRATA__LAYER_RELU: out[i] = v > 0.0f ? v : 0.0f; break;
    case STRATA__LAYER_LEAKY_RELU: out[i] = v > 0.0f ? v : L->param * v; break;
    case STRATA__LAYER_SIGMOID: out[i] = 1.0f / (1.0f + expf(-v)); break;
    default: out[i] = logf(v > L->param ? v : L->param); break; /* LOG */
    }
  }
}

void strata__cnn_layout(const struct strata__network *net, int64_t n, int64_t *offsets,
                        int64_t *col_offset, size_t *col_floats)
{
  int64_t at = 0;
  for (int l = 0; l < net->nlayers - 1; l++) {
    offsets[l] = at;
    at += net->layers[l].channels * cube(n >> net->layers[l].level);
  }
  *col_offset = at;
  *col_floats = strata__cnn_scratch_floats(net, n) - (size_t)at;
}

void strata__cnn_forward_cpu(const struct strata__network *net, const float *weights,
                             const float *in, int64_t n, float *out, float *scratch)
{
  /* Outputs of every layer but the last live in scratch, then im2col. */
  int64_t offsets[net->nlayers], col_offset;
  size_t col_floats;
  strata__cnn_layout(net, n, offsets, &col_offset, &col_floats);
  float *next = scratch + col_offset;
  const float *outputs[net->nlayers];
  for (int l = 0; l < net->nlayers - 1; l++)
    outputs[l] = scratch + offsets[l];
  for (int l = 0; l < net->nlayers; l++) {
    const struct strata__layer *L = &net->layers[l];
    float *dst = l == net->nlayers - 1 ? out : (float *)outputs[l];
    const float *src[2];
    int64_t src_n[2];
    for (int i = 0; i < L->ninputs; i++) {
      int s = L->inputs[i];
      src[i] = s == STRATA__NETWORK_INPUT ? in : outputs[s];
      src_n[i] = s == STRATA__NETWORK_INPUT ? n : n >> net->layers[s].level;
    }
    int cin = strata__layer_in_channels(net, l);
    switch (L->kind) {
    case STRATA__LAYER_CONV3D:
      strata__conv3d_cpu(src[0], cin, src_n[0], weights + L->weight_offset,
                         L->bias_offset >= 0 ? weights + L->bias_offset : NULL, L->channels,
                         L->kernel, L->dilation, dst, next, col_floats);
      break;
    case STRATA__LAYER_MAXPOOL: maxpool(src[0], cin, src_n[0], dst); break;
    case STRATA__LAYER_UPSAMPLE: upsample(src[0], cin, src_n[0], dst); break;
    case STRATA__LAYER_CONCAT: {
      size_t first = (size_t)(cin * cube(src_n[0]));
      memcpy(dst, src[0], first * sizeof *dst);
      memcpy(dst + first, src[1],
             (size_t)(L->channels - cin) * (size_t)cube(src_n[1]) * sizeof *dst);
      break;
    }
    default: pointwise(L, src[0], cin * cube(src_n[0]), dst); break;
    }
  }
}
