/* The network runner on the CPU: every layer's extents from its input's
 * (strata__cnn_extents), conv3d through oneDNN where prepared
 * (cnn_onednn.c), else as im2col + OpenBLAS SGEMM over slabs of output
 * planes, transposed conv3d as one SGEMM and a col2im scatter, and the
 * normalisation, element-wise, pooling, resampling, reshape and
 * concatenation layers. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "../cnn_kernels.h"

/* im2col slab size: at most this many floats (16 MiB), at least one plane. */
#define COL_TARGET_FLOATS ((size_t)4 << 20)

int strata__layer_in_channels(const struct strata__network *net, int l)
{
  int src = net->layers[l].inputs[0];
  return src == STRATA__NETWORK_INPUT ? net->in_channels : net->layers[src].channels;
}

/* Extents of the input a layer reads (its first input's). */
static struct strata__extent input_extent(const struct strata__network *net, int l, int64_t n,
                                          const struct strata__extent *ext)
{
  return strata__source_extent(ext, net->layers[l].inputs[0], n);
}

static int same_extent(struct strata__extent a, struct strata__extent b)
{
  return a.e[0] == b.e[0] && a.e[1] == b.e[1] && a.e[2] == b.e[2];
}

/* Extents of a reshape of `count` values with extents `in`: a shape entry
 * 0 copies the input's extent on its axis, and the input's element count
 * over the others gives the one that is -1; all 0 when nothing fits. */
static struct strata__extent reshaped(const struct strata__layer *L, int64_t count,
                                      struct strata__extent in)
{
  struct strata__extent out = {{0, 0, 0}}, none = {{0, 0, 0}};
  int64_t fixed = L->channels;
  int unknown = -1;
  for (int a = 0; a < 3; a++)
    if (L->shape[a] < 0)
      unknown = a;
    else
      fixed *= out.e[a] = L->shape[a] ? L->shape[a] : in.e[a];
  if (unknown >= 0 && fixed > 0 && count % fixed == 0)
    out.e[unknown] = count / fixed;
  return (unknown >= 0 ? out.e[unknown] * fixed : fixed) == count ? out : none;
}

int strata__cnn_extents(const struct strata__network *net, int64_t n, struct strata__extent *ext)
{
  const int64_t most = (int64_t)1 << 24; /* per axis */
  for (int l = 0; l < net->nlayers; l++) {
    const struct strata__layer *L = &net->layers[l];
    const struct strata__extent in = input_extent(net, l, n, ext);
    struct strata__extent out = in;
    for (int i = 1; i < L->ninputs; i++)
      if (!same_extent(strata__source_extent(ext, L->inputs[i], n), in))
        return l;
    for (int a = 0; a < 3; a++) {
      const int64_t k = L->kernel[a], d = L->dilation[a], s = L->stride[a], span = d * (k - 1);
      switch (L->kind) {
      case STRATA__LAYER_CONV3D:
      case STRATA__LAYER_MAXPOOL:
      case STRATA__LAYER_AVGPOOL: {
        const int64_t room = in.e[a] + L->pad[a] + L->pad_end[a] - span - 1;
        out.e[a] = room < 0 ? 0 : room / s + 1;
        break;
      }
      case STRATA__LAYER_CONV_TRANSPOSE:
        out.e[a] = (in.e[a] - 1) * s + span + 1 - L->pad[a] - L->pad_end[a];
        break;
      case STRATA__LAYER_UPSAMPLE:
      case STRATA__LAYER_UPSAMPLE_LINEAR: out.e[a] = in.e[a] * s; break;
      case STRATA__LAYER_GLOBAL_AVGPOOL: out.e[a] = 1; break;
      case STRATA__LAYER_BROADCAST: out.e[a] = n; break;
      default: break;
      }
    }
    if (L->kind == STRATA__LAYER_RESHAPE)
      out = reshaped(L, strata__layer_in_channels(net, l) * strata__volume(in), in);
    for (int a = 0; a < 3; a++)
      if (out.e[a] < 1 || out.e[a] > most)
        return l;
    /* at most 2^40 floats an activation, so that sizes never overflow */
    const int64_t plane = out.e[1] * out.e[2], floats = (int64_t)1 << 40;
    if (plane > floats / out.e[0] ||
        plane * out.e[0] > floats / (L->channels > 1 ? L->channels : 1))
      return l;
    ext[l] = out;
  }
  return -1;
}

