/* One cycle of the inference method: the five phases in order, their
 * completion times, the statistics. */
#include "amr.h"
#include "infer_impl.h"

/* ---- phase completion times ---- */

struct phase_mark {
  strata_infer *inf;
  int phase;
  starpu_data_handle_t h;
};

static void phase_reached(void *arg)
{
  struct phase_mark *pm = arg;
  double t = starpu_timing_now() * 1e-6 - pm->inf->t0;
  starpu_pthread_mutex_lock(&pm->inf->lock);
  if (t > pm->inf->phase_end[pm->phase])
    pm->inf->phase_end[pm->phase] = t;
  starpu_pthread_mutex_unlock(&pm->inf->lock);
  starpu_data_release(pm->h);
  free(pm);
}

void strata__infer_note_phase_end(strata_infer *inf, int phase, starpu_data_handle_t h)
{
  struct phase_mark *pm = malloc(sizeof *pm);
  if (!pm)
    return;
  *pm = (struct phase_mark){inf, phase, h};
  if (starpu_data_acquire_cb(h, STARPU_R, phase_reached, pm) != 0)
    free(pm);
}

static void note_now(strata_infer *inf, int phase)
{
  inf->phase_end[phase] = starpu_timing_now() * 1e-6 - inf->t0;
}

/* Bulk-synchronous mode: every task of the phase done on every rank. */
static void phase_barrier(strata_infer *inf)
{
  if (!inf->p.bulk_synchronous)
    return;
  starpu_task_wait_for_all();
  MPI_Barrier(inf->mesh->meta);
}

/* ---- one cycle ---- */

static int64_t table_found(starpu_data_handle_t h)
{
  if (strata__acquire(h, STARPU_R) != 0)
    return 0;
  int64_t found = (int64_t)((const double *)(const void *)starpu_vector_get_local_ptr(h))[0];
  starpu_data_release(h);
  return found;
}

