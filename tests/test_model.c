/* Models as tasks: the default model is the trained U-Net; the analytic
 * blob detector finds each isolated Gaussian blob once and nothing in a
 * uniform field; a U-Net JSON model (every layer
 * type) equals the naive reference; plug-in models; every kind of bad model
 * description gives its error code and a message naming the file. */
#include <math.h>
#include <string.h>

#include "blob_field.h"
#include "check.h"
#include "cnn_reference.h"

static strata_array *cube(int64_t channels, int64_t n)
{
  int64_t shape[4] = {channels, n, n, n};
  strata_array *a = NULL;
  CHECK_EQ(strata_array_create(4, shape, STRATA_FLOAT32, &a), 0);
  return a;
}

static strata_bubble *detect(strata_model *m, const struct blob *blobs, int nblobs, double base,
                             int64_t *count)
{
  strata_array *rho = cube(1, 64);
  float *p;
  strata_array_acquire(rho, STRATA_WRITE, (void **)&p);
  blob_field(p, 64, NULL, base, blobs, nblobs);
  strata_array_release(rho);
  strata_bubble *list = model_bubbles(m, rho, 4, count);
  strata_array_destroy(rho);
  return list;
}

/* The cosmology-like field: every bubble sits on an overdense region (mean
 * density inside its sphere at least 1.5 times the cosmic mean; 2.1 was
 * measured, the margin absorbs BLAS rounding on other CPUs) and the densest
 * cell lies inside a bubble. */
static void check_cosmology(strata_model *m)
{
  int64_t n = 64, v = n * n * n;
  double *rho = malloc((size_t)v * sizeof *rho);
  strata_cosmology_params cp;
  strata_cosmology_params_init(&cp);
  cp.seed = 2026;
  CHECK_EQ(strata_cosmology_density(n, &cp, rho), 0);
  strata_array *in = cube(1, n), *prob = cube(1, n), *table;
  int64_t tshape[2] = {257, STRATA_BUBBLE_TABLE_COLUMNS}, count, found;
  strata_array_create(2, tshape, STRATA_FLOAT64, &table);
  float *p;
  strata_array_acquire(in, STRATA_WRITE, (void **)&p);
  int64_t densest = 0;
  for (int64_t i = 0; i < v; i++) {
    p[i] = (float)rho[i];
    densest = rho[i] > rho[densest] ? i : densest;
  }
  strata_array_release(in);
  strata_bubble_params bp;
  strata_bubble_params_init(&bp);
  bp.min_cells = 4;
  CHECK_EQ(strata_model_apply(m, in, prob), 0);
  CHECK_EQ(strata_bubbles_submit(prob, &bp, table), 0);
  strata_bubble *b;
  CHECK_EQ(strata_bubbles_read(table, &b, &count, &found), 0);
  CHECK(count >= 3 && count == found);
  double worst = 1e30;
  int covers_densest = 0;
  double dx0 = densest % n + 0.5, dy0 = densest / n % n + 0.5, dz0 = densest / (n * n) + 0.5;
  for (int64_t j = 0; j < count; j++) {
    double sum = 0;
    int64_t cells = 0, r = (int64_t)ceil(b[j].radius);
    for (int64_t z = -r; z <= r; z++)
      for (int64_t y = -r; y <= r; y++)
        for (int64_t x = -r; x <= r; x++) {
          int64_t cx = (int64_t)b[j].center[0] + x, cy = (int64_t)b[j].center[1] + y,
                  cz = (int64_t)b[j].center[2] + z;
          if (cx < 0 || cy < 0 || cz < 0 || cx >= n || cy >= n || cz >= n ||
              x * x + y * y + z * z > b[j].radius * b[j].radius)
            continue;
          sum += rho[(cz * n + cy) * n + cx];
          cells++;
        }
    double mean = cells ? sum / (double)cells : 0;
    worst = mean < worst ? mean : worst;
    double d = sqrt(pow(b[j].center[0] - dx0, 2) + pow(b[j].center[1] - dy0, 2) +
                    pow(b[j].center[2] - dz0, 2));
    covers_densest |= d <= b[j].radius + 1;
  }
  fprintf(stderr,
          "cosmology 64^3: %lld bubbles, lowest mean density inside one %.2f, "
          "densest cell (%.1f) %s\n",
          (long long)count, worst, rho[densest], covers_densest ? "covered" : "missed");
  CHECK(worst >= 1.5);
  CHECK(covers_densest);
  free(b);
  free(rho);
  strata_array_destroy(table);
  strata_array_destroy(prob);
  strata_array_destroy(in);
}

