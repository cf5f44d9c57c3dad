/* ONNX models exported by PyTorch (tests/onnx_parity.py writes them, their
 * inputs and PyTorch's outputs, and damaged copies): each loads, describes
 * its channels and outputs, and gives PyTorch's values within 1e-5 of the
 * output's largest magnitude through strata_model_apply; each damaged file
 * is refused with a message that names what is wrong, and so is a model
 * made for one extent applied at another.
 * usage: test_model_onnx <folder with manifest.txt> */
#include <math.h>
#include <string.h>

#include "check.h"
#include "internal/model.h"

#define TOLERANCE 1e-5

static strata_array *from_npy(const char *path, int64_t *count)
{
  int ndim;
  int64_t shape[STRATA_MAX_DIMS];
  float *data = NULL;
  CHECK_EQ(strata__npy_read_f32(path, &ndim, shape, &data), 0);
  if (!data)
    return NULL;
  *count = 1;
  for (int d = 0; d < ndim; d++)
    *count *= shape[d];
  strata_array *a = NULL;
  float *p;
  CHECK_EQ(strata_array_create(ndim, shape, STRATA_FLOAT32, &a), 0);
  CHECK_EQ(strata_array_acquire(a, STRATA_WRITE, (void **)&p), 0);
  memcpy(p, data, (size_t)*count * sizeof *p);
  strata_array_release(a);
  free(data);
  return a;
}

/* One model on one input against PyTorch's output. */
static void check_parity(const char *dir, char **f)
{
  char path[4096], in_path[4096], want_path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, f[1]);
  snprintf(in_path, sizeof in_path, "%s/%s.in.npy", dir, f[2]);
  snprintf(want_path, sizeof want_path, "%s/%s.want.npy", dir, f[2]);
  int channels = atoi(f[3]), k = atoi(f[4]), outputs = atoi(f[6]);
  strata_model *m = NULL;
  int ret = strata_model_load_onnx(path, &m);
  if (ret) {
    fprintf(stderr, "%s: %s (%s)\n", f[1], strata_strerror(ret), strata_error_message());
    check_failures++;
    return;
  }
  int in_c, out_c, count = 0, first, width;
  CHECK_EQ(strata_model_describe(m, &in_c, &out_c, NULL), 0);
  CHECK_EQ(in_c, channels);
  CHECK_EQ(out_c, k);
  CHECK_EQ(strata_model_outputs(m, outputs, &count, NULL, NULL, NULL), STRATA_ERANGE);
  CHECK_EQ(count, outputs);
  CHECK_EQ(strata_model_outputs(m, outputs - 1, NULL, NULL, &first, &width), 0);
  CHECK_EQ(first + width, k);
  int64_t nin, nwant;
  strata_array *in = from_npy(in_path, &nin), *want = from_npy(want_path, &nwant), *out = NULL;
  int64_t shape[STRATA_MAX_DIMS];
  strata_array_shape(want, shape);
  CHECK_EQ(strata_array_create(strata_array_ndim(want), shape, STRATA_FLOAT32, &out), 0);
  CHECK_EQ(strata_model_apply(m, in, out), 0);
  float *got, *ref;
  CHECK_EQ(strata_array_acquire(out, STRATA_READ, (void **)&got), 0);
  CHECK_EQ(strata_array_acquire(want, STRATA_READ, (void **)&ref), 0);
  double scale = 0, worst = 0;
  for (int64_t i = 0; i < nwant; i++)
    scale = fabs(ref[i]) > scale ? fabs(ref[i]) : scale;
  for (int64_t i = 0; i < nwant; i++) {
    double e = fabs((double)got[i] - ref[i]) / (scale > 0 ? scale : 1);
    worst = e > worst || e != e ? e : worst;
  }
  fprintf(stderr, "%-20s %-16s %d -> %d channels, %d output(s): max error %.2e of %.3g\n", f[1],
          f[2], channels, k, outputs, worst, scale);
  CHECK(worst <= TOLERANCE);
  CHECK(scale > 0); /* not vacuous */
  strata_array_release(out);
  strata_array_release(want);
  strata_array_destroy(in), strata_array_destroy(want), strata_array_destroy(out);
  strata_model_destroy(m);
}

static void check_refused(const char *dir, char **f)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, f[1]);
  strata_model *m = NULL;
  int ret = strata_model_load_onnx(path, &m);
  fprintf(stderr, "%-20s refused: %s\n", f[1], strata_error_message());
  CHECK(ret == STRATA_EINVAL || ret == STRATA_EIO);
  CHECK(m == NULL);
  CHECK(strstr(strata_error_message(), f[2]) != NULL);
}

/* A model exported at one extent, applied at another: refused with a
 * message that names the layer. */
static void check_wrong_extent(const char *dir, char **f)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, f[1]);
  strata_model *m = NULL;
  CHECK_EQ(strata_model_load_onnx(path, &m), 0);
  if (!m)
    return;
  int in_c, out_c;
  int64_t n = atoll(f[2]), in_shape[4] = {0, n, n, n}, out_shape[4] = {0, n, n, n};
  strata_model_describe(m, &in_c, &out_c, NULL);
  in_shape[0] = in_c, out_shape[0] = out_c;
  strata_array *in = NULL, *out = NULL;
  CHECK_EQ(strata_array_create(4, in_shape, STRATA_FLOAT32, &in), 0);
  CHECK_EQ(strata_array_create(4, out_shape, STRATA_FLOAT32, &out), 0);
  CHECK_EQ(strata_model_apply(m, in, out), STRATA_EINVAL);
  fprintf(stderr, "%-20s at n = %lld refused: %s\n", f[1], (long long)n, strata_error_message());
  CHECK(strstr(strata_error_message(), f[3]) != NULL);
  strata_array_destroy(in), strata_array_destroy(out);
  strata_model_destroy(m);
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  if (argc < 2) {
    fprintf(stderr, "usage: test_model_onnx <folder>\n");
    return 2;
  }
  char path[4096], line[4096];
  snprintf(path, sizeof path, "%s/manifest.txt", argv[1]);
  FILE *manifest = fopen(path, "r");
  CHECK(manifest != NULL);
  int good = 0, bad = 0;
  while (manifest && fgets(line, sizeof line, manifest)) {
    char *f[8] = {0}, *save = NULL;
    int nf = 0;
    line[strcspn(line, "\n")] = '\0';
    for (char *t = strtok_r(line, "\t", &save); t && nf < 8; t = strtok_r(NULL, "\t", &save))
      f[nf++] = t;
    if (nf == 7 && strcmp(f[0], "good") == 0) {
      check_parity(argv[1], f);
      good++;
    } else if (nf == 3 && strcmp(f[0], "bad") == 0) {
      check_refused(argv[1], f);
      bad++;
    } else if (nf == 4 && strcmp(f[0], "extent") == 0) {
      check_wrong_extent(argv[1], f);
      bad++;
    } else if (nf)
      CHECK(!"manifest line");
  }
  if (manifest)
    fclose(manifest);
  CHECK(good > 0 && bad > 0);
  if (!check_failures)
    printf("%d PyTorch parity cases within %g, %d damaged files refused\n", good, TOLERANCE, bad);
  strata_finalize();
  return check_status();
}
