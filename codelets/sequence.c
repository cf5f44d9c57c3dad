/* Sequences: tasks captured instead of submitted, then run as one task
 * whose implementation calls each captured codelet's implementation in
 * order on its own buffers. Handles read and written only inside the
 * sequence are STARPU_SCRATCH: the worker's temporary buffer, never
 * transferred, never kept (graph nodes in the Local memory mode). */
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "codelets.h"

static _Thread_local struct strata__capture *capturing;

void strata__capture_begin(struct strata__capture *c)
{
  memset(c, 0, sizeof *c);
  capturing = c;
}

void strata__capture_end(void) { capturing = NULL; }

int strata__capture_active(void) { return capturing != NULL; }

int strata__capture_task(struct strata__codelet *cl, void *arg, size_t arg_size, int free_arg,
                         int nbuffers, const starpu_data_handle_t *handles,
                         const enum starpu_data_access_mode *modes)
{
  struct strata__capture *c = capturing;
  if (!c)
    return 0;
  int ret = nbuffers > STARPU_NMAXBUFS || !cl->cl.cpu_funcs[0] ? STRATA_EINVAL : 0;
  if (!ret && c->n == c->cap) {
    int cap = c->cap ? 2 * c->cap : 8;
    struct strata__captured *t = realloc(c->tasks, (size_t)cap * sizeof *t);
    if (t) {
      c->tasks = t;
      c->cap = cap;
    } else {
      ret = STRATA_ENOMEM;
    }
  }
  /* an argument the caller keeps is copied, unless it has no size (then it
   * outlives the task, see strata__submit) */
  void *own = arg;
  if (!ret && !free_arg && arg_size && !(own = malloc(arg_size)))
    ret = STRATA_ENOMEM;
  if (ret) {
    if (free_arg)
      free(arg);
    return ret;
  }
  if (own != arg)
    memcpy(own, arg, arg_size);
  struct strata__captured *t = &c->tasks[c->n++];
  *t = (struct strata__captured){.cl = cl,
                                 .arg = own,
                                 .arg_size = arg_size,
                                 .owned = free_arg || arg_size,
                                 .nbuffers = nbuffers};
  for (int k = 0; k < nbuffers; k++) {
    t->handles[k] = handles[k];
    t->modes[k] = modes ? modes[k] : cl->cl.modes[k];
  }
  return 1;
}

void strata__capture_discard(struct strata__capture *c)
{
  for (int s = 0; s < c->n; s++)
    if (c->tasks[s].owned)
      free(c->tasks[s].arg);
  free(c->tasks);
  memset(c, 0, sizeof *c);
}

/* The sequence's argument: a header, one stage per captured task, then the
 * stages' own arguments, each aligned for any type. */
struct stage {
  struct strata__codelet *cl;
  void *shared_arg; /* an argument without size, used in place */
  size_t arg_offset, arg_size;
  int nbuffers;
  unsigned char buffer[STARPU_NMAXBUFS]; /* index among the sequence's buffers */
};

struct sequence {
  int nstages;
  alignas(max_align_t) struct stage stages[];
};

static size_t aligned(size_t n)
{
  const size_t a = alignof(max_align_t);
  return (n + a - 1) / a * a;
}

static void run_stages(void *buffers[], void *cl_arg, int cuda)
{
  const struct sequence *q = cl_arg;
  for (int s = 0; s < q->nstages; s++) {
    const struct stage *st = &q->stages[s];
    void *own[STARPU_NMAXBUFS];
    for (int k = 0; k < st->nbuffers; k++)
      own[k] = buffers[st->buffer[k]];
    void *arg = st->arg_size ? (char *)cl_arg + st->arg_offset : st->shared_arg;
    if (cuda)
      st->cl->cl.cuda_funcs[0](own, arg);
    else
      st->cl->cl.cpu_funcs[0](own, arg);
  }
}

static void sequence_cpu(void *buffers[], void *cl_arg) { run_stages(buffers, cl_arg, 0); }

#if STRATA__USE_CUDA
/* Every stage's CUDA implementation is asynchronous on the worker's stream,
 * so the stages run in order on it and StarPU waits once, after the last. */
static void sequence_cuda(void *buffers[], void *cl_arg) { run_stages(buffers, cl_arg, 1); }
#endif

/* Same stages (by codelet name) on the same data sizes: same cost. */
static uint32_t sequence_footprint(struct starpu_task *task)
{
  const struct sequence *q = task->cl_arg;
  uint32_t key = starpu_task_data_footprint(task);
  for (int s = 0; s < q->nstages; s++)
    key = starpu_hash_crc32c_string(q->stages[s].cl->cl.name, key);
  return key;
}

/* The stages' flops, where each is known, each on its own handles. */
static double sequence_flops(const void *arg, const starpu_data_handle_t *handles)
{
  const struct sequence *q = arg;
  double flops = 0;
  for (int s = 0; s < q->nstages; s++) {
    const struct stage *st = &q->stages[s];
    if (!st->cl->flops)
      continue;
    starpu_data_handle_t own[STARPU_NMAXBUFS];
    for (int k = 0; k < st->nbuffers; k++)
      own[k] = handles[st->buffer[k]];
    flops += st->cl->flops(st->arg_size ? (const char *)arg + st->arg_offset : st->shared_arg, own);
  }
  return flops;
}