/* Rows of a conv3d's im2col matrix: its group's input channels times the taps. */
static int64_t col_rows(const struct strata__network *net, int l)
{
  const struct strata__layer *L = &net->layers[l];
  return strata__layer_in_channels(net, l) / L->groups * strata__kernel_volume(L);
}

int64_t strata__conv3d_slab_planes(int64_t rows, int64_t plane, int64_t planes, size_t col_floats)
{
  int64_t fit = (int64_t)(col_floats / (size_t)(rows * plane));
  return fit < 1 ? 1 : fit > planes ? planes : fit;
}

/* Floats of im2col (conv3d) or column (transposed conv3d) space of layer l. */
static size_t col_need(const struct strata__network *net, int l, int64_t n,
                       const struct strata__extent *ext)
{
  const struct strata__layer *L = &net->layers[l];
  const struct strata__extent m = ext[l];
  if (L->kind == STRATA__LAYER_CONV3D) {
    /* oneDNN's areas, and im2col's should a oneDNN run fail */
    size_t onednn = strata__cnn_onednn_floats(net, l, n), im2col = 0;
    int64_t rows = col_rows(net, l), plane = m.e[1] * m.e[2];
    if (!strata__conv3d_is_pointwise(L))
      im2col = (size_t)(rows * strata__conv3d_slab_planes(rows, plane, m.e[0], COL_TARGET_FLOATS) *
                        plane);
    return onednn > im2col ? onednn : im2col;
  }
  if (L->kind == STRATA__LAYER_CONV_TRANSPOSE)
    return (size_t)(L->channels * strata__kernel_volume(L) *
                    strata__volume(input_extent(net, l, n, ext)));
  return 0;
}

/* The scratch layout for layer extents ext: offsets[l] (when not NULL) of
 * every layer's output but the last, and the floats of the work area
 * after them in *col_floats; returns the total. */
static size_t layout(const struct strata__network *net, int64_t n, const struct strata__extent *ext,
                     int64_t *offsets, size_t *col_floats)
{
  size_t total = 0, col = 0;
  for (int l = 0; l < net->nlayers; l++) {
    if (l < net->nlayers - 1) {
      if (offsets)
        offsets[l] = (int64_t)total;
      total += (size_t)strata__cnn_align(net->layers[l].channels * strata__volume(ext[l]));
    }
    size_t need = col_need(net, l, n, ext);
    col = need > col ? need : col;
  }
  *col_floats = col;
  return total + col;
}

size_t strata__cnn_scratch_floats(const struct strata__network *net, int64_t n)
{
  struct strata__extent ext[net->nlayers];
  size_t col;
  return strata__cnn_extents(net, n, ext) >= 0 ? 0 : layout(net, n, ext, NULL, &col);
}

double strata__cnn_layer_flops(const struct strata__network *net, int l, int64_t n,
                               const struct strata__extent *ext)
{
  const struct strata__layer *L = &net->layers[l];
  if (L->kind == STRATA__LAYER_CONV3D)
    return 2.0 * (double)L->channels * (double)col_rows(net, l) * (double)strata__volume(ext[l]);
  if (L->kind == STRATA__LAYER_CONV_TRANSPOSE)
    return 2.0 * (double)L->channels * (double)strata__layer_in_channels(net, l) *
           (double)strata__kernel_volume(L) * (double)strata__volume(input_extent(net, l, n, ext));
  return 0;
}

double strata__cnn_flops(const struct strata__network *net, int64_t n)
{
  struct strata__extent ext[net->nlayers];
  if (strata__cnn_extents(net, n, ext) >= 0)
    return 0;
  double flops = 0;
  for (int l = 0; l < net->nlayers; l++)
    flops += strata__cnn_layer_flops(net, l, n, ext);
  return flops;
}

