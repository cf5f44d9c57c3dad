/* Phase 2, placement: each directory rank places its range of the level
 * array (allocate.c) from the costs that every rank's transfers send it.
 * The curve and measured policies need only sums over the ranks before
 * this one; the greedy policy orders every element, so it gathers their
 * costs on every rank. */
#include "amr.h"
#include "infer_impl.h"

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

/* A cost sent to the directory: the element's position, the cells its
 * transfers send, their seconds on a CPU worker (the bits of a double). */
enum { C_POS, C_CELLS, C_SECONDS, C_WIDTH };

/* Each directory entry's cells from the leaves (the greedy policy's cost)
 * and weight, in model tasks on a CPU worker: 1 plus the time its
 * transfers take on a CPU worker over the model's. A transfer takes its
 * cells at the seconds per cell of its kind (copy, restriction,
 * prolongation): what StarPU's histories of that codelet expect for the
 * footprints of every rank's transfers that have enough measurements, over
 * their cells (all kinds pooled for a kind without any). Per-footprint
 * times would move the cuts whenever a footprint passes StarPU's minimum
 * of samples. Every rank weighs its own leaves' transfers (into `seen`'s
 * elements) and sends the sums to the directory; all weights are 1 until
 * the model and some transfer have been measured. Collective. */
static int entry_costs(strata_infer *inf, const struct element *seen, const struct transfer *t,
                       int64_t nt, double model_cpu_seconds)
{
  enum { KINDS_OF_TRANSFER = 3, ALL = KINDS_OF_TRANSFER };
  double *cells = malloc((size_t)(nt + 1) * sizeof *cells);
  double *seconds = malloc((size_t)(nt + 1) * sizeof *seconds);
  int64_t *records = malloc((size_t)(nt + 1) * C_WIDTH * sizeof *records), nrec = 0;
  int *dest = malloc((size_t)(nt + 1) * sizeof *dest);
  int ret = strata__agree(cells && seconds && records && dest ? 0 : STRATA_ENOMEM, NULL, 0);
  const int cpu = starpu_worker_get_by_type(STARPU_CPU_WORKER, 0);
  double sums[2][KINDS_OF_TRANSFER + 1] = {{0}}; /* measured seconds, their cells */
  for (int64_t k = 0; !ret && k < nt; k++) {
    seconds[k] = cpu >= 0 ? strata__infer_transfer_seconds(inf, &t[k], cpu, &cells[k]) : NAN;
    if (seconds[k] >= 0) /* NAN compares false */
      for (int c = 0; c < 2; c++) {
        const int kind = c ? ALL : t[k].kind;
        sums[0][kind] += seconds[k], sums[1][kind] += cells[k];
      }
  }
  if (!ret && MPI_Allreduce(MPI_IN_PLACE, sums, 2 * (KINDS_OF_TRANSFER + 1), MPI_DOUBLE, MPI_SUM,
                            inf->mesh->meta) != MPI_SUCCESS)
    ret = STRATA_EMPI;
  const int weighed = !ret && sums[1][ALL] > 0 && model_cpu_seconds > 0; /* NAN compares false */
  /* One record per element: the transfers are in element order. */
  double w = 0;
  for (int64_t k = 0; !ret && k < nt; k++) {
    const struct element *e = &seen[t[k].element];
    if (!k || t[k].element != t[k - 1].element) {
      int64_t *c = records + C_WIDTH * nrec;
      dest[nrec++] = strata__infer_directory_rank(inf, e->key);
      c[C_POS] = e->pos, c[C_CELLS] = 0, w = 0;
    }
    const int kind = sums[1][t[k].kind] > 0 ? t[k].kind : ALL;
    int64_t *c = records + C_WIDTH * (nrec - 1);
    c[C_CELLS] += strata__infer_piece_cells(inf, &t[k]);
    w += weighed ? cells[k] * sums[0][kind] / sums[1][kind] : 0;
    memcpy(&c[C_SECONDS], &w, sizeof w);
  }
  free(cells), free(seconds);
  int64_t *got = NULL, ngot = 0;
  if (!ret)
    ret = strata__exchange_records(inf->mesh->meta, 0, records, dest, nrec, C_WIDTH, &got, &ngot,
                                   NULL);
  free(records), free(dest);
  for (int64_t i = 0; !ret && i < inf->ndir; i++)
    inf->dir[i].cells = inf->dir[i].weight = 0;
  for (int64_t k = 0; !ret && k < ngot; k++) {
    const int64_t *c = got + C_WIDTH * k;
    struct directory_entry *e = &inf->dir[c[C_POS] - inf->dir_first];
    double s;
    memcpy(&s, &c[C_SECONDS], sizeof s);
    e->cells += (double)c[C_CELLS];
    e->weight += s;
  }
  for (int64_t i = 0; !ret && i < inf->ndir; i++)
    inf->dir[i].weight = weighed ? 1 + inf->dir[i].weight / model_cpu_seconds : 1;
  free(got);
  return ret;
}

