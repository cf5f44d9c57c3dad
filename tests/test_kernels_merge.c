/* The pure merge kernels, without StarPU: type rules, identities, and every
 * (op, dtype) pair against the scalar reference. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "check.h"
#include "kernels/merge_kernels.h"
#include "merge_reference.h"

static void apply_cpu(strata_op op, strata_dtype st, void *dst, const void *src, size_t n)
{
  strata__merge_cpu(op, st, dst, src, n);
}

int main(void)
{
  for (int op = 0; op < STRATA_NOPS; op++)
    for (int t = 0; t < STRATA_NDTYPES; t++)
      CHECK_EQ(strata__merge_result_dtype((strata_op)op, (strata_dtype)t),
               ref_result_dtype((strata_op)op, (strata_dtype)t));
  CHECK_EQ(strata__merge_result_dtype(STRATA_NOPS, STRATA_INT32), -1);
  CHECK_EQ(strata__merge_result_dtype(STRATA_SUM, STRATA_NDTYPES), -1);

  /* Identities, one per operator and representative types. */
  float f;
  double d;
  int8_t i8;
  uint8_t u8;
  int32_t i32;
  int64_t i64;
  strata__merge_identity(STRATA_MIN, STRATA_FLOAT32, &f);
  CHECK(isinf(f) && f > 0);
  strata__merge_identity(STRATA_MAX, STRATA_FLOAT64, &d);
  CHECK(isinf(d) && d < 0);
  strata__merge_identity(STRATA_PROD, STRATA_FLOAT64, &d);
  CHECK(d == 1.0);
  strata__merge_identity(STRATA_SUM, STRATA_FLOAT32, &f);
  CHECK(f == 0.0f);
  strata__merge_identity(STRATA_MIN, STRATA_INT8, &i8);
  CHECK_EQ(i8, INT8_MAX);
  strata__merge_identity(STRATA_MAX, STRATA_UINT8, &u8);
  CHECK_EQ(u8, 0);
  strata__merge_identity(STRATA_MIN, STRATA_UINT8, &u8);
  CHECK_EQ(u8, UINT8_MAX);
  strata__merge_identity(STRATA_MAX, STRATA_INT32, &i32);
  CHECK_EQ(i32, INT32_MIN);
  strata__merge_identity(STRATA_BAND, STRATA_INT64, &i64);
  CHECK_EQ(i64, -1);
  strata__merge_identity(STRATA_BOR, STRATA_INT32, &i32);
  CHECK_EQ(i32, 0);
  strata__merge_identity(STRATA_LAND, STRATA_BOOL, &u8);
  CHECK_EQ(u8, 1);
  strata__merge_identity(STRATA_LOR, STRATA_BOOL, &u8);
  CHECK_EQ(u8, 0);

  /* The identity is neutral: identity op x == x for every same-type pair. */
  for (int op = 0; op < STRATA_NOPS; op++)
    for (int t = 0; t < STRATA_NDTYPES; t++) {
      if (ref_result_dtype((strata_op)op, (strata_dtype)t) != t)
        continue;
      unsigned char x[8 * 64], acc[8 * 64];
      ref_fill((strata_dtype)t, x, 64, 3);
      strata__merge_fill_identity_cpu((strata_op)op, (strata_dtype)t, acc, 64);
      strata__merge_cpu((strata_op)op, (strata_dtype)t, acc, x, 64);
      for (size_t i = 0; i < 64; i++)
        CHECK(ref_same((strata_dtype)t, acc, x, i));
    }

  CHECK_EQ(ref_check_all_pairs(apply_cpu, 1000), 0);

  /* Wrap-around of small integer sums, spelled out. */
  int8_t a8[2] = {120, -120}, b8[2] = {10, -10};
  strata__merge_cpu(STRATA_SUM, STRATA_INT8, a8, b8, 2);
  CHECK_EQ(a8[0], -126);
  CHECK_EQ(a8[1], 126);
  /* bool SUM counts into int64. */
  int64_t counts[3] = {5, 0, 7};
  uint8_t flags[3] = {1, 1, 0};
  strata__merge_cpu(STRATA_SUM, STRATA_BOOL, counts, flags, 3);
  CHECK(counts[0] == 6 && counts[1] == 1 && counts[2] == 7);

  /* Rows scattered and merged in source order (Put's reductions): row 0
   * takes source rows 0 then 4, row 1 none, row 2 rows 1, 2 and 3; one
   * value per row and three, a product (order-sensitive in floating point)
   * against the same products spelled out, and a logical AND of bools. */
  const int64_t map[5] = {0, 2, 2, 2, 0};
  for (size_t n = 1; n <= 3; n += 2) {
    double src[5 * 3], dst[3 * 3], want[3 * 3];
    for (size_t k = 0; k < 5 * n; k++)
      src[k] = 1 + 0.1 * (double)k;
    for (size_t k = 0; k < 3 * n; k++)
      dst[k] = want[k] = 3 - 0.7 * (double)k;
    for (size_t e = 0; e < n; e++) {
      want[e] = want[e] * src[e] * src[4 * n + e];
      want[2 * n + e] = want[2 * n + e] * src[n + e] * src[2 * n + e] * src[3 * n + e];
    }
    strata__merge_scatter_cpu(STRATA_PROD, STRATA_FLOAT64, dst, src, n, 5, map);
    CHECK(memcmp(dst, want, 3 * n * sizeof *dst) == 0);
  }
  uint8_t all[3] = {1, 1, 1}, seen[5] = {1, 0, 1, 1, 1};
  strata__merge_scatter_cpu(STRATA_LAND, STRATA_BOOL, all, seen, 1, 5, map);
  CHECK(all[0] == 1 && all[1] == 1 && all[2] == 0);
  return check_status();
}