/* Fill rows of the im2col matrix for output planes [z0, z0 + nz) of
 * extents m: row (c, kz, ky, kx), column (z, y, x) holds
 * in[c][z sz + kz dz - pz][y sy + ky dy - py][x sx + kx dx - px], or 0
 * outside the input's extents n. */
static void im2col(const float *in, int cin, struct strata__extent n, struct strata__extent m,
                   const struct strata__layer *L, int64_t z0, int64_t nz, float *col)
{
  const int *k = L->kernel, *d = L->dilation, *s = L->stride;
  const int64_t plane = m.e[1] * m.e[2], ncols = nz * plane, mx = m.e[2], nx = n.e[2];
  float *row = col;
  for (int c = 0; c < cin; c++)
    for (int kz = 0; kz < k[0]; kz++)
      for (int ky = 0; ky < k[1]; ky++)
        for (int kx = 0; kx < k[2]; kx++, row += ncols) {
          int64_t dz = kz * d[0] - L->pad[0], dy = ky * d[1] - L->pad[1],
                  dx = kx * d[2] - L->pad[2];
          /* stride 1: the x range whose source x + dx lies inside [0, nx) */
          int64_t x0 = dx < 0 ? -dx : 0, x1 = nx - dx < mx ? nx - dx : mx;
          x0 = x0 < mx ? x0 : mx;
          x1 = x1 > x0 ? x1 : x0;
          for (int64_t z = 0; z < nz; z++) {
            int64_t sz = (z0 + z) * s[0] + dz;
            for (int64_t y = 0; y < m.e[1]; y++) {
              float *dst = row + z * plane + y * mx;
              int64_t sy = y * s[1] + dy;
              if (sz < 0 || sz >= n.e[0] || sy < 0 || sy >= n.e[1]) {
                memset(dst, 0, (size_t)mx * sizeof *dst);
                continue;
              }
              const float *src = in + ((c * n.e[0] + sz) * n.e[1] + sy) * nx;
              if (s[2] == 1) {
                memset(dst, 0, (size_t)x0 * sizeof *dst);
                memcpy(dst + x0, src + x0 + dx, (size_t)(x1 - x0) * sizeof *dst);
                memset(dst + x1, 0, (size_t)(mx - x1) * sizeof *dst);
              } else
                for (int64_t x = 0; x < mx; x++) {
                  int64_t sx = x * s[2] + dx;
                  dst[x] = sx >= 0 && sx < nx ? src[sx] : 0.0f;
                }
            }
          }
        }
}

static void pointwise(int kind, float p, float p2, const float *in, int64_t count, float *out)
{
  for (int64_t i = 0; i < count; i++)
    out[i] = strata__pointwise(kind, p, p2, in[i]);
}

/* A convolution's fused activation, in place. */
static void activate(const struct strata__layer *L, float *out, int64_t count)
{
  if (L->activation)
    pointwise(L->activation, L->act_param, L->act_param2, out, count, out);
}

static void add_bias(float *out, int cout, int64_t vol, const float *bias)
{
  if (bias)
    for (int o = 0; o < cout; o++)
      for (int64_t i = 0; i < vol; i++)
        out[o * vol + i] += bias[o];
}

/* conv3d with few channels, stride 1, one group (im2col + SGEMM has the
 * wrong shape there, GEMV-like): each tap adds a weighted, shifted source
 * row to an output row; the x loop vectorises, with AVX2 where the CPU has
 * it (a clone chosen at load time). */
