/* ZRanges, affine maps and ZProjections: the design document's examples
 * (fixed views, linear and negative strides, axial reduce, convolution
 * windows) with their exact regions, mixed-sign range projection against a
 * brute-force bounding box, split and intersection edge cases, parsing,
 * JSON, and error codes. Needs no runtime. */
#include <stdint.h>
#include <string.h>

#include "check.h"

static strata_zrange R(const char *text)
{
  strata_zrange r;
  memset(&r, 0, sizeof r);
  if (strata_zrange_parse(text, &r) != 0)
    fprintf(stderr, "cannot parse %s\n", text), check_failures++;
  return r;
}

/* Region of a point or a range, formatted, compared with `want`. */
#define CHECK_REGION(region, want)                                                                 \
  do {                                                                                             \
    char got_[256];                                                                                \
    strata_zrange_format(&(region), got_, sizeof got_);                                            \
    if (strcmp(got_, want) != 0) {                                                                 \
      fprintf(stderr, "%s:%d: %s, want %s\n", __FILE__, __LINE__, got_, want);                     \
      check_failures++;                                                                            \
    }                                                                                              \
  } while (0)

static strata_zproj proj(int in, int out, const int64_t *m, const int64_t *offset,
                         const int64_t *shape)
{
  strata_zaffine f;
  strata_zproj p;
  CHECK_EQ(strata_zaffine_init(&f, in, out, m, offset), 0);
  CHECK_EQ(strata_zproj_init(&p, &f, shape), 0);
  return p;
}

