/* Fuzzing target: the model JSON loader. The input is model.json in a
 * directory that also holds the blob detector's weight files, so layer
 * descriptions can name real tensors. Properties: a rejected description
 * leaves nothing alive; an accepted model describes itself consistently. */
#include <strata/model.h>

#include "fuzz_util.h"

static char json_path[128];

static void copy_weights(const char *name)
{
  char src[512], dst[256];
  snprintf(src, sizeof src, "%s/models/blob_detector/%s", STRATA_SOURCE_DIR, name);
  snprintf(dst, sizeof dst, "%s/%s", fuzz_scratch(), name);
  FILE *f = fopen(src, "rb");
  if (!f)
    fuzz_fail("cannot read %s", src);
  static unsigned char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  fuzz_write(dst, buf, n);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc, (void)argv;
  fuzz_start_strata();
  static const char *const weights[] = {"dog.npy", "dog_bias.npy", "g_large.npy", "g_small.npy"};
  for (size_t i = 0; i < sizeof weights / sizeof *weights; i++)
    copy_weights(weights[i]);
  snprintf(json_path, sizeof json_path, "%s/model.json", fuzz_scratch());
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size > (1 << 16))
    return 0;
  fuzz_write(json_path, data, size);
  strata_model *m = NULL;
  if (strata_model_load(json_path, &m) == 0) {
    int in = 0, out = 0;
    strata_model_output kind;
    if (strata_model_describe(m, &in, &out, &kind) != 0 || in < 1 || out < 1)
      fuzz_fail("an accepted model describes %d -> %d channels", in, out);
    strata_model_destroy(m);
  } else if (m)
    fuzz_fail("a rejected description left a model");
  fuzz_check_no_live_objects();
  return 0;
}
