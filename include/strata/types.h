/** @file types.h
 *  @brief Element types and reduction operators shared by every Strata module.
 *  This header depends on nothing but the C library, so that pure compute
 *  kernels can use it. */
#ifndef STRATA_TYPES_H
#define STRATA_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
/* The library exports what its public headers declare, and nothing else. */
#pragma GCC visibility push(default)

/** Element types. Booleans are stored as one byte holding 0 or 1. */
typedef enum strata_dtype {
  STRATA_BOOL = 0, /**< bool, one byte, 0 or 1 */
  STRATA_INT8,     /**< int8_t */
  STRATA_UINT8,    /**< uint8_t */
  STRATA_INT32,    /**< int32_t */
  STRATA_INT64,    /**< int64_t */
  STRATA_FLOAT32,  /**< float */
  STRATA_FLOAT64,  /**< double */
  STRATA_NDTYPES   /**< number of element types (not a type) */
} strata_dtype;

/** Reduction operators used by merges, reductions and global-indexer puts. */
typedef enum strata_op {
  STRATA_SUM = 0, /**< a + b; bool inputs sum into int64 */
  STRATA_PROD,    /**< a * b */
  STRATA_MIN,     /**< minimum; NaN propagates */
  STRATA_MAX,     /**< maximum; NaN propagates */
  STRATA_LAND,    /**< logical and of (a != 0), result bool */
  STRATA_LOR,     /**< logical or of (a != 0), result bool */
  STRATA_BAND,    /**< bitwise and, integer types only */
  STRATA_BOR,     /**< bitwise or, integer types only */
  STRATA_NOPS     /**< number of operators (not an operator) */
} strata_op;

/** Host access modes for strata_array_acquire(). */
typedef enum strata_access {
  STRATA_READ = 1,     /**< read only */
  STRATA_WRITE = 2,    /**< write only: previous contents are undefined */
  STRATA_READWRITE = 3 /**< read and write */
} strata_access;

/** @brief Size in bytes of one element of @p dtype, 0 if @p dtype is invalid. */
/** Functions of the array operations (include/strata/graph.h). */
typedef enum strata_fn {
  /* unary */
  STRATA_FN_NEG = 0, /**< -a (not for bool) */
  STRATA_FN_ABS,     /**< |a| */
  STRATA_FN_EXP,     /**< e^a (integers give float64) */
  STRATA_FN_LOG,     /**< natural logarithm (integers give float64) */
  STRATA_FN_SQRT,    /**< square root (integers give float64) */
  /* binary */
  STRATA_FN_ADD,     /**< a + b (bool: logical or) */
  STRATA_FN_SUB,     /**< a - b (not for bool) */
  STRATA_FN_MUL,     /**< a * b (bool: logical and) */
  STRATA_FN_DIV,     /**< true division a / b (integers give float64) */
  STRATA_FN_POW,     /**< a ** b */
  STRATA_FN_MINIMUM, /**< elementwise minimum, NaN propagates */
  STRATA_FN_MAXIMUM, /**< elementwise maximum, NaN propagates */
  STRATA_FN_EQ,      /**< a == b, bool result */
  STRATA_FN_NE,      /**< a != b, bool result */
  STRATA_FN_LT,      /**< a < b, bool result */
  STRATA_FN_LE,      /**< a <= b, bool result */
  STRATA_FN_GT,      /**< a > b, bool result */
  STRATA_FN_GE,      /**< a >= b, bool result */
  /* ternary */
  STRATA_FN_WHERE, /**< cond ? a : b */
  /* reductions */
  STRATA_FN_SUM,  /**< sum (bool and integers give int64) */
  STRATA_FN_PROD, /**< product (bool and integers give int64) */
  STRATA_FN_MIN,  /**< minimum, NaN propagates; refused on empty input */
  STRATA_FN_MAX,  /**< maximum, NaN propagates; refused on empty input */
  STRATA_FN_MEAN, /**< arithmetic mean (integers give float64; empty gives NaN) */
  STRATA_NFNS     /**< number of functions (not a function) */
} strata_fn;

/** Name of a function ("add", "exp", "sum"...), "invalid" if out of range. */
const char *strata_fn_name(strata_fn fn);

static inline size_t strata_dtype_size(strata_dtype dtype)
{
  switch (dtype) {
  case STRATA_BOOL:
  case STRATA_INT8:
  case STRATA_UINT8: return 1;
  case STRATA_INT32:
  case STRATA_FLOAT32: return 4;
  case STRATA_INT64:
  case STRATA_FLOAT64: return 8;
  default: return 0;
  }
}

/** @brief Name of an element type ("float32", ...), "invalid" when out of range. */
const char *strata_dtype_name(strata_dtype dtype);

/** @brief Name of an operator ("sum", ...), "invalid" when out of range. */
const char *strata_op_name(strata_op op);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