static void check_ranges(void)
{
  strata_zrange r = R("zr[2:4, 3:5]"), x;
  int64_t last[2], p[2] = {3, 4}, q[2] = {4, 4};
  CHECK_EQ(strata_zrange_size(&r), 4);
  CHECK_EQ(strata_zrange_is_empty(&r), 0);
  CHECK_EQ(strata_zrange_inclusive_end(&r, last), 0);
  CHECK(last[0] == 3 && last[1] == 4);
  CHECK_EQ(strata_zrange_contains_point(&r, p), 1);
  CHECK_EQ(strata_zrange_contains_point(&r, q), 0);
  strata_zrange scalar = R("zr[]"), empty = R("zr[4:4]");
  CHECK_EQ(strata_zrange_size(&scalar), 1);
  CHECK_EQ(strata_zrange_is_empty(&empty), 1);
  CHECK_EQ(strata_zrange_inclusive_end(&empty, last), STRATA_EINVAL);
  strata_zrange outer = R("zr[0:4]"), at_end = R("zr[4:4]"), beyond = R("zr[5:5]");
  CHECK_EQ(strata_zrange_contains(&outer, &at_end), 1); /* empty, at the end boundary */
  CHECK_EQ(strata_zrange_contains(&outer, &beyond), 0);
  strata_zrange inner = R("zr[1:3]");
  CHECK_EQ(strata_zrange_contains(&outer, &inner), 1);
  CHECK_EQ(strata_zrange_contains(&outer, &r), STRATA_EINVAL);
  int64_t s[1] = {3}, e[1] = {2};
  CHECK_EQ(strata_zrange_init(&x, 1, s, e), STRATA_EINVAL);
  CHECK_EQ(strata_zrange_init(&x, 9, s, e), STRATA_EINVAL);

  strata_zrelation rel;
  strata_zrange a = R("zr[0:4]"), b = R("zr[4:8]"), c = R("zr[5:8]"), d = R("zr[2:6]");
  CHECK_EQ(strata_zrange_intersect(&a, &b, &x, &rel), 0);
  CHECK_EQ(rel, STRATA_ZTOUCHING);
  CHECK_REGION(x, "zr[4:4]");
  CHECK_EQ(strata_zrange_intersect(&a, &c, &x, &rel), 0);
  CHECK_EQ(rel, STRATA_ZDISJOINT);
  CHECK_EQ(strata_zrange_intersect(&a, &d, &x, &rel), 0);
  CHECK_EQ(rel, STRATA_ZOVERLAP);
  CHECK_REGION(x, "zr[2:4]");
  strata_zrange a2 = R("zr[0:4, 0:4]"), b2 = R("zr[2:6, 4:9]");
  CHECK_EQ(strata_zrange_intersect(&a2, &b2, &x, &rel), 0);
  CHECK_EQ(rel, STRATA_ZTOUCHING);
  CHECK_EQ(strata_zrange_intersect(&a2, &a, &x, &rel), STRATA_EINVAL);
  CHECK_EQ(strata_zrange_bounds(&a2, &b2, &x), 0);
  CHECK_REGION(x, "zr[0:6, 0:9]");

  strata_zrange parts[8];
  int n;
  strata_zrange ten = R("zr[0:10, 0:2]");
  CHECK_EQ(strata_zrange_split(&ten, 0, 3, parts, 8, &n), 0);
  CHECK_EQ(n, 4);
  CHECK_REGION(parts[3], "zr[9:10, 0:2]");
  CHECK_EQ(strata_zrange_split(&ten, -2, 4, parts, 8, &n), 0); /* d/c + d%c would say 4 */
  CHECK_EQ(n, 3);
  CHECK_REGION(parts[2], "zr[8:10, 0:2]");
  CHECK_EQ(strata_zrange_split(&ten, 0, 10, parts, 8, &n), 0);
  CHECK_EQ(n, 1);
  CHECK_EQ(strata_zrange_split(&ten, 0, 11, parts, 8, &n), 0);
  CHECK_EQ(n, 1);
  CHECK_REGION(parts[0], "zr[0:10, 0:2]");
  CHECK_EQ(strata_zrange_split(&ten, -1, 1, parts, 8, &n), 0);
  CHECK_EQ(n, 2);
  CHECK_REGION(parts[1], "zr[0:10, 1:2]");
  CHECK_EQ(strata_zrange_split(&ten, 0, 1, parts, 8, &n), STRATA_ERANGE);
  CHECK_EQ(n, 10);
  CHECK_EQ(strata_zrange_split(&ten, 0, 0, parts, 8, &n), STRATA_EINVAL);
  CHECK_EQ(strata_zrange_split(&ten, 2, 1, parts, 8, &n), STRATA_EINVAL);
  strata_zrange none = R("zr[3:3]");
  CHECK_EQ(strata_zrange_split(&none, 0, 2, parts, 8, &n), 0);
  CHECK_EQ(n, 0);
  int64_t sizes[3] = {2, 3, 5}, bad[2] = {0, 10};
  CHECK_EQ(strata_zrange_split_sizes(&ten, 0, sizes, 3, parts), 0);
  CHECK_REGION(parts[1], "zr[2:5, 0:2]");
  CHECK_EQ(strata_zrange_split_sizes(&ten, 0, sizes, 2, parts), STRATA_EINVAL);
  CHECK_EQ(strata_zrange_split_sizes(&ten, 0, bad, 2, parts), STRATA_EINVAL);

  int perm[3] = {-1, 0, 1};
  strata_zrange three;
  CHECK_EQ(strata_zrange_product(&a, &b2, &three), 0);
  CHECK_REGION(three, "zr[0:4, 2:6, 4:9]");
  CHECK_EQ(strata_zrange_permute(&three, perm, &x), 0);
  CHECK_REGION(x, "zr[4:9, 0:4, 2:6]");
  int twice[3] = {0, 0, 1};
  CHECK_EQ(strata_zrange_permute(&three, twice, &x), STRATA_EINVAL);
  int64_t shift[3] = {-1, 10, 0};
  CHECK_EQ(strata_zrange_translate(&three, shift, &x), 0);
  CHECK_REGION(x, "zr[-1:3, 12:16, 4:9]");
}

static void check_parse_format(void)
{
  strata_zrange r;
  char buf[64];
  CHECK_EQ(strata_zrange_parse("  zr[ -3:2 ,0:0 ]  ", &r), 0);
  CHECK_EQ(strata_zrange_format(&r, buf, sizeof buf), (int)strlen("zr[-3:2, 0:0]"));
  CHECK(strcmp(buf, "zr[-3:2, 0:0]") == 0);
  const char *bad[] = {"zr[2:1]", "zr[1:2",    "zr[1-2]",
                       "r[1:2]",  "zr[1:2] x", "zr[1:]",
                       "zr[:2]",  "zr[1:2,]",  "zr[0:1,0:1,0:1,0:1,0:1,0:1,0:1,0:1,0:1]",
                       ""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    int ret = strata_zrange_parse(bad[i], &r);
    if (ret != STRATA_EINVAL)
      fprintf(stderr, "parsed \"%s\"\n", bad[i]);
    CHECK_EQ(ret, STRATA_EINVAL);
  }
  CHECK_EQ(strata_zrange_format(&r, buf, 4), (int)strlen("zr[-3:2, 0:0]")); /* truncated */
  CHECK(strcmp(buf, "zr[") == 0);
}