__attribute__((target_clones("avx2", "default"))) static void
conv3d_direct(const float *in, int cin, struct strata__extent n, struct strata__extent m,
              const struct strata__layer *L, const float *w, float *out)
{
  const int *k = L->kernel, *d = L->dilation;
  const int64_t vol_in = strata__volume(n), vol = strata__volume(m), mx = m.e[2], nx = n.e[2];
  memset(out, 0, (size_t)(L->channels * vol) * sizeof *out);
  for (int o = 0; o < L->channels; o++)
    for (int c = 0; c < cin; c++) {
      const float *src = in + c * vol_in,
                  *wc = w + ((int64_t)o * cin + c) * strata__kernel_volume(L);
      for (int64_t z = 0; z < m.e[0]; z++)
        for (int64_t y = 0; y < m.e[1]; y++) {
          float *row = out + o * vol + (z * m.e[1] + y) * mx;
          for (int kz = 0; kz < k[0]; kz++) {
            int64_t sz = z + (int64_t)kz * d[0] - L->pad[0];
            for (int ky = 0; sz >= 0 && sz < n.e[0] && ky < k[1]; ky++) {
              int64_t sy = y + (int64_t)ky * d[1] - L->pad[1];
              if (sy < 0 || sy >= n.e[1])
                continue;
              const float *s = src + (sz * n.e[1] + sy) * nx;
              for (int kx = 0; kx < k[2]; kx++) {
                int64_t dx = (int64_t)kx * d[2] - L->pad[2], x0 = dx < 0 ? -dx : 0,
                        x1 = nx - dx < mx ? nx - dx : mx;
                float tap = wc[(kz * k[1] + ky) * k[2] + kx], *r = row + x0;
                const float *q = s + x0 + dx;
                /* an unsigned count: the loop vectorises under -fwrapv too */
                for (size_t i = 0, len = x1 > x0 ? (size_t)(x1 - x0) : 0; i < len; i++)
                  r[i] += tap * q[i];
              }
            }
          }
        }
    }
}

/* conv3d of layer L on `in` [cin, n] giving [channels, m]: per group,
 * im2col over slabs of output planes and one SGEMM per slab (the input
 * itself is the matrix of a pointwise convolution). */
static void conv3d(const float *in, int cin, struct strata__extent n, struct strata__extent m,
                   const struct strata__layer *L, const float *w, const float *bias, float *out,
                   float *col, size_t col_floats)
{
  int g = L->groups, cin_g = cin / g, cout_g = L->channels / g;
  int64_t vol_in = strata__volume(n), vol = strata__volume(m), plane = m.e[1] * m.e[2];
  int64_t rows = cin_g * strata__kernel_volume(L);
  if (strata__conv3d_is_direct(L, cin)) {
    conv3d_direct(in, cin, n, m, L, w, out);
    add_bias(out, L->channels, vol, bias);
    activate(L, out, L->channels * vol);
    return;
  }
  for (int gi = 0; gi < g; gi++) {
    const float *src = in + gi * cin_g * vol_in, *wg = w + gi * cout_g * rows;
    float *dst = out + gi * cout_g * vol;
    if (strata__conv3d_is_pointwise(L)) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, cout_g, (int)vol, cin_g, 1.0f, wg,
                  cin_g, src, (int)vol, 0.0f, dst, (int)vol);
      continue;
    }
    int64_t planes = strata__conv3d_slab_planes(rows, plane, m.e[0], col_floats);
    for (int64_t z0 = 0; z0 < m.e[0]; z0 += planes) {
      int64_t nz = z0 + planes > m.e[0] ? m.e[0] - z0 : planes;
      im2col(src, cin_g, n, m, L, z0, nz, col);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, cout_g, (int)(nz * plane), (int)rows,
                  1.0f, wg, (int)rows, col, (int)(nz * plane), 0.0f, dst + z0 * plane, (int)vol);
    }
  }
  add_bias(out, L->channels, vol, bias);
  activate(L, out, L->channels * vol);
}

void strata__conv3d_cpu(const float *in, int cin, int64_t n, const float *w, const float *bias,
                        int cout, int k, int dilation, float *out, float *col, size_t col_floats)
{
  struct strata__layer L = {.kind = STRATA__LAYER_CONV3D, .channels = cout, .groups = 1};
  strata__layer_same(&L, k, dilation);
  const struct strata__extent cube = {{n, n, n}};
  conv3d(in, cin, cube, cube, &L, w, bias, out, col, col_floats);
}

/* Transposed conv3d: one SGEMM gives every tap's contribution
 * col[(o, kz, ky, kx)][input cell], then each is added to the output cell
 * it reaches, (i stride - pad + t dilation) on each axis (no division). */