/* The default: the trained U-Net of one density channel to a probability
 * (its detections: test_model_trained). */
static void check_default_model(void)
{
  strata_model *m = NULL;
  CHECK_EQ(strata_model_load_default(&m), 0);
  int cin, cout;
  strata_model_output kind;
  CHECK_EQ(strata_model_describe(m, &cin, &cout, &kind), 0);
  CHECK(cin == 1 && cout == 1 && kind == STRATA_MODEL_PROBABILITY);
  CHECK(m && strcmp(strata_model_name(m), "blob_unet") == 0);
  CHECK(strata_model_input_field(m, 0) && strcmp(strata_model_input_field(m, 0), "density") == 0);
  CHECK_EQ(strata_model_destroy(m), 0);
}

static void check_blob_detector(const char *path)
{
  strata_model *m = NULL;
  CHECK_EQ(strata_model_load(path, &m), 0);
  if (!m) {
    fprintf(stderr, "%s: %s\n", path, strata_error_message());
    return;
  }
  int cin, cout;
  strata_model_output kind;
  CHECK_EQ(strata_model_describe(m, &cin, &cout, &kind), 0);
  CHECK(cin == 1 && cout == 1 && kind == STRATA_MODEL_PROBABILITY);
  CHECK(strcmp(strata_model_name(m), "blob_detector") == 0);
  CHECK(strata_model_input_field(m, 0) && strcmp(strata_model_input_field(m, 0), "density") == 0);
  CHECK(strata_model_input_field(m, 1) == NULL);
  int64_t fixed = -1; /* a fully convolutional model: any even extent */
  CHECK_EQ(strata_model_fixed_extent(m, &fixed), 0);
  CHECK_EQ(fixed, 0);
  CHECK_EQ(strata_model_fixed_extent(NULL, &fixed), STRATA_EINVAL);

  const struct blob blobs[3] = {
      {{16.2, 20.5, 40.3}, 30, 2.5}, {{45.7, 40.1, 20.8}, 10, 3.0}, {{40.4, 15.3, 48.9}, 50, 2.0}};
  int64_t count;
  strata_bubble *b = detect(m, blobs, 3, 1.0, &count);
  CHECK_EQ(count, 3);
  for (int k = 0; k < 3; k++) { /* each blob found exactly once */
    int hits = 0;
    for (int64_t j = 0; j < count; j++) {
      double d =
          sqrt(pow(b[j].center[0] - blobs[k].c[0], 2) + pow(b[j].center[1] - blobs[k].c[1], 2) +
               pow(b[j].center[2] - blobs[k].c[2], 2));
      hits += d <= 1.0;
    }
    CHECK_EQ(hits, 1);
  }
  for (int64_t j = 0; j < count; j++)
    fprintf(stderr, "blob bubble at (%.2f %.2f %.2f) radius %.2f cells %lld\n", b[j].center[0],
            b[j].center[1], b[j].center[2], b[j].radius, (long long)b[j].cells);
  free(b);
  for (int k = 0; k < 2; k++) { /* uniform fields at and below the mean density */
    b = detect(m, NULL, 0, k ? 0.8 : 1.0, &count);
    CHECK_EQ(count, 0);
    free(b);
  }
  check_cosmology(m);
  CHECK_EQ(strata_model_destroy(m), 0);
}

/* Write `count` floats as a float32 .npy of the given shape. */
static void save_tensor(const char *name, const float *data, int ndim, const int64_t *shape)
{
  strata_array *a;
  CHECK_EQ(strata_array_wrap((void *)data, ndim, shape, STRATA_FLOAT32, &a), 0);
  CHECK_EQ(strata_npy_save(check_path(name), a), 0);
  strata_array_destroy(a);
}

