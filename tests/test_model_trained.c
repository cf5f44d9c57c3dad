/* The trained blob U-Net (models/blob_unet/model.onnx, made by
 * scripts/train_blob_unet.py) on held-out fields that this test generates
 * the way the training did: Strata's cosmology-like background
 * (strata_cosmology_density, log-density sigma 0.35) plus 8 planted Gaussian
 * blobs per 64^3 field (amplitude 6-15, width 1.2-2.5 cells, centres at
 * least 10 cells apart), on seeds and positions the training never saw.
 * Strata's own bubble extraction (probability > 0.5, at least 4 cells) must
 * find the blobs with precision and recall >= 0.9: a bubble is a hit when
 * its centre lies within 2.5 cells of a blob not matched yet. Running it
 * starts no thread (oneDNN stays on the worker's).
 * usage: test_model_trained MODEL.onnx */
#include <dirent.h>
#include <math.h>
#include <string.h>

#include "blob_field.h"
#include "check.h"

#define N      64
#define BLOBS  8
#define FIELDS 3

static double uniform(uint64_t *s)
{
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(*s >> 11) / 9007199254740992.0;
}

static void plant(uint64_t seed, struct blob *b)
{
  uint64_t s = seed;
  for (int i = 0; i < BLOBS;) {
    for (int d = 0; d < 3; d++)
      b[i].c[d] = 6 + (N - 12) * uniform(&s);
    int apart = 1;
    for (int j = 0; j < i; j++) {
      double dx = b[i].c[0] - b[j].c[0], dy = b[i].c[1] - b[j].c[1], dz = b[i].c[2] - b[j].c[2];
      apart &= sqrt(dx * dx + dy * dy + dz * dz) >= 10;
    }
    b[i].sigma = 1.2 + 1.3 * uniform(&s);
    b[i].amplitude = 6 + 9 * uniform(&s);
    i += apart;
  }
}

/* Hits, bubbles found, for one field. */
static void detect(strata_model *m, uint64_t seed, int64_t *hits, int64_t *found)
{
  struct blob b[BLOBS];
  plant(seed * 7919, b);
  double *rho = malloc((size_t)N * N * N * sizeof *rho);
  strata_cosmology_params cp;
  strata_cosmology_params_init(&cp);
  cp.seed = seed;
  cp.sigma = 0.35;
  CHECK_EQ(strata_cosmology_density(N, &cp, rho), 0);
  int64_t shape[4] = {1, N, N, N}, n = 0;
  strata_array *in;
  strata_array_create(4, shape, STRATA_FLOAT32, &in);
  float *p;
  strata_array_acquire(in, STRATA_WRITE, (void **)&p);
  blob_field(p, N, rho, 0, b, BLOBS);
  strata_array_release(in);
  strata_bubble *list = model_bubbles(m, in, &n);
  int matched[BLOBS] = {0};
  for (int64_t k = 0; k < n; k++) {
    int best = -1;
    double best_d = 2.5;
    for (int i = 0; i < BLOBS; i++) {
      double dx = list[k].center[0] - b[i].c[0], dy = list[k].center[1] - b[i].c[1],
             dz = list[k].center[2] - b[i].c[2], d = sqrt(dx * dx + dy * dy + dz * dz);
      if (!matched[i] && d <= best_d)
        best = i, best_d = d;
    }
    if (best >= 0)
      matched[best] = 1, ++*hits;
  }
  *found += n;
  free(list), free(rho);
  strata_array_destroy(in);
}

/* libgomp's, which oneDNN runs on (core_libs link it). */
void omp_set_num_threads(int threads);
int omp_get_max_threads(void);

/* Threads of this process (/proc/self/task), or -1 where it cannot tell. */
static int threads(void)
{
  DIR *d = opendir("/proc/self/task");
  if (!d)
    return -1;
  int count = 0;
  for (struct dirent *e; (e = readdir(d));)
    count += e->d_name[0] != '.';
  closedir(d);
  return count;
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  strata_model *m = NULL;
  CHECK(argc == 2);
  if (argc == 2 && strata_model_load_onnx(argv[1], &m) != 0)
    fprintf(stderr, "%s: %s\n", argv[1], strata_error_message());
  CHECK(m != NULL);
  int64_t hits = 0, found = 0;
  /* oneDNN's convolutions run on the StarPU worker's thread alone, whatever
   * the application's OpenMP setting (4 here, on any number of cores): an
   * OpenMP team beside the workers would take cores StarPU does not know
   * of. The application's setting stays as it was. */
  omp_set_num_threads(4);
  const int before = threads();
  for (uint64_t f = 0; m && f < FIELDS; f++)
    detect(m, 90001 + f, &hits, &found);
  printf("threads: %d before the model ran, %d after\n", before, threads());
  CHECK(before > 0);
  CHECK_EQ(threads(), before);
  CHECK_EQ(omp_get_max_threads(), 4);
  double precision = found ? (double)hits / (double)found : 0,
         recall = (double)hits / (FIELDS * BLOBS);
  printf("trained U-Net on %d held-out fields: %lld bubbles, %lld on the %d planted blobs: "
         "precision %.3f, recall %.3f\n",
         FIELDS, (long long)found, (long long)hits, FIELDS * BLOBS, precision, recall);
  CHECK(precision >= 0.9);
  CHECK(recall >= 0.9);
  strata_model_destroy(m);
  strata_finalize();
  return check_status();
}
