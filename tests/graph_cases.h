/* Known-answer cases of the array operations, shared by the deferred-compute
 * tests: inputs, the operation, and the expected result worked out by hand
 * (NumPy's semantics). */
#ifndef STRATA_TEST_GRAPH_CASES_H
#define STRATA_TEST_GRAPH_CASES_H

#include <math.h>
#include <string.h>

#include <strata/strata.h>

#include "check.h"
#include "kernels/ndarray_scalar.h"

enum case_kind {
  K_UNARY,
  K_BINARY,
  K_SCALAR,
  K_WHERE,
  K_ASTYPE,
  K_ARANGE,
  K_FULL,
  K_RESHAPE,
  K_INDEX,
  K_CONCAT,
  K_SPLIT,
  K_TRANSPOSE,
  K_BROADCAST,
  K_REDUCE,
  K_MATMUL,
  K_TRIL,
  K_TRIU,
  K_NONZERO,
  K_TAKE
};

struct spec {
  strata_dtype t;
  int ndim;
  int64_t shape[4];
  double v[24];
};

struct op_case {
  const char *name;
  int kind;
  int fn;      /* strata_fn; K_SCALAR: scalar first when flag */
  double s[3]; /* scalar; arange start, stop, step; full value */
  int flag;    /* scalar first, keepdims, take mode, split piece */
  int axis;    /* concat, split, take, tril/triu k */
  int nlist;   /* reshape/broadcast/full shape, transpose/reduce axes, split positions */
  int64_t list[4];
  int nitems;
  strata_slice items[3];
  strata_dtype t; /* astype, arange, full; scalar kind */
  int nin;
  struct spec in[3];
  struct spec out;
  double tol; /* relative tolerance, 0: exact */
};

/* 0, 1, ..., n-1 */
#define IOTA6                                                                                      \
  {                                                                                                \
    0, 1, 2, 3, 4, 5                                                                               \
  }
#define IOTA12                                                                                     \
  {                                                                                                \
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11                                                           \
  }

