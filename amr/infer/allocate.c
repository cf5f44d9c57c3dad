/* Phase 2, allocate: the level array's elements, created once, and their
 * placement on the ranks. */
#include "amr.h"
#include "infer_impl.h"

/* ---- phase 2: allocate ---- */

static int element_cmp(const void *x, const void *y)
{
  const struct element *a = x, *b = y;
  return (a->key > b->key) - (a->key < b->key);
}

struct element *strata__infer_find_element(const strata_infer *inf, const int64_t idx[3])
{
  struct element key = {.key = strata__morton(idx)};
  if (!inf->nel) /* el is NULL before the first cycle */
    return NULL;
  return bsearch(&key, inf->el, (size_t)inf->nel, sizeof *inf->el, element_cmp);
}

int strata__infer_allgather_values(const strata_mesh *mesh, const void *mine, int64_t n,
                                   MPI_Datatype type, void **all, int64_t *total)
{
  int *counts = calloc((size_t)mesh->size, sizeof *counts);
  int *displs = calloc((size_t)mesh->size, sizeof *displs);
  int ret = strata__agree(counts && displs ? 0 : STRATA_ENOMEM, NULL, 0);
  *all = NULL;
  *total = 0;
  if (!ret) {
    int mine_count = (int)n;
    MPI_Allgather(&mine_count, 1, MPI_INT, counts, 1, MPI_INT, mesh->meta);
    for (int r = 0; r < mesh->size; r++) {
      displs[r] = (int)*total;
      *total += counts[r];
    }
    *all = malloc((size_t)(*total + 1) * 8);
    ret = strata__agree(*all ? 0 : STRATA_ENOMEM, NULL, 0);
  }
  if (!ret)
    MPI_Allgatherv(mine, (int)n, type, *all, counts, displs, type, mesh->meta);
  else {
    free(*all);
    *all = NULL;
  }
  free(counts);
  free(displs);
  return ret;
}

int strata__infer_gather_needed(strata_infer *inf, int64_t **idx_out, int64_t *n_out)
{
  const int la = inf->p.level_array;
  int64_t cap = 0, n = 0;
  for (int64_t i = 0; i < inf->nmasks; i++)
    cap += inf->masks[i].cells * inf->masks[i].cells * inf->masks[i].cells;
  int64_t *mine = malloc((size_t)(3 * cap + 1) * sizeof *mine);
  int ret = mine ? 0 : STRATA_ENOMEM;
  for (int64_t i = 0; i < inf->nmasks && !ret; i++) {
    struct mask *m = &inf->masks[i];
    if (strata__acquire(m->h, STARPU_R) != 0) {
      ret = STRATA_ESTARPU;
      break;
    }
    const uint8_t *bits = (const void *)starpu_vector_get_local_ptr(m->h);
    const int finer = m->b.level > la ? m->b.level - la : 0;
    for (int64_t c = 0; c < m->cells * m->cells * m->cells; c++)
      if (bits[c]) {
        int64_t cell[3] = {c % m->cells, c / m->cells % m->cells, c / (m->cells * m->cells)};
        for (int a = 0; a < 3; a++) /* the element holding this part of the leaf */
          mine[3 * n + a] = (m->b.index[a] >> finer) * m->cells + cell[a];
        n++;
      }
    starpu_data_release(m->h);
  }
  if (mine)
    n = strata__amr_sort_unique(mine, n, 3 * sizeof *mine, strata__amr_compare_triples);
  int err = strata__agree(ret, NULL, 0);
  void *all = NULL;
  int64_t total = 0;
  if (!err)
    err = strata__infer_allgather_values(inf->mesh, mine, 3 * n, MPI_INT64_T, &all, &total);
  free(mine);
  if (err)
    return ret ? ret : err;
  *idx_out = all;
  *n_out = total / 3;
  return 0;
}

/* An element's handles, in the order of their StarPU-MPI tags: its input,
 * output, bubble table, border faces and links. */
enum { H_IN, H_OUT, H_TABLE, H_FACES, H_LINKS, ELEMENT_HANDLES };

static starpu_data_handle_t *element_slot(struct element *e, int k)
{
  starpu_data_handle_t *slots[ELEMENT_HANDLES] = {&e->in, &e->out, &e->table, &e->faces, &e->links};
  return slots[k];
}

