/* AMR kernels on the CPU, for float and double (one template each), and
 * float64 sources written to float32 destinations (inference arrays).
 * Restriction by 2 reads the (up to) four fine rows under a coarse row in one
 * pass, other factors sum each coarse cell's fine cells;
 * prolongation computes its x weights once, then per fine row blends the
 * (up to) four coarse rows around it into one coarse row (a few fine rows at
 * a time) and interpolates along x from it; x goes in chunks of CHUNK fine
 * cells so that all scratch lives on the stack. A family's children side by
 * side along x go as pairs: one transfer over both, each row split between
 * the two children's arrays. */
#include <string.h>

#include "../amr_kernels.h"

/* Prolongation blends ROWS fine rows before it interpolates them along x when
 * rows are at most SHORT_ROW cells long (AMR blocks). ROW_STRIDE: CHUNK + 2
 * cells, rounded up to whole cache lines of doubles. */
enum { CHUNK = 256, ROWS = 4, SHORT_ROW = 64, ROW_STRIDE = CHUNK + 8 };

/* Prolongation asks for the lines of the fine row PREFETCH_ROWS rows ahead
 * for writing: from DRAM each line's write-allocate otherwise stalls the
 * stores. Paired runs on 256^3 cubes and 32^3 families: 0.7-0.75x the time;
 * 64^3 and 128^3 (in cache) unchanged or a little faster. */
enum { PREFETCH_ROWS = 8 };

/* Lines of [p, p + bytes), bytes > 0, for writing or for reading (a hint:
 * never faults, so it may run past an array's end). */
static inline void prefetch_lines(const void *p, int64_t bytes, int for_write)
{
  const char *c = p;
  for (int64_t k = 0; k < bytes + 63; k += 64)
    if (for_write)
      __builtin_prefetch(k < bytes ? c + k : c + bytes - 1, 1, 3);
    else
      __builtin_prefetch(k < bytes ? c + k : c + bytes - 1, 0, 3);
}

/* Restriction asks for the fine rows of the coarse row RESTRICT_AHEAD rows
 * ahead when rows are short (AMR blocks), which the hardware prefetchers do
 * not. Families of eight children on an AMD EPYC (2026-11-29): 32^3 blocks
 * 0.65x the time from DRAM and in L3, 16^3 blocks 0.85x from DRAM; in L2
 * (one family again and again) 1.2-1.5x. Prolongation gained nothing by
 * the same on 16^3 blocks. */
enum { RESTRICT_AHEAD = 4 };

/* Row y + ahead of plane z of transfer x's region, on into the next planes
 * past the last row: whether it lies in the region. */
static inline int row_ahead(const struct strata__amr_xfer *x, int64_t y, int64_t z, int64_t ahead,
                            int64_t *y_ahead, int64_t *z_ahead)
{
  y += ahead;
  while (y >= x->count[1]) {
    y -= x->count[1];
    z++;
  }
  *y_ahead = y;
  *z_ahead = z;
  return z < x->count[2];
}

/* Lines of the fy x fz fine rows of `bytes` at byte offset `at` of src (and
 * of src_hi when `both`: a pair of children), rows sy and planes sz bytes
 * apart, for reading. */
static inline void prefetch_fine_rows(const void *src, const void *src_hi, int both, int64_t at,
                                      int fy, int fz, int64_t sy, int64_t sz, int64_t bytes)
{
  for (int jz = 0; jz < fz; jz++)
    for (int jy = 0; jy < fy; jy++) {
      const int64_t row = at + jz * sz + jy * sy;
      prefetch_lines((const char *)src + row, bytes, 0);
      if (both)
        prefetch_lines((const char *)src_hi + row, bytes, 0);
    }
}

/* Every kernel takes transfer x between dst and src. When two children side
 * by side along x go as one transfer, cells x < split of each row (fine
 * cells when prolonging, coarse when restricting) go to or come from the
 * first child's array and the others the second's, dst_hi (prolongation)
 * or src_hi (restriction), at cell x - split of its row. A single transfer
 * passes dst_hi = dst, src_hi = src and split = count[0]; copies never
 * pair. */
