/* The model codelet: one model invocation per task. Insert functions on StarPU handles
 * (codelets/model.c). */
#ifndef STRATA_CODELETS_MODEL_H
#define STRATA_CODELETS_MODEL_H

#include "codelets.h"

/* A model invocation: the codelet calls `cpu` or `cuda` (NULL: CPU only)
 * with `model` and the buffers; the model object outlives its tasks. */
struct strata__model_call {
  void (*cpu)(void *model, const float *weights, const float *in, float *out, int64_t n,
              void *scratch);
  int (*cuda)(void *model, const float *weights, const float *in, float *out, int64_t n,
              void *scratch, void *cublas, void *stream);
  void *model;
  uint32_t id; /* identity of the model in the performance model's footprint */
  int in_channels;
  double (*flops)(void *model, int64_t n); /* per inference at extent n; NULL: unknown */
  int64_t *cpu_ns; /* CPU time of the CPU tasks, added atomically (NULL: not counted) */
};

/* One task: out [K, n^3] = model(in [C, n^3]); weights (R) is a float
 * vector, scratch a STARPU_SCRATCH byte vector sized for n. */
int strata__model_submit(const struct strata__model_call *call, starpu_data_handle_t weights,
                         starpu_data_handle_t in, starpu_data_handle_t out,
                         starpu_data_handle_t scratch);

/* What StarPU's history says one task of `call` at extent n takes on
 * worker `workerid` (seconds; the footprint the codelet uses); NAN when it
 * has no measurement, INFINITY when the worker cannot run the model. */
double strata__model_expected_seconds(const struct strata__model_call *call, int64_t n,
                                      int workerid);

#endif