/* Handle k of e on this rank, registered the first time it is needed. */
static int register_handle(strata_infer *inf, struct element *e, int k)
{
  starpu_data_handle_t *h = element_slot(e, k);
  if (*h)
    return 0;
  const int64_t cells = inf->n * inf->n * inf->n;
  const int64_t count[ELEMENT_HANDLES] = {cells * inf->p.n_fields, cells * inf->bubble.channels,
                                          table_len(inf), 6 * inf->n * inf->n,
                                          2 * strata__bubble_link_slots(inf->n)};
  const size_t size[ELEMENT_HANDLES] = {sizeof(float), sizeof(float), sizeof(double),
                                        sizeof(int32_t), sizeof(int32_t)};
  strata__tags elements;
  int64_t tag;
  strata__tags_part(&inf->tags, 0, 4, &elements);
  int ret = strata__tag(&elements, e->serial * 8 + ELEMENT_HANDLES - 1, &tag);
  if (ret)
    return ret;
  starpu_vector_data_register(h, -1, 0, (uint32_t)count[k], size[k]);
  starpu_mpi_data_register(*h, tag - (ELEMENT_HANDLES - 1) + k, e->rank);
  return 0;
}

int strata__infer_link_handles(strata_infer *inf, struct element *e, int links)
{
  int ret = links ? register_handle(inf, e, H_LINKS) : 0;
  return ret ? ret : register_handle(inf, e, H_FACES);
}

void strata__infer_drop_element(struct element *e)
{
  for (int k = 0; k < ELEMENT_HANDLES; k++) {
    starpu_data_handle_t *h = element_slot(e, k);
    if (*h) {
      starpu_data_unregister_submit(*h);
      *h = NULL;
    }
  }
}

int64_t strata__infer_count_handles(strata_infer *inf)
{
  int64_t count = 0;
  for (int64_t i = 0; i < inf->nel; i++)
    for (int k = 0; k < ELEMENT_HANDLES; k++)
      count += *element_slot(&inf->el[i], k) != NULL;
  return count;
}

/* A new element (or one moved to another rank). Its owner registers every
 * handle; other ranks only what the links between arrays exchange with
 * theirs (strata__infer_submit_links), when they do, so that no rank holds
 * handles for the whole level array. */
static int register_element(strata_infer *inf, struct element *e)
{
  if (e->rank != inf->mesh->rank)
    return 0;
  int ret = 0;
  for (int k = 0; k < ELEMENT_HANDLES && !ret; k++)
    ret = register_handle(inf, e, k);
  if (ret)
    return ret;
  /* A first write, so that the transfers may read-modify-write it. */
  struct strata__amr_fill zero = {0};
  return strata__amr_fill_submit(MPI_COMM_NULL, e->in, &zero);
}

int strata__infer_update_level_array(strata_infer *inf, const int64_t *idx, int64_t n,
                                     strata_infer_stats *st)
{
  struct element *next = calloc((size_t)(n ? n : 1), sizeof *next);
  if (!next)
    return STRATA_ENOMEM;
  for (int64_t i = 0; i < n; i++) {
    memcpy(next[i].idx, idx + 3 * i, sizeof next[i].idx);
    next[i].key = strata__morton(next[i].idx);
    next[i].serial = -1;
  }
  n = strata__amr_sort_unique(next, n, sizeof *next, element_cmp);
  int64_t i = 0, j = 0;
  for (; i < n; i++) {
    while (j < inf->nel && inf->el[j].key < next[i].key)
      strata__infer_drop_element(&inf->el[j++]), st->removed++;
    if (j < inf->nel && inf->el[j].key == next[i].key)
      next[i] = inf->el[j++];
    else
      st->created++;
  }
  for (; j < inf->nel; j++)
    strata__infer_drop_element(&inf->el[j]), st->removed++;
  free(inf->el);
  inf->el = next;
  inf->nel = n;
  return 0;
}

/* ---- placement ---- */

static int cost_cmp(const void *x, const void *y)
{
  const struct element *const *a = x, *const *b = y;
  if ((*a)->cost != (*b)->cost)
    return (*a)->cost < (*b)->cost ? 1 : -1;
  return ((*a)->key > (*b)->key) - ((*a)->key < (*b)->key);
}

/* What one rank knows of its workers that can run the model, per kind
 * (CPU, CUDA): how many, and the sum of their measured times (NAN when one
 * has none). */
enum { KINDS = 2 };
struct worker_times {
  double count[KINDS], seconds[KINDS];
};