#define KERNEL_PARAMS(T, TD)                                                                       \
  const struct strata__amr_xfer *x, TD *dst, TD *dst_hi, const T *src, const T *src_hi,            \
      int64_t split

/* On x86-64, restriction and prolongation are also compiled for AVX2 and
 * AVX-512 (two and four times the SIMD width of the SSE2 baseline), the
 * widest the CPU has picked per call. Without FMA (contraction is off with
 * -std=c17), so all give the same bits. Not target_clones: its ifunc
 * resolvers run while the dynamic loader relocates the library, before
 * sanitizer runtimes are up (clang's libFuzzer builds crash at load). */
#if defined(__x86_64__) && defined(__GNUC__)
#define SIMD_LEVELS 3
#define SIMD_VARIANT(NAME, T, TD, SUFFIX, ISA)                                                     \
  __attribute__((target(ISA))) static void NAME##_##SUFFIX(KERNEL_PARAMS(T, TD))                   \
  {                                                                                                \
    NAME##_body(x, dst, dst_hi, src, src_hi, split);                                               \
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
  static void NAME(KERNEL_PARAMS(T, TD)) { NAME##_body(x, dst, dst_hi, src, src_hi, split); }      \
  SIMD_VARIANTS(NAME, T, TD)

/* Offsets of the first cell of row y of plane z of transfer x's region, in
 * the destination and in the source (same-level copies). */
static inline int64_t dst_row_at(const struct strata__amr_xfer *x, int64_t y, int64_t z)
{
  return ((x->dst_start[2] + z) * x->dst_dims[1] + x->dst_start[1] + y) * x->dst_dims[0] +
         x->dst_start[0];
}

static inline int64_t src_row_at(const struct strata__amr_xfer *x, int64_t y, int64_t z)
{
  return ((x->src_start[2] + z) * x->src_dims[1] + x->src_start[1] + y) * x->src_dims[0] +
         x->src_start[0];
}

/* Offset in the source of the first fine row under coarse row y of plane
 * z of restriction x (fy, fz: its factors along y and z). */
static inline int64_t fine_row_at(const struct strata__amr_xfer *x, int fy, int fz, int64_t y,
                                  int64_t z)
{
  return ((x->src_start[2] + fz * z) * x->src_dims[1] + x->src_start[1] + fy * y) * x->src_dims[0] +
         x->src_start[0];
}

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
  static void copy_##SUFFIX(KERNEL_PARAMS(T, TD))                                                  \
  {                                                                                                \
    (void)dst_hi, (void)src_hi, (void)split;                                                       \
    for (int64_t z = 0; z < x->count[2]; z++)                                                      \
      for (int64_t y = 0; y < x->count[1]; y++) {                                                  \
        TD *d = dst + dst_row_at(x, y, z);                                                         \
        const T *s = src + src_row_at(x, y, z);                                                    \
        if (sizeof(T) == sizeof(TD))                                                               \
          memcpy(d, s, (size_t)x->count[0] * sizeof(T));                                           \
        else                                                                                       \
          for (int64_t i = 0; i < x->count[0]; i++)                                                \
            d[i] = (TD)s[i];                                                                       \
      }                                                                                            \
  }                                                                                                \
                                                                                                   \
  /* Coarse cells [0, nx) of a row into d from the fine rows from s on. */                         \
  INLINE_BODY restrict_row_##SUFFIX(const struct strata__amr_xfer *x, TD *d, const T *s,           \
                                    int64_t nx)                                                    \
  {                                                                                                \
    const int f = x->factor;                                                                       \
    const int fy = x->dim >= 2 ? f : 1, fz = x->dim >= 3 ? f : 1;                                  \
    const T inv = (T)(1.0 / ((double)f * fy * fz));                                                \
    const int64_t sy = x->src_dims[0], sz = x->src_dims[0] * x->src_dims[1];                       \
    if (f == 2) {                                                                                  \
      /* One pass: the (up to) four fine rows under a coarse row. */                               \
      const T *s01 = fy > 1 ? s + sy : s, *s10 = fz > 1 ? s + sz : s;                              \
      const T *s11 = fz > 1 ? s01 + sz : s01;                                                      \
      const T k01 = fy > 1, k10 = fz > 1, k11 = fy > 1 && fz > 1;                                  \
      for (int64_t i = 0; i < nx; i++)                                                             \
        d[i] = (TD)((s[2 * i] + s[2 * i + 1] + k01 * (s01[2 * i] + s01[2 * i + 1]) +               \
                     k10 * (s10[2 * i] + s10[2 * i + 1]) + k11 * (s11[2 * i] + s11[2 * i + 1])) *  \
                    inv);                                                                          \
      return;                                                                                      \
    }                                                                                              \
    for (int64_t i = 0; i < nx; i++) {                                                             \
      T sum = 0;                                                                                   \
      for (int jz = 0; jz < fz; jz++)                                                              \
        for (int jy = 0; jy < fy; jy++) {                                                          \
          const T *r = s + jz * sz + jy * sy + f * i;                                              \
          for (int jx = 0; jx < f; jx++)                                                           \
            sum += r[jx];                                                                          \
        }                                                                                          \
      d[i] = (TD)(sum * inv);                                                                      \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  INLINE_BODY restrict_##SUFFIX##_body(KERNEL_PARAMS(T, TD))                                       \
  {                                                                                                \
    (void)dst_hi;                                                                                  \
    const int f = x->factor;                                                                       \
    const int fy = x->dim >= 2 ? f : 1, fz = x->dim >= 3 ? f : 1;                                  \
    const int64_t nx = x->count[0], sy = x->src_dims[0], sz = x->src_dims[0] * x->src_dims[1];     \
    const int64_t n_lo = split < nx ? split : nx;                                                  \
    const int64_t ahead = nx <= SHORT_ROW ? RESTRICT_AHEAD : 0;                                    \
    for (int64_t z = 0; z < x->count[2]; z++)                                                      \
      for (int64_t y = 0; y < x->count[1]; y++) {                                                  \
        TD *d = dst + dst_row_at(x, y, z);                                                         \
        const int64_t at = fine_row_at(x, fy, fz, y, z);                                           \
        int64_t y_ahead, z_ahead;                                                                  \
        if (ahead && row_ahead(x, y, z, ahead, &y_ahead, &z_ahead))                                \
          prefetch_fine_rows(src, src_hi, n_lo < nx,                                               \
                             fine_row_at(x, fy, fz, y_ahead, z_ahead) * (int64_t)sizeof(T), fy,    \
                             fz, sy * (int64_t)sizeof(T), sz * (int64_t)sizeof(T),                 \
                             f * nx * (int64_t)sizeof(T));                                         \
        restrict_row_##SUFFIX(x, d, src + at, n_lo);                                               \
        if (n_lo < nx)                                                                             \
          restrict_row_##SUFFIX(x, d + n_lo, src_hi + at, nx - n_lo);                              \
      }                                                                                            \
  }                                                                                                \
  KERNEL_VARIANTS(restrict_##SUFFIX, T, TD)                                                        \
                                                                                                   \
  /* Fine cells [i0, i1) of a chunk's row from its blended coarse row `row`                        \
   * (coarse cells c0...), into d (fine cell i0). */                                               \
  INLINE_BODY interpolate_##SUFFIX(const struct strata__amr_xfer *x, const T *row, int64_t c0,     \
                                   const int64_t *c, const T *t, int64_t q_chunk, int64_t i0,      \
                                   int64_t i1, TD *d)                                              \
  {                                                                                                \
    if (x->factor != 2) {                                                                          \
      for (int64_t i = i0; i < i1; i++)                                                            \
        d[i - i0] = (TD)((1 - t[i]) * row[c[i]] + t[i] * row[c[i] + 1]);                           \
      return;                                                                                      \
    }                                                                                              \
    /* Fine cells 2k and 2k + 1 of coarse cell k: 1/4, 3/4 and 3/4, 1/4. */                        \
    const int64_t q0 = q_chunk + i0, n = i1 - i0;                                                  \
    const T *rw = row - c0, lo = (T)0.25, hi = (T)0.75;                                            \
    int64_t i = 0;                                                                                 \
    if (q0 & 1) {                                                                                  \
      d[0] = (TD)(hi * rw[q0 >> 1] + lo * rw[(q0 >> 1) + 1]);                                      \
      i = 1;                                                                                       \
    }                                                                                              \
    /* Pairs written in place: GCC vectorises the interleave with shuffles. */                     \
    const int64_t k0 = (q0 + i) >> 1, pairs = (n - i) / 2;                                         \
    const T *rm = rw + k0 - 1;                                                                     \
    TD *dp = d + i;                                                                                \
    for (int64_t k = 0; k < pairs; k++) {                                                          \
      const T left = rm[k], mid = rm[k + 1], right = rm[k + 2];                                    \
      dp[2 * k] = (TD)(lo * left + hi * mid);                                                      \
      dp[2 * k + 1] = (TD)(hi * mid + lo * right);                                                 \
    }                                                                                              \
    i += 2 * pairs;                                                                                \
    if (i < n)                                                                                     \
      d[i] = (TD)(lo * rw[((q0 + i) >> 1) - 1] + hi * rw[(q0 + i) >> 1]);                          \
  }                                                                                                \
                                                                                                   \
  INLINE_BODY prolong_##SUFFIX##_body(KERNEL_PARAMS(T, TD))                                        \
  {                                                                                                \
    (void)src_hi;                                                                                  \
    const int f = x->factor;                                                                       \
    const int64_t sy = x->src_dims[0], sz = x->src_dims[0] * x->src_dims[1];                       \
    for (int64_t x0 = 0; x0 < x->count[0]; x0 += CHUNK) {                                          \
      /* Coarse cells and weights along x: the same for every row. */                              \
      const int64_t n = x->count[0] - x0 < CHUNK ? x->count[0] - x0 : CHUNK;                       \
      const int64_t n_lo = split - x0 < 0 ? 0 : split - x0 < n ? split - x0 : n;                   \
      const int64_t q_chunk = x->src_start[0] + x0;                                                \
      int64_t c[CHUNK], c0, c_last;                                                                \
      T t[CHUNK];                                                                                  \
      _Alignas(64) T rows[ROWS][ROW_STRIDE];                                                       \
      double ti;                                                                                   \
      prolong_weights(q_chunk, f, &c0, &ti);                                                       \
      prolong_weights(q_chunk + n - 1, f, &c_last, &ti);                                           \
      for (int64_t i = 0; i < n; i++) {                                                            \
        prolong_weights(q_chunk + i, f, &c[i], &ti);                                               \
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
            const int64_t at = dst_row_at(x, y0 + b, z);                                           \
            int64_t y_ahead, z_ahead;                                                              \
            if (row_ahead(x, y0 + b, z, PREFETCH_ROWS, &y_ahead, &z_ahead)) {                      \
              const int64_t at_ahead = dst_row_at(x, y_ahead, z_ahead);                            \
              if (n_lo > 0)                                                                        \
                prefetch_lines(dst + at_ahead + x0, n_lo * (int64_t)sizeof(TD), 1);                \
              if (n_lo < n)                                                                        \
                prefetch_lines(dst_hi + at_ahead + x0 + n_lo - split,                              \
                               (n - n_lo) * (int64_t)sizeof(TD), 1);                               \
            }                                                                                      \
            if (n_lo > 0)                                                                          \
              interpolate_##SUFFIX(x, rows[b], c0, c, t, q_chunk, 0, n_lo, dst + at + x0);         \
            if (n_lo < n)                                                                          \
              interpolate_##SUFFIX(x, rows[b], c0, c, t, q_chunk, n_lo, n,                         \
                                   dst_hi + at + x0 + n_lo - split);                               \
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

/* The level asked for, at most the best this CPU has. */
static int simd_level(int simd)
{
  const int best = strata__amr_simd_available();
  return simd < 0 ? 0 : simd < best ? simd : best;
}

void strata__amr_xfer_cpu(const struct strata__amr_xfer *x, void *dst, const void *src)
{
  strata__amr_xfer_cpu_isa(x, dst, src, strata__amr_simd_available());
}

/* Transfer x at SIMD level simd (see KERNEL_PARAMS). */
static void run_kernel(const struct strata__amr_xfer *x, void *dst, void *dst_hi, const void *src,
                       const void *src_hi, int64_t split, int simd)
{
  typedef void f32_kernel(KERNEL_PARAMS(float, float));
  typedef void f64_kernel(KERNEL_PARAMS(double, double));
  typedef void f64_f32_kernel(KERNEL_PARAMS(double, float));
  static f32_kernel *const f32[][3] = XFER_TABLE(f32);
  static f64_kernel *const f64[][3] = XFER_TABLE(f64);
  static f64_f32_kernel *const f64_f32[][3] = XFER_TABLE(f64_f32);
#define KERNEL_ARGS(T, TD)                                                                         \
  (x, (TD *)dst + x->dst_offset, (TD *)dst_hi + x->dst_offset, (const T *)src + x->src_offset,     \
   (const T *)src_hi + x->src_offset, split)
  const int isa = simd_level(simd);
  if (x->is_double && x->dst_float)
    f64_f32[isa][x->kind] KERNEL_ARGS(double, float);
  else if (x->is_double)
    f64[isa][x->kind] KERNEL_ARGS(double, double);
  else
    f32[isa][x->kind] KERNEL_ARGS(float, float);
#undef KERNEL_ARGS
}

void strata__amr_xfer_cpu_isa(const struct strata__amr_xfer *x, void *dst, const void *src,
                              int simd)
{
  run_kernel(x, dst, dst, src, src, x->count[0], simd);
}

/* Whether transfer b continues transfer a along x between a family's
 * parent and the child beside a's: the next a->count[0] fine cells
 * (prolongation) or coarse cells (restriction) of the same rows, with
 * arrays shaped alike. */
static int continues_along_x(const struct strata__amr_xfer *a, const struct strata__amr_xfer *b)
{
  const int prolong = a->kind == STRATA__AMR_PROLONG;
  if ((a->kind != STRATA__AMR_RESTRICT && !prolong) || b->kind != a->kind || b->dim != a->dim ||
      b->factor != a->factor || b->is_double != a->is_double || b->dst_float != a->dst_float ||
      b->dst_offset != a->dst_offset || b->src_offset != a->src_offset)
    return 0;
  for (int d = 0; d < 3; d++) {
    const int64_t step = d == 0 ? a->count[0] : 0;
    if (b->count[d] != a->count[d] || b->dst_dims[d] != a->dst_dims[d] ||
        b->src_dims[d] != a->src_dims[d] || b->dst_start[d] != a->dst_start[d] + !prolong * step ||
        b->src_start[d] != a->src_start[d] + prolong * step)
      return 0;
  }
  return 1;
}

void strata__amr_family_cpu(const struct strata__amr_family *f, void *parent,
                            void *const children[])
{
  strata__amr_family_cpu_isa(f, parent, children, strata__amr_simd_available());
}

void strata__amr_family_cpu_isa(const struct strata__amr_family *f, void *parent,
                                void *const children[], int simd)
{
  for (int o = 0; o < f->nchildren; o++) {
    const struct strata__amr_xfer *x = &f->x[o];
    if (o + 1 < f->nchildren && continues_along_x(x, &f->x[o + 1])) {
      struct strata__amr_xfer both = *x;
      both.count[0] *= 2;
      if (x->kind == STRATA__AMR_PROLONG)
        run_kernel(&both, children[o], children[o + 1], parent, parent, x->count[0], simd);
      else
        run_kernel(&both, parent, parent, children[o], children[o + 1], x->count[0], simd);
      o++;
    } else if (x->kind == STRATA__AMR_RESTRICT)
      strata__amr_xfer_cpu_isa(x, parent, children[o], simd);
    else
      strata__amr_xfer_cpu_isa(x, children[o], parent, simd);
  }
}

void strata__amr_boundary_cpu(const struct strata__amr_boundary *b, void *data)
{
  if (b->is_double)
    boundary_f64(b, data);
  else
    boundary_f32(b, data);
}