/* The weights of the measured policy as integers (2^-20 of a model task),
 * so that the sums over ranks are exact and every rank cuts alike. */
static int64_t quantum(double weight) { return llround(weight * 1048576.0); }

/* The measured policy: the Morton curve cut into shares of the elements'
 * weights proportional to the ranks' speeds. Each cut may move by 1 % of
 * the smaller of its two shares, to where it moves the fewest kept
 * elements (within the directory range holding its balanced point); then
 * kept elements cut away return while their rank stays within 2 % of its
 * share (the ranks before this one in the directory asking first).
 * Balance first, then no needless migration. Collective. */
static int place_measured(strata_infer *inf, const double *speed, int *ranks)
{
  const int size = inf->mesh->size;
  const int64_t m = inf->ndir, g0 = inf->dir_first;
  MPI_Comm comm = inf->mesh->meta;
  int64_t *before = malloc((size_t)(m + 1) * sizeof *before); /* [c]: weight of [0, g0 + c) */
  int64_t *cut = malloc((size_t)size * sizeof *cut);          /* each rank's end */
  int64_t *load = calloc((size_t)(3 * size), sizeof *load), *asked = load + size,
          *granted = load + 2 * size;
  int ret = strata__agree(before && cut && load ? 0 : STRATA_ENOMEM, NULL, 0);
  int64_t mine = 0, first = 0, weights = 0;
  for (int64_t i = 0; !ret && i < m; i++)
    mine += quantum(inf->dir[i].weight);
  if (!ret && (MPI_Exscan(&mine, &first, 1, MPI_INT64_T, MPI_SUM, comm) ||
               MPI_Allreduce(&mine, &weights, 1, MPI_INT64_T, MPI_SUM, comm)))
    ret = STRATA_EMPI;
  if (ret) {
    free(before), free(cut), free(load);
    return ret;
  }
  before[0] = inf->mesh->rank ? first : 0; /* Exscan leaves rank 0's undefined */
  for (int64_t i = 0; i < m; i++)
    before[i + 1] = before[i] + quantum(inf->dir[i].weight);
  double total = 0, cum = 0;
  for (int r = 0; r < size; r++)
    total += speed[r];
  int64_t start = 0; /* in the range */
  for (int r = 0; r < size - 1; r++) {
    cum += speed[r];
    const double ideal = (double)weights * cum / total;
    const double slack = 0.01 * (double)weights * fmin(speed[r], speed[r + 1]) / total;
    cut[r] = -1;
    if (!(m > 0 && (double)before[0] <= ideal && ideal < (double)before[m]))
      continue; /* another directory rank's cut */
    /* The cuts within the slack, or the two around the ideal. */
    int64_t lo = start, hi, end = start;
    while (lo < m && (double)before[lo] < ideal - slack)
      lo++;
    hi = lo;
    while (hi < m && (double)before[hi + 1] <= ideal + slack)
      hi++;
    if ((double)before[lo] > ideal + slack && lo > start)
      lo--;
    double best = INFINITY, moves = 0; /* kept elements moved, relative to a cut at lo */
    for (int64_t c = lo; c <= hi; c++) {
      double cost = moves + fabs((double)before[c] - ideal) / ((double)weights + 1);
      if (cost < best)
        best = cost, end = c;
      if (c < m && inf->dir[c].serial >= 0)
        moves += inf->dir[c].rank > r ? 1 : -1;
    }
    cut[r] = g0 + end;
    start = end;
  }
  cut[size - 1] = inf->elements;
  if (MPI_Allreduce(MPI_IN_PLACE, cut, size - 1, MPI_INT64_T, MPI_MAX, comm))
    ret = STRATA_EMPI;
  for (int r = 0; r < size - 1; r++) /* beyond the last weight: the end */
    cut[r] = cut[r] < 0 ? inf->elements : cut[r];
  for (int64_t i = 0, r = 0; i < m; i++) {
    while (r < size - 1 && cut[r] <= g0 + i)
      r++;
    ranks[i] = (int)r;
  }
  free(before);
  free(cut);
  /* Then kept elements cut away from their rank go back while that rank
   * stays within 2 % of its share. */
  for (int64_t i = 0; i < m; i++) {
    const struct directory_entry *e = &inf->dir[i];
    load[ranks[i]] += quantum(e->weight);
    if (e->serial >= 0 && e->rank != ranks[i])
      asked[e->rank] += quantum(e->weight);
  }
  if (!ret && (MPI_Allreduce(MPI_IN_PLACE, load, size, MPI_INT64_T, MPI_SUM, comm) ||
               MPI_Exscan(MPI_IN_PLACE, asked, size, MPI_INT64_T, MPI_SUM, comm)))
    ret = STRATA_EMPI;
  for (int r = 0; inf->mesh->rank == 0 && r < size; r++)
    asked[r] = 0;
  for (int64_t i = 0; !ret && i < m; i++) {
    const struct directory_entry *e = &inf->dir[i];
    if (e->serial < 0 || e->rank == ranks[i])
      continue;
    const int64_t w = quantum(e->weight);
    if ((double)(load[e->rank] + asked[e->rank] + granted[e->rank] + w) <=
        1.02 * (double)weights * speed[e->rank] / total) {
      granted[e->rank] += w;
      granted[ranks[i]] -= w;
      ranks[i] = e->rank;
    }
  }
  free(load);
  return ret;
}

