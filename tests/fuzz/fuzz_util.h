/* Helpers shared by the fuzzing targets (libFuzzer entry points). Each
 * target defines LLVMFuzzerTestOneInput(); built with clang and
 * -fsanitize=fuzzer it is a fuzzer, built with replay.c it replays the
 * committed corpus as a regression test. A broken property calls
 * fuzz_fail(), which aborts so both drivers report the input. */
#ifndef STRATA_FUZZ_UTIL_H
#define STRATA_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata/strata.h>

#include "../../core/internal/runtime.h"

#define fuzz_fail(...)                                                                             \
  do {                                                                                             \
    fprintf(stderr, "fuzz property broken at %s:%d: ", __FILE__, __LINE__);                        \
    fprintf(stderr, __VA_ARGS__);                                                                  \
    fputc('\n', stderr);                                                                           \
    abort();                                                                                       \
  } while (0)

static inline void fuzz_stop_strata(void) { strata_finalize(); }

/* Start Strata once, on one CPU worker, quietly. */
static inline void fuzz_start_strata(void)
{
  setenv("STARPU_NCPU", "1", 0);
  setenv("STARPU_SILENT", "1", 0);
  setenv("STARPU_WORKERS_NOBIND", "1", 0);
  setenv("STARPU_HOME", "/tmp/strata-fuzz-starpu", 0);
  if (strata_init(NULL, NULL, NULL) != 0)
    fuzz_fail("strata_init failed");
  atexit(fuzz_stop_strata);
}

/* A fresh scratch directory for the process's files (left in /tmp). */
static inline const char *fuzz_scratch(void)
{
  static char dir[64];
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/strata-fuzz-XXXXXX");
    if (!mkdtemp(dir))
      fuzz_fail("mkdtemp");
  }
  return dir;
}

/* A sink for the output a target does not check. */
static inline FILE *fuzz_devnull(void)
{
  static FILE *f;
  if (!f && !(f = fopen("/dev/null", "w")))
    fuzz_fail("cannot open /dev/null");
  return f;
}

static inline void fuzz_write(const char *path, const void *data, size_t size)
{
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f))
    fuzz_fail("cannot write %s", path);
}

/* Every object and array an input created is gone again. */
static inline void fuzz_check_no_live_objects(void)
{
  int64_t objects = strata__live_count(&strata__objects),
          arrays = strata__live_count(&strata__arrays);
  if (objects || arrays)
    fuzz_fail("%lld object(s) and %lld array(s) left alive", (long long)objects, (long long)arrays);
}

#endif