static const struct op_case op_cases[] = {
    {"add broadcast", K_BINARY, STRATA_FN_ADD, .nin = 2,
     .in = {{STRATA_FLOAT32, 2, {2, 3}, IOTA6}, {STRATA_FLOAT32, 1, {3}, {10, 20, 30}}},
     .out = {STRATA_FLOAT32, 2, {2, 3}, {10, 21, 32, 13, 24, 35}}},
    {"add bool is or", K_BINARY, STRATA_FN_ADD, .nin = 2,
     .in = {{STRATA_BOOL, 1, {4}, {0, 0, 1, 1}}, {STRATA_BOOL, 1, {4}, {0, 1, 0, 1}}},
     .out = {STRATA_BOOL, 1, {4}, {0, 1, 1, 1}}},
    {"subtract int scalar",
     K_SCALAR,
     STRATA_FN_SUB,
     {2},
     .t = STRATA_INT64,
     .nin = 1,
     .in = {{STRATA_INT32, 1, {4}, {5, -3, 0, 7}}},
     .out = {STRATA_INT32, 1, {4}, {3, -5, -2, 5}}},
    {"float scalar first on int",
     K_SCALAR,
     STRATA_FN_SUB,
     {10.5},
     .flag = 1,
     .t = STRATA_FLOAT64,
     .nin = 1,
     .in = {{STRATA_INT32, 1, {3}, {1, 2, 3}}},
     .out = {STRATA_FLOAT64, 1, {3}, {9.5, 8.5, 7.5}}},
    {"int8 times uint8", K_BINARY, STRATA_FN_MUL, .nin = 2,
     .in = {{STRATA_INT8, 1, {3}, {-2, 3, 100}}, {STRATA_UINT8, 1, {3}, {200, 2, 3}}},
     .out = {STRATA_INT32, 1, {3}, {-400, 6, 300}}},
    {"int32 wraps",
     K_SCALAR,
     STRATA_FN_ADD,
     {1},
     .t = STRATA_INT64,
     .nin = 1,
     .in = {{STRATA_INT32, 1, {1}, {2147483647}}},
     .out = {STRATA_INT32, 1, {1}, {-2147483648.0}}},
    {"true division of ints", K_BINARY, STRATA_FN_DIV, .nin = 2,
     .in = {{STRATA_INT32, 1, {3}, {7, -7, 1}}, {STRATA_INT32, 1, {3}, {2, 2, 0}}},
     .out = {STRATA_FLOAT64, 1, {3}, {3.5, -3.5, INFINITY}}},
    {"float power",
     K_SCALAR,
     STRATA_FN_POW,
     {2},
     .t = STRATA_INT64,
     .nin = 1,
     .in = {{STRATA_FLOAT64, 1, {3}, {1.5, -2, 3}}},
     .out = {STRATA_FLOAT64, 1, {3}, {2.25, 4, 9}}},
    {"int power", K_BINARY, STRATA_FN_POW, .nin = 2,
     .in = {{STRATA_INT32, 1, {5}, {2, 3, -2, 5, -1}}, {STRATA_INT32, 1, {5}, {10, 0, 3, -1, -3}}},
     .out = {STRATA_INT32, 1, {5}, {1024, 1, -8, 0, -1}}},
    {"negative", K_UNARY, STRATA_FN_NEG, .nin = 1, .in = {{STRATA_INT64, 1, {3}, {1, -5, 0}}},
     .out = {STRATA_INT64, 1, {3}, {-1, 5, 0}}},
    {"abs", K_UNARY, STRATA_FN_ABS, .nin = 1, .in = {{STRATA_FLOAT32, 1, {3}, {-1.5, 2, -0.0}}},
     .out = {STRATA_FLOAT32, 1, {3}, {1.5, 2, 0}}},
    {"exp float32", K_UNARY, STRATA_FN_EXP, .nin = 1, .in = {{STRATA_FLOAT32, 1, {3}, {0, 1, -1}}},
     .out = {STRATA_FLOAT32, 1, {3}, {1, 2.718281828459045, 0.36787944117144233}}, .tol = 1e-6},
    {"log", K_UNARY, STRATA_FN_LOG, .nin = 1,
     .in = {{STRATA_FLOAT64, 1, {3}, {1, 2.718281828459045, 0}}},
     .out = {STRATA_FLOAT64, 1, {3}, {0, 1, -INFINITY}}, .tol = 1e-15},
    {"sqrt of int", K_UNARY, STRATA_FN_SQRT, .nin = 1, .in = {{STRATA_INT32, 1, {3}, {4, 2, 9}}},
     .out = {STRATA_FLOAT64, 1, {3}, {2, 1.4142135623730951, 3}}, .tol = 1e-15},
    {"sqrt of int8", K_UNARY, STRATA_FN_SQRT, .nin = 1, .in = {{STRATA_INT8, 1, {2}, {16, 2}}},
     .out = {STRATA_FLOAT32, 1, {2}, {4, 1.4142135623730951}}, .tol = 1e-7},
    {"minimum NaN", K_BINARY, STRATA_FN_MINIMUM, .nin = 2,
     .in = {{STRATA_FLOAT32, 1, {3}, {1, NAN, 3}}, {STRATA_FLOAT32, 1, {3}, {2, 0, NAN}}},
     .out = {STRATA_FLOAT32, 1, {3}, {1, NAN, NAN}}},
    {"maximum broadcast", K_BINARY, STRATA_FN_MAXIMUM, .nin = 2,
     .in = {{STRATA_INT32, 2, {2, 2}, {1, 5, 7, 2}}, {STRATA_INT32, 2, {2, 1}, {3, 4}}},
     .out = {STRATA_INT32, 2, {2, 2}, {3, 5, 7, 4}}},
    {"equal mixed", K_BINARY, STRATA_FN_EQ, .nin = 2,
     .in = {{STRATA_INT32, 1, {3}, {1, 2, 3}}, {STRATA_FLOAT32, 1, {3}, {1, 2.5, 3}}},
     .out = {STRATA_BOOL, 1, {3}, {1, 0, 1}}},
    {"less than scalar",
     K_SCALAR,
     STRATA_FN_LT,
     {2},
     .t = STRATA_INT64,
     .nin = 1,
     .in = {{STRATA_FLOAT32, 1, {3}, {1, 2, 3}}},
     .out = {STRATA_BOOL, 1, {3}, {1, 0, 0}}},
    {"greater_equal", K_BINARY, STRATA_FN_GE, .nin = 2,
     .in = {{STRATA_UINT8, 1, {3}, {1, 2, 3}}, {STRATA_INT8, 1, {3}, {2, 2, -1}}},
     .out = {STRATA_BOOL, 1, {3}, {0, 1, 1}}},
    {"not_equal", K_BINARY, STRATA_FN_NE, .nin = 2,
     .in = {{STRATA_FLOAT64, 1, {2}, {NAN, 1}}, {STRATA_FLOAT64, 1, {2}, {NAN, 1}}},
     .out = {STRATA_BOOL, 1, {2}, {1, 0}}},
    {"where broadcast", K_WHERE, .nin = 3,
     .in = {{STRATA_BOOL, 2, {2, 1}, {1, 0}},
            {STRATA_FLOAT32, 2, {2, 2}, {1, 2, 3, 4}},
            {STRATA_FLOAT32, 1, {2}, {-1, -2}}},
     .out = {STRATA_FLOAT32, 2, {2, 2}, {1, 2, -1, -2}}},
    {"where int and float", K_WHERE, .nin = 3,
     .in = {{STRATA_FLOAT32, 1, {3}, {0.5, 0, NAN}},
            {STRATA_INT32, 1, {3}, {1, 2, 3}},
            {STRATA_FLOAT64, 1, {3}, {-1, -2, -3}}},
     .out = {STRATA_FLOAT64, 1, {3}, {1, -2, 3}}},
    {"astype float to int", K_ASTYPE, .t = STRATA_INT32, .nin = 1,
     .in = {{STRATA_FLOAT64, 1, {4}, {1.9, -1.9, 3, NAN}}},
     .out = {STRATA_INT32, 1, {4}, {1, -1, 3, 0}}},
    {"astype to bool", K_ASTYPE, .t = STRATA_BOOL, .nin = 1,
     .in = {{STRATA_FLOAT32, 1, {3}, {0, 0.5, -2}}}, .out = {STRATA_BOOL, 1, {3}, {0, 1, 1}}},
    {"astype int64 to float32", K_ASTYPE, .t = STRATA_FLOAT32, .nin = 1,
     .in = {{STRATA_INT64, 1, {2}, {16777217, -3}}},
     .out = {STRATA_FLOAT32, 1, {2}, {16777216, -3}}},
    {"arange float", K_ARANGE, .s = {0, 5, 1.5}, .t = STRATA_FLOAT64,
     .out = {STRATA_FLOAT64, 1, {4}, {0, 1.5, 3, 4.5}}},
    {"arange down", K_ARANGE, .s = {10, 0, -3}, .t = STRATA_INT32,
     .out = {STRATA_INT32, 1, {4}, {10, 7, 4, 1}}},
    {"full", K_FULL, .s = {7}, .t = STRATA_INT8, .nlist = 2, .list = {2, 2},
     .out = {STRATA_INT8, 2, {2, 2}, {7, 7, 7, 7}}},
    {"reshape -1", K_RESHAPE, .nlist = 2, .list = {3, -1}, .nin = 1,
     .in = {{STRATA_FLOAT32, 2, {2, 3}, IOTA6}}, .out = {STRATA_FLOAT32, 2, {3, 2}, IOTA6}},
    {"index a[1]", K_INDEX, .nitems = 1, .items = {STRATA_AT(1)}, .nin = 1,
     .in = {{STRATA_INT32, 2, {3, 4}, IOTA12}}, .out = {STRATA_INT32, 1, {4}, {4, 5, 6, 7}}},
    {"index a[:, ::-1]", K_INDEX, .nitems = 2,
     .items = {STRATA_ALL, STRATA_SLICE(STRATA_NONE, STRATA_NONE, -1)}, .nin = 1,
     .in = {{STRATA_INT32, 2, {3, 4}, IOTA12}},
     .out = {STRATA_INT32, 2, {3, 4}, {3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8}}},
    {"index a[::2, 1]", K_INDEX, .nitems = 2,
     .items = {STRATA_SLICE(STRATA_NONE, STRATA_NONE, 2), STRATA_AT(1)}, .nin = 1,
     .in = {{STRATA_INT64, 2, {3, 4}, IOTA12}}, .out = {STRATA_INT64, 1, {2}, {1, 9}}},
    {"index a[-1, 1:3]", K_INDEX, .nitems = 2,
     .items = {STRATA_AT(-1), STRATA_SLICE(1, 3, STRATA_NONE)}, .nin = 1,
     .in = {{STRATA_FLOAT64, 2, {3, 4}, IOTA12}}, .out = {STRATA_FLOAT64, 1, {2}, {9, 10}}},
    {"index a[1:, -1:0:-2]", K_INDEX, .nitems = 2,
     .items = {STRATA_SLICE(1, STRATA_NONE, STRATA_NONE), STRATA_SLICE(-1, 0, -2)}, .nin = 1,
     .in = {{STRATA_UINT8, 2, {3, 4}, IOTA12}}, .out = {STRATA_UINT8, 2, {2, 2}, {7, 5, 11, 9}}},
    {"index past the end", K_INDEX, .nitems = 1, .items = {STRATA_SLICE(5, 10, STRATA_NONE)},
     .nin = 1, .in = {{STRATA_INT32, 1, {4}, {1, 2, 3, 4}}}, .out = {STRATA_INT32, 1, {0}, {0}}},
    {"concat axis 0", K_CONCAT, .axis = 0, .nin = 2,
     .in = {{STRATA_INT32, 2, {1, 2}, {1, 2}}, {STRATA_INT32, 2, {2, 2}, {3, 4, 5, 6}}},
     .out = {STRATA_INT32, 2, {3, 2}, {1, 2, 3, 4, 5, 6}}},
    {"concat axis -1", K_CONCAT, .axis = -1, .nin = 3,
     .in = {{STRATA_FLOAT32, 2, {2, 1}, {1, 2}},
            {STRATA_FLOAT32, 2, {2, 2}, {3, 4, 5, 6}},
            {STRATA_FLOAT32, 2, {2, 0}, {0}}},
     .out = {STRATA_FLOAT32, 2, {2, 3}, {1, 3, 4, 2, 5, 6}}},
    {"split middle piece", K_SPLIT, .flag = 1, .axis = 0, .nlist = 2, .list = {2, 4}, .nin = 1,
     .in = {{STRATA_INT32, 1, {5}, {0, 1, 2, 3, 4}}}, .out = {STRATA_INT32, 1, {2}, {2, 3}}},
    {"split columns", K_SPLIT, .flag = 0, .axis = 1, .nlist = 1, .list = {1}, .nin = 1,
     .in = {{STRATA_INT32, 2, {2, 3}, IOTA6}}, .out = {STRATA_INT32, 2, {2, 1}, {0, 3}}},
    {"transpose", K_TRANSPOSE, .nin = 1, .in = {{STRATA_FLOAT32, 2, {2, 3}, IOTA6}},
     .out = {STRATA_FLOAT32, 2, {3, 2}, {0, 3, 1, 4, 2, 5}}},
    {"transpose axes", K_TRANSPOSE, .nlist = 3, .list = {2, 0, 1}, .nin = 1,
     .in = {{STRATA_INT8, 3, {2, 1, 3}, IOTA6}},
     .out = {STRATA_INT8, 3, {3, 2, 1}, {0, 3, 1, 4, 2, 5}}},
    {"broadcast_to", K_BROADCAST, .nlist = 2, .list = {2, 3}, .nin = 1,
     .in = {{STRATA_INT32, 1, {3}, {1, 2, 3}}},
     .out = {STRATA_INT32, 2, {2, 3}, {1, 2, 3, 1, 2, 3}}},
    {"sum axis 0", K_REDUCE, STRATA_FN_SUM, .nlist = 1, .list = {0}, .nin = 1,
     .in = {{STRATA_FLOAT32, 2, {2, 3}, IOTA6}}, .out = {STRATA_FLOAT32, 1, {3}, {3, 5, 7}}},
    {"sum all int8", K_REDUCE, STRATA_FN_SUM, .nlist = STRATA_ALL_AXES, .nin = 1,
     .in = {{STRATA_INT8, 1, {3}, {100, 100, 100}}}, .out = {STRATA_INT64, 0, {0}, {300}}},
    {"sum bool", K_REDUCE, STRATA_FN_SUM, .nlist = STRATA_ALL_AXES, .nin = 1,
     .in = {{STRATA_BOOL, 1, {3}, {1, 0, 1}}}, .out = {STRATA_INT64, 0, {0}, {2}}},
    {"prod keepdims", K_REDUCE, STRATA_FN_PROD, .flag = 1, .nlist = 1, .list = {1}, .nin = 1,
     .in = {{STRATA_INT32, 2, {2, 2}, {1, 2, 3, 4}}}, .out = {STRATA_INT64, 2, {2, 1}, {2, 12}}},
    {"min NaN", K_REDUCE, STRATA_FN_MIN, .nlist = 1, .list = {-1}, .nin = 1,
     .in = {{STRATA_FLOAT64, 2, {2, 2}, {3, NAN, 1, 2}}},
     .out = {STRATA_FLOAT64, 1, {2}, {NAN, 1}}},
    {"max all uint8", K_REDUCE, STRATA_FN_MAX, .nlist = STRATA_ALL_AXES, .nin = 1,
     .in = {{STRATA_UINT8, 1, {3}, {3, 200, 7}}}, .out = {STRATA_UINT8, 0, {0}, {200}}},
    {"mean of ints", K_REDUCE, STRATA_FN_MEAN, .nlist = 1, .list = {0}, .nin = 1,
     .in = {{STRATA_INT32, 2, {2, 2}, {1, 2, 4, 4}}}, .out = {STRATA_FLOAT64, 1, {2}, {2.5, 3}}},
    {"sum over empty", K_REDUCE, STRATA_FN_SUM, .nlist = 1, .list = {1}, .nin = 1,
     .in = {{STRATA_FLOAT32, 2, {2, 0}, {0}}}, .out = {STRATA_FLOAT32, 1, {2}, {0, 0}}},
    {"matmul float32", K_MATMUL, .nin = 2,
     .in = {{STRATA_FLOAT32, 2, {2, 3}, IOTA6}, {STRATA_FLOAT32, 2, {3, 2}, IOTA6}},
     .out = {STRATA_FLOAT32, 2, {2, 2}, {10, 13, 28, 40}}},
    {"matmul int32", K_MATMUL, .nin = 2,
     .in = {{STRATA_INT32, 2, {2, 3}, IOTA6}, {STRATA_INT32, 2, {3, 2}, IOTA6}},
     .out = {STRATA_INT32, 2, {2, 2}, {10, 13, 28, 40}}},
    {"matmul vector", K_MATMUL, .nin = 2,
     .in = {{STRATA_FLOAT64, 1, {3}, {1, 2, 3}}, {STRATA_FLOAT64, 2, {3, 2}, IOTA6}},
     .out = {STRATA_FLOAT64, 1, {2}, {16, 22}}},
    {"matmul batched", K_MATMUL, .nin = 2,
     .in = {{STRATA_FLOAT64, 3, {2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}},
            {STRATA_FLOAT64, 2, {2, 2}, {0, 1, 1, 0}}},
     .out = {STRATA_FLOAT64, 3, {2, 2, 2}, {1, 0, 3, 2, 5, 4, 7, 6}}},
    {"matmul empty inner", K_MATMUL, .nin = 2,
     .in = {{STRATA_FLOAT32, 2, {2, 0}, {0}}, {STRATA_FLOAT32, 2, {0, 1}, {0}}},
     .out = {STRATA_FLOAT32, 2, {2, 1}, {0, 0}}},
    {"tril", K_TRIL, .axis = 0, .nin = 1,
     .in = {{STRATA_INT32, 2, {3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}}},
     .out = {STRATA_INT32, 2, {3, 3}, {1, 0, 0, 4, 5, 0, 7, 8, 9}}},
    {"triu k=1", K_TRIU, .axis = 1, .nin = 1,
     .in = {{STRATA_FLOAT32, 2, {3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}}},
     .out = {STRATA_FLOAT32, 2, {3, 3}, {0, 2, 3, 0, 0, 6, 0, 0, 0}}},
    {"tril k=-1 batched", K_TRIL, .axis = -1, .nin = 1,
     .in = {{STRATA_INT8, 3, {2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}}},
     .out = {STRATA_INT8, 3, {2, 2, 2}, {0, 0, 3, 0, 0, 0, 7, 0}}},
    {"flatnonzero", K_NONZERO, .nin = 1, .in = {{STRATA_FLOAT32, 2, {2, 3}, {0, 1, 0, NAN, 2, 0}}},
     .out = {STRATA_INT64, 1, {3}, {1, 3, 4}}},
    {"take wrap", K_TAKE, .axis = 1, .flag = STRATA_TAKE_WRAP, .nin = 2,
     .in = {{STRATA_FLOAT32, 2, {2, 3}, IOTA6}, {STRATA_INT64, 1, {2}, {2, -1}}},
     .out = {STRATA_FLOAT32, 2, {2, 2}, {2, 2, 5, 5}}},
    {"take clip", K_TAKE, .axis = -1, .flag = STRATA_TAKE_CLIP, .nin = 2,
     .in = {{STRATA_INT32, 2, {2, 3}, IOTA6}, {STRATA_INT32, 1, {2}, {-1, 5}}},
     .out = {STRATA_INT32, 2, {2, 2}, {0, 2, 3, 5}}},
    {"take 2-D indices", K_TAKE, .axis = 0, .nin = 2,
     .in = {{STRATA_INT64, 2, {2, 3}, IOTA6}, {STRATA_INT32, 2, {1, 2}, {1, 0}}},
     .out = {STRATA_INT64, 3, {1, 2, 3}, {3, 4, 5, 0, 1, 2}}},
};