/* The curve policy: equal counts along the Morton curve. */
static void place_curve(strata_infer *inf, int *ranks)
{
  for (int64_t i = 0; i < inf->ndir; i++)
    ranks[i] = (int)((inf->dir_first + i) * inf->mesh->size / inf->elements);
}

/* An element's greedy cost and position, as gathered. */
struct greedy_cost {
  double cost;
  int64_t pos;
};

static int cost_cmp(const void *x, const void *y)
{
  const struct greedy_cost *a = x, *b = y;
  if (a->cost != b->cost)
    return a->cost < b->cost ? 1 : -1;
  return (a->pos > b->pos) - (a->pos < b->pos);
}

/* The greedy policy: largest estimated cost (its inference's cells plus
 * those its leaves send) onto the least loaded rank. It orders every
 * element: their costs are gathered on every rank. Collective. */
static int place_greedy(strata_infer *inf, int *ranks)
{
  const int size = inf->mesh->size;
  double *mine = malloc((size_t)(inf->ndir + 1) * sizeof *mine), *load = NULL;
  int ret = strata__agree(mine ? 0 : STRATA_ENOMEM, NULL, 0);
  for (int64_t i = 0; !ret && i < inf->ndir; i++)
    mine[i] = (double)(inf->n * inf->n * inf->n) + inf->dir[i].cells;
  void *gathered = NULL;
  int64_t n = 0;
  if (!ret)
    ret = strata__infer_allgather_values(inf->mesh, mine, inf->ndir, MPI_DOUBLE, &gathered, &n);
  free(mine);
  const double *cost = gathered;
  struct greedy_cost *order = ret ? NULL : malloc((size_t)(n + 1) * sizeof *order);
  int *all = ret ? NULL : malloc((size_t)(n + 1) * sizeof *all);
  load = ret ? NULL : calloc((size_t)size, sizeof *load);
  if (!ret)
    ret = strata__agree(order && all && load ? 0 : STRATA_ENOMEM, NULL, 0);
  for (int64_t i = 0; !ret && i < n; i++)
    order[i] = (struct greedy_cost){cost[i], i};
  if (!ret)
    qsort(order, (size_t)n, sizeof *order, cost_cmp);
  for (int64_t i = 0; !ret && i < n; i++) {
    int best = 0;
    for (int q = 1; q < size; q++)
      if (load[q] < load[best])
        best = q;
    load[best] += order[i].cost;
    all[order[i].pos] = best;
  }
  for (int64_t i = 0; !ret && i < inf->ndir; i++)
    ranks[i] = all[inf->dir_first + i];
  free(gathered), free(order), free(all), free(load);
  return ret;
}

int strata__infer_place(strata_infer *inf, const struct element *seen, const struct transfer *t,
                        int64_t nt, int *ranks, strata_infer_stats *st)
{
  const int size = inf->mesh->size;
  double *speed = malloc((size_t)size * sizeof *speed), model_cpu_seconds = NAN;
  double *work = calloc((size_t)size + 2, sizeof *work); /* per rank, then weights, elements */
  int ret = strata__agree(speed && work ? 0 : STRATA_ENOMEM, NULL, 0);
  if (!ret)
    ret = gather_speeds(inf, speed, &model_cpu_seconds);
  if (!ret)
    ret = entry_costs(inf, seen, t, nt,
                      inf->p.placement == STRATA_INFER_PLACE_MEASURED ? model_cpu_seconds : NAN);
  if (!ret && inf->p.placement == STRATA_INFER_PLACE_MEASURED)
    ret = place_measured(inf, speed, ranks);
  else if (!ret && inf->p.placement == STRATA_INFER_PLACE_CURVE)
    place_curve(inf, ranks);
  else if (!ret)
    ret = place_greedy(inf, ranks);
  /* The work each rank is given: its elements' weights over its speed. */
  for (int64_t i = 0; !ret && i < inf->ndir; i++) {
    work[ranks[i]] += inf->dir[i].weight / speed[ranks[i]];
    work[size] += inf->dir[i].weight;
    work[size + 1] += 1;
  }
  if (!ret && MPI_Allreduce(MPI_IN_PLACE, work, size + 2, MPI_DOUBLE, MPI_SUM, inf->mesh->meta))
    ret = STRATA_EMPI;
  for (int r = 0; !ret && r < size; r++) {
    st->predicted_max = fmax(st->predicted_max, work[r]);
    st->predicted_mean += work[r] / size;
  }
  st->transfer_share = !ret && work[size] > 0 ? 1 - work[size + 1] / work[size] : 0;
  free(work);
  free(speed);
  return ret;
}