static void conv_transpose(const float *in, int cin, struct strata__extent n,
                           struct strata__extent m, const struct strata__layer *L, const float *w,
                           const float *bias, float *out, float *col)
{
  const int *k = L->kernel, *s = L->stride, *d = L->dilation, cout = L->channels;
  const int64_t kv = strata__kernel_volume(L), vol_in = strata__volume(n), vol = strata__volume(m);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)(cout * kv), (int)vol_in, cin, 1.0f, w,
              (int)(cout * kv), in, (int)vol_in, 0.0f, col, (int)vol_in);
  for (int o = 0; o < cout; o++) {
    float *dst = out + o * vol;
    for (int64_t i = 0; i < vol; i++)
      dst[i] = bias ? bias[o] : 0.0f;
    for (int kz = 0; kz < k[0]; kz++)
      for (int ky = 0; ky < k[1]; ky++)
        for (int kx = 0; kx < k[2]; kx++) {
          const float *tap = col + (((o * k[0] + kz) * k[1] + ky) * k[2] + kx) * vol_in;
          const int64_t dx = (int64_t)kx * d[2] - L->pad[2];
          /* the input x whose output x s + dx lies in [0, m) */
          int64_t x0 = dx < 0 ? (-dx + s[2] - 1) / s[2] : 0, x1 = (m.e[2] - dx + s[2] - 1) / s[2];
          x1 = x1 < n.e[2] ? x1 : n.e[2];
          for (int64_t z = 0; z < n.e[0]; z++) {
            const int64_t oz = z * s[0] - L->pad[0] + (int64_t)kz * d[0];
            for (int64_t y = 0; oz >= 0 && oz < m.e[0] && y < n.e[1]; y++) {
              const int64_t oy = y * s[1] - L->pad[1] + (int64_t)ky * d[1];
              if (oy < 0 || oy >= m.e[1])
                continue;
              const float *src = tap + (z * n.e[1] + y) * n.e[2];
              float *row = dst + (oz * m.e[1] + oy) * m.e[2];
              for (int64_t x = x0; x < x1; x++)
                row[x * s[2] + dx] += src[x];
            }
          }
        }
  }
  activate(L, out, cout * vol);
}

/* The U-Nets' 2x2x2 max pooling of stride 2, without padding, a row of
 * outputs from four input rows: the general window walk spends most of its
 * time on indices. 0 when the layer is not that pooling. */
static int pool_halving(const float *in, int channels, struct strata__extent n,
                        struct strata__extent m, const struct strata__layer *L, float *out)
{
  if (L->kind != STRATA__LAYER_MAXPOOL)
    return 0;
  for (int a = 0; a < 3; a++)
    if (L->kernel[a] != 2 || L->stride[a] != 2 || L->dilation[a] != 1 || L->pad[a] != 0 ||
        2 * m.e[a] > n.e[a])
      return 0;
  const int64_t row = n.e[2], plane = n.e[1] * n.e[2];
  for (int64_t c = 0; c < channels; c++)
    for (int64_t z = 0; z < m.e[0]; z++)
      for (int64_t y = 0; y < m.e[1]; y++) {
        const float *r0 = in + c * strata__volume(n) + 2 * z * plane + 2 * y * row, *r1 = r0 + row,
                    *r2 = r0 + plane, *r3 = r2 + row;
        float *o = out + ((c * m.e[0] + z) * m.e[1] + y) * m.e[2];
        for (int64_t x = 0; x < m.e[2]; x++) {
          const int64_t i = 2 * x;
          float near = strata__max_or_nan(strata__max_or_nan(r0[i], r0[i + 1]),
                                          strata__max_or_nan(r1[i], r1[i + 1]));
          float far = strata__max_or_nan(strata__max_or_nan(r2[i], r2[i + 1]),
                                         strata__max_or_nan(r3[i], r3[i + 1]));
          o[x] = strata__max_or_nan(near, far);
        }
      }
  return 1;
}

/* Pooling: the maximum (NaN wins) or the mean of each window. */
static void pool(const float *in, int channels, struct strata__extent n, struct strata__extent m,
                 const struct strata__layer *L, float *out)
{
  if (pool_halving(in, channels, n, m, L, out))
    return;
  const struct strata__pool_window w = strata__pool_window(L);
  const int mean = L->kind == STRATA__LAYER_AVGPOOL, count_pads = mean && L->param != 0;
  for (int64_t c = 0; c < channels; c++)
    for (int64_t z = 0; z < m.e[0]; z++)
      for (int64_t y = 0; y < m.e[1]; y++)
        for (int64_t x = 0; x < m.e[2]; x++)
          out[((c * m.e[0] + z) * m.e[1] + y) * m.e[2] + x] =
              strata__pool_cell(in + c * strata__volume(n), n, w, mean, count_pads, x, y, z);
}