#define N_OP_CASES ((int)(sizeof op_cases / sizeof *op_cases))

/* Run a case's operation on `in` with ctx (recording or not). */
static int build_case(strata_context *ctx, const struct op_case *c, strata_array **in,
                      strata_array **out)
{
  int axes[4];
  for (int k = 0; k < 4; k++)
    axes[k] = (int)c->list[k];
  switch (c->kind) {
  case K_UNARY: return strata_unary(ctx, c->fn, in[0], out);
  case K_BINARY: return strata_binary(ctx, c->fn, in[0], in[1], out);
  case K_SCALAR: {
    strata_scalar s = {c->t, c->s[0]};
    return strata_binary_scalar(ctx, c->fn, in[0], s, c->flag, out);
  }
  case K_WHERE: return strata_where(ctx, in[0], in[1], in[2], out);
  case K_ASTYPE: return strata_astype(ctx, in[0], c->t, out);
  case K_ARANGE: return strata_arange(ctx, c->s[0], c->s[1], c->s[2], c->t, out);
  case K_FULL: return strata_full(ctx, c->nlist, c->list, c->t, c->s[0], out);
  case K_RESHAPE: return strata_reshape(ctx, in[0], c->nlist, c->list, out);
  case K_INDEX: return strata_index(ctx, in[0], c->nitems, c->items, out);
  case K_CONCAT: return strata_concat(ctx, c->nin, in, c->axis, out);
  case K_SPLIT: {
    strata_array *pieces[5];
    int ret = strata_split(ctx, in[0], c->nlist, c->list, c->axis, pieces);
    for (int k = 0; ret == 0 && k <= c->nlist; k++)
      if (k == c->flag)
        *out = pieces[k];
      else
        strata_array_destroy(pieces[k]);
    return ret;
  }
  case K_TRANSPOSE: return strata_transpose(ctx, in[0], c->nlist, axes, out);
  case K_BROADCAST: return strata_broadcast_to(ctx, in[0], c->nlist, c->list, out);
  case K_REDUCE: return strata_reduce(ctx, c->fn, in[0], c->nlist, axes, c->flag, out);
  case K_MATMUL: return strata_matmul(ctx, in[0], in[1], out);
  case K_TRIL: return strata_tril(ctx, in[0], c->axis, out);
  case K_TRIU: return strata_triu(ctx, in[0], c->axis, out);
  case K_NONZERO: return strata_flatnonzero(ctx, in[0], out);
  case K_TAKE: return strata_take(ctx, in[0], in[1], c->axis, c->flag, out);
  default: return STRATA_EINVAL;
  }
}

