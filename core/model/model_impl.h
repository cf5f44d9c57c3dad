/* What the model loaders of this folder share: a built network handed to
 * the one constructor (model.c), whatever file it came from. */
#ifndef STRATA_MODEL_IMPL_H
#define STRATA_MODEL_IMPL_H

#include <strata/model.h>

#include "kernels/cnn_kernels.h"

/* One named output of a model: channels [first, first + channels). */
struct strata__model_output_range {
  char name[64];
  int first, channels;
};

struct strata__network_spec {
  const char *name;
  int in_channels;
  strata_model_output output;
  const char *const *fields; /* nfields = 0 or in_channels names */
  int nfields;
  struct strata__layer *layers; /* malloc'd, taken over even on failure */
  int nlayers;
  const float *weights; /* nweights floats, copied */
  int64_t nweights;
  const struct strata__model_output_range *outputs; /* noutputs = 0: one, "output" */
  int noutputs;
  const char (*labels)[96]; /* per layer, what it was made from, for messages; or NULL */
  int64_t fixed_n;          /* > 0: the one input extent the network is made for, checked */
};

/* A whole model file (at most `limit` bytes) in a malloc'd buffer with a
 * terminating NUL after its *size bytes; NULL when it cannot be read or is
 * larger. */
char *strata__model_read_file(const char *path, size_t limit, size_t *size);

/* A model running `spec`'s network: layers[nlayers - 1] gives the output. */
int strata__model_from_network(const struct strata__network_spec *spec, strata_model **out);

#endif