static struct worker_times local_times(const strata_infer *inf)
{
  struct worker_times t = {{0, 0}, {0, 0}};
  for (int w = 0; w < (int)starpu_worker_get_count(); w++) {
    double seconds = strata__model_expected(inf->p.model, inf->n, w);
    if (isinf(seconds)) /* a worker the model cannot use */
      continue;
    int kind = starpu_worker_get_type(w) == STARPU_CUDA_WORKER;
    t.count[kind] += 1;
    t.seconds[kind] += seconds;
  }
  return t;
}

/* Every rank's speed at the model (models per second) from the measured
 * times averaged per kind of worker over all ranks, so that ranks of the
 * same hardware get the same speed whatever the noise of their own
 * measurements; worker counts while some kind has no measurement. The
 * mean model time on a CPU worker into *model_cpu_seconds (NAN until
 * measured). Collective. */
static int gather_speeds(strata_infer *inf, double *speed, double *model_cpu_seconds)
{
  const int size = inf->mesh->size;
  struct worker_times mine = local_times(inf), *all = malloc((size_t)size * sizeof *all);
  int ret = strata__agree(all ? 0 : STRATA_ENOMEM, NULL, 0);
  if (ret) {
    free(all);
    return ret;
  }
  MPI_Allgather(&mine, 2 * KINDS, MPI_DOUBLE, all, 2 * KINDS, MPI_DOUBLE, inf->mesh->meta);
  double mean[KINDS], count[KINDS];
  int measured = 1;
  for (int k = 0; k < KINDS; k++) {
    double seconds = 0;
    count[k] = 0;
    for (int r = 0; r < size; r++)
      if (all[r].count[k] > 0)
        count[k] += all[r].count[k], seconds += all[r].seconds[k];
    mean[k] = count[k] > 0 ? seconds / count[k] : 1;
    measured = measured && mean[k] > 0; /* NAN compares false */
  }
  for (int r = 0; r < size; r++) {
    speed[r] = 0;
    for (int k = 0; k < KINDS; k++)
      speed[r] += all[r].count[k] / (measured ? mean[k] : 1);
    speed[r] = speed[r] > 0 ? speed[r] : 1;
  }
  *model_cpu_seconds = measured && count[0] > 0 ? mean[0] : NAN;
  free(all);
  return 0;
}

/* Kept elements of [0, c) whose rank is <= r and > r: the migrations a cut
 * of the curve at c between ranks r and r + 1 causes are the first kind
 * beyond c plus the second before it. */
static void kept_before(const strata_infer *inf, int64_t c, int r, int64_t counts[2])
{
  counts[0] = counts[1] = 0;
  for (int64_t i = 0; i < c; i++)
    if (inf->el[i].serial >= 0)
      counts[inf->el[i].rank > r]++;
}

/* Each element's weight, in model tasks on a CPU worker: 1 plus the time
 * its transfers take on a CPU worker over the model's. A transfer takes its
 * cells at the seconds per cell of its kind (copy, restriction,
 * prolongation): what StarPU's histories of that codelet expect for the
 * footprints of every rank's transfers that have enough measurements, over
 * their cells (all kinds pooled for a kind without any). Per-footprint
 * times would move the cuts whenever a footprint passes StarPU's minimum
 * of samples. Every rank weighs its own leaves' transfers and the sums are
 * agreed; all weights are 1 until the model and some transfer have been
 * measured. Collective. */