/* The design document's examples. */
static void check_examples(void)
{
  strata_zrange region, range;
  int64_t pt[2] = {7, 3};
  /* Fixed view: zero matrix, the view's origin and shape. */
  int64_t zero[4] = {0}, origin[2] = {1, 2}, view[2] = {2, 2};
  strata_zproj fixed = proj(2, 2, zero, origin, view);
  CHECK_EQ(strata_zproj_apply_point(&fixed, pt, &region), 0);
  CHECK_REGION(region, "zr[1:3, 2:4]");
  range = R("zr[0:100, 5:9]");
  CHECK_EQ(strata_zproj_apply_range(&fixed, &range, &region), 0);
  CHECK_REGION(region, "zr[1:3, 2:4]");

  /* nn.Linear over index (batch b, output o), input width 6:
   * x[b, :] -> [[1, 0], [0, 0]] shape (1, 6); W[:, o] -> [[0, 0], [0, 1]]
   * shape (6, 1); y[b, o] -> identity, shape (1, 1). */
  int64_t mx[4] = {1, 0, 0, 0}, mw[4] = {0, 0, 0, 1}, id[4] = {1, 0, 0, 1};
  int64_t sx[2] = {1, 6}, sw[2] = {6, 1}, sy[2] = {1, 1};
  strata_zproj px = proj(2, 2, mx, NULL, sx), pw = proj(2, 2, mw, NULL, sw),
               py = proj(2, 2, id, NULL, sy);
  range = R("zr[2:5, 1:3]");
  CHECK_EQ(strata_zproj_apply_range(&px, &range, &region), 0);
  CHECK_REGION(region, "zr[2:5, 0:6]");
  CHECK_EQ(strata_zproj_apply_range(&pw, &range, &region), 0);
  CHECK_REGION(region, "zr[0:6, 1:3]");
  CHECK_EQ(strata_zproj_apply_range(&py, &range, &region), 0);
  CHECK_REGION(region, "zr[2:5, 1:3]");

  /* Negative stride: index i -> cell 9 - i. */
  int64_t neg[1] = {-1}, nine[1] = {9}, one[1] = {1}, i0[1] = {0}, i9[1] = {9};
  strata_zproj back = proj(1, 1, neg, nine, one);
  CHECK_EQ(strata_zproj_apply_point(&back, i0, &region), 0);
  CHECK_REGION(region, "zr[9:10]");
  CHECK_EQ(strata_zproj_apply_point(&back, i9, &region), 0);
  CHECK_REGION(region, "zr[0:1]");
  range = R("zr[2:5]");
  CHECK_EQ(strata_zproj_apply_range(&back, &range, &region), 0);
  CHECK_REGION(region, "zr[5:8]");

  /* Axial reduce of a [4, 6] tensor along dimension 1: index i -> row i. */
  int64_t mr[2] = {1, 0}, row[2] = {1, 6}, i2[1] = {2};
  strata_zproj axial = proj(1, 2, mr, NULL, row);
  CHECK_EQ(strata_zproj_apply_point(&axial, i2, &region), 0);
  CHECK_REGION(region, "zr[2:3, 0:6]");

  /* Convolution window of 3 centred on i: offset -1 crosses the bounds. */
  int64_t m1[1] = {1}, minus1[1] = {-1}, three[1] = {3};
  strata_zproj window = proj(1, 1, m1, minus1, three);
  CHECK_EQ(strata_zproj_apply_point(&window, i0, &region), 0);
  CHECK_REGION(region, "zr[-1:2]");
  range = R("zr[0:8]");
  CHECK_EQ(strata_zproj_apply_range(&window, &range, &region), 0);
  CHECK_REGION(region, "zr[-1:9]"); /* starts -1..6, each 3 long */

  /* Mixed signs: x - y over zr[0:4, 0:4] spans [-3, 3]; two corners alone
   * would give zr[0:1]. */
  int64_t mixed[2] = {1, -1};
  strata_zproj diff = proj(2, 1, mixed, NULL, one);
  range = R("zr[0:4, 0:4]");
  CHECK_EQ(strata_zproj_apply_range(&diff, &range, &region), 0);
  CHECK_REGION(region, "zr[-3:4]");
  range = R("zr[3:3, 0:4]"); /* empty source: zero shape at the offset */
  CHECK_EQ(strata_zproj_apply_range(&diff, &range, &region), 0);
  CHECK_REGION(region, "zr[0:0]");

  /* Constant strides and what neighbouring shards share: nothing for the
   * linear maps, everything for fixed views, a halo of shape - |stride|
   * for windows, along the dimensions the map moves. */
  int64_t stride[2], overlap[2];
  CHECK_EQ(strata_zproj_stride(&px, 0, stride), 0);
  CHECK(stride[0] == 1 && stride[1] == 0);
  CHECK_EQ(strata_zproj_sharing(&px, 0, overlap), STRATA_ZSHARE_NONE);
  CHECK(overlap[0] == 0 && overlap[1] == 6);
  CHECK_EQ(strata_zproj_sharing(&px, 1, overlap), STRATA_ZSHARE_TOTAL);
  CHECK(overlap[0] == 1 && overlap[1] == 6);
  CHECK_EQ(strata_zproj_sharing(&py, 1, NULL), STRATA_ZSHARE_NONE);
  CHECK_EQ(strata_zproj_sharing(&fixed, 0, overlap), STRATA_ZSHARE_TOTAL);
  CHECK(overlap[0] == 2 && overlap[1] == 2);
  CHECK_EQ(strata_zproj_stride(&back, 0, stride), 0);
  CHECK_EQ(stride[0], -1);
  CHECK_EQ(strata_zproj_sharing(&back, 0, overlap), STRATA_ZSHARE_NONE);
  CHECK_EQ(strata_zproj_sharing(&window, 0, overlap), STRATA_ZSHARE_PARTIAL);
  CHECK_EQ(overlap[0], 2);
  CHECK_EQ(strata_zproj_sharing(&axial, 0, NULL), STRATA_ZSHARE_NONE);
  CHECK_EQ(strata_zproj_sharing(&diff, 1, overlap), STRATA_ZSHARE_NONE);
  int64_t wide[1] = {4}, two[1] = {2};
  strata_zproj strided = proj(1, 1, two, NULL, wide); /* stride 2, width 4 */
  CHECK_EQ(strata_zproj_sharing(&strided, 0, overlap), STRATA_ZSHARE_PARTIAL);
  CHECK_EQ(overlap[0], 2);
  CHECK_EQ(strata_zproj_stride(&strided, 1, stride), STRATA_EINVAL);
  CHECK_EQ(strata_zproj_sharing(NULL, 0, overlap), STRATA_EINVAL);
}

