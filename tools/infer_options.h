/* Command-line options of `strata infer`, parsed strictly: every number must
 * be whole and in range, so a typo is an error rather than a zero. Kept apart
 * from the job so the fuzzing target can drive the parser alone. */
#ifndef STRATA_TOOLS_INFER_OPTIONS_H
#define STRATA_TOOLS_INFER_OPTIONS_H

#include <stdio.h>

#include "infer_job.h"

struct infer_options {
  struct infer_job job;
  int cycles, bulk, quiet;
  double slice; /* < 0: through the largest bubble */
  const char *png, *hdf5, *bubbles, *trace;
};

/* Parse argv[1..argc-1] (argv[0] is the subcommand) into `o`, after the
 * defaults. Returns 0, or 2 after writing one line that says why to `err`. */
int infer_options_parse(int argc, char **argv, struct infer_options *o, FILE *err);

/* The effective parameters of a run as key and value text, in a fixed
 * order: rank 0 echoes them, the ranks agree on them (an MPMD run whose
 * ranks got different options stops before any work), and the HDF5 file
 * keeps them. */
enum { INFER_PARAMS_MAX = 32 };
struct infer_params_text {
  int n;
  const char *key[INFER_PARAMS_MAX];
  char value[INFER_PARAMS_MAX][512];
};

void infer_options_describe(const struct infer_options *o, struct infer_params_text *t);

#endif