/* Nearest (input cell floor(o / scale) on each axis: each input value
 * repeated, no division per cell) or linear upsampling. */
static void upsample(const float *in, int channels, struct strata__extent n,
                     struct strata__extent m, const struct strata__layer *L, float *out)
{
  const int *s = L->stride;
  for (int64_t c = 0; c < channels; c++) {
    const float *a = in + c * strata__volume(n);
    for (int64_t z = 0; z < m.e[0]; z++)
      for (int64_t y = 0; y < m.e[1]; y++) {
        if (L->kind == STRATA__LAYER_UPSAMPLE_LINEAR) {
          for (int64_t x = 0; x < m.e[2]; x++)
            *out++ = strata__upsample_linear_at(a, n, L, z, y, x);
          continue;
        }
        const float *row = a + (z / s[0] * n.e[1] + y / s[1]) * n.e[2];
        for (int64_t x = 0; x < n.e[2]; x++)
          for (int r = 0; r < s[2]; r++)
            *out++ = row[x];
      }
  }
}

/* Per-channel affine map, and normalisation over each channel group (mean
 * and biased variance in double) followed by it. */
static void affine(const struct strata__layer *L, const float *weights, const float *in,
                   int64_t vol, float *out)
{
  int64_t group = L->kind == STRATA__LAYER_NORM ? L->channels / L->groups : 1;
  for (int64_t g0 = 0; g0 < L->channels; g0 += group) {
    double mean = 0, rstd = 1;
    if (L->kind == STRATA__LAYER_NORM) {
      double sum = 0, sq = 0;
      for (int64_t i = g0 * vol; i < (g0 + group) * vol; i++) {
        sum += in[i];
        sq += (double)in[i] * in[i];
      }
      mean = sum / (double)(group * vol);
      double var = sq / (double)(group * vol) - mean * mean;
      rstd = 1.0 / sqrt((var > 0 ? var : 0) + L->param);
    }
    for (int64_t c = g0; c < g0 + group; c++) {
      double scale = (L->weight_offset >= 0 ? weights[L->weight_offset + c] : 1.0) * rstd;
      double shift = (L->bias_offset >= 0 ? weights[L->bias_offset + c] : 0.0) - mean * scale;
      for (int64_t i = c * vol; i < (c + 1) * vol; i++)
        out[i] = (float)(in[i] * scale + shift);
    }
  }
}

static void binary(int kind, const float *a, int ca, const float *b, int cb, int channels,
                   int64_t vol, float *out)
{
  for (int64_t c = 0; c < channels; c++) {
    const float *x = a + (ca == 1 ? 0 : c * vol), *y = b + (cb == 1 ? 0 : c * vol);
    for (int64_t i = 0; i < vol; i++)
      out[c * vol + i] = strata__binary(kind, x[i], y[i]);
  }
}

/* The mean of each channel (double sums), and its broadcast to vol cells. */
static void global_mean(const float *in, int channels, int64_t vol, float *out)
{
  for (int64_t c = 0; c < channels; c++) {
    double sum = 0;
    for (int64_t i = 0; i < vol; i++)
      sum += in[c * vol + i];
    out[c] = (float)(sum / (double)vol);
  }
}

static void broadcast(const float *in, int channels, int64_t vol, float *out)
{
  for (int64_t c = 0; c < channels; c++)
    for (int64_t i = 0; i < vol; i++)
      out[c * vol + i] = in[c];
}

static void softmax(const float *in, int channels, int64_t vol, float *out)
{
  for (int64_t i = 0; i < vol; i++) {
    float top = -INFINITY;
    for (int64_t c = 0; c < channels; c++)
      top = in[c * vol + i] > top ? in[c * vol + i] : top;
    float sum = 0.0f;
    for (int64_t c = 0; c < channels; c++)
      sum += out[c * vol + i] = expf(in[c * vol + i] - top);
    for (int64_t c = 0; c < channels; c++)
      out[c * vol + i] /= sum;
  }
}

