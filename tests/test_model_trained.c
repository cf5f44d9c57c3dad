/* The trained blob U-Net (models/blob_unet/model.onnx, made by
 * scripts/train_blob_unet.py), the default model of `strata infer`, on
 * held-out fields that this test generates the way the job makes its own:
 * the cosmology-like background on a 128^3 generation grid at the job's
 * log-density sigma of cycles 0, 1 and 2 (1.5, 1.575, 1.65) plus 8
 * collapsed clumps per 64^3 window of the level-5 grid
 * (strata_amr_problem_add_clumps, the job's widths and masses, centres at
 * least 10 cells apart and 4 from the window's faces), on seeds the
 * training never saw. Strata's own bubble extraction (probability > 0.5,
 * every bubble counts, as in the job) must find the clumps with precision
 * and recall >= 0.9: a bubble is a hit when its centre lies within 2.5
 * cells of a clump not matched yet. Running it starts no thread (oneDNN
 * stays on the worker's).
 * usage: test_model_trained MODEL.onnx */
#include <dirent.h>
#include <math.h>
#include <string.h>

#include "blob_field.h"
#include "check.h"

#define N      64
#define CLUMPS 8
#define FIELDS 3
#define CELLS  1024 /* level 5 of the job's 32^3 root grid */
#define ROOT   32.0
#define WIDTH  1.2, 2.0 /* the job's clumps (tools/infer_job.h) */
#define MASS   8.0, 24.0

static double uniform(uint64_t *s, double lo, double hi)
{
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return lo + (hi - lo) * (double)(*s >> 11) / 9007199254740992.0;
}

/* Clump centres in cells of the window, and the clumps in domain units. */
static void plant(uint64_t seed, const int64_t origin[3], double cell[CLUMPS][3],
                  double centre[3 * CLUMPS], double width[CLUMPS], double mass[CLUMPS])
{
  uint64_t s = seed;
  for (int i = 0; i < CLUMPS;) {
    for (int d = 0; d < 3; d++)
      cell[i][d] = uniform(&s, 4, N - 4);
    int apart = 1;
    for (int j = 0; j < i; j++) {
      double dx = cell[i][0] - cell[j][0], dy = cell[i][1] - cell[j][1],
             dz = cell[i][2] - cell[j][2];
      apart &= sqrt(dx * dx + dy * dy + dz * dz) >= 10;
    }
    for (int d = 0; d < 3; d++)
      centre[3 * i + d] = ((double)origin[d] + cell[i][d]) / CELLS;
    width[i] = uniform(&s, WIDTH) / CELLS;
    mass[i] = uniform(&s, MASS) / (ROOT * ROOT * ROOT);
    i += apart;
  }
}

/* Hits, bubbles found, for one field. */
static void detect(strata_model *m, uint64_t seed, double sigma, int64_t *hits, int64_t *found)
{
  uint64_t s = seed * 7919;
  int64_t origin[3];
  for (int d = 0; d < 3; d++)
    origin[d] = N * (int64_t)uniform(&s, 0, CELLS / N);
  double cell[CLUMPS][3], centre[3 * CLUMPS], width[CLUMPS], mass[CLUMPS];
  plant(s, origin, cell, centre, width, mass);
  strata_cosmology_params cp;
  strata_cosmology_params_init(&cp);
  cp.seed = seed;
  strata_cosmology_field *cf = NULL;
  strata_amr_problem *bg = NULL, *problem = NULL;
  CHECK_EQ(strata_cosmology_field_create(128, &cp, &cf), 0);
  CHECK_EQ(strata_amr_problem_cosmology_field(cf, sigma, &bg), 0);
  CHECK_EQ(strata_amr_problem_add_clumps(bg, CLUMPS, centre, width, mass, &problem), 0);
  int64_t shape[4] = {1, N, N, N}, n = 0;
  strata_array *in;
  strata_array_create(4, shape, STRATA_FLOAT32, &in);
  float *p;
  strata_array_acquire(in, STRATA_WRITE, (void **)&p);
  double row[N];
  for (int64_t z = 0; z < N; z++)
    for (int64_t y = 0; y < N; y++) {
      double at[3] = {(origin[0] + 0.5) / CELLS, (origin[1] + y + 0.5) / CELLS,
                      (origin[2] + z + 0.5) / CELLS};
      CHECK_EQ(strata_amr_problem_eval(problem, 0, at, 1.0 / CELLS, N, row), 0);
      for (int64_t x = 0; x < N; x++)
        p[(z * N + y) * N + x] = (float)row[x];
    }
  strata_array_release(in);
  strata_amr_problem_destroy(problem);
  strata_cosmology_field_destroy(cf);
  strata_bubble *list = model_bubbles(m, in, 1, &n);
  int matched[CLUMPS] = {0};
  for (int64_t k = 0; k < n; k++) {
    int best = -1;
    double best_d = 2.5;
    for (int i = 0; i < CLUMPS; i++) {
      double dx = list[k].center[0] - cell[i][0], dy = list[k].center[1] - cell[i][1],
             dz = list[k].center[2] - cell[i][2], d = sqrt(dx * dx + dy * dy + dz * dz);
      if (!matched[i] && d <= best_d)
        best = i, best_d = d;
    }
    if (best >= 0)
      matched[best] = 1, ++*hits;
  }
  *found += n;
  free(list);
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
    detect(m, 90001 + f, 1.5 * (1 + 0.05 * (double)f), &hits, &found);
  printf("threads: %d before the model ran, %d after\n", before, threads());
  CHECK(before > 0);
  CHECK_EQ(threads(), before);
  CHECK_EQ(omp_get_max_threads(), 4);
  double precision = found ? (double)hits / (double)found : 0,
         recall = (double)hits / (FIELDS * CLUMPS);
  printf("trained U-Net on %d held-out fields: %lld bubbles, %lld on the %d planted clumps: "
         "precision %.3f, recall %.3f\n",
         FIELDS, (long long)found, (long long)hits, FIELDS * CLUMPS, precision, recall);
  CHECK(precision >= 0.9);
  CHECK(recall >= 0.9);
  strata_model_destroy(m);
  strata_finalize();
  return check_status();
}
