/* `strata infer` option parsing (see infer_options.h). */
#include "infer_options.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
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
    INT_OPT("--block-cells", 1, 1024, job.block_cells),
    INT_OPT("--max-level", 0, 30, job.max_level),
    WIDE_OPT("--grid", 1, 1 << 16, job.grid),
    WIDE_OPT("--seed", 0, LLONG_MAX, job.seed),
    INT_OPT("--cycles", 1, 100000, cycles),
    INT_OPT("--period", 0, 100000, job.period),
};

struct real_option {
  const char *name;
  double lo, hi;
  size_t offset;
};

static const struct real_option real_options[] = {
    {"--sigma", 0, 100, offsetof(struct infer_options, job.sigma)},
    {"--growth", -1, 100, offsetof(struct infer_options, job.growth)},
    {"--threshold", 0, 1e30, offsetof(struct infer_options, job.threshold)},
    {"--slice", 0, 1, offsetof(struct infer_options, slice)},
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
    if (parse_real(v, ro->lo, ro->hi, (double *)((char *)o + ro->offset)))
      return fprintf(err, "strata infer: %s wants a number in [%g, %g], got '%s'\n", a, ro->lo,
                     ro->hi, v),
             -1;
    return 0;
  }
  if (!strcmp(a, "--levels")) {
    if (parse_levels(v, &o->job))
      return fprintf(err, "strata infer: --levels wants B/A/I, got '%s'\n", v), -1;
  } else if (!strcmp(a, "--placement")) {
    if (strcmp(v, "curve") && strcmp(v, "greedy"))
      return fprintf(err, "strata infer: --placement is curve or greedy\n"), -1;
    o->job.placement = strcmp(v, "curve") ? STRATA_INFER_PLACE_GREEDY : STRATA_INFER_PLACE_CURVE;
  } else if (!strcmp(a, "--model"))
    o->job.model_path = v;
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
  *o = (struct infer_options){.cycles = 3, .slice = -1, .png = "infer.png", .hdf5 = "infer.h5"};
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
  /* The method's geometry, before the hierarchy is built for nothing. */
  if (infer_job_check(&o->job))
    return fprintf(err, "strata infer: %s\n", strata_error_message()), 2;
  return 0;
}
