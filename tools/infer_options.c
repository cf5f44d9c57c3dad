/* `strata infer` option parsing (see infer_options.h). */
#include "infer_options.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A whole decimal number in [lo, hi], nothing after it. */
static int parse_int(const char *s, long long lo, long long hi, long long *out)
{
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end || errno || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

/* A finite number in [lo, hi], nothing after it. */
static int parse_real(const char *s, double lo, double hi, double *out)
{
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || !isfinite(v) || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

static int parse_levels(const char *s, struct infer_job *job)
{
  long long v[3];
  char buf[64];
  if (strlen(s) >= sizeof buf)
    return -1;
  strcpy(buf, s);
  char *part = buf;
  for (int k = 0; k < 3; k++) {
    char *slash = strchr(part, '/');
    if ((k < 2) != (slash != NULL))
      return -1;
    if (slash)
      *slash = 0;
    if (parse_int(part, 0, 30, &v[k]))
      return -1;
    if (slash)
      part = slash + 1;
  }
  job->level_base = (int)v[0];
  job->level_array = (int)v[1];
  job->level_infer = (int)v[2];
  return 0;
}

/* Options taking an integer, with their ranges and destinations. */
struct int_option {
  const char *name;
  long long lo, hi;
  size_t offset; /* into struct infer_options */
  int wide;      /* int64_t / uint64_t rather than int */
};

#define INT_OPT(n, lo, hi, field)                                                                  \
  {                                                                                                \
    n, lo, hi, offsetof(struct infer_options, field), 0                                            \
  }
#define WIDE_OPT(n, lo, hi, field)                                                                 \
  {                                                                                                \
    n, lo, hi, offsetof(struct infer_options, field), 1                                            \
  }
static const struct int_option int_options[] = {
    INT_OPT("--root-blocks", 1, 1024, job.root_blocks),
    INT_OPT("--block-cells", 4, 1024, job.block_cells), /* strata_amr_create: even */
    INT_OPT("--max-level", 0, 30, job.max_level),
    WIDE_OPT("--grid", 2, 1024, job.grid), /* strata_amr_problem_cosmology */
    WIDE_OPT("--seed", 0, LLONG_MAX, job.seed),
    INT_OPT("--cycles", 1, 100000, cycles),
    INT_OPT("--period", 0, 100000, job.period),
    INT_OPT("--clumps", 0, 10000, job.clumps),
};

struct real_option {
  const char *name;
  double lo, hi;
  size_t offset;
  int below_hi; /* the range is [lo, hi) */
};

static const struct real_option real_options[] = {
    {"--sigma", 0, 100, offsetof(struct infer_options, job.sigma), 0},
    {"--growth", -1, 100, offsetof(struct infer_options, job.growth), 0},
    {"--threshold", 0, 1e30, offsetof(struct infer_options, job.threshold), 0},
    {"--slice", 0, 1, offsetof(struct infer_options, slice), 1}, /* infer_slice_png */
};

#define NUM(a) (sizeof(a) / sizeof((a)[0]))

/* Set one option that takes the value `v`; 1 when `a` is not such an option. */
static int set_valued(struct infer_options *o, const char *a, const char *v, FILE *err)
{
  for (size_t k = 0; k < NUM(int_options); k++) {
    const struct int_option *io = &int_options[k];
    if (strcmp(a, io->name))
      continue;
    long long x;
    if (parse_int(v, io->lo, io->hi, &x))
      return fprintf(err, "strata infer: %s wants a whole number in [%lld, %lld], got '%s'\n", a,
                     io->lo, io->hi, v),
             -1;
    char *field = (char *)o + io->offset;
    if (io->wide)
      *(int64_t *)field = x; /* grid and seed share the width of int64_t */
    else
      *(int *)field = (int)x;
    return 0;
  }
  for (size_t k = 0; k < NUM(real_options); k++) {
    const struct real_option *ro = &real_options[k];
    if (strcmp(a, ro->name))
      continue;
    double *x = (double *)((char *)o + ro->offset);
    if (parse_real(v, ro->lo, ro->hi, x) || (ro->below_hi && *x >= ro->hi))
      return fprintf(err, "strata infer: %s wants a number in [%g, %g%c, got '%s'\n", a, ro->lo,
                     ro->hi, ro->below_hi ? ')' : ']', v),
             -1;
    return 0;
  }
  if (!strcmp(a, "--levels")) {
    if (parse_levels(v, &o->job))
      return fprintf(err, "strata infer: --levels wants B/A/I, got '%s'\n", v), -1;
  } else if (!strcmp(a, "--placement")) {
    if (!strcmp(v, "curve"))
      o->job.placement = STRATA_INFER_PLACE_CURVE;
    else if (!strcmp(v, "greedy"))
      o->job.placement = STRATA_INFER_PLACE_GREEDY;
    else if (!strcmp(v, "measured"))
      o->job.placement = STRATA_INFER_PLACE_MEASURED;
    else
      return fprintf(err, "strata infer: --placement is curve, greedy or measured\n"), -1;
  } else if (!strcmp(a, "--model"))
    o->job.model_path = v;
  else if (!strcmp(a, "--probability-output"))
    o->job.probability_output = v;
  else if (!strcmp(a, "--value-outputs"))
    o->job.value_outputs = v;
  else if (!strcmp(a, "--input"))
    o->job.input = v;
  else if (!strcmp(a, "--png"))
    o->png = strcmp(v, "none") ? v : NULL;
  else if (!strcmp(a, "--hdf5"))
    o->hdf5 = strcmp(v, "none") ? v : NULL;
  else if (!strcmp(a, "--bubbles"))
    o->bubbles = v;
  else if (!strcmp(a, "--trace"))
    o->trace = v;
  else
    return 1;
  return 0;
}

int infer_options_parse(int argc, char **argv, struct infer_options *o, FILE *err)
{
  /* cycles 0 until given: its default depends on --input */
  *o = (struct infer_options){.slice = -1, .png = "infer.png", .hdf5 = "infer.h5"};
  infer_job_defaults(&o->job);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--bulk-synchronous")) {
      o->bulk = 1;
      continue;
    }
    if (!strcmp(a, "--quiet")) {
      o->quiet = 1;
      continue;
    }
    if (i + 1 >= argc || strncmp(a, "--", 2))
      return fprintf(err, "strata infer: unknown option or missing value: '%s'\n", a), 2;
    int ret = set_valued(o, a, argv[++i], err);
    if (ret < 0)
      return 2;
    if (ret > 0)
      return fprintf(err, "strata infer: unknown option '%s' (see --help)\n", a), 2;
  }
  if (o->job.input && o->cycles > 1)
    return fprintf(err, "strata infer: --input runs one cycle on the saved hierarchy (no "
                        "evolution): --cycles must be 1\n"),
           2;
  if (!o->cycles)
    o->cycles = o->job.input ? 1 : 3;
  /* The method's geometry, before the hierarchy is built for nothing (a
   * loaded hierarchy's comes from its file: the method checks it then). */
  if (!o->job.input && infer_job_check(&o->job))
    return fprintf(err, "strata infer: %s\n", strata_error_message()), 2;
  return 0;
}

