/* Rank-prefixed logging to stderr, threshold from STRATA_LOG. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata/runtime.h>

static int threshold = -1;

strata_log_level strata_log_threshold(void)
{
  if (threshold < 0) {
    static const char *const names[] = {"error", "warn", "info", "debug"};
    const char *env = getenv("STRATA_LOG");
    threshold = STRATA_LOG_WARN;
    for (int i = 0; env && i < 4; i++)
      if (strcmp(env, names[i]) == 0)
        threshold = i;
  }
  return (strata_log_level)threshold;
}

void strata_log(strata_log_level level, const char *fmt, ...)
{
  static const char *const names[] = {"error", "warn", "info", "debug"};
  if ((unsigned)level > STRATA_LOG_DEBUG || level > strata_log_threshold())
    return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int rank = strata_rank();
  if (rank >= 0)
    fprintf(stderr, "[strata %d] %s: %s\n", rank, names[level], msg);
  else
    fprintf(stderr, "[strata] %s: %s\n", names[level], msg);
}
