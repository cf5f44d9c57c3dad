/* One cycle of the inference method: the five phases in order, their
 * completion times, the statistics. */
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
  MPI_Barrier(inf->amr->meta);
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
  strata_amr *amr = inf->amr;
  st->elements = inf->nel;
  st->volume_min = inf->nel ? INFINITY : 0;
  st->volume_max = 0;
  double *volume = calloc((size_t)(inf->nel ? inf->nel : 1), sizeof *volume);
  for (int64_t k = 0; volume && k < nt; k++)
    volume[t[k].element] += (double)strata__infer_cells_of(t[k].lo, t[k].hi);
  for (int64_t i = 0; i < inf->nel; i++) {
    double v = volume ? volume[i] / (double)(inf->n * inf->n * inf->n) : NAN;
    st->volume_min = fmin(st->volume_min, v);
    st->volume_max = fmax(st->volume_max, v);
    st->elements_local += inf->el[i].rank == amr->rank;
  }
  free(volume);
  int64_t leaf_bubbles = 0;
  for (int64_t i = 0; i < inf->nlists; i++)
    leaf_bubbles += table_found(inf->lists[i].h);
  int64_t sums[3] = {leaf_bubbles, st->messages, st->transfers};
  MPI_Allreduce(MPI_IN_PLACE, sums, 3, MPI_INT64_T, MPI_SUM, amr->meta);
  st->leaf_bubbles = sums[0];
  st->messages = sums[1];
  st->transfers = sums[2];
  MPI_Allreduce(MPI_IN_PLACE, st->transfers_by_kind, 3, MPI_INT64_T, MPI_SUM, amr->meta);
  MPI_Allreduce(&st->elements_local, &st->elements_max, 1, MPI_INT64_T, MPI_MAX, amr->meta);
  double ends[STRATA_INFER_PHASES + 1];
  memcpy(ends, inf->phase_end, sizeof inf->phase_end);
  ends[STRATA_INFER_PHASES] = starpu_timing_now() * 1e-6 - inf->t0;
  MPI_Allreduce(MPI_IN_PLACE, ends, STRATA_INFER_PHASES + 1, MPI_DOUBLE, MPI_MAX, amr->meta);
  double measured_sum = st->measured_max;
  MPI_Allreduce(MPI_IN_PLACE, &st->measured_max, 1, MPI_DOUBLE, MPI_MAX, amr->meta);
  MPI_Allreduce(MPI_IN_PLACE, &measured_sum, 1, MPI_DOUBLE, MPI_SUM, amr->meta);
  st->measured_mean = measured_sum / amr->size;
  double previous = 0;
  for (int k = 0; k < STRATA_INFER_PHASES; k++) {
    double end = fmax(ends[k], previous); /* a phase absent on every rank ends with the last */
    st->seconds[k] = end - previous;
    previous = end;
  }
  st->total = ends[STRATA_INFER_PHASES];
}

int strata_infer_run(strata_infer *inf, strata_infer_stats *stats)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!inf)
    return STRATA_EINVAL;
  strata_infer_stats st = {0};
  ret = strata__agree(0, NULL, 0); /* also lines up the start of the cycle */
  if (ret)
    return ret;
  inf->cycles++;
  const double model_cpu = strata__model_cpu_seconds(inf->p.model);
  inf->t0 = starpu_timing_now() * 1e-6;
  memset(inf->phase_end, 0, sizeof inf->phase_end);
  strata__infer_drop_masks(inf);
  strata__infer_drop_lists(inf);

  int local = strata__infer_submit_evaluate(inf);
  phase_barrier(inf);
  int64_t *needed = NULL, nneeded = 0;
  if (!local)
    local = strata__infer_gather_needed(inf, &needed, &nneeded);
  else
    strata__agree(local, NULL, 0); /* strata__infer_gather_needed's agreement */
  note_now(inf, STRATA_INFER_EVALUATE);

  struct transfer *t = NULL;
  int64_t nt = 0;
  if (!local)
    local = strata__infer_update_level_array(inf, needed, nneeded, &st);
  if (!local) {
    local = strata__infer_plan_transfers(inf, &t, &nt);
    st.reused = !st.created && !st.removed && inf->nel > 0;
    int *ranks = local ? NULL : malloc((size_t)(inf->nel ? inf->nel : 1) * sizeof *ranks);
    if (!local && !ranks)
      local = STRATA_ENOMEM;
    if (!local && !st.reused)
      local = strata__infer_place_elements(inf, t, nt, ranks, &st);
    if (!local && !st.reused)
      local = strata__infer_apply_placement(inf, ranks, &st);
    free(ranks);
  }
  free(needed);
  note_now(inf, STRATA_INFER_ALLOCATE);
  phase_barrier(inf);

  if (!local && inf->nel > 0) {
    local = strata__infer_submit_populate(inf, t, nt, &st);
    phase_barrier(inf);
    if (!local)
      local = strata__infer_submit_apply(inf);
    phase_barrier(inf);
    if (!local)
      local = strata__infer_submit_update(inf, t, nt, &st);
  }
  starpu_task_wait_for_all();
  /* This rank's, until finish_stats gathers them. */
  st.measured_max = strata__model_cpu_seconds(inf->p.model) - model_cpu;
  ret = strata__agree(local, NULL, 0);
  if (!ret)
    ret = strata__infer_join_bubbles(inf, &st);
  else
    strata__infer_drop_bubbles(inf);
  if (!ret) {
    finish_stats(inf, t, nt, &st);
    if (stats)
      *stats = st;
  }
  free(t);
  return local ? local : ret;
}