/* Random maps with mixed signs: the range projection equals the bounding
 * box of every point's region, found by enumeration. */
static void check_range_brute_force(void)
{
  uint64_t s = 12345;
  int mismatches = 0;
  for (int trial = 0; trial < 300; trial++) {
    int in = 1 + trial % 3, out = 1 + (trial / 3) % 3;
    int64_t m[9], off[3], shape[3], st[3], en[3];
    for (int k = 0; k < 9; k++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      m[k] = (int64_t)(s >> 60) % 7 - 3;
    }
    for (int k = 0; k < 3; k++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      off[k] = (int64_t)(s >> 59) % 9 - 4;
      shape[k] = (int64_t)(s >> 40) % 3;
      st[k] = (int64_t)(s >> 20) % 5 - 2;
      en[k] = st[k] + 1 + (int64_t)(s >> 10) % 4;
    }
    strata_zproj p = proj(in, out, m, off, shape);
    strata_zrange range, region, box = {0};
    strata_zrange_init(&range, in, st, en);
    CHECK_EQ(strata_zproj_apply_range(&p, &range, &region), 0);
    int first = 1;
    int64_t x[3];
    for (x[0] = st[0]; x[0] < en[0]; x[0]++)
      for (x[1] = in > 1 ? st[1] : 0; x[1] < (in > 1 ? en[1] : 1); x[1]++)
        for (x[2] = in > 2 ? st[2] : 0; x[2] < (in > 2 ? en[2] : 1); x[2]++) {
          strata_zrange one;
          strata_zproj_apply_point(&p, x, &one);
          if (first)
            box = one;
          else
            strata_zrange_bounds(&box, &one, &box);
          first = 0;
        }
    mismatches += memcmp(&box, &region, sizeof box) != 0;
  }
  CHECK_EQ(mismatches, 0);
}