static void add_param(struct infer_params_text *t, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add_param(struct infer_params_text *t, const char *key, const char *fmt, ...)
{
  if (t->n == INFER_PARAMS_MAX)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t->value[t->n], sizeof t->value[t->n], fmt, ap);
  va_end(ap);
  t->key[t->n++] = key;
}

void infer_options_describe(const struct infer_options *o, struct infer_params_text *t)
{
  const struct infer_job *j = &o->job;
  t->n = 0;
  add_param(t, "input", "%s", j->input ? j->input : "none (the cosmology problem)");
  add_param(t, "root_blocks", "%d", j->root_blocks);
  add_param(t, "block_cells", "%d", j->block_cells);
  add_param(t, "max_level", "%d", j->max_level);
  add_param(t, "grid", "%lld", (long long)j->grid);
  add_param(t, "seed", "%llu", (unsigned long long)j->seed);
  add_param(t, "sigma", "%.17g", j->sigma);
  add_param(t, "growth", "%.17g", j->growth);
  add_param(t, "period", "%d", j->period);
  add_param(t, "clumps", "%d", j->clumps);
  add_param(t, "levels", "%d/%d/%d", j->level_base, j->level_array, j->level_infer);
  add_param(t, "threshold", "%.17g", j->threshold);
  add_param(t, "model", "%s", j->model_path ? j->model_path : "(default: the trained blob U-Net)");
  add_param(t, "probability_output", "%s",
            j->probability_output ? j->probability_output : "(the first channel)");
  add_param(t, "value_outputs", "%s",
            j->value_outputs ? j->value_outputs : "(every other channel)");
  static const char *const policies[] = {"curve", "greedy", "measured"};
  add_param(t, "placement", "%s", policies[j->placement]);
  add_param(t, "mode", "%s", o->bulk ? "bulk-synchronous" : "task graph");
  add_param(t, "cycles", "%d", o->cycles);
  add_param(t, "png", "%s", o->png ? o->png : "none");
  if (o->slice >= 0)
    add_param(t, "slice", "%.17g", o->slice);
  else
    add_param(t, "slice", "through the largest bubble");
  add_param(t, "hdf5", "%s", o->hdf5 ? o->hdf5 : "none");
  add_param(t, "bubbles", "%s", o->bubbles ? o->bubbles : "none");
  add_param(t, "trace", "%s", o->trace ? o->trace : "none");
}