void strata__cnn_layout(const struct strata__network *net, int64_t n,
                        const struct strata__extent *ext, int64_t *offsets, int64_t *col_offset,
                        size_t *col_floats)
{
  *col_offset = (int64_t)(layout(net, n, ext, offsets, col_floats) - *col_floats);
}

void strata__cnn_forward_cpu(const struct strata__network *net, const float *weights,
                             const float *in, int64_t n, float *out, float *scratch)
{
  /* Outputs of every layer but the last live in scratch, then im2col. */
  struct strata__extent ext[net->nlayers];
  int64_t offsets[net->nlayers], col_offset;
  size_t col_floats;
  strata__cnn_extents(net, n, ext);
  strata__cnn_layout(net, n, ext, offsets, &col_offset, &col_floats);
  float *next = scratch + col_offset;
  const float *outputs[net->nlayers];
  for (int l = 0; l < net->nlayers - 1; l++)
    outputs[l] = scratch + offsets[l];
  for (int l = 0; l < net->nlayers; l++) {
    const struct strata__layer *L = &net->layers[l];
    float *dst = l == net->nlayers - 1 ? out : (float *)outputs[l];
    const float *src[STRATA__LAYER_MAX_INPUTS];
    int src_c[STRATA__LAYER_MAX_INPUTS];
    for (int i = 0; i < L->ninputs; i++) {
      int s = L->inputs[i];
      src[i] = s == STRATA__NETWORK_INPUT ? in : outputs[s];
      src_c[i] = s == STRATA__NETWORK_INPUT ? net->in_channels : net->layers[s].channels;
    }
    int cin = src_c[0];
    const struct strata__extent sn = input_extent(net, l, n, ext), m = ext[l];
    const int64_t vol = strata__volume(sn);
    const float *w = weights + L->weight_offset;
    const float *bias = L->bias_offset >= 0 ? weights + L->bias_offset : NULL;
    switch (L->kind) {
    case STRATA__LAYER_CONV3D:
      if (strata__cnn_onednn_conv(net, l, n, src[0], bias, dst, next) != 0)
        conv3d(src[0], cin, sn, m, L, w, bias, dst, next, col_floats);
      break;
    case STRATA__LAYER_CONV_TRANSPOSE:
      conv_transpose(src[0], cin, sn, m, L, w, bias, dst, next);
      break;
    case STRATA__LAYER_MAXPOOL:
    case STRATA__LAYER_AVGPOOL: pool(src[0], cin, sn, m, L, dst); break;
    case STRATA__LAYER_UPSAMPLE:
    case STRATA__LAYER_UPSAMPLE_LINEAR: upsample(src[0], cin, sn, m, L, dst); break;
    case STRATA__LAYER_CONCAT:
      for (int i = 0; i < L->ninputs; i++) {
        memcpy(dst, src[i], (size_t)(src_c[i] * vol) * sizeof *dst);
        dst += src_c[i] * vol;
      }
      break;
    case STRATA__LAYER_RESHAPE: memcpy(dst, src[0], (size_t)(cin * vol) * sizeof *dst); break;
    case STRATA__LAYER_AFFINE:
    case STRATA__LAYER_NORM: affine(L, weights, src[0], vol, dst); break;
    case STRATA__LAYER_ADD:
    case STRATA__LAYER_SUB:
    case STRATA__LAYER_MUL:
    case STRATA__LAYER_DIV:
      binary(L->kind, src[0], cin, src[1], src_c[1], L->channels, vol, dst);
      break;
    case STRATA__LAYER_SOFTMAX: softmax(src[0], cin, vol, dst); break;
    case STRATA__LAYER_GLOBAL_AVGPOOL: global_mean(src[0], cin, vol, dst); break;
    case STRATA__LAYER_BROADCAST: broadcast(src[0], cin, strata__volume(m), dst); break;
    default: pointwise(L->kind, L->param, L->param2, src[0], cin * vol, dst); break;
    }
  }
}
