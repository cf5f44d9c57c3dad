/* AMR kernels on the CPU, for float and double (one template each), and
 * float64 sources written to float32 destinations (inference arrays).
 * Restriction by 2 reads the (up to) four fine rows under a coarse row in one
 * pass, other factors sum each coarse cell's fine cells;
 * prolongation computes its x weights once, then per fine row blends the
 * (up to) four coarse rows around it into one coarse row (a few fine rows at
 * a time) and interpolates along x from it; x goes in chunks of CHUNK fine
 * cells so that all scratch lives on the stack. */
#include <string.h>

#include "../amr_kernels.h"

/* Prolongation blends ROWS fine rows before it interpolates them along x when
 * rows are at most SHORT_ROW cells long (AMR blocks). ROW_STRIDE: CHUNK + 2
 * cells, rounded up to whole cache lines of doubles. */
enum { CHUNK = 256, ROWS = 4, SHORT_ROW = 64, ROW_STRIDE = CHUNK + 8 };

/* On x86-64, restriction and prolongation are also compiled for AVX2 and
 * AVX-512 (two and four times the SIMD width of the SSE2 baseline), the
 * widest the CPU has picked per call. Without FMA (contraction is off with
 * -std=c17), so all give the same bits. Not target_clones: its ifunc
 * resolvers run while the dynamic loader relocates the library, before
 * sanitizer runtimes are up (clang's libFuzzer builds crash at load). */
#if defined(__x86_64__) && defined(__GNUC__)
#define SIMD_LEVELS 3
#define SIMD_VARIANT(NAME, T, TD, SUFFIX, ISA)                                                     \
  __attribute__((target(ISA))) static void NAME##_##SUFFIX(const struct strata__amr_xfer *x,       \
                                                           TD *dst, const T *src)                  \
  {                                                                                                \
    NAME##_body(x, dst, src);                                                                      \
  }
#define SIMD_VARIANTS(NAME, T, TD)                                                                 \
  SIMD_VARIANT(NAME, T, TD, avx2, "avx2")                                                          \
  SIMD_VARIANT(NAME, T, TD, avx512, "avx512f")
#else
#define SIMD_LEVELS 1
#define SIMD_VARIANTS(NAME, T, TD)
#endif
#define INLINE_BODY static inline __attribute__((always_inline)) void
#define KERNEL_VARIANTS(NAME, T, TD)                                                               \
  static void NAME(const struct strata__amr_xfer *x, TD *dst, const T *src)                        \
  {                                                                                                \
    NAME##_body(x, dst, src);                                                                      \
  }                                                                                                \
  SIMD_VARIANTS(NAME, T, TD)

/* Coarse cells and weights of fine offset q: value = (1 - t) C[c] + t C[c + 1]. */
static inline void prolong_weights(int64_t q, int factor, int64_t *c, double *t)
{
  int64_t num = 2 * q + 1 - factor;
  *c = strata__amr_prolong_cell(q, factor);
  const int64_t rem = num - 2 * (int64_t)factor * *c;
  /* the same value without a division per fine row for the common factor */
  *t = factor == 2 ? (double)rem * 0.25 : (double)rem / (double)(2 * factor);
}