static int transfer_weights(strata_infer *inf, const struct transfer *t, int64_t nt,
                            double model_cpu_seconds, double *weight)
{
  enum { KINDS_OF_TRANSFER = 3, ALL = KINDS_OF_TRANSFER };
  const int64_t n = inf->nel;
  double *w = calloc((size_t)(n + 1), sizeof *w);
  double *cells = malloc((size_t)(nt + 1) * sizeof *cells);
  int ret = strata__agree(w && cells ? 0 : STRATA_ENOMEM, NULL, 0);
  const int cpu = starpu_worker_get_by_type(STARPU_CPU_WORKER, 0);
  double sums[2][KINDS_OF_TRANSFER + 1] = {{0}}; /* measured seconds, their cells */
  for (int64_t k = 0; !ret && k < nt; k++) {
    double s = cpu >= 0 ? strata__infer_transfer_seconds(inf, &t[k], cpu, &cells[k]) : NAN;
    if (s >= 0) /* NAN compares false */
      for (int c = 0; c < 2; c++) {
        const int kind = c ? ALL : t[k].kind;
        sums[0][kind] += s, sums[1][kind] += cells[k];
      }
  }
  if (!ret && MPI_Allreduce(MPI_IN_PLACE, sums, 2 * (KINDS_OF_TRANSFER + 1), MPI_DOUBLE, MPI_SUM,
                            inf->mesh->meta) != MPI_SUCCESS)
    ret = STRATA_EMPI;
  const int weighed = !ret && sums[1][ALL] > 0 && model_cpu_seconds > 0; /* NAN compares false */
  for (int64_t k = 0; weighed && k < nt; k++) {
    const int kind = sums[1][t[k].kind] > 0 ? t[k].kind : ALL;
    w[t[k].element] += cells[k] * sums[0][kind] / sums[1][kind];
  }
  if (weighed &&
      MPI_Allreduce(MPI_IN_PLACE, w, (int)n, MPI_DOUBLE, MPI_SUM, inf->mesh->meta) != MPI_SUCCESS)
    ret = STRATA_EMPI;
  for (int64_t i = 0; i < n; i++)
    weight[i] = weighed && !ret ? 1 + w[i] / model_cpu_seconds : 1;
  free(w);
  free(cells);
  return ret;
}

/* The measured policy: the Morton curve cut into shares of the elements'
 * weights proportional to the ranks' speeds. Each cut may move by 1 % of
 * the smaller of its two shares, to where it moves the fewest kept
 * elements; then kept elements cut away return while their rank stays
 * within 2 % of its share. Balance first, then no needless migration. */
static int place_measured(strata_infer *inf, const double *speed, const double *weight, int *ranks)
{
  const int size = inf->mesh->size;
  const int64_t n = inf->nel;
  double *before = malloc((size_t)(n + 1) * sizeof *before); /* [c]: weight of [0, c) */
  double *load = calloc((size_t)size, sizeof *load);
  int ret = strata__agree(before && load ? 0 : STRATA_ENOMEM, NULL, 0);
  if (ret) {
    free(before), free(load);
    return ret;
  }
  before[0] = 0;
  for (int64_t i = 0; i < n; i++)
    before[i + 1] = before[i] + weight[i];
  const double weights = before[n];
  double total = 0, cum = 0;
  for (int r = 0; r < size; r++)
    total += speed[r];
  int64_t start = 0;
  for (int r = 0; r < size; r++) {
    int64_t end = n;
    if (r < size - 1) {
      cum += speed[r];
      double ideal = weights * cum / total;
      double slack = 0.01 * weights * fmin(speed[r], speed[r + 1]) / total;
      /* The cuts within the slack, or the two around the ideal. */
      int64_t lo = start, hi;
      while (lo < n && before[lo] < ideal - slack)
        lo++;
      hi = lo;
      while (hi < n && before[hi + 1] <= ideal + slack)
        hi++;
      if (before[lo] > ideal + slack && lo > start)
        lo--;
      int64_t at[2], all[2];
      kept_before(inf, lo, r, at);
      kept_before(inf, n, r, all);
      double best = INFINITY;
      for (int64_t c = lo; c <= hi; c++) {
        /* moves, then the distance to the balanced cut */
        double cost = (double)(all[0] - at[0] + at[1]) + fabs(before[c] - ideal) / (weights + 1);
        if (cost < best)
          best = cost, end = c;
        if (c < n && inf->el[c].serial >= 0)
          at[inf->el[c].rank > r]++;
      }
    }
    for (int64_t i = start; i < end; i++)
      ranks[i] = r;
    start = end;
  }
  free(before);
  /* Then a kept element cut away from its rank goes back while that rank
   * stays within 2 % of its share. */
  for (int64_t i = 0; i < n; i++)
    load[ranks[i]] += weight[i];
  for (int64_t i = 0; i < n; i++) {
    const struct element *e = &inf->el[i];
    if (e->serial < 0 || e->rank == ranks[i])
      continue;
    if (load[e->rank] + weight[i] <= 1.02 * weights * speed[e->rank] / total) {
      load[ranks[i]] -= weight[i];
      load[e->rank] += weight[i];
      ranks[i] = e->rank;
    }
  }
  free(load);
  return 0;
}

/* The curve policy: equal counts along the Morton curve. */
static void place_curve(strata_infer *inf, int *ranks)
{
  for (int64_t i = 0; i < inf->nel; i++)
    ranks[i] = (int)(i * inf->mesh->size / inf->nel);
}