static int64_t spec_nelems(const struct spec *s)
{
  int64_t n = 1;
  for (int d = 0; d < s->ndim; d++)
    n *= s->shape[d];
  return n;
}

/* An array holding a spec's values. */
static strata_array *make_array(const struct spec *s)
{
  strata_array *a = NULL;
  void *data;
  if (strata_array_create(s->ndim, s->shape, s->t, &a) ||
      strata_array_acquire(a, STRATA_WRITE, &data))
    return a;
  for (int64_t i = 0; i < spec_nelems(s); i++)
    strata__store_d(data, s->t, i, s->v[i]);
  strata_array_release(a);
  return a;
}

static int close_enough(double got, double want, double tol)
{
  if (isnan(want))
    return isnan(got);
  if (isinf(want))
    return got == want;
  return fabs(got - want) <= tol * fmax(1.0, fabs(want));
}

/* Whether `a` has the spec's dtype, shape and values (reads it on the host,
 * which computes it if it is lazy). */
static int matches(strata_array *a, const struct spec *want, double tol, const char *what)
{
  int64_t shape[STRATA_MAX_DIMS];
  void *data;
  if (!a || strata_array_dtype(a) != (int)want->t || strata_array_ndim(a) != want->ndim ||
      strata_array_shape(a, shape) != 0) {
    fprintf(stderr, "%s: wrong dtype or rank\n", what);
    return 0;
  }
  if (want->ndim > 0 && memcmp(shape, want->shape, (size_t)want->ndim * sizeof *shape) != 0) {
    fprintf(stderr, "%s: wrong shape\n", what);
    return 0;
  }
  if (strata_array_acquire(a, STRATA_READ, &data) != 0)
    return 0;
  int ok = 1;
  for (int64_t i = 0; i < spec_nelems(want); i++)
    if (!close_enough(strata__load_d(data, want->t, i), want->v[i], tol)) {
      fprintf(stderr, "%s: element %lld is %g, expected %g\n", what, (long long)i,
              strata__load_d(data, want->t, i), want->v[i]);
      ok = 0;
      break;
    }
  strata_array_release(a);
  return ok;
}

#endif
