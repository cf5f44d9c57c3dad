/* Fuzzing target: the ONNX loader (protobuf decoding, tensors, the graph's
 * mapping onto layers). The corpus holds small models exported by PyTorch
 * (tests/onnx_parity.py) and damaged copies. Properties: a refused file
 * leaves nothing alive and says why; an accepted model describes itself
 * consistently, and its outputs and layers add up. */
#include <string.h>

#include <strata/model.h>

#include "fuzz_util.h"

static char onnx_path[128];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc, (void)argv;
  fuzz_start_strata();
  snprintf(onnx_path, sizeof onnx_path, "%s/model.onnx", fuzz_scratch());
  return 0;
}

static void check_accepted(strata_model *m)
{
  int in = 0, out = 0, noutputs = 0, nlayers = 0, covered = 0;
  if (strata_model_describe(m, &in, &out, NULL) != 0 || in < 1 || out < 1)
    fuzz_fail("an accepted model describes %d -> %d channels", in, out);
  strata_model_outputs(m, 0, &noutputs, NULL, NULL, NULL);
  for (int o = 0; o < noutputs; o++) {
    int first, channels;
    if (strata_model_outputs(m, o, NULL, NULL, &first, &channels) != 0 || first != covered)
      fuzz_fail("output %d does not follow the previous one", o);
    covered += channels;
  }
  if (covered != out)
    fuzz_fail("the outputs cover %d of %d channels", covered, out);
  strata_model_layer_info(m, 0, 8, &nlayers, NULL);
  strata_model_layer last;
  if (nlayers < 1)
    fuzz_fail("an accepted model has no layers");
  /* An extent the model does not map to itself is refused; one it does
   * gives the output there. */
  int ret = strata_model_layer_info(m, nlayers - 1, 8, NULL, &last);
  if (ret != 0 && ret != STRATA_EINVAL)
    fuzz_fail("layer info at n = 8 returned %d", ret);
  if (ret == 0 &&
      (last.channels != out || last.extent[0] != 8 || last.extent[1] != 8 || last.extent[2] != 8))
    fuzz_fail("the last of %d layers does not give the output", nlayers);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size > (1 << 17))
    return 0;
  fuzz_write(onnx_path, data, size);
  strata_model *m = NULL;
  if (strata_model_load_onnx(onnx_path, &m) == 0) {
    check_accepted(m);
    strata_model_destroy(m);
  } else if (m)
    fuzz_fail("a refused file left a model");
  else if (!*strata_error_message())
    fuzz_fail("a refused file without a reason");
  fuzz_check_no_live_objects();
  return 0;
}