static const char *write_text(const char *name, const char *text)
{
  FILE *f = fopen(check_path(name), "w");
  fputs(text, f);
  fclose(f);
  return check_path(name);
}

static const char *unet_json =
    "{\"format\": \"strata-model\", \"version\": 1, \"name\": \"unet\","
    " \"input\": {\"channels\": 2}, \"output\": {\"channels\": 2, \"kind\": \"field\"},"
    " \"layers\": ["
    "  {\"name\": \"c1\", \"type\": \"conv3d\", \"out_channels\": 3, \"kernel\": 3,"
    "   \"weights\": \"c1.npy\", \"bias\": \"c1_bias.npy\"},"
    "  {\"name\": \"r1\", \"type\": \"relu\"},"
    "  {\"name\": \"p\", \"type\": \"maxpool\"},"
    "  {\"name\": \"c2\", \"type\": \"conv3d\", \"out_channels\": 4, \"kernel\": 3, \"dilation\": "
    "2,"
    "   \"weights\": \"c2.npy\", \"bias\": null},"
    "  {\"name\": \"l2\", \"type\": \"leaky_relu\", \"slope\": 0.1},"
    "  {\"name\": \"up\", \"type\": \"upsample\"},"
    "  {\"name\": \"cat\", \"type\": \"concat\", \"inputs\": [\"r1\", \"up\"]},"
    "  {\"name\": \"c3\", \"type\": \"conv3d\", \"out_channels\": 2, \"kernel\": 1,"
    "   \"weights\": \"c3.npy\", \"bias\": \"c3_bias.npy\"},"
    "  {\"name\": \"s\", \"type\": \"sigmoid\"},"
    "  {\"name\": \"out\", \"type\": \"log\", \"floor\": 0.001}]}";

static void check_unet_file(void)
{
  struct strata__layer L[UNET_LAYERS];
  float *w;
  int64_t nw;
  ref_unet(L, &w, &nw);
  int64_t s1[5] = {3, 2, 3, 3, 3}, b1[1] = {3}, s2[5] = {4, 3, 3, 3, 3}, s3[5] = {2, 7, 1, 1, 1},
          b3[1] = {2};
  save_tensor("c1.npy", w, 5, s1);
  save_tensor("c1_bias.npy", w + 81, 1, b1);
  save_tensor("c2.npy", w + 84, 5, s2);
  save_tensor("c3.npy", w + 408, 5, s3);
  save_tensor("c3_bias.npy", w + 422, 1, b3);
  strata_model *m;
  CHECK_EQ(strata_model_load(write_text("unet.json", unet_json), &m), 0);
  if (!m) {
    fprintf(stderr, "unet: %s\n", strata_error_message());
    free(w);
    return;
  }
  for (int64_t n = 8; n <= 12; n += 4) { /* two extents: the scratch follows */
    int64_t v = n * n * n;
    strata_array *in = cube(2, n), *out = cube(2, n);
    float *p, *want = malloc((size_t)(2 * v) * 4);
    strata_array_acquire(in, STRATA_WRITE, (void **)&p);
    ref_random(p, 2 * v, 5);
    ref_unet_forward(w, p, n, want);
    strata_array_release(in);
    CHECK_EQ(strata_model_apply(m, in, out), 0);
    strata_array_acquire(out, STRATA_READ, (void **)&p);
    CHECK(ref_max_error(p, want, 2 * v) <= 1e-4);
    strata_array_release(out);
    free(want);
    strata_array_destroy(in);
    strata_array_destroy(out);
  }
  strata_array *odd = cube(2, 7), *odd_out = cube(2, 7), *one = cube(1, 8), *f32 = cube(2, 8);
  int64_t shape[4] = {2, 8, 8, 8};
  strata_array *f64;
  strata_array_create(4, shape, STRATA_FLOAT64, &f64);
  CHECK_EQ(strata_model_apply(m, odd, odd_out), STRATA_EINVAL); /* 7 is odd: max-pool */
  CHECK_EQ(strata_model_apply(m, one, f32), STRATA_EINVAL);     /* 1 channel, not 2 */
  CHECK_EQ(strata_model_apply(m, f64, f32), STRATA_ETYPE);
  CHECK_EQ(strata_model_apply(m, f32, f32), STRATA_EINVAL);
  strata_array *all[] = {odd, odd_out, one, f32, f64};
  for (int i = 0; i < 5; i++)
    strata_array_destroy(all[i]);
  strata_model_destroy(m);
  free(w);
}

