/* An ONNX model inside strata_infer_run: a cosmology-like field on a
 * uniform hierarchy of 16^3 leaves of 8^3 cells (level 3), every element of
 * level_array (1: 64 elements of 32^3 cells, 0: 8 of 64^3) populated and
 * run through the model. Each rank saves the input and every output
 * channel of its elements as .npy files (DIR/e<x>_<y>_<z>.in.npy,
 * .out<c>.npy); rank 0 writes the joined bubbles to DIR/bubbles.txt (id,
 * cells, mass, then the value channels) and prints the value channels'
 * names; the method writes DIR/infer.h5 with its particles table. The
 * optional arguments name the probability output ("-": none) and the
 * value outputs; with EXPECT_REFUSAL set, the creation must fail with that
 * text in its message.
 * tests/infer_onnx_parity.py compares the outputs with PyTorch's and the
 * bubbles with its own labelling of the whole grid.
 * usage: test_infer_onnx MODEL.onnx DIR LEVEL_ARRAY [PROBABILITY [VALUES]] */
#include <stdlib.h>
#include <string.h>

#include "blob_method.h"

static void save(const char *dir, const int64_t idx[3], const char *what, float *data, int64_t n)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/e%lld_%lld_%lld.%s.npy", dir, (long long)idx[0],
           (long long)idx[1], (long long)idx[2], what);
  int64_t shape[3] = {n, n, n};
  strata_array *a = NULL;
  CHECK_EQ(strata_array_wrap(data, 3, shape, STRATA_FLOAT32, &a), 0);
  CHECK_EQ(strata_npy_save(path, a), 0);
  strata_array_destroy(a);
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  if (argc < 4 || argc > 6) {
    fprintf(stderr, "usage: test_infer_onnx MODEL.onnx DIR LEVEL_ARRAY [PROBABILITY [VALUES]]\n");
    return 2;
  }
  int level_array = atoi(argv[3]);
  strata_model *model = NULL;
  CHECK_EQ(strata_model_load_onnx(argv[1], &model), 0);
  strata_amr *amr = uniform_hierarchy(3);
  strata_cosmology_params cp;
  strata_cosmology_params_init(&cp);
  cp.seed = 11;
  strata_amr_problem *problem = NULL;
  CHECK_EQ(strata_amr_problem_cosmology(32, &cp, &problem), 0);
  CHECK_EQ(strata_amr_fill(amr, problem), 0);
  CHECK_EQ(strata_amr_fill_ghosts(amr), 0);
  strata_amr_problem_destroy(problem);

  strata_infer_params ip;
  strata_infer_params_init(&ip);
  ip.level_base = level_array;
  ip.level_array = level_array;
  ip.level_infer = 3;
  ip.model = model;
  ip.probability_output = argc > 4 && strcmp(argv[4], "-") ? argv[4] : NULL;
  ip.value_outputs = argc > 5 ? argv[5] : NULL;
  ip.reference = STRATA_INFER_FIXED;
  ip.overdensity_threshold = 1e-6; /* every element: the field is positive */
  strata_infer *inf = NULL;
  int ret = strata_infer_create(amr, &ip, &inf);
  const char *refusal = getenv("EXPECT_REFUSAL"); /* a message the creation must fail with */
  if (refusal) {
    CHECK_EQ(ret, STRATA_EINVAL);
    CHECK(inf == NULL && strstr(strata_error_message(), refusal) != NULL);
    printf("refused: %s\n", strata_error_message());
    strata_amr_destroy(amr);
    strata_model_destroy(model);
    strata_finalize();
    return check_status();
  }
  if (ret)
    fprintf(stderr, "strata_infer_create: %s\n", strata_error_message());
  CHECK_EQ(ret, 0);
  CHECK_EQ(strata_infer_run(inf, NULL), 0);
  /* a root grid of 2^3: (2 << level_array)^3 elements */
  int64_t idx[64][3], n_elements = 0, cells = (int64_t)8 << (3 - level_array), mine = 0;
  int ranks[64];
  CHECK_EQ(strata_infer_elements(inf, idx, ranks, 64, &n_elements), 0);
  CHECK_EQ(n_elements, (2 << level_array) * (2 << level_array) * (2 << level_array));
  float *in = malloc((size_t)(cells * cells * cells) * sizeof *in),
        *out = malloc((size_t)(cells * cells * cells) * sizeof *out);
  const int values = strata_infer_values(inf);
  int channels = 0;
  strata_model_describe(model, NULL, &channels, NULL);
  for (int64_t e = 0; e < n_elements; e++) {
    if (ranks[e] != strata_rank())
      continue;
    CHECK_EQ(strata_infer_read_array(inf, idx[e], 0, in), 0);
    save(argv[2], idx[e], "in", in, cells);
    for (int c = 0; c < channels; c++) {
      char what[16];
      snprintf(what, sizeof what, "out%d", c);
      CHECK_EQ(strata_infer_read_output(inf, idx[e], c, out), 0);
      save(argv[2], idx[e], what, out, cells);
    }
    CHECK_EQ(strata_infer_read_output(inf, idx[e], channels, out), STRATA_EINVAL);
    mine++;
  }
  char h5[4096];
  snprintf(h5, sizeof h5, "%s/infer.h5", argv[2]);
  CHECK_EQ(strata_infer_write_hdf5(inf, h5, NULL, NULL, 0), 0);
  strata_bubble *b = NULL;
  int64_t nb = 0;
  CHECK_EQ(strata_infer_bubbles(inf, &b, NULL, &nb), 0);
  if (strata_rank() == 0) {
    printf("values:");
    for (int k = 0; k < values; k++)
      printf(" %s", strata_infer_value_name(inf, k));
    printf("\n");
    char path[4096];
    snprintf(path, sizeof path, "%s/bubbles.txt", argv[2]);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    for (int64_t k = 0; f && k < nb; k++) {
      CHECK_EQ(b[k].nvalues, values);
      fprintf(f, "%lld %lld %.17g", (long long)b[k].id, (long long)b[k].cells, b[k].mass);
      for (int v = 0; v < values; v++)
        fprintf(f, " %.17g", b[k].values[v]);
      fprintf(f, "\n");
    }
    if (f)
      fclose(f);
  }
  free(b);
  printf("rank %d: %lld of %lld elements of %lld^3 cells saved\n", strata_rank(), (long long)mine,
         (long long)n_elements, (long long)cells);
  free(in), free(out);
  strata_infer_destroy(inf);
  strata_amr_destroy(amr);
  strata_model_destroy(model);
  strata_finalize();
  return check_status();
}
