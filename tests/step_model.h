/* A plug-in model of the inference tests: probability 1 where the density
 * exceeds 2, 0 elsewhere, so that a bubble's mass is its cell count and
 * its cells are known from the field alone. */
#ifndef STRATA_TEST_STEP_MODEL_H
#define STRATA_TEST_STEP_MODEL_H

#include <strata/model.h>

#include "check.h"

static const float step_level = 2.0f;

static void step_cpu(void *user, const float *in, float *out, int64_t n, void *scratch)
{
  (void)user;
  (void)scratch;
  for (int64_t i = 0; i < n * n * n; i++)
    out[i] = in[i] > step_level ? 1.0f : 0.0f;
}

/* A one-channel probability model of density with the given CPU function. */
static inline strata_model *step_model_with(void (*cpu)(void *, const float *, float *, int64_t,
                                                        void *))
{
  static const char *const fields[] = {"density"};
  strata_model_ops ops = {.name = "step",
                          .in_channels = 1,
                          .out_channels = 1,
                          .input_fields = fields,
                          .n_input_fields = 1,
                          .output = STRATA_MODEL_PROBABILITY,
                          .cpu = cpu};
  strata_model *m = NULL;
  CHECK_EQ(strata_model_create(&ops, &m), 0);
  return m;
}

static inline strata_model *step_model(void) { return step_model_with(step_cpu); }

#endif