/* Counts, volumes and phase times, the same on every rank. */
static void finish_stats(strata_infer *inf, const struct transfer *t, int64_t nt,
                         strata_infer_stats *st)
{
  const strata_mesh *mesh = inf->mesh;
  st->elements = inf->elements;
  st->elements_known = inf->nel;
  st->handles_local = strata__infer_count_handles(inf);
  /* The volume of each local element, from the transfers into it. */
  double *volume = calloc((size_t)(inf->nel ? inf->nel : 1), sizeof *volume);
  for (int64_t k = 0; volume && k < nt; k++)
    volume[t[k].element] += (double)strata__infer_cells_of(t[k].lo, t[k].hi);
  double range[2] = {-INFINITY, -INFINITY}; /* -min, max */
  for (int64_t i = 0; i < inf->nel; i++) {
    if (inf->el[i].rank != mesh->rank)
      continue;
    double v = volume ? volume[i] / (double)(inf->n * inf->n * inf->n) : NAN;
    range[0] = fmax(range[0], -v);
    range[1] = fmax(range[1], v);
    st->elements_local++;
  }
  free(volume);
  int64_t leaf_bubbles = 0;
  for (int64_t i = 0; i < inf->nlists; i++)
    leaf_bubbles += table_found(inf->lists[i].h);
  /* Two reductions in all, each costing log2 P rounds: the maxima (minima
   * negated; the phases' ends first), then the sums (counts below 2^53 are
   * exact as doubles), the join's bubbles and parts among them. */
  enum {
    CYCLE_END = STRATA_INFER_PHASES,
    SUBMIT,
    MEASURED,
    VOLUME_MIN,
    VOLUME_MAX,
    ELEMENTS,
    MAXIMA
  };
  enum {
    LEAF_BUBBLES,
    MESSAGES,
    TRANSFERS,
    BY_KIND,
    MEASURED_SUM = BY_KIND + 3,
    BUBBLES,
    PARTS,
    PARTS_LOST,
    SUMS
  };
  double most[MAXIMA], sums[SUMS];
  memcpy(most, inf->phase_end, sizeof inf->phase_end);
  most[CYCLE_END] = starpu_timing_now() * 1e-6 - inf->t0;
  most[SUBMIT] = st->submit_seconds, most[MEASURED] = st->measured_max;
  most[VOLUME_MIN] = range[0], most[VOLUME_MAX] = range[1];
  most[ELEMENTS] = (double)st->elements_local;
  sums[LEAF_BUBBLES] = (double)leaf_bubbles, sums[MESSAGES] = (double)st->messages;
  sums[TRANSFERS] = (double)st->transfers, sums[MEASURED_SUM] = st->measured_max;
  for (int k = 0; k < 3; k++)
    sums[BY_KIND + k] = (double)st->transfers_by_kind[k];
  sums[BUBBLES] = (double)st->bubbles, sums[PARTS] = (double)st->parts;
  sums[PARTS_LOST] = (double)st->parts_lost;
  MPI_Allreduce(MPI_IN_PLACE, most, MAXIMA, MPI_DOUBLE, MPI_MAX, mesh->meta);
  MPI_Allreduce(MPI_IN_PLACE, sums, SUMS, MPI_DOUBLE, MPI_SUM, mesh->meta);
  st->volume_min = inf->elements ? -most[VOLUME_MIN] : 0;
  st->volume_max = inf->elements ? most[VOLUME_MAX] : 0;
  st->elements_max = (int64_t)most[ELEMENTS];
  st->submit_seconds = most[SUBMIT];
  st->measured_max = most[MEASURED];
  st->leaf_bubbles = (int64_t)sums[LEAF_BUBBLES];
  st->messages = (int64_t)sums[MESSAGES];
  st->transfers = (int64_t)sums[TRANSFERS];
  for (int k = 0; k < 3; k++)
    st->transfers_by_kind[k] = (int64_t)sums[BY_KIND + k];
  st->measured_mean = sums[MEASURED_SUM] / mesh->size;
  st->bubbles = (int64_t)sums[BUBBLES];
  st->parts = (int64_t)sums[PARTS];
  st->parts_lost = (int64_t)sums[PARTS_LOST];
  double previous = 0;
  for (int k = 0; k < STRATA_INFER_PHASES; k++) {
    double end = fmax(most[k], previous); /* a phase absent on every rank ends with the last */
    st->seconds[k] = end - previous;
    previous = end;
  }
  st->total = most[CYCLE_END];
}

/* Return once h's last task so far is done. Write mode also waits for a
 * phase mark, which reads h until its callback has noted the time. */
static void settle(starpu_data_handle_t h)
{
  if (h && strata__acquire(h, STARPU_RW) == 0) /* NULL: the cycle failed first */
    starpu_data_release(h);
}

/* Wait for this method's tasks of the cycle, never for anyone else's: the
 * last writers of each local element's table (after its input and model
 * output) and links, and of each local leaf list (after the marks, which
 * also write the marker field). */
static void drain(strata_infer *inf)
{
  for (int64_t i = 0; i < inf->nel; i++) {
    const struct element *e = &inf->el[i];
    if (e->rank != inf->mesh->rank)
      continue;
    settle(e->in);
    settle(e->table);
    settle(e->links);
  }
  for (int64_t i = 0; i < inf->nlists; i++)
    settle(inf->lists[i].h);
}

struct strata__infer_cycle *strata__infer_take_cycle(strata_infer *inf)
{
  struct strata__infer_cycle *c = inf->cycle;
  if (c) {
    drain(inf);
    inf->cycle = NULL;
    inf->mesh->busy--;
    if (inf->mesh->amr)
      inf->mesh->amr->busy--;
  }
  return c;
}

/* CPU time of this method's transfer tasks so far (seconds). */
static double transfer_cpu_seconds(const strata_infer *inf)
{
  return (double)__atomic_load_n(&inf->xfer_cpu_ns, __ATOMIC_RELAXED) * 1e-9;
}