#define STRATA_AMR_XFER_KERNELS(T, TD, SUFFIX)                                                     \
  static void copy_##SUFFIX(const struct strata__amr_xfer *x, TD *dst, const T *src)               \
  {                                                                                                \
    for (int64_t z = 0; z < x->count[2]; z++)                                                      \
      for (int64_t y = 0; y < x->count[1]; y++) {                                                  \
        TD *d = dst +                                                                              \
                ((x->dst_start[2] + z) * x->dst_dims[1] + x->dst_start[1] + y) * x->dst_dims[0] +  \
                x->dst_start[0];                                                                   \
        const T *s =                                                                               \
            src +                                                                                  \
            ((x->src_start[2] + z) * x->src_dims[1] + x->src_start[1] + y) * x->src_dims[0] +      \
            x->src_start[0];                                                                       \
        if (sizeof(T) == sizeof(TD))                                                               \
          memcpy(d, s, (size_t)x->count[0] * sizeof(T));                                           \
        else                                                                                       \
          for (int64_t i = 0; i < x->count[0]; i++)                                                \
            d[i] = (TD)s[i];                                                                       \
      }                                                                                            \
  }                                                                                                \
                                                                                                   \
  INLINE_BODY restrict_##SUFFIX##_body(const struct strata__amr_xfer *x, TD *dst, const T *src)    \
  {                                                                                                \
    const int f = x->factor;                                                                       \
    const int fy = x->dim >= 2 ? f : 1, fz = x->dim >= 3 ? f : 1;                                  \
    const T inv = (T)(1.0 / ((double)f * fy * fz));                                                \
    const int64_t nx = x->count[0], sy = x->src_dims[0], sz = x->src_dims[0] * x->src_dims[1];     \
    for (int64_t z = 0; z < x->count[2]; z++)                                                      \
      for (int64_t y = 0; y < x->count[1]; y++) {                                                  \
        TD *d = dst +                                                                              \
                ((x->dst_start[2] + z) * x->dst_dims[1] + x->dst_start[1] + y) * x->dst_dims[0] +  \
                x->dst_start[0];                                                                   \
        const T *s = src + (x->src_start[2] + fz * z) * sz + (x->src_start[1] + fy * y) * sy +     \
                     x->src_start[0];                                                              \
        if (f == 2) {                                                                              \
          /* One pass: the (up to) four fine rows under a coarse row. */                           \
          const T *s01 = fy > 1 ? s + sy : s, *s10 = fz > 1 ? s + sz : s;                          \
          const T *s11 = fz > 1 ? s01 + sz : s01;                                                  \
          const T k01 = fy > 1, k10 = fz > 1, k11 = fy > 1 && fz > 1;                              \
          for (int64_t i = 0; i < nx; i++)                                                         \
            d[i] =                                                                                 \
                (TD)((s[2 * i] + s[2 * i + 1] + k01 * (s01[2 * i] + s01[2 * i + 1]) +              \
                      k10 * (s10[2 * i] + s10[2 * i + 1]) + k11 * (s11[2 * i] + s11[2 * i + 1])) * \
                     inv);                                                                         \
          continue;                                                                                \
        }                                                                                          \
        for (int64_t i = 0; i < nx; i++) {                                                         \
          T sum = 0;                                                                               \
          for (int jz = 0; jz < fz; jz++)                                                          \
            for (int jy = 0; jy < fy; jy++) {                                                      \
              const T *r = s + jz * sz + jy * sy + f * i;                                          \
              for (int jx = 0; jx < f; jx++)                                                       \
                sum += r[jx];                                                                      \
            }                                                                                      \
          d[i] = (TD)(sum * inv);                                                                  \
        }                                                                                          \
      }                                                                                            \
  }                                                                                                \
                                                                                                   \
  KERNEL_VARIANTS(restrict_##SUFFIX, T, TD)                                                        \
                                                                                                   \
  INLINE_BODY prolong_##SUFFIX##_body(const struct strata__amr_xfer *x, TD *dst, const T *src)     \
  {                                                                                                \
    const int f = x->factor;                                                                       \
    const int64_t sy = x->src_dims[0], sz = x->src_dims[0] * x->src_dims[1];                       \
    for (int64_t x0 = 0; x0 < x->count[0]; x0 += CHUNK) {                                          \
      /* Coarse cells and weights along x: the same for every row. */                              \
      const int64_t n = x->count[0] - x0 < CHUNK ? x->count[0] - x0 : CHUNK;                       \
      int64_t c[CHUNK], c0, c_last;                                                                \
      T t[CHUNK];                                                                                  \
      _Alignas(64) T rows[ROWS][ROW_STRIDE];                                                       \
      double ti;                                                                                   \
      prolong_weights(x->src_start[0] + x0, f, &c0, &ti);                                          \
      prolong_weights(x->src_start[0] + x0 + n - 1, f, &c_last, &ti);                              \
      for (int64_t i = 0; i < n; i++) {                                                            \
        prolong_weights(x->src_start[0] + x0 + i, f, &c[i], &ti);                                  \
        c[i] -= c0;                                                                                \
        t[i] = (T)ti;                                                                              \
      }                                                                                            \
      const int64_t nc = c_last - c0 + 2;                                                          \
      const int64_t batch = n <= SHORT_ROW ? ROWS : 1;                                             \
      for (int64_t z = 0; z < x->count[2]; z++) {                                                  \
        int64_t cz = 0;                                                                            \
        double tz = 0;                                                                             \
        if (x->dim >= 3)                                                                           \
          prolong_weights(x->src_start[2] + z, f, &cz, &tz);                                       \
        for (int64_t y0 = 0; y0 < x->count[1]; y0 += batch) {                                      \
          const int64_t ny = x->count[1] - y0 < batch ? x->count[1] - y0 : batch;                  \
          /* Blend the (up to) four coarse rows around each fine row of the                        \
           * batch, then interpolate the batch along x. On short rows,                             \
           * interpolating a row right after its blend stalls: it loads the                        \
           * row, at offsets store forwarding cannot serve, while the blend's                      \
           * stores are still in flight. Long rows (whole cubes from DRAM)                         \
           * run faster one at a time. */                                                          \
          for (int64_t b = 0; b < ny; b++) {                                                       \
            int64_t cy = 0;                                                                        \
            double ty = 0;                                                                         \
            if (x->dim >= 2)                                                                       \
              prolong_weights(x->src_start[1] + y0 + b, f, &cy, &ty);                              \
            const T *r00 = src + cz * sz + cy * sy + c0;                                           \
            const T *r01 = ty > 0 ? r00 + sy : r00, *r10 = tz > 0 ? r00 + sz : r00;                \
            const T *r11 = tz > 0 ? r01 + sz : r01;                                                \
            const T w00 = (T)((1 - tz) * (1 - ty)), w01 = (T)((1 - tz) * ty);                      \
            const T w10 = (T)(tz * (1 - ty)), w11 = (T)(tz * ty);                                  \
            T *row = rows[b];                                                                      \
            for (int64_t k = 0; k < nc; k++)                                                       \
              row[k] = w00 * r00[k] + w01 * r01[k] + w10 * r10[k] + w11 * r11[k];                  \
          }                                                                                        \
          for (int64_t b = 0; b < ny; b++) {                                                       \
            const T *row = rows[b];                                                                \
            TD *d = dst +                                                                          \
                    ((x->dst_start[2] + z) * x->dst_dims[1] + x->dst_start[1] + y0 + b) *          \
                        x->dst_dims[0] +                                                           \
                    x->dst_start[0] + x0;                                                          \
            if (f == 2) {                                                                          \
              /* Fine cells 2k and 2k + 1 of coarse cell k: 1/4, 3/4 and 3/4, 1/4. */              \
              const int64_t q0 = x->src_start[0] + x0;                                             \
              const T *rw = row - c0, lo = (T)0.25, hi = (T)0.75;                                  \
              int64_t i = 0;                                                                       \
              if (q0 & 1) {                                                                        \
                d[0] = (TD)(hi * rw[q0 >> 1] + lo * rw[(q0 >> 1) + 1]);                            \
                i = 1;                                                                             \
              }                                                                                    \
              /* Pairs written in place: GCC vectorises the interleave with shuffles. */           \
              const int64_t k0 = (q0 + i) >> 1, pairs = (n - i) / 2;                               \
              const T *rm = rw + k0 - 1;                                                           \
              TD *dp = d + i;                                                                      \
              for (int64_t k = 0; k < pairs; k++) {                                                \
                const T left = rm[k], mid = rm[k + 1], right = rm[k + 2];                          \
                dp[2 * k] = (TD)(lo * left + hi * mid);                                            \
                dp[2 * k + 1] = (TD)(hi * mid + lo * right);                                       \
              }                                                                                    \
              i += 2 * pairs;                                                                      \
              if (i < n)                                                                           \
                d[i] = (TD)(lo * rw[((q0 + i) >> 1) - 1] + hi * rw[(q0 + i) >> 1]);                \
              continue;                                                                            \
            }                                                                                      \
            for (int64_t i = 0; i < n; i++)                                                        \
              d[i] = (TD)((1 - t[i]) * row[c[i]] + t[i] * row[c[i] + 1]);                          \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
  KERNEL_VARIANTS(prolong_##SUFFIX, T, TD)

#define STRATA_AMR_BOUNDARY_KERNEL(T, SUFFIX)                                                      \
  static void boundary_##SUFFIX(const struct strata__amr_boundary *b, T *v)                        \
  {                                                                                                \
    const int64_t stride[3] = {1, b->dims[0], b->dims[0] * b->dims[1]};                            \
    for (int a = 0; a < b->dim; a++) {                                                             \
      /* the two other axes span the plane, over their whole extended range */                     \
      const int p = (a + 1) % 3, q = (a + 2) % 3;                                                  \
      for (int side = 0; side < 2; side++) {                                                       \
        if (!(b->faces & (1 << (2 * a + side))))                                                   \
          continue;                                                                                \
        const int64_t inner = side ? b->dims[a] - b->ghost - 1 : b->ghost;                         \
        const int64_t out = side ? stride[a] : -stride[a];                                         \
        for (int64_t j = 0; j < b->dims[q]; j++)                                                   \
          for (int64_t i = 0; i < b->dims[p]; i++) {                                               \
            T *v0 = v + inner * stride[a] + i * stride[p] + j * stride[q];                         \
            const T step = v0[0] - v0[-out];                                                       \
            for (int k = 1; k <= b->ghost; k++)                                                    \
              v0[k * out] = v0[0] + (T)k * step;                                                   \
          }                                                                                        \
      }                                                                                            \
    }                                                                                              \
  }

STRATA_AMR_XFER_KERNELS(float, float, f32)
STRATA_AMR_XFER_KERNELS(double, double, f64)
STRATA_AMR_XFER_KERNELS(double, float, f64_f32)
STRATA_AMR_BOUNDARY_KERNEL(float, f32)
STRATA_AMR_BOUNDARY_KERNEL(double, f64)

/* One table per type pair: copy, restriction, prolongation; one row per
 * SIMD level. */
#if SIMD_LEVELS > 1
#define XFER_TABLE(SUFFIX)                                                                         \
  {                                                                                                \
    {copy_##SUFFIX, restrict_##SUFFIX, prolong_##SUFFIX},                                          \
        {copy_##SUFFIX, restrict_##SUFFIX##_avx2, prolong_##SUFFIX##_avx2},                        \
    {                                                                                              \
      copy_##SUFFIX, restrict_##SUFFIX##_avx512, prolong_##SUFFIX##_avx512                         \
    }                                                                                              \
  }
#else
#define XFER_TABLE(SUFFIX)                                                                         \
  {                                                                                                \
    {                                                                                              \
      copy_##SUFFIX, restrict_##SUFFIX, prolong_##SUFFIX                                           \
    }                                                                                              \
  }
#endif

int strata__amr_simd_available(void)
{
#if SIMD_LEVELS > 1
  return __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
#else
  return 0;
#endif
}

void strata__amr_xfer_cpu(const struct strata__amr_xfer *x, void *dst, const void *src)
{
  strata__amr_xfer_cpu_isa(x, dst, src, strata__amr_simd_available());
}

void strata__amr_xfer_cpu_isa(const struct strata__amr_xfer *x, void *dst, const void *src,
                              int simd)
{
  static void (*const f32[][3])(const struct strata__amr_xfer *, float *, const float *) =
      XFER_TABLE(f32);
  static void (*const f64[][3])(const struct strata__amr_xfer *, double *, const double *) =
      XFER_TABLE(f64);
  static void (*const f64_f32[][3])(const struct strata__amr_xfer *, float *, const double *) =
      XFER_TABLE(f64_f32);
  const int best = strata__amr_simd_available();
  const int isa = simd < 0 ? 0 : simd < best ? simd : best;
  if (x->is_double && x->dst_float)
    f64_f32[isa][x->kind](x, (float *)dst + x->dst_offset, (const double *)src + x->src_offset);
  else if (x->is_double)
    f64[isa][x->kind](x, (double *)dst + x->dst_offset, (const double *)src + x->src_offset);
  else
    f32[isa][x->kind](x, (float *)dst + x->dst_offset, (const float *)src + x->src_offset);
}

void strata__amr_boundary_cpu(const struct strata__amr_boundary *b, void *data)
{
  if (b->is_double)
    boundary_f64(b, data);
  else
    boundary_f32(b, data);
}
