/* CUDA network runner and bubble extraction against the CPU kernels: the
 * U-Net of cnn_reference.h and its network of every layer kind at two
 * extents each (1e-4 relative), bubble tables
 * of planted spheres (same bubbles, same order), their border faces and
 * the links between two maps in every direction (equal). Exit 77 without
 * a GPU. */
#include <cublas_v2.h>
#include <math.h>
#include <string.h>

#include "cnn_reference.h"
#include "cuda_check.h"
#include "kernels/bubble_kernels.h"

/* One network on the CPU and in CUDA, 2 input channels at extent n, the
 * CUDA weights `shift` floats past an aligned allocation. */
static void check_network(const char *what, struct strata__network net, const float *w, int64_t nw,
                          cublasHandle_t h, int64_t n, double tolerance, int shift)
{
  int64_t v = n * n * n, k = net.layers[net.nlayers - 1].channels;
  size_t sf = strata__cnn_scratch_floats(&net, n);
  float *in = malloc((size_t)(2 * v) * 4), *cpu = malloc((size_t)(k * v) * 4);
  float *gpu = malloc((size_t)(k * v) * 4), *scratch = malloc(sf * 4);
  ref_random(in, 2 * v, 3);
  strata__cnn_forward_cpu(&net, w, in, n, cpu, scratch);
  float *dw = check_device_copy(NULL, (size_t)(nw + shift) * 4),
        *din = check_device_copy(in, (size_t)(2 * v) * 4);
  CHECK_EQ(cudaMemcpy(dw + shift, w, (size_t)nw * 4, cudaMemcpyHostToDevice), cudaSuccess);
  float *dout = check_device_copy(NULL, (size_t)(k * v) * 4),
        *dscratch = check_device_copy(NULL, sf * 4);
  CHECK_EQ(strata__cnn_forward_cuda(&net, dw + shift, din, n, dout, dscratch, h, NULL), 0);
  CHECK_EQ(cudaMemcpy(gpu, dout, (size_t)(k * v) * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  double err = ref_max_error(gpu, cpu, k * v), top = 0;
  for (int64_t i = 0; i < k * v; i++)
    top = fabs(cpu[i]) > top ? fabs(cpu[i]) : top;
  fprintf(stderr, "%s n=%lld: CUDA vs CPU max relative error %g (largest value %g)\n", what,
          (long long)n, err, top);
  CHECK(err <= tolerance);
  CHECK(top > 0); /* not vacuous */
  cudaFree(dw), cudaFree(din), cudaFree(dout), cudaFree(dscratch);
  free(in), free(cpu), free(gpu), free(scratch);
}

/* A network of cnn_reference.h (its builder), CPU against CUDA. */
static void check_built(const char *what,
                        struct strata__network (*build)(struct strata__layer *, float **,
                                                        int64_t *),
                        cublasHandle_t h, int64_t n)
{
  struct strata__layer L[32]; /* either network */
  float *w;
  int64_t nw;
  struct strata__network net = build(L, &w, &nw);
  /* convolutions through cuDNN where the build has it (float32, then
   * TF32: 10-bit mantissas), then through im2col + cuBLAS: by choice, and
   * where cuDNN declines weights only 4-byte aligned */
  static const struct {
    const char *cudnn, *tf32, *label;
    double tolerance;
    int shift;
  } modes[] = {{"1", "0", "", 1e-4, 0},
               {"1", "0", " (cuDNN's plans again)", 1e-4, 0},
               {"1", "1", " (STRATA_CUDNN_TF32=1)", 1e-2, 0},
               {"0", "0", " (STRATA_CUDNN=0)", 1e-4, 0},
               {"1", "0", " (weights off alignment)", 1e-4, 1}};
  for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
    char label[96];
    snprintf(label, sizeof label, "%s%s", what, modes[i].label);
    setenv("STRATA_CUDNN", modes[i].cudnn, 1);
    setenv("STRATA_CUDNN_TF32", modes[i].tf32, 1);
    long long before = strata__cnn_cudnn_convolutions();
    check_network(label, net, w, nw, h, n, modes[i].tolerance, modes[i].shift);
    long long ran = strata__cnn_cudnn_convolutions() - before;
    fprintf(stderr, "%s n=%lld: %lld convolutions by cuDNN\n", label, (long long)n,
            before < 0 ? -1 : ran);
    if (before >= 0) /* a build with cuDNN: it ran, or it stayed off */
      CHECK(*modes[i].cudnn == '1' && !modes[i].shift ? ran > 0 : ran == 0);
  }
  unsetenv("STRATA_CUDNN");
  unsetenv("STRATA_CUDNN_TF32");
  free(w);
}

/* One map extracted by the CPU and the CUDA kernels: their tables into
 * `cpu` and `gpu` (1 + cap rows), the CPU faces into `faces`; the CUDA
 * faces must equal them. Returns the CUDA faces in device memory. */
static int32_t *extract_both(const float *prob, int64_t n, const struct strata__bubble_params *p,
                             int64_t cap, double *cpu, double *gpu, int32_t *faces)
{
  int64_t v = n * n * n;
  size_t tbytes = (size_t)((1 + cap) * strata__bubble_columns(p->values)) * sizeof(double);
  size_t fbytes = (size_t)(6 * n * n) * sizeof(int32_t);
  void *labels = malloc(strata__bubbles_cpu_scratch_bytes(n));
  int32_t *gfaces = malloc(fbytes);
  strata__bubbles_cpu(prob, n, p, labels, cpu, cap, faces);
  float *dprob = check_device_copy(prob, (size_t)(p->channels * v) * 4);
  void *dscratch = check_device_copy(NULL, strata__bubbles_cuda_scratch_bytes(n, p->values));
  double *dtable = check_device_copy(NULL, tbytes);
  int32_t *dfaces = check_device_copy(NULL, fbytes);
  CHECK_EQ(strata__bubbles_cuda(dprob, n, p, dscratch, dtable, cap, dfaces, NULL), 0);
  CHECK_EQ(cudaMemcpy(gpu, dtable, tbytes, cudaMemcpyDeviceToHost), cudaSuccess);
  CHECK_EQ(cudaMemcpy(gfaces, dfaces, fbytes, cudaMemcpyDeviceToHost), cudaSuccess);
  CHECK(memcmp(faces, gfaces, fbytes) == 0);
  cudaFree(dprob), cudaFree(dscratch), cudaFree(dtable);
  free(labels), free(gfaces);
  return dfaces;
}

/* Two blobs and isolated cells in channel 1 of a map of three, with two
 * value channels: channel 2, the cell's x (so a bubble's value is its
 * centre's x in cells), then channel 0, a constant 3. */
static void check_bubbles(void)
{
  int64_t n = 40, v = n * n * n, cap = 8;
  float *prob = malloc((size_t)(3 * v) * 4);
  for (int64_t i = 0; i < v; i++) {
    double x = i % n + 0.5, y = i / n % n + 0.5, z = i / (n * n) + 0.5;
    double a = pow(x - 10.3, 2) + pow(y - 12.1, 2) + pow(z - 9.7, 2);
    double b = pow(x - 28.8, 2) + pow(y - 25.5, 2) + pow(z - 30.2, 2);
    prob[v + i] = a < 16 ? 0.8f : b < 36 ? 0.95f : (i % 97 == 0 ? 0.7f : 0.1f);
    prob[2 * v + i] = (float)x;
    prob[i] = 3.0f;
  }
  struct strata__bubble_params p = {.threshold = 0.5f,
                                    .min_cells = 2,
                                    .origin = {1, 2, 3},
                                    .cell_size = 0.5,
                                    .channels = 3,
                                    .probability = 1,
                                    .values = 2,
                                    .value_channel = {2, 0}};
  const int64_t columns = strata__bubble_columns(2);
  size_t tbytes = (size_t)((1 + cap) * columns) * sizeof(double);
  double *want = calloc(1, tbytes), *got = calloc(1, tbytes);
  int32_t *faces = malloc((size_t)(6 * n * n) * sizeof(int32_t));
  cudaFree(extract_both(prob, n, &p, cap, want, got, faces));
  CHECK_EQ(got[0], want[0]);
  CHECK(want[0] == 2); /* isolated single cells are below min_cells */
  for (int64_t i = columns; i < (int64_t)(1 + want[0]) * columns; i++)
    CHECK(fabs(got[i] - want[i]) <= 1e-9 * (1 + fabs(want[i])));
  for (int64_t b = 1; b <= 2; b++) {
    const double *row = want + b * columns;
    CHECK(fabs(row[STRATA__BUBBLE_FIELDS] - (row[STRATA__BUBBLE_X] - 1) / 0.5) < 1e-9);
    CHECK(fabs(row[STRATA__BUBBLE_FIELDS + 1] - 3) < 1e-12);
  }
  free(prob), free(want), free(got), free(faces);
}

/* Links of a map with rods through it along x, y and z (they cross every
 * face) with itself as every neighbour, some directions absent. */
static void check_links(void)
{
  int64_t n = 24, v = n * n * n, cap = 16;
  float *prob = malloc((size_t)v * 4);
  for (int64_t i = 0; i < v; i++) {
    int64_t x = i % n, y = i / n % n, z = i / (n * n);
    int rod =
        (y / 3 == 2 && z / 3 == 5) || (x / 3 == 6 && z / 3 == 1) || (x / 2 == 3 && y / 2 == 9);
    prob[i] = rod ? 0.9f : 0.1f;
  }
  struct strata__bubble_params p = {
      .threshold = 0.5f, .min_cells = 1, .cell_size = 1, .channels = 1};
  size_t tbytes = (size_t)(1 + cap) * STRATA__BUBBLE_FIELDS * sizeof(double);
  double *cpu = calloc(1, tbytes), *gpu = calloc(1, tbytes);
  int32_t *faces = malloc((size_t)(6 * n * n) * sizeof(int32_t));
  int32_t *dfaces = extract_both(prob, n, &p, cap, cpu, gpu, faces);
  CHECK(cpu[0] == 3 && gpu[0] == 3); /* the three rods */
  struct strata__bubble_links_params lp = {.n = n};
  const int32_t *nb[STRATA__BUBBLE_DIRECTIONS], *dnb[STRATA__BUBBLE_DIRECTIONS];
  int present = 0;
  for (int k = 0; k < STRATA__BUBBLE_DIRECTIONS; k++)
    if ((lp.present[k] = k % 4 != 2)) {
      nb[present] = faces;
      dnb[present++] = dfaces;
    }
  size_t lbytes = (size_t)(2 * strata__bubble_link_slots(n)) * sizeof(int32_t);
  int32_t *links = malloc(lbytes), *glinks = malloc(lbytes),
          *dlinks = check_device_copy(NULL, lbytes);
  strata__bubble_links_cpu(&lp, faces, nb, links);
  CHECK_EQ(strata__bubble_links_cuda(&lp, dfaces, dnb, dlinks, NULL), 0);
  CHECK_EQ(cudaMemcpy(glinks, dlinks, lbytes, cudaMemcpyDeviceToHost), cudaSuccess);
  CHECK(memcmp(links, glinks, lbytes) == 0);
  /* Not vacuous: the rods cross the faces and meet themselves across them. */
  int64_t on_faces = 0, linked = 0;
  for (int64_t f = 0; f < 6 * n * n; f++)
    on_faces += faces[f] >= 0;
  for (int64_t slot = 0; slot < strata__bubble_link_slots(n); slot++)
    linked += links[2 * slot] >= 0;
  fprintf(stderr, "bubble faces: %lld cells above threshold, %lld linked slots\n",
          (long long)on_faces, (long long)linked);
  CHECK(on_faces > 0 && linked > 0);
  cudaFree(dfaces), cudaFree(dlinks);
  free(prob), free(cpu), free(gpu), free(faces), free(links), free(glinks);
}

int main(void)
{
  check_cuda_device();
  cublasHandle_t h;
  CHECK_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  check_built("U-Net", ref_unet, h, 8);
  check_built("U-Net", ref_unet, h, 32);
  check_built("every layer kind", ref_zoo, h, 8);
  check_built("every layer kind", ref_zoo, h, 16);
  check_built("extents by axis", ref_shapes, h, 8);
  check_built("extents by axis", ref_shapes, h, 20);
  check_bubbles();
  check_links();
  cublasDestroy(h);
  return check_status();
}