static void check_bad_model(const char *name, const char *json, int want)
{
  strata_model *m = (strata_model *)1;
  int ret = strata_model_load(write_text(name, json), &m);
  if (ret != want)
    fprintf(stderr, "%s: got %d (%s), want %d\n", name, ret, strata_error_message(), want);
  CHECK_EQ(ret, want);
  CHECK(m == NULL);
  CHECK(strstr(strata_error_message(), name) != NULL);
}

#define HEAD                                                                                       \
  "{\"format\": \"strata-model\", \"version\": 1, \"input\": {\"channels\": 2},"                   \
  " \"output\": {\"channels\": 3}, \"layers\": ["
#define CONV(name, out, weights)                                                                   \
  "{\"name\": \"" name "\", \"type\": \"conv3d\", \"out_channels\": " #out                         \
  ", \"kernel\": 3, \"weights\": \"" weights "\"}"

static void check_bad_models(void)
{
  check_bad_model("syntax.json", "{\"format\": \"strata-model\", ", STRATA_EIO);
  check_bad_model("format.json", "{\"format\": \"onnx\", \"version\": 1}", STRATA_EINVAL);
  check_bad_model("version.json", "{\"format\": \"strata-model\", \"version\": 2}", STRATA_EINVAL);
  check_bad_model("nolayers.json", HEAD "]}", STRATA_EINVAL);
  check_bad_model("type.json", HEAD "{\"name\": \"a\", \"type\": \"softmax\"}]}", STRATA_EINVAL);
  check_bad_model("missing_weights.json", HEAD CONV("a", 3, "nowhere.npy") "]}", STRATA_EIO);
  check_bad_model("shape.json", HEAD CONV("a", 3, "c2.npy") "]}", STRATA_EINVAL);
  check_bad_model("channels.json", HEAD CONV("a", 4, "c2.npy") "]}", STRATA_EINVAL);
  check_bad_model("kernel.json",
                  HEAD "{\"name\": \"a\", \"type\": \"conv3d\", \"out_channels\": 3, \"kernel\": 0,"
                       " \"weights\": \"c1.npy\"}]}",
                  STRATA_EINVAL);
  check_bad_model("upsample.json", HEAD "{\"name\": \"a\", \"type\": \"upsample\"}]}",
                  STRATA_EINVAL);
  check_bad_model("pooled_output.json",
                  HEAD CONV("a", 3, "c1.npy") ", {\"name\": \"b\", \"type\": \"maxpool\"}]}",
                  STRATA_EINVAL);
  check_bad_model("forward_ref.json",
                  HEAD "{\"name\": \"a\", \"type\": \"relu\", \"inputs\": [\"b\"]},"
                       " {\"name\": \"b\", \"type\": \"relu\"}]}",
                  STRATA_EINVAL);
  check_bad_model("duplicate.json",
                  HEAD CONV("a", 3, "c1.npy") ", {\"name\": \"a\", \"type\": \"relu\"}]}",
                  STRATA_EINVAL);
  check_bad_model(
      "concat.json",
      HEAD CONV("a", 3,
                "c1.npy") ", {\"name\": \"b\", \"type\": \"maxpool\"},"
                          " {\"name\": \"c\", \"type\": \"concat\", \"inputs\": [\"a\", \"b\"]}]}",
      STRATA_EINVAL);
  check_bad_model("one_input.json",
                  HEAD "{\"name\": \"c\", \"type\": \"concat\", \"inputs\": [\"input\"]}]}",
                  STRATA_EINVAL);
  check_bad_model("floor.json", HEAD "{\"name\": \"l\", \"type\": \"log\", \"floor\": -1}]}",
                  STRATA_EINVAL);
  /* Non-finite weights are refused, naming the layer and the element. */
  float bad[162] = {0};
  int64_t bad_shape[5] = {3, 2, 3, 3, 3};
  bad[5] = NAN;
  save_tensor("nan.npy", bad, 5, bad_shape);
  check_bad_model("nan_weights.json", HEAD CONV("a", 3, "nan.npy") "]}", STRATA_EINVAL);
  CHECK(strstr(strata_error_message(), "layer 'a': nan.npy holds NaN at element 5"));
  bad[5] = 0;
  bad[161] = -INFINITY;
  save_tensor("inf.npy", bad, 5, bad_shape);
  check_bad_model("inf_weights.json", HEAD CONV("a", 3, "inf.npy") "]}", STRATA_EINVAL);
  CHECK(strstr(strata_error_message(), "holds infinity at element 161"));
  strata_model *m;
  CHECK_EQ(strata_model_load(check_path("absent.json"), &m), STRATA_EIO);
  CHECK_EQ(strata_model_load(NULL, &m), STRATA_EINVAL);
}