STRATA__CODELET(sequence_cpu_cl, "strata_sequence", 0x6baed6, sequence_cpu, NULL,
                sequence_footprint, sequence_flops, .nbuffers = STARPU_VARIABLE_NBUFFERS);
/* On CUDA workers too, when every stage has a CUDA implementation. */
STRATA__CODELET_SHARING(sequence_any_cl, sequence_cpu_cl, "strata_sequence", 0x6baed6, sequence_cpu,
                        sequence_cuda, sequence_flops, .nbuffers = STARPU_VARIABLE_NBUFFERS);

/* Index of handle h among the sequence's buffers, added with mode 0 when
 * new; -1 when there is no room. */
static int buffer_of(starpu_data_handle_t h, starpu_data_handle_t *handles,
                     enum starpu_data_access_mode *modes, int *n)
{
  for (int k = 0; k < *n; k++)
    if (handles[k] == h)
      return k;
  if (*n == STARPU_NMAXBUFS)
    return -1;
  handles[*n] = h;
  modes[*n] = 0;
  return (*n)++;
}

static int is_scratch(starpu_data_handle_t h, int nscratch, const starpu_data_handle_t *scratch)
{
  for (int k = 0; k < nscratch; k++)
    if (scratch[k] == h)
      return 1;
  return 0;
}

/* The captured tasks one by one, as they were. */
static int submit_each(struct strata__capture *c)
{
  int ret = 0;
  for (int s = 0; s < c->n && !ret; s++) {
    struct strata__captured *t = &c->tasks[s];
    if (t->owned)
      ret = strata__submit_owned_arg(t->cl, t->arg, t->arg_size, t->nbuffers, t->handles, t->modes);
    else
      ret = strata__submit(t->cl, t->arg, t->arg_size, t->nbuffers, t->handles, t->modes);
    t->owned = 0; /* the task has it now, or freed it */
  }
  strata__capture_discard(c);
  return ret;
}

/* The distinct handles of the captured tasks with their merged modes, each
 * stage's buffers as indices among them; -1 above STARPU_NMAXBUFS. */
static int merge_buffers(const struct strata__capture *c, struct sequence *q,
                         starpu_data_handle_t *handles, enum starpu_data_access_mode *modes,
                         int nscratch, const starpu_data_handle_t *scratch)
{
  int n = 0, written_first[STARPU_NMAXBUFS] = {0};
  for (int s = 0; s < c->n; s++) {
    const struct strata__captured *t = &c->tasks[s];
    for (int k = 0; k < t->nbuffers; k++) {
      int b = buffer_of(t->handles[k], handles, modes, &n);
      if (b < 0)
        return -1;
      q->stages[s].buffer[k] = (unsigned char)b;
      if (modes[b] == 0 && t->modes[k] == STARPU_W)
        written_first[b] = 1;
      modes[b] |= t->modes[k];
    }
  }
  for (int k = 0; k < n; k++)
    if (is_scratch(handles[k], nscratch, scratch))
      modes[k] = STARPU_SCRATCH;
    else if (written_first[k]) /* later stages read what an earlier one wrote */
      modes[k] = STARPU_W;
  return n;
}

int strata__capture_submit(struct strata__capture *c, int nscratch,
                           const starpu_data_handle_t *scratch)
{
  if (c->n <= 1) /* nothing to merge */
    return submit_each(c);
  size_t offset = aligned(sizeof(struct sequence) + (size_t)c->n * sizeof(struct stage));
  size_t size = offset;
  for (int s = 0; s < c->n; s++)
    size += aligned(c->tasks[s].arg_size);
  struct sequence *q = calloc(1, size);
  if (!q) {
    strata__capture_discard(c);
    return STRATA_ENOMEM;
  }
  q->nstages = c->n;
  int cuda = 1;
  for (int s = 0; s < c->n; s++) {
    const struct strata__captured *t = &c->tasks[s];
    q->stages[s] = (struct stage){.cl = t->cl,
                                  .shared_arg = t->arg_size ? NULL : t->arg,
                                  .arg_offset = offset,
                                  .arg_size = t->arg_size,
                                  .nbuffers = t->nbuffers};
    if (t->arg_size)
      memcpy((char *)q + offset, t->arg, t->arg_size);
    offset += aligned(t->arg_size);
    cuda &= t->cl->cl.cuda_funcs[0] != NULL;
  }
  starpu_data_handle_t handles[STARPU_NMAXBUFS];
  enum starpu_data_access_mode modes[STARPU_NMAXBUFS];
  int n = merge_buffers(c, q, handles, modes, nscratch, scratch);
  if (n < 0) { /* too many handles for one task (the planner avoids it) */
    free(q);
    return submit_each(c);
  }
  struct strata__codelet *cl = cuda ? &sequence_any_cl : &sequence_cpu_cl;
  strata__capture_discard(c);
  return strata__submit_owned_arg(cl, q, size, n, handles, modes);
}