int strata_infer_submit(strata_infer *inf)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!inf)
    return STRATA_EINVAL;
  int early = inf->cycle ? strata__fail(STRATA_ESTATE, "a cycle is in flight: "
                                                       "strata_infer_wait() first")
              : !inf->mesh->amr && !inf->mesh->committed
                  ? strata__fail(STRATA_ESTATE, "the mesh is not committed: strata_mesh_commit()")
                  : 0;
  struct strata__infer_cycle *c = early ? NULL : calloc(1, sizeof *c);
  if (!early && !c)
    early = STRATA_ENOMEM;
  ret = strata__agree(early, NULL, 0); /* also lines up the start */
  if (ret) {
    free(c);
    return early ? early : ret;
  }
  strata_infer_stats *st = &c->st;
  inf->cycles++;
  c->model_cpu = strata__model_cpu_seconds(inf->p.model);
  c->xfer_cpu = transfer_cpu_seconds(inf);
  inf->t0 = starpu_timing_now() * 1e-6;
  memset(inf->phase_end, 0, sizeof inf->phase_end);
  strata__infer_drop_masks(inf);
  strata__infer_drop_lists(inf);

  int local = inf->mesh->amr ? strata__mesh_describe_amr(inf->mesh) : 0;
  if (!local)
    local = strata__infer_submit_evaluate(inf);
  phase_barrier(inf);
  for (int64_t i = 0; !local && i < inf->nmasks; i++) /* the masks decide the elements */
    if (strata__acquire(inf->masks[i].h, STARPU_R) == 0)
      starpu_data_release(inf->masks[i].h);
  note_now(inf, STRATA_INFER_EVALUATE);
  local = strata__infer_allocate(inf, local, &c->t, &c->nt, st); /* agrees on `local` */
  if (!local)
    local = strata__infer_share_transfers(inf, &c->t, &c->nt);
  note_now(inf, STRATA_INFER_ALLOCATE);
  phase_barrier(inf);

  if (!local && inf->elements > 0) {
    local = strata__infer_submit_populate(inf, c->t, c->nt, st);
    phase_barrier(inf);
    if (!local)
      local = strata__infer_submit_apply(inf);
    phase_barrier(inf);
    if (!local)
      local = strata__infer_submit_update(inf, c->t, c->nt, st);
  }
  st->submit_seconds = starpu_timing_now() * 1e-6 - inf->t0;
  ret = strata__agree(local, NULL, 0);
  if (ret) {
    drain(inf);
    strata__infer_drop_bubbles(inf);
    free(c->t);
    free(c);
    return local ? local : ret;
  }
  inf->cycle = c;
  inf->mesh->busy++;
  if (inf->mesh->amr)
    inf->mesh->amr->busy++;
  return 0;
}

int strata_infer_wait(strata_infer *inf, strata_infer_stats *stats)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!inf)
    return STRATA_EINVAL;
  ret = strata__agree(inf->cycle ? 0 : STRATA_ESTATE, NULL, 0);
  if (ret)
    return inf->cycle ? ret : strata__fail(ret, "no cycle in flight: strata_infer_submit() first");
  struct strata__infer_cycle *c = strata__infer_take_cycle(inf);
  strata_infer_stats *st = &c->st;
  /* This rank's, until finish_stats gathers them. */
  st->measured_max = strata__model_cpu_seconds(inf->p.model) - c->model_cpu +
                     transfer_cpu_seconds(inf) - c->xfer_cpu;
  ret = strata__infer_join_bubbles(inf, st);
  if (!ret) {
    finish_stats(inf, c->t, c->nt, st);
    if (stats)
      *stats = *st;
  }
  free(c->t);
  free(c);
  return ret;
}

int strata_infer_run(strata_infer *inf, strata_infer_stats *stats)
{
  int ret = strata_infer_submit(inf);
  return ret ? ret : strata_infer_wait(inf, stats);
}