/* The greedy policy: largest estimated cost onto the least loaded rank. */
static int place_greedy(strata_infer *inf, const struct transfer *t, int64_t nt, int *ranks)
{
  const int size = inf->mesh->size;
  /* The cells each element receives, from the transfers of every rank's
   * leaves. */
  double *cost = calloc((size_t)(inf->nel + 1), sizeof *cost);
  struct element **order = malloc((size_t)(inf->nel + 1) * sizeof *order);
  double *load = calloc((size_t)size, sizeof *load);
  int ret = strata__agree(cost && order && load ? 0 : STRATA_ENOMEM, NULL, 0);
  for (int64_t k = 0; !ret && k < nt; k++)
    cost[t[k].element] += (double)strata__infer_piece_cells(inf, &t[k]);
  if (!ret && MPI_Allreduce(MPI_IN_PLACE, cost, (int)inf->nel, MPI_DOUBLE, MPI_SUM,
                            inf->mesh->meta) != MPI_SUCCESS)
    ret = STRATA_EMPI;
  if (ret) {
    free(cost), free(order), free(load);
    return ret;
  }
  for (int64_t i = 0; i < inf->nel; i++)
    inf->el[i].cost = (double)(inf->n * inf->n * inf->n) + cost[i];
  free(cost);
  for (int64_t i = 0; i < inf->nel; i++)
    order[i] = &inf->el[i];
  qsort(order, (size_t)inf->nel, sizeof *order, cost_cmp);
  for (int64_t i = 0; i < inf->nel; i++) {
    int best = 0;
    for (int q = 1; q < size; q++)
      if (load[q] < load[best])
        best = q;
    load[best] += order[i]->cost;
    ranks[order[i] - inf->el] = best;
  }
  free(order);
  free(load);
  return 0;
}

int strata__infer_place_elements(strata_infer *inf, const struct transfer *t, int64_t nt,
                                 int *ranks, strata_infer_stats *st)
{
  const int size = inf->mesh->size;
  double *speed = malloc((size_t)size * sizeof *speed);
  double *weight = malloc((size_t)(inf->nel + 1) * sizeof *weight), model_cpu_seconds = NAN;
  int ret = strata__agree(speed && weight ? 0 : STRATA_ENOMEM, NULL, 0);
  if (!ret)
    ret = gather_speeds(inf, speed, &model_cpu_seconds);
  for (int64_t i = 0; !ret && i < inf->nel; i++)
    weight[i] = 1;
  if (!ret && inf->p.placement == STRATA_INFER_PLACE_MEASURED)
    ret = transfer_weights(inf, t, nt, model_cpu_seconds, weight);
  if (!ret && inf->p.placement == STRATA_INFER_PLACE_MEASURED)
    ret = place_measured(inf, speed, weight, ranks);
  else if (!ret && inf->p.placement == STRATA_INFER_PLACE_CURVE)
    place_curve(inf, ranks);
  else if (!ret)
    ret = place_greedy(inf, t, nt, ranks);
  /* The work each rank is given: its elements' weights over its speed. */
  double *work = ret ? NULL : calloc((size_t)size, sizeof *work);
  for (int64_t i = 0; work && i < inf->nel; i++)
    work[ranks[i]] += weight[i] / speed[ranks[i]];
  double weights = 0;
  for (int64_t i = 0; work && i < inf->nel; i++)
    weights += weight[i];
  for (int r = 0; work && r < size; r++) {
    st->predicted_max = fmax(st->predicted_max, work[r]);
    st->predicted_mean += work[r] / size;
  }
  st->transfer_share = weights > 0 ? 1 - (double)inf->nel / weights : 0;
  free(work);
  free(weight);
  free(speed);
  return ret;
}

int strata__infer_apply_placement(strata_infer *inf, const int *ranks, strata_infer_stats *st)
{
  int ret = 0;
  for (int64_t i = 0; i < inf->nel && !ret; i++) {
    struct element *e = &inf->el[i];
    if (e->serial < 0) {
      e->serial = inf->next_serial++;
      e->rank = ranks[i];
      ret = register_element(inf, e);
      continue;
    }
    st->kept++;
    if (e->rank == ranks[i])
      continue;
    /* Populate overwrites all of an element's data: nothing to move, new
     * handles on the new rank instead. */
    strata__infer_drop_element(e);
    e->serial = inf->next_serial++;
    e->rank = ranks[i];
    st->migrated++;
    ret = register_element(inf, e);
  }
  return ret;
}