static void check_affine_and_json(void)
{
  strata_zaffine f;
  int64_t m[6] = {1, 2, 0, 0, 0, -1}, off[2] = {5, 7}, x[3] = {1, 1, 4}, y[4];
  CHECK_EQ(strata_zaffine_init(&f, 3, 2, m, off), 0);
  CHECK_EQ(strata_zaffine_apply(&f, x, y), 0);
  CHECK(y[0] == 8 && y[1] == 3);
  int64_t lead[5] = {42, 1, 1, 4};
  CHECK_EQ(strata_zaffine_broadcast_apply(&f, lead, 4, y), 0); /* 42 passes through */
  CHECK(y[0] == 42 && y[1] == 8 && y[2] == 3);
  CHECK_EQ(strata_zaffine_broadcast_apply(&f, lead, 2, y), STRATA_EINVAL);
  int64_t delta[2] = {-5, 1};
  CHECK_EQ(strata_zaffine_translate(&f, delta), 0);
  int pin[3] = {2, 0, 1}, pout[2] = {1, 0};
  CHECK_EQ(strata_zaffine_permute_input(&f, pin), 0); /* new input 0 is old input 2 */
  int64_t xp[3] = {4, 1, 1};
  CHECK_EQ(strata_zaffine_apply(&f, xp, y), 0);
  CHECK(y[0] == 3 && y[1] == 4);
  CHECK_EQ(strata_zaffine_permute_output(&f, pout), 0);
  CHECK_EQ(strata_zaffine_apply(&f, xp, y), 0);
  CHECK(y[0] == 4 && y[1] == 3);

  strata_zproj p, q;
  int64_t mm[4] = {1, 0, 0, -1}, oo[2] = {0, 5}, ss[2] = {1, 2};
  p = proj(2, 2, mm, oo, ss);
  char json[256];
  CHECK(strata_zproj_to_json(&p, json, sizeof json) > 0);
  CHECK(strcmp(json, "{\"projection\":[[1,0],[0,-1]],\"offset\":[0,5],\"shape\":[1,2]}") == 0);
  CHECK_EQ(strata_zproj_from_json(json, &q), 0);
  CHECK(memcmp(&p, &q, sizeof p) == 0);
  const char *bad[] = {"{\"projection\":[[1,0],[0]],\"offset\":[0,5],\"shape\":[1,2]}",
                       "{\"projection\":[[1,0],[0,1]],\"offset\":[0],\"shape\":[1,2]}",
                       "{\"projection\":[[1,0],[0,1]],\"offset\":[0,5],\"shape\":[1,-2]}",
                       "{\"projection\":[[1.5,0],[0,1]],\"offset\":[0,5],\"shape\":[1,2]}",
                       "{\"offset\":[0,5],\"shape\":[1,2]}"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    CHECK_EQ(strata_zproj_from_json(bad[i], &q), STRATA_EINVAL);
  CHECK_EQ(strata_zproj_from_json("{\"projection\":", &q), STRATA_EIO);
  int64_t negative[2] = {1, -1};
  strata_zaffine g;
  strata_zaffine_init(&g, 1, 2, NULL, NULL);
  CHECK_EQ(strata_zproj_init(&q, &g, negative), STRATA_EINVAL);
}

/* Gather `region` of a small int32 tensor under a policy and compare with
 * `want` (n values), or expect the error code `want_ret`. */
static void check_gather(const int32_t *tensor, int ndim, const int64_t *shape, const char *region,
                         strata_oob_policy policy, int want_ret, const int32_t *want, int n)
{
  int32_t out[64], fill = -1;
  strata_zrange r = R(region);
  int ret = strata_zregion_gather(tensor, shape, sizeof *tensor, &r, policy, &fill, out);
  (void)ndim;
  if (ret != want_ret || (ret == 0 && memcmp(out, want, (size_t)n * sizeof *out) != 0)) {
    fprintf(stderr, "gather %s policy %d: ret %d, got", region, policy, ret);
    for (int i = 0; ret == 0 && i < n; i++)
      fprintf(stderr, " %d", out[i]);
    fprintf(stderr, "\n");
    check_failures++;
  }
}

static void check_out_of_bounds(void)
{
  const int32_t t1[6] = {10, 11, 12, 13, 14, 15};
  const int64_t s1[1] = {6};
  check_gather(t1, 1, s1, "zr[1:4]", STRATA_OOB_ERROR, 0, (int32_t[]){11, 12, 13}, 3);
  check_gather(t1, 1, s1, "zr[-1:2]", STRATA_OOB_ERROR, STRATA_ERANGE, NULL, 0);
  check_gather(t1, 1, s1, "zr[-2:3]", STRATA_OOB_CLIP, 0, (int32_t[]){10, 11, 12}, 3);
  check_gather(t1, 1, s1, "zr[-2:3]", STRATA_OOB_WRAP, 0, (int32_t[]){14, 15, 10, 11, 12}, 5);
  check_gather(t1, 1, s1, "zr[4:14]", STRATA_OOB_WRAP, 0,
               (int32_t[]){14, 15, 10, 11, 12, 13, 14, 15, 10, 11}, 10);
  check_gather(t1, 1, s1, "zr[-2:2]", STRATA_OOB_NEGATIVE, 0, (int32_t[]){14, 15, 10, 11}, 4);
  check_gather(t1, 1, s1, "zr[-7:0]", STRATA_OOB_NEGATIVE, STRATA_ERANGE, NULL, 0);
  check_gather(t1, 1, s1, "zr[5:7]", STRATA_OOB_NEGATIVE, STRATA_ERANGE, NULL, 0);
  check_gather(t1, 1, s1, "zr[-2:3]", STRATA_OOB_PAD, 0, (int32_t[]){-1, -1, 10, 11, 12}, 5);
  check_gather(t1, 1, s1, "zr[7:9]", STRATA_OOB_PAD, 0, (int32_t[]){-1, -1}, 2);

  /* 2-D, 3 x 4, value 10 r + c: a window over the corner. */
  int32_t t2[12];
  for (int i = 0; i < 12; i++)
    t2[i] = 10 * (i / 4) + i % 4;
  const int64_t s2[2] = {3, 4};
  check_gather(t2, 2, s2, "zr[-1:1, 3:5]", STRATA_OOB_WRAP, 0, (int32_t[]){23, 20, 3, 0}, 4);
  check_gather(t2, 2, s2, "zr[-1:1, 3:5]", STRATA_OOB_PAD, 0, (int32_t[]){-1, -1, 3, -1}, 4);
  check_gather(t2, 2, s2, "zr[-1:1, 3:5]", STRATA_OOB_CLIP, 0, (int32_t[]){3}, 1);
  check_gather(t2, 2, s2, "zr[-1:1, -2:0]", STRATA_OOB_NEGATIVE, 0, (int32_t[]){22, 23, 2, 3}, 4);

  strata_zpiece pieces[8];
  int count;
  strata_zrange r = R("zr[-1:1, 3:5]"), eff;
  CHECK_EQ(strata_zregion_resolve(&r, s2, STRATA_OOB_WRAP, pieces, 8, &count, &eff), 0);
  CHECK_EQ(count, 4);
  CHECK_REGION(pieces[0].source, "zr[2:3, 3:4]");
  CHECK(pieces[3].dest[0] == 1 && pieces[3].dest[1] == 1);
  CHECK_EQ(strata_zregion_resolve(&r, s2, STRATA_OOB_WRAP, pieces, 2, &count, &eff), STRATA_ERANGE);
  CHECK_EQ(count, 4);
  CHECK_EQ(strata_zregion_resolve(&r, s2, STRATA_OOB_CLIP, pieces, 8, &count, &eff), 0);
  CHECK_REGION(eff, "zr[0:1, 3:4]");
  CHECK_EQ(strata_zregion_resolve(&r, s2, (strata_oob_policy)9, pieces, 8, &count, &eff),
           STRATA_EINVAL);
}

int main(void)
{
  check_ranges();
  check_parse_format();
  check_examples();
  check_range_brute_force();
  check_affine_and_json();
  check_out_of_bounds();
  return check_status();
}
