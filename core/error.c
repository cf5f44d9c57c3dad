/* Error strings and type/operator names. */
#include <strata/strata.h>

const char *strata_strerror(int code)
{
  switch (code) {
  case STRATA_OK: return "success";
  case STRATA_EINVAL: return "invalid argument";
  case STRATA_ERANGE: return "index or value out of range";
  case STRATA_ENOMEM: return "out of memory";
  case STRATA_ETYPE: return "data type not supported by the operation";
  case STRATA_ESTATE: return "call not allowed in the current state (is Strata initialised?)";
  case STRATA_EMPI: return "MPI error or insufficient MPI thread support";
  case STRATA_ESTARPU: return "StarPU error";
  case STRATA_EIO: return "input/output or file format error";
  case STRATA_ENODEV: return "no worker available to run the work";
  case STRATA_EINPLACE: return "in-place write to an array with recorded history";
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
