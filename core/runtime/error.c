/* Error strings, per-thread error details, type/operator names. */
#include <stdarg.h>
#include <stdio.h>

#include "internal/runtime.h"

static _Thread_local char details[512];

const char *strata_error_message(void) { return details; }

int strata__fail(int code, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(details, sizeof details, fmt, ap);
  va_end(ap);
  strata_log(STRATA_LOG_DEBUG, "%s: %s", strata_strerror(code), details);
  return code;
}

void strata__clear_error(void) { details[0] = '\0'; }

const char *strata_strerror(int code)
{
  switch (code) {
  case STRATA_OK: return "success";
  case STRATA_EINVAL: return "invalid argument";
  case STRATA_ERANGE: return "index or value out of range";
  case STRATA_ENOMEM: return "out of memory";
  case STRATA_ETYPE: return "data type not supported by the operation";
  case STRATA_ESTATE: return "call not allowed in the current state";
  case STRATA_EMPI: return "MPI error or insufficient MPI thread support";
  case STRATA_ESTARPU: return "StarPU error";
  case STRATA_EIO: return "input/output or file format error";
  case STRATA_ENODEV: return "no worker available to run the work";
  case STRATA_EINPLACE: return "in-place write to an array with recorded history";
  case STRATA_ENOHISTORY: return "graph output without recorded history";
  case STRATA_EUNBOUND:
    return "graph output depends on an array that is neither an input nor recorded";
  case STRATA_EUNUSED: return "graph input not connected to any output";
  case STRATA_EREBIND: return "array bound to two different input names";
  default: return "unknown error";
  }
}

const char *strata_dtype_name(strata_dtype dtype)
{
  static const char *const names[STRATA_NDTYPES] = {"bool",  "int8",    "uint8",  "int32",
                                                    "int64", "float32", "float64"};
  return (unsigned)dtype < STRATA_NDTYPES ? names[dtype] : "invalid";
}

const char *strata_op_name(strata_op op)
{
  static const char *const names[STRATA_NOPS] = {"sum",  "prod", "min",  "max",
                                                 "land", "lor",  "band", "bor"};
  return (unsigned)op < STRATA_NOPS ? names[op] : "invalid";
}

const char *strata_fn_name(strata_fn fn)
{
  static const char *const names[STRATA_NFNS] = {
      "negative", "abs",       "exp",    "log",        "sqrt",    "add",
      "subtract", "multiply",  "divide", "power",      "minimum", "maximum",
      "equal",    "not_equal", "less",   "less_equal", "greater", "greater_equal",
      "where",    "sum",       "prod",   "min",        "max",     "mean"};
  return (unsigned)fn < STRATA_NFNS ? names[fn] : "invalid";
}
