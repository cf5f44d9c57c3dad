/* The executor shared by eager calls, lazy computation and graph replay:
 * nodes in order, each inferred, given a place and submitted as tasks.
 * Intermediate values live in handles without a host copy that StarPU
 * frees once their last reader has run. */
#include <stdlib.h>

#include "graph_impl.h"

/* flatnonzero's result size: count on the workers, wait, read. */
static int count_nonzero(const strata__meta *in, starpu_data_handle_t h, int64_t *count)
{
  int64_t value = 0;
  starpu_data_handle_t ch;
  starpu_vector_data_register(&ch, STARPU_MAIN_RAM, (uintptr_t)&value, 1, sizeof value);
  int ret = strata__count_nonzero_submit(in->dtype, strata__meta_nelems(in), h, ch);
  starpu_data_unregister(ch); /* waits for the count and brings it home */
  *count = value;
  return ret;
}

/* A place for node i's result, per its sink. */
static int place(int sink, strata__slot *s, strata_array **target)
{
  int64_t n = strata__meta_nelems(&s->m);
  int ret;
  switch (sink) {
  case STRATA__SINK_TEMP:
    starpu_vector_data_register(&s->h, -1, 0, (uint32_t)(n > 0 ? n : 1),
                                strata_dtype_size(s->m.dtype));
    s->temp = 1;
    return 0;
  case STRATA__SINK_NEW:
    if ((ret = strata_array_create(s->m.ndim, s->m.shape, s->m.dtype, target)))
      return ret;
    break;
  default:
    if ((ret = strata__array_attach(*target, s->m.shape)))
      return ret;
    break;
  }
  s->h = (*target)->handle;
  return 0;
}

static void drop_temp(strata__slot *s)
{
  if (!s->temp)
    return;
  starpu_data_unregister_submit(s->h);
  s->temp = 0;
  s->h = NULL;
}

/* Infer, place and submit node i. */
static int run_node(const strata__node *nd, int sink, strata__slot *slot, int i,
                    strata_array **target)
{
  strata__meta *in_meta = malloc(((size_t)nd->nin + 1) * sizeof *in_meta);
  starpu_data_handle_t *in_h = malloc(((size_t)nd->nin + 1) * sizeof *in_h);
  int ret = in_meta && in_h ? 0 : STRATA_ENOMEM;
  for (int k = 0; !ret && k < nd->nin; k++) {
    in_meta[k] = slot[nd->in[k]].m;
    in_h[k] = slot[nd->in[k]].h;
  }
  if (!ret)
    ret = strata__infer(nd, in_meta, &slot[i].m);
  if (!ret && nd->op == STRATA__OP_NONZERO)
    ret = count_nonzero(&in_meta[0], in_h[0], &slot[i].m.shape[0]);
  if (!ret)
    ret = place(sink, &slot[i], &target[i]);
  if (!ret)
    ret = nd->op == STRATA__OP_NONZERO
              ? strata__flatnonzero_submit(in_meta[0].dtype, strata__meta_nelems(&in_meta[0]),
                                           in_h[0], slot[i].h)
              : strata__submit_node(nd, in_meta, in_h, &slot[i].m, slot[i].h);
  free(in_meta);
  free(in_h);
  return ret;
}

int strata__exec_run(const strata__node *nodes, int n, const int *sink, strata__slot *slot,
                     strata_array **target)
{
  int *readers = calloc((size_t)n + 1, sizeof *readers);
  if (!readers)
    return STRATA_ENOMEM;
  for (int i = 0; i < n; i++)
    for (int k = 0; sink[i] >= 0 && k < nodes[i].nin; k++)
      readers[nodes[i].in[k]]++;
  int ret = 0;
  for (int i = 0; i < n && !ret; i++) {
    if (sink[i] < 0)
      continue;
    ret = run_node(&nodes[i], sink[i], slot, i, target);
    for (int k = 0; k < nodes[i].nin; k++)
      if (--readers[nodes[i].in[k]] == 0)
        drop_temp(&slot[nodes[i].in[k]]);
    if (readers[i] == 0)
      drop_temp(&slot[i]);
  }
  for (int i = 0; i < n; i++) {
    if (sink[i] < 0)
      continue;
    drop_temp(&slot[i]);
    if (ret && sink[i] == STRATA__SINK_NEW && target[i]) {
      strata_array_destroy(target[i]);
      target[i] = NULL;
    }
  }
  free(readers);
  return ret;
}