/* A plug-in: out[k] = (k + 1) * in[0] + scratch check, two output channels. */
struct plugin_state {
  int calls;
};

static uint64_t plugin_scratch(void *user, int64_t n)
{
  (void)user;
  return (uint64_t)(n * n * n) * sizeof(float);
}

static void plugin_cpu(void *user, const float *in, float *out, int64_t n, void *scratch)
{
  struct plugin_state *s = user;
  int64_t v = n * n * n;
  float *tmp = scratch;
  for (int64_t i = 0; i < v; i++)
    tmp[i] = in[i] + in[v + i]; /* two input channels */
  for (int64_t i = 0; i < v; i++) {
    out[i] = tmp[i];
    out[v + i] = 2 * tmp[i];
  }
  __atomic_add_fetch(&s->calls, 1, __ATOMIC_RELAXED);
}

static void check_plugin(void)
{
  struct plugin_state state = {0};
  const char *fields[2] = {"density", "temperature"};
  strata_model_ops ops = {.name = "sum2",
                          .in_channels = 2,
                          .out_channels = 2,
                          .input_fields = fields,
                          .n_input_fields = 2,
                          .output = STRATA_MODEL_FIELD,
                          .scratch_bytes = plugin_scratch,
                          .cpu = plugin_cpu,
                          .user = &state};
  strata_model *m;
  CHECK_EQ(strata_model_create(&ops, &m), 0);
  CHECK(strcmp(strata_model_input_field(m, 1), "temperature") == 0);
  strata_array *in = cube(2, 6), *out = cube(2, 6);
  float *p;
  strata_array_acquire(in, STRATA_WRITE, (void **)&p);
  for (int i = 0; i < 2 * 216; i++)
    p[i] = (float)i;
  strata_array_release(in);
  for (int r = 0; r < 3; r++)
    CHECK_EQ(strata_model_apply(m, in, out), 0);
  strata_array_acquire(out, STRATA_READ, (void **)&p);
  int bad = 0;
  for (int i = 0; i < 216; i++)
    bad += p[i] != (float)(2 * i + 216) || p[216 + i] != (float)(2 * (2 * i + 216));
  CHECK_EQ(bad, 0);
  strata_array_release(out);
  CHECK_EQ(state.calls, 3);
  strata_array_destroy(in);
  strata_array_destroy(out);
  strata_model_destroy(m);

  ops.cpu = NULL;
  CHECK_EQ(strata_model_create(&ops, &m), STRATA_EINVAL);
  ops.cpu = plugin_cpu;
  ops.n_input_fields = 1;
  CHECK_EQ(strata_model_create(&ops, &m), STRATA_EINVAL);
  CHECK_EQ(strata_model_create(NULL, &m), STRATA_EINVAL);
  CHECK_EQ(strata_model_destroy(NULL), 0);
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  check_scratch_open("strata_model");
  CHECK(argc == 2); /* the blob detector's model.json */
  check_default_model();
  if (argc == 2)
    check_blob_detector(argv[1]);
  check_unet_file();
  check_bad_models();
  check_plugin();
  strata_finalize();
  check_scratch_close();
  return check_status();
}
