/* Inference arrays on the AMR hierarchy: the five phases of Enzo-E's
 * EnzoMethodInference as a StarPU-MPI task graph (see strata/infer.h and
 * docs/infer.md).
 *
 * Every rank knows the whole tree, so every rank computes the same plan:
 * which masks exist and who owns them, which elements exist, which leaf
 * sends what to which element and at which offset of which message. Data
 * only moves where it is needed: masks through StarPU-MPI tasks, leaf
 * parts and bubble tables in one packed message per pair of ranks (the
 * per-message cost of StarPU-MPI dominates small transfers). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <starpu_mpi.h>
#include <strata/infer.h>
#include <strata/starpu.h>

#include "amr_internal.h"
#include "codelets.h"
#include "internal/exchange.h"
#include "internal/model.h"
#include "internal/runtime.h"
#include "kernels/amr_kernels.h"
#include "kernels/bubble_kernels.h"
#include "kernels/infer_kernels.h"

enum { TABLE_COLUMNS = STRATA__BUBBLE_FIELDS };

/* One element of the level array. */
struct element {
  int64_t idx[3];
  uint64_t key; /* Morton key of idx: the order of the level array */
  int rank;
  int64_t serial;                      /* StarPU-MPI tags of its handles */
  starpu_data_handle_t in, out, table; /* [C N^3] f32, [N^3] f32, bubble table */
  double cost;                         /* placement estimate */
};

/* The mask of one block at level >= level_base. */
struct mask {
  strata_amr_block b;
  uint64_t key;
  int64_t cells; /* per axis */
  int64_t first; /* Morton position of its first leaf (owner: that leaf's rank) */
  int rank;
  starpu_data_handle_t h;
};

/* A leaf's bubble list, on its owner. */
struct leaf_list {
  strata_amr_block b;
  uint64_t key;
  starpu_data_handle_t h;
};

/* One leaf-to-element transfer, overlap in cells of level_infer. */
struct transfer {
  int64_t element;
  struct strata__amr_node *leaf;
  int kind; /* enum strata__amr_kind */
  int64_t lo[3], hi[3];
  int64_t offset; /* in the message between the two ranks, when they differ */
};

struct strata_infer {
  strata_amr *amr;
  strata_infer_params p;
  int64_t n;         /* array cells per axis */
  strata__tags tags; /* StarPU-MPI tags: elements, masks, mailboxes */
  int64_t cycles;
  int64_t next_serial;
  struct element *el;
  int64_t nel;
  struct mask *masks;
  int64_t nmasks;
  struct leaf_list *lists;
  int64_t nlists;
  starpu_data_handle_t bubble_scratch;
  double phase_end[STRATA_INFER_PHASES]; /* seconds after the cycle's start, this rank */
  double t0;
  starpu_pthread_mutex_t lock; /* phase_end, written from callbacks */
  strata__live live;
};

const char *strata_infer_phase_name(int phase)
{
  static const char *const names[STRATA_INFER_PHASES] = {"evaluate", "allocate", "populate",
                                                         "apply", "update"};
  return phase >= 0 && phase < STRATA_INFER_PHASES ? names[phase] : "";
}

void strata_infer_params_init(strata_infer_params *p)
{
  if (!p)
    return;
  *p = (strata_infer_params){.level_base = 2,
                             .level_array = 4,
                             .level_infer = 5,
                             .overdensity_threshold = 32,
                             .reference_value = 1,
                             .bubble_threshold = 0.5f,
                             .bubble_min_cells = 1,
                             .bubble_capacity = 64,
                             .marker_field = -1};
}

/* Interleave the low 21 bits of x, y, z. */
static uint64_t morton(const int64_t idx[3])
{
  uint64_t key = 0;
  for (int bit = 20; bit >= 0; bit--)
    for (int a = 2; a >= 0; a--)
      key = key << 1 | (((uint64_t)idx[a] >> bit) & 1);
  return key;
}

static int is_double(const strata_infer *inf) { return inf->amr->p.dtype == STRATA_FLOAT64; }
static size_t amr_elemsize(const strata_infer *inf) { return is_double(inf) ? 8 : 4; }
static int64_t table_len(const strata_infer *inf)
{
  return (1 + (int64_t)inf->p.bubble_capacity) * TABLE_COLUMNS;
}

/* ---- creation ---- */

int strata_infer_check_geometry(const strata_amr_params *a, const strata_infer_params *p)
{
  strata__clear_error();
  if (!a || !p)
    return STRATA_EINVAL;
  if (a->dim != 3)
    return strata__fail(STRATA_EINVAL, "inference arrays need a 3-D hierarchy");
  if (a->max_level < 0 || a->max_level > STRATA_AMR_MAX_LEVEL || a->block_cells < 1)
    return strata__fail(STRATA_EINVAL, "max_level %d or block_cells %d out of range", a->max_level,
                        a->block_cells);
  if (p->level_base < 0 || p->level_base > p->level_array || p->level_array > p->level_infer ||
      p->level_infer > a->max_level)
    return strata__fail(STRATA_EINVAL,
                        "need 0 <= level_base (%d) <= level_array (%d) <= level_infer (%d) <= "
                        "max_level (%d)",
                        p->level_base, p->level_array, p->level_infer, a->max_level);
  if (((int64_t)1 << (p->level_array - p->level_base)) > a->block_cells ||
      a->block_cells % (1 << (p->level_array - p->level_base)))
    return strata__fail(STRATA_EINVAL,
                        "a level_base block holds 2^(level_array - level_base) = %d elements per "
                        "axis, more than its %d cells",
                        1 << (p->level_array - p->level_base), a->block_cells);
  if (a->block_cells % (1 << (a->max_level - p->level_infer)))
    return strata__fail(STRATA_EINVAL,
                        "leaves of level %d do not restrict to whole cells of level_infer %d "
                        "(block_cells %d)",
                        a->max_level, p->level_infer, a->block_cells);
  if (((int64_t)a->block_cells << (p->level_infer - p->level_array)) > 1024)
    return strata__fail(STRATA_EINVAL, "inference arrays of more than 1024 cells per axis");
  return 0;
}

static int check_params(const strata_amr *amr, strata_infer_params *p)
{
  const strata_amr_params *a = &amr->p;
  int ret = strata_infer_check_geometry(a, p);
  if (ret)
    return ret;
  if (!p->model)
    return strata__fail(STRATA_EINVAL, "no model");
  int in_ch = 0, out_ch = 0;
  strata_model_output kind;
  strata_model_describe(p->model, &in_ch, &out_ch, &kind);
  if (out_ch != 1 || kind != STRATA_MODEL_PROBABILITY)
    return strata__fail(STRATA_EINVAL, "model '%s' must output one probability channel",
                        strata_model_name(p->model));
  if (p->n_fields == 0) {
    /* The model's named fields, else field 0. */
    p->n_fields = in_ch;
    for (int c = 0; c < in_ch; c++) {
      const char *name = strata_model_input_field(p->model, c);
      p->fields[c] = name || in_ch > 1 ? -1 : 0;
      for (int f = 0; name && f < a->nfields; f++)
        if (!strcmp(name, amr->names[f]))
          p->fields[c] = f;
      if (p->fields[c] < 0)
        return strata__fail(STRATA_EINVAL, "model input '%s' is not a field of the hierarchy",
                            name ? name : "(unnamed)");
    }
  }
  if (p->n_fields != in_ch || p->n_fields > STRATA_AMR_MAX_FIELDS)
    return strata__fail(STRATA_EINVAL, "%d fields for a model of %d input channels", p->n_fields,
                        in_ch);
  for (int c = 0; c < p->n_fields; c++)
    if (p->fields[c] < 0 || p->fields[c] >= a->nfields || p->fields[c] == p->marker_field)
      return strata__fail(STRATA_EINVAL, "transferred field %d out of range or the marker",
                          p->fields[c]);
  if (p->criterion_field < 0 || p->criterion_field >= a->nfields ||
      p->criterion_field == p->marker_field)
    return strata__fail(STRATA_EINVAL, "criterion field %d out of range or the marker",
                        p->criterion_field);
  if (p->marker_field < -1 || p->marker_field >= a->nfields)
    return strata__fail(STRATA_EINVAL, "marker field %d out of range", p->marker_field);
  if (!(p->overdensity_threshold > 0) || !isfinite(p->overdensity_threshold) ||
      (p->reference == STRATA_INFER_FIXED && !isfinite(p->reference_value)) ||
      (p->reference != STRATA_INFER_BLOCK_MEAN && p->reference != STRATA_INFER_FIXED))
    return strata__fail(STRATA_EINVAL, "bad criterion threshold or reference");
  if (p->bubble_capacity < 1 || p->bubble_capacity > 65536 || p->bubble_min_cells < 1 ||
      !(p->bubble_threshold >= 0 && p->bubble_threshold < 1))
    return strata__fail(STRATA_EINVAL, "bad bubble parameters");
  if (p->placement != STRATA_INFER_PLACE_CURVE && p->placement != STRATA_INFER_PLACE_GREEDY)
    return strata__fail(STRATA_EINVAL, "unknown placement policy");
  return strata__model_check_extent(p->model,
                                    (int64_t)a->block_cells << (p->level_infer - p->level_array));
}

static int destroy_live(void *inf) { return strata_infer_destroy(inf); }

int strata_infer_create(strata_amr *amr, const strata_infer_params *params, strata_infer **out)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!amr || !params || !out)
    return STRATA_EINVAL;
  *out = NULL;
  strata_infer_params p = *params;
  int local = check_params(amr, &p);
  int64_t same[] = {p.level_base,      p.level_array,     p.level_infer,     p.n_fields,
                    p.criterion_field, p.reference,       p.bubble_capacity, p.marker_field,
                    p.placement,       p.bulk_synchronous};
  ret = strata__agree(local, same, (int)(sizeof same / sizeof *same));
  if (ret)
    return local ? local : ret;
  strata_infer *inf = calloc(1, sizeof *inf);
  if ((ret = strata__agree(inf ? 0 : STRATA_ENOMEM, NULL, 0)) ||
      (ret = strata__tags_take(strata__coll_comm(), "infer", &inf->tags))) {
    free(inf);
    return ret;
  }
  inf->amr = amr;
  inf->p = p;
  inf->n = (int64_t)amr->p.block_cells << (p.level_infer - p.level_array);
  inf->bubble_scratch = strata__scratch_register(strata__bubbles_scratch_bytes(inf->n));
  starpu_pthread_mutex_init(&inf->lock, NULL);
  strata__live_add(&strata__objects, &inf->live, "inference method", inf, destroy_live);
  *out = inf;
  return 0;
}

static void drop_element(struct element *e)
{
  starpu_data_unregister_submit(e->in);
  starpu_data_unregister_submit(e->out);
  starpu_data_unregister_submit(e->table);
}

static void drop_masks(strata_infer *inf)
{
  for (int64_t i = 0; i < inf->nmasks; i++)
    if (inf->masks[i].h) /* NULL: not registered, the cycle failed first */
      starpu_data_unregister_submit(inf->masks[i].h);
  free(inf->masks);
  inf->masks = NULL;
  inf->nmasks = 0;
}

static void drop_lists(strata_infer *inf)
{
  for (int64_t i = 0; i < inf->nlists; i++)
    starpu_data_unregister_submit(inf->lists[i].h);
  free(inf->lists);
  inf->lists = NULL;
  inf->nlists = 0;
}

int strata_infer_destroy(strata_infer *inf)
{
  if (!inf)
    return 0;
  int ret = strata__check_ready();
  if (ret)
    return ret;
  strata__live_remove(&inf->live);
  starpu_task_wait_for_all();
  for (int64_t i = 0; i < inf->nel; i++)
    drop_element(&inf->el[i]);
  free(inf->el);
  drop_masks(inf);
  drop_lists(inf);
  starpu_data_unregister_submit(inf->bubble_scratch);
  starpu_task_wait_for_all();
  starpu_pthread_mutex_destroy(&inf->lock);
  strata__tags_release(&inf->tags);
  free(inf);
  return 0;
}

int64_t strata_infer_array_cells(const strata_infer *inf) { return inf ? inf->n : 0; }

const strata_infer_params *strata_infer_get_params(const strata_infer *inf)
{
  return inf ? &inf->p : NULL;
}

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

/* Record when the last writer of `h` so far finishes, without waiting. */
static void note_phase_end(strata_infer *inf, int phase, starpu_data_handle_t h)
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

/* ---- phase 1: evaluate ---- */

static int block_cmp(const strata_amr_block *a, uint64_t ka, const strata_amr_block *b, uint64_t kb)
{
  if (a->level != b->level)
    return a->level < b->level ? -1 : 1;
  return ka < kb ? -1 : ka > kb;
}

static int mask_cmp(const void *x, const void *y)
{
  const struct mask *a = x, *b = y;
  int c = block_cmp(&a->b, a->key, &b->b, b->key);
  return c ? c : (a->first > b->first) - (a->first < b->first);
}

static struct mask *find_mask(const strata_infer *inf, const strata_amr_block *b)
{
  struct mask key = {.b = *b, .key = morton(b->index), .first = -1};
  int64_t lo = 0, hi = inf->nmasks;
  while (lo < hi) {
    int64_t mid = (lo + hi) / 2;
    int c = block_cmp(&inf->masks[mid].b, inf->masks[mid].key, &key.b, key.key);
    if (!c)
      return &inf->masks[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

static int64_t mask_cells(const strata_infer *inf, int level)
{
  return level >= inf->p.level_array ? 1 : (int64_t)1 << (inf->p.level_array - level);
}

/* The masks: every leaf at level >= level_base and its ancestors down to
 * level_base, sorted by level then Morton key, owned by their first leaf's
 * rank. */
static int plan_masks(strata_infer *inf)
{
  const strata_amr *amr = inf->amr;
  const int lb = inf->p.level_base;
  int64_t cap = 0;
  for (int64_t i = 0; i < amr->nleaves; i++)
    if (amr->leaves[i]->b.level >= lb)
      cap += amr->leaves[i]->b.level - lb + 1;
  inf->masks = calloc((size_t)(cap ? cap : 1), sizeof *inf->masks);
  if (!inf->masks)
    return STRATA_ENOMEM;
  int64_t n = 0;
  for (int64_t i = 0; i < amr->nleaves; i++) {
    const struct strata__amr_node *leaf = amr->leaves[i];
    strata_amr_block b = leaf->b;
    for (; b.level >= lb; b.level--) {
      inf->masks[n++] =
          (struct mask){.b = b, .key = morton(b.index), .first = leaf->pos, .rank = leaf->rank};
      for (int a = 0; a < 3; a++)
        b.index[a] >>= 1;
    }
  }
  qsort(inf->masks, (size_t)n, sizeof *inf->masks, mask_cmp);
  int64_t u = 0;
  for (int64_t i = 0; i < n; i++)
    if (!u ||
        block_cmp(&inf->masks[u - 1].b, inf->masks[u - 1].key, &inf->masks[i].b, inf->masks[i].key))
      inf->masks[u++] = inf->masks[i]; /* the first of equals has the smallest position */
  inf->nmasks = u;
  return 0;
}

/* Mask i of this cycle's tag; at most 2^26 masks a cycle. */
static int mask_tag(const strata_infer *inf, int64_t i, int64_t *tag)
{
  strata__tags masks;
  strata__tags_part(&inf->tags, 1, 4, &masks);
  if (i >= (INT64_C(1) << 26))
    return strata__fail(STRATA_ENOMEM, "infer: more than 2^26 criterion masks");
  return strata__tag(&masks, (inf->cycles << 26) + i, tag);
}

static int submit_evaluate(strata_infer *inf)
{
  strata_amr *amr = inf->amr;
  int64_t last_tag;
  int ret = plan_masks(inf);
  if (!ret && inf->nmasks)
    ret = mask_tag(inf, inf->nmasks - 1, &last_tag);
  for (int64_t i = 0; i < inf->nmasks && !ret; i++) {
    struct mask *m = &inf->masks[i];
    m->cells = mask_cells(inf, m->b.level);
    int64_t tag;
    mask_tag(inf, i, &tag); /* checked for the last mask below */
    starpu_vector_data_register(&m->h, -1, 0, (uint32_t)(m->cells * m->cells * m->cells), 1);
    starpu_mpi_data_register(m->h, tag, m->rank);
    struct strata__amr_node *node = strata__amr_find(amr, &m->b);
    if (node && node->is_leaf) {
      struct strata__infer_criterion c = {.is_double = is_double(inf),
                                          .ghost = amr->p.ghost_depth,
                                          .cells = amr->p.block_cells,
                                          .mask = m->cells,
                                          .local_mean = inf->p.reference == STRATA_INFER_BLOCK_MEAN,
                                          .threshold = inf->p.overdensity_threshold,
                                          .reference = inf->p.reference_value};
      ret = strata__infer_criterion_submit(amr->comm, node->h[inf->p.criterion_field], m->h, &c);
    } else {
      struct strata__amr_fill zero = {0};
      ret = strata__amr_fill_submit(amr->comm, m->h, &zero);
    }
  }
  /* Children into parents, finest level first, so that a parent is
   * complete before it merges into its own parent. */
  for (int64_t i = inf->nmasks - 1; i >= 0 && !ret; i--) {
    const struct mask *child = &inf->masks[i];
    if (child->b.level == inf->p.level_base)
      break;
    strata_amr_block pb = child->b;
    pb.level--;
    struct strata__infer_merge mg = {.child = child->cells};
    for (int a = 0; a < 3; a++) {
      pb.index[a] >>= 1;
      mg.offset[a] = pb.level >= inf->p.level_array ? 0 : (child->b.index[a] & 1) * child->cells;
    }
    const struct mask *parent = find_mask(inf, &pb);
    mg.parent = parent->cells;
    ret = strata__infer_merge_submit(amr->comm, child->h, parent->h, &mg);
  }
  /* The marker field restarts from zero every cycle. */
  for (int64_t i = 0; i < amr->nleaves && !ret && inf->p.marker_field >= 0; i++)
    if (amr->leaves[i]->rank == amr->rank) {
      struct strata__amr_fill zero = {0};
      ret = strata__amr_fill_submit(MPI_COMM_NULL, amr->leaves[i]->h[inf->p.marker_field], &zero);
    }
  return ret;
}

/* ---- phase 2: allocate ---- */

static int element_cmp(const void *x, const void *y)
{
  const struct element *a = x, *b = y;
  return (a->key > b->key) - (a->key < b->key);
}

static struct element *find_element(const strata_infer *inf, const int64_t idx[3])
{
  struct element key = {.key = morton(idx)};
  return bsearch(&key, inf->el, (size_t)inf->nel, sizeof *inf->el, element_cmp);
}

/* Every rank's `n` 8-byte values of `type` concatenated in rank order, on
 * every rank: *all (malloc'd) and *total. Collective; errors agreed. */
static int allgather_values(const strata_amr *amr, const void *mine, int64_t n, MPI_Datatype type,
                            void **all, int64_t *total)
{
  int *counts = calloc((size_t)amr->size, sizeof *counts);
  int *displs = calloc((size_t)amr->size, sizeof *displs);
  int ret = strata__agree(counts && displs ? 0 : STRATA_ENOMEM, NULL, 0);
  *all = NULL;
  *total = 0;
  if (!ret) {
    int mine_count = (int)n;
    MPI_Allgather(&mine_count, 1, MPI_INT, counts, 1, MPI_INT, amr->meta);
    for (int r = 0; r < amr->size; r++) {
      displs[r] = (int)*total;
      *total += counts[r];
    }
    *all = malloc((size_t)(*total + 1) * 8);
    ret = strata__agree(*all ? 0 : STRATA_ENOMEM, NULL, 0);
  }
  if (!ret)
    MPI_Allgatherv(mine, (int)n, type, *all, counts, displs, type, amr->meta);
  else {
    free(*all);
    *all = NULL;
  }
  free(counts);
  free(displs);
  return ret;
}

/* The elements marked in this rank's level_base masks, gathered on every
 * rank, sorted and unique. */
static int gather_needed(strata_infer *inf, int64_t **idx_out, int64_t *n_out)
{
  strata_amr *amr = inf->amr;
  int64_t cap = 0, n = 0;
  for (int64_t i = 0; i < inf->nmasks; i++)
    if (inf->masks[i].b.level == inf->p.level_base && inf->masks[i].rank == amr->rank)
      cap += inf->masks[i].cells * inf->masks[i].cells * inf->masks[i].cells;
  int64_t *mine = malloc((size_t)(3 * cap + 1) * sizeof *mine);
  int ret = mine ? 0 : STRATA_ENOMEM;
  for (int64_t i = 0; i < inf->nmasks && !ret; i++) {
    struct mask *m = &inf->masks[i];
    if (m->b.level != inf->p.level_base || m->rank != amr->rank)
      continue;
    if (strata__acquire(m->h, STARPU_R) != 0) {
      ret = STRATA_ESTARPU;
      break;
    }
    const uint8_t *bits = (const void *)starpu_vector_get_local_ptr(m->h);
    for (int64_t c = 0; c < m->cells * m->cells * m->cells; c++)
      if (bits[c]) {
        int64_t cell[3] = {c % m->cells, c / m->cells % m->cells, c / (m->cells * m->cells)};
        for (int a = 0; a < 3; a++)
          mine[3 * n + a] = m->b.index[a] * m->cells + cell[a];
        n++;
      }
    starpu_data_release(m->h);
  }
  int err = strata__agree(ret, NULL, 0);
  void *all = NULL;
  int64_t total = 0;
  if (!err)
    err = allgather_values(amr, mine, 3 * n, MPI_INT64_T, &all, &total);
  free(mine);
  if (err)
    return ret ? ret : err;
  *idx_out = all;
  *n_out = total / 3;
  return 0;
}

static int register_element(strata_infer *inf, struct element *e)
{
  const int64_t cells = inf->n * inf->n * inf->n;
  strata__tags elements;
  int64_t tag;
  strata__tags_part(&inf->tags, 0, 4, &elements);
  int ret = strata__tag(&elements, e->serial * 4 + 2, &tag);
  if (ret)
    return ret;
  starpu_vector_data_register(&e->in, -1, 0, (uint32_t)(cells * inf->p.n_fields), sizeof(float));
  starpu_vector_data_register(&e->out, -1, 0, (uint32_t)cells, sizeof(float));
  starpu_vector_data_register(&e->table, -1, 0, (uint32_t)table_len(inf), sizeof(double));
  starpu_mpi_data_register(e->in, tag - 2, e->rank);
  starpu_mpi_data_register(e->out, tag - 1, e->rank);
  starpu_mpi_data_register(e->table, tag, e->rank);
  if (e->rank != inf->amr->rank)
    return 0;
  /* A first write, so that the transfers may read-modify-write it. */
  struct strata__amr_fill zero = {0};
  return strata__amr_fill_submit(MPI_COMM_NULL, e->in, &zero);
}

/* Merge the needed elements into the level array: kept elements keep their
 * handles, new ones are marked (serial -1) for placement, gone ones are
 * unregistered. */
static int update_level_array(strata_infer *inf, const int64_t *idx, int64_t n,
                              strata_infer_stats *st)
{
  struct element *next = calloc((size_t)(n ? n : 1), sizeof *next);
  if (!next)
    return STRATA_ENOMEM;
  for (int64_t i = 0; i < n; i++) {
    memcpy(next[i].idx, idx + 3 * i, sizeof next[i].idx);
    next[i].key = morton(next[i].idx);
    next[i].serial = -1;
  }
  qsort(next, (size_t)n, sizeof *next, element_cmp);
  int64_t u = 0;
  for (int64_t i = 0; i < n; i++)
    if (!u || next[u - 1].key != next[i].key)
      next[u++] = next[i];
  n = u;
  int64_t i = 0, j = 0;
  for (; i < n; i++) {
    while (j < inf->nel && inf->el[j].key < next[i].key)
      drop_element(&inf->el[j++]), st->removed++;
    if (j < inf->nel && inf->el[j].key == next[i].key)
      next[i] = inf->el[j++];
    else
      st->created++;
  }
  for (; j < inf->nel; j++)
    drop_element(&inf->el[j]), st->removed++;
  free(inf->el);
  inf->el = next;
  inf->nel = n;
  return 0;
}

/* ---- transfers between leaves and elements ---- */

struct plan {
  strata_infer *inf;
  int64_t element;
  struct transfer *t;
  int64_t n, cap;
};

static int64_t element_lo(const strata_infer *inf, const struct element *e, int a)
{
  return e->idx[a] * inf->n;
}

static int add_transfer(void *ctx, struct strata__amr_node *leaf)
{
  struct plan *pl = ctx;
  strata_infer *inf = pl->inf;
  if (pl->n == pl->cap) {
    int64_t cap = pl->cap ? 2 * pl->cap : 256;
    struct transfer *t = realloc(pl->t, (size_t)cap * sizeof *t);
    if (!t)
      return STRATA_ENOMEM;
    pl->t = t;
    pl->cap = cap;
  }
  const struct element *e = &inf->el[pl->element];
  const int li = inf->p.level_infer, l = leaf->b.level;
  const int64_t m = inf->amr->p.block_cells;
  struct transfer *t = &pl->t[pl->n++];
  *t = (struct transfer){.element = pl->element,
                         .leaf = leaf,
                         .kind = l == li  ? STRATA__AMR_COPY
                                 : l > li ? STRATA__AMR_RESTRICT
                                          : STRATA__AMR_PROLONG};
  for (int a = 0; a < 3; a++) {
    int64_t llo = l <= li ? (leaf->b.index[a] * m) << (li - l) : (leaf->b.index[a] * m) >> (l - li);
    int64_t lhi = l <= li ? ((leaf->b.index[a] + 1) * m) << (li - l)
                          : ((leaf->b.index[a] + 1) * m) >> (l - li);
    int64_t elo = element_lo(inf, e, a), ehi = elo + inf->n;
    t->lo[a] = llo > elo ? llo : elo;
    t->hi[a] = lhi < ehi ? lhi : ehi;
  }
  return 0;
}

/* Every (element, leaf) pair, elements in Morton order, leaves in tree
 * order: the same list on every rank. */
static int plan_transfers(strata_infer *inf, struct transfer **out, int64_t *n)
{
  struct plan pl = {.inf = inf};
  const int la = inf->p.level_array;
  const int64_t m = inf->amr->p.block_cells;
  int ret = 0;
  for (int64_t i = 0; i < inf->nel && !ret; i++) {
    pl.element = i;
    int64_t lo[3], hi[3];
    for (int a = 0; a < 3; a++) {
      lo[a] = inf->el[i].idx[a] * m;
      hi[a] = lo[a] + m;
    }
    ret = strata__amr_visit_box(inf->amr, la, lo, hi, add_transfer, &pl);
  }
  *out = pl.t;
  *n = pl.n;
  return ret;
}

static int64_t cells_of(const int64_t lo[3], const int64_t hi[3])
{
  return (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
}

/* The transfer as the kernels see it, reading the leaf's own array: into
 * the element's channel array (the destination of x), plus, for
 * prolongation, the box of coarse cells it reads (packed across ranks). */
static void leaf_xfer(const strata_infer *inf, const struct transfer *t, struct strata__amr_xfer *x,
                      int64_t box_lo[3], int64_t box_n[3])
{
  const strata_amr *amr = inf->amr;
  const int64_t m = amr->p.block_cells, g = amr->p.ghost_depth, side = m + 2 * g;
  const int li = inf->p.level_infer, l = t->leaf->b.level;
  const struct element *e = &inf->el[t->element];
  *x = (struct strata__amr_xfer){.kind = t->kind,
                                 .dim = 3,
                                 .is_double = is_double(inf),
                                 .dst_float = 1,
                                 .factor = l == li ? 1 : 1 << (l > li ? l - li : li - l)};
  for (int a = 0; a < 3; a++) {
    const int64_t origin = t->leaf->b.index[a] * m - g; /* leaf array cell 0, leaf's level */
    x->count[a] = t->hi[a] - t->lo[a];
    x->dst_dims[a] = inf->n;
    x->dst_start[a] = t->lo[a] - element_lo(inf, e, a);
    x->src_dims[a] = side;
    if (t->kind == STRATA__AMR_COPY)
      x->src_start[a] = t->lo[a] - origin;
    else if (t->kind == STRATA__AMR_RESTRICT)
      x->src_start[a] = t->lo[a] * x->factor - origin;
    else
      x->src_start[a] = t->lo[a] - origin * x->factor;
    if (t->kind == STRATA__AMR_PROLONG) {
      const int64_t f = x->factor, q0 = x->src_start[a], q1 = q0 + x->count[a] - 1;
      box_lo[a] = strata__amr_prolong_cell(q0, (int)f);
      box_n[a] = strata__amr_prolong_cell(q1, (int)f) + 2 - box_lo[a];
    } else {
      box_lo[a] = 0;
      box_n[a] = x->count[a];
    }
  }
}

/* Values per channel of a transfer's piece in a message. */
static int64_t piece_cells(const strata_infer *inf, const struct transfer *t)
{
  struct strata__amr_xfer x;
  int64_t box_lo[3], box_n[3];
  leaf_xfer(inf, t, &x, box_lo, box_n);
  return box_n[0] * box_n[1] * box_n[2];
}

/* ---- messages: one mailbox per pair of ranks and phase ---- */

/* The mailbox of this cycle's phase `which` (0: populate, 1: update). */
static int open_mailbox(strata_infer *inf, struct strata__mailbox *mb, size_t elemsize, int which)
{
  strata__tags mail;
  int64_t tag;
  memset(mb, 0, sizeof *mb);
  strata__tags_part(&inf->tags, 2, 4, &mail);
  int ret = strata__tag(&mail, inf->cycles * 4 + which, &tag);
  return ret ? ret : strata__mailbox_open(mb, inf->amr->comm, tag, elemsize);
}

/* ---- placement ---- */

static int cost_cmp(const void *x, const void *y)
{
  const struct element *const *a = x, *const *b = y;
  if ((*a)->cost != (*b)->cost)
    return (*a)->cost < (*b)->cost ? 1 : -1;
  return ((*a)->key > (*b)->key) - ((*a)->key < (*b)->key);
}

/* New owner ranks into `ranks` (one per element). */
static int place_elements(strata_infer *inf, const struct transfer *t, int64_t nt, int *ranks)
{
  const int size = inf->amr->size;
  if (inf->p.placement == STRATA_INFER_PLACE_CURVE) {
    for (int64_t i = 0; i < inf->nel; i++)
      ranks[i] = (int)(i * size / inf->nel);
    return 0;
  }
  for (int64_t i = 0; i < inf->nel; i++)
    inf->el[i].cost = (double)(inf->n * inf->n * inf->n);
  for (int64_t k = 0; k < nt; k++)
    inf->el[t[k].element].cost += (double)piece_cells(inf, &t[k]);
  struct element **order = malloc((size_t)inf->nel * sizeof *order);
  double *load = calloc((size_t)size, sizeof *load);
  if (!order || !load) {
    free(order);
    free(load);
    return STRATA_ENOMEM;
  }
  for (int64_t i = 0; i < inf->nel; i++)
    order[i] = &inf->el[i];
  qsort(order, (size_t)inf->nel, sizeof *order, cost_cmp);
  for (int64_t i = 0; i < inf->nel; i++) {
    int best = 0;
    for (int r = 1; r < size; r++)
      if (load[r] < load[best])
        best = r;
    load[best] += order[i]->cost;
    ranks[order[i] - inf->el] = best;
  }
  free(order);
  free(load);
  return 0;
}

/* Kept elements move to their new rank; new ones are registered there. */
static int apply_placement(strata_infer *inf, const int *ranks, strata_infer_stats *st)
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
    if (e->rank == ranks[i])
      continue;
    e->rank = ranks[i];
    st->migrated++;
    starpu_data_handle_t hs[3] = {e->in, e->out, e->table};
    for (int k = 0; k < 3; k++)
      starpu_mpi_data_migrate(inf->amr->comm, hs[k], e->rank);
  }
  return ret;
}

/* ---- phase 3: populate ---- */

static int submit_populate(strata_infer *inf, struct transfer *t, int64_t nt,
                           strata_infer_stats *st)
{
  strata_amr *amr = inf->amr;
  const int me = amr->rank, nch = inf->p.n_fields;
  const int64_t cells = inf->n * inf->n * inf->n;
  struct strata__mailbox mb;
  int ret = open_mailbox(inf, &mb, amr_elemsize(inf), 0);
  for (int64_t k = 0; k < nt && !ret; k++) {
    int from = t[k].leaf->rank, to = inf->el[t[k].element].rank;
    t[k].offset =
        from == to ? -1 : strata__mailbox_reserve(&mb, from, to, nch * piece_cells(inf, &t[k]));
  }
  if (!ret)
    ret = strata__mailbox_prepare(&mb);
  /* Pack: copies and restrictions of this rank's leaves, and the coarse
   * boxes that remote elements prolong from. */
  for (int64_t k = 0; k < nt && !ret; k++) {
    const struct element *e = &inf->el[t[k].element];
    if (t[k].leaf->rank != me || e->rank == me)
      continue;
    struct strata__amr_xfer x;
    int64_t box_lo[3], box_n[3];
    leaf_xfer(inf, &t[k], &x, box_lo, box_n);
    x.dst_float = 0;
    for (int a = 0; a < 3; a++) {
      x.dst_dims[a] = box_n[a];
      x.dst_start[a] = 0;
      if (t[k].kind == STRATA__AMR_PROLONG) {
        x.src_start[a] = box_lo[a];
        x.count[a] = box_n[a];
      }
    }
    if (t[k].kind == STRATA__AMR_PROLONG) {
      x.kind = STRATA__AMR_COPY;
      x.factor = 1;
    }
    const int64_t piece = box_n[0] * box_n[1] * box_n[2];
    for (int c = 0; c < nch && !ret; c++) {
      x.dst_offset = t[k].offset + c * piece;
      ret = strata__amr_xfer_submit(MPI_COMM_NULL, t[k].leaf->h[inf->p.fields[c]],
                                    mb.outbox[e->rank], &x);
    }
  }
  if (!ret)
    ret = strata__mailbox_post(&mb, &st->messages);
  /* Into this rank's elements: straight from local leaves, else from the
   * received pieces. */
  for (int64_t k = 0; k < nt && !ret; k++) {
    const struct element *e = &inf->el[t[k].element];
    if (e->rank != me)
      continue;
    st->transfers++;
    st->transfers_by_kind[t[k].kind]++;
    struct strata__amr_xfer x;
    int64_t box_lo[3], box_n[3];
    leaf_xfer(inf, &t[k], &x, box_lo, box_n);
    const int remote = t[k].leaf->rank != me;
    if (remote) {
      for (int a = 0; a < 3; a++) {
        x.src_dims[a] = box_n[a];
        x.src_start[a] =
            t[k].kind == STRATA__AMR_PROLONG ? x.src_start[a] - box_lo[a] * x.factor : 0;
      }
      if (t[k].kind == STRATA__AMR_RESTRICT) {
        x.kind = STRATA__AMR_COPY;
        x.factor = 1;
      }
    }
    const int64_t piece = box_n[0] * box_n[1] * box_n[2];
    for (int c = 0; c < nch && !ret; c++) {
      x.dst_offset = c * cells;
      x.src_offset = remote ? t[k].offset + c * piece : 0;
      ret = strata__amr_xfer_submit(
          MPI_COMM_NULL, remote ? mb.inbox[t[k].leaf->rank] : t[k].leaf->h[inf->p.fields[c]], e->in,
          &x);
    }
  }
  strata__mailbox_close(&mb);
  for (int64_t i = 0; i < inf->nel; i++)
    if (inf->el[i].rank == me)
      note_phase_end(inf, STRATA_INFER_POPULATE, inf->el[i].in);
  return ret;
}

/* ---- phase 4: apply inference ---- */

static int submit_apply(strata_infer *inf)
{
  const strata_amr *amr = inf->amr;
  const double h = 1.0 / (double)(strata__amr_blocks_at(amr, inf->p.level_array) * inf->n);
  int ret = 0;
  for (int64_t i = 0; i < inf->nel && !ret; i++) {
    struct element *e = &inf->el[i];
    if (e->rank != amr->rank)
      continue;
    ret = strata__model_submit_handles(inf->p.model, inf->n, e->in, e->out);
    struct strata__bubble_params bp = {
        .threshold = inf->p.bubble_threshold, .min_cells = inf->p.bubble_min_cells, .cell_size = h};
    for (int a = 0; a < 3; a++)
      bp.origin[a] = (double)element_lo(inf, e, a) * h;
    if (!ret)
      ret = strata__bubbles_submit(e->out, e->table, inf->bubble_scratch, &bp);
    note_phase_end(inf, STRATA_INFER_APPLY, e->table);
  }
  return ret;
}

/* ---- phase 5: update blocks ---- */

static int list_cmp(const void *x, const void *y)
{
  const struct leaf_list *a = x, *b = y;
  return block_cmp(&a->b, a->key, &b->b, b->key);
}

static struct leaf_list *find_list(const strata_infer *inf, const strata_amr_block *b)
{
  struct leaf_list key = {.b = *b, .key = morton(b->index)};
  return bsearch(&key, inf->lists, (size_t)inf->nlists, sizeof *inf->lists, list_cmp);
}

/* A zeroed bubble list for every local leaf that an element reaches. */
static int make_lists(strata_infer *inf, const struct transfer *t, int64_t nt)
{
  inf->lists = calloc((size_t)(nt ? nt : 1), sizeof *inf->lists);
  if (!inf->lists)
    return STRATA_ENOMEM;
  int64_t n = 0;
  for (int64_t k = 0; k < nt; k++)
    if (t[k].leaf->rank == inf->amr->rank)
      inf->lists[n++] = (struct leaf_list){.b = t[k].leaf->b, .key = morton(t[k].leaf->b.index)};
  qsort(inf->lists, (size_t)n, sizeof *inf->lists, list_cmp);
  int64_t u = 0;
  for (int64_t i = 0; i < n; i++)
    if (!u || list_cmp(&inf->lists[u - 1], &inf->lists[i]))
      inf->lists[u++] = inf->lists[i];
  inf->nlists = u;
  int ret = 0;
  for (int64_t i = 0; i < u && !ret; i++) {
    starpu_vector_data_register(&inf->lists[i].h, -1, 0, (uint32_t)table_len(inf), sizeof(double));
    struct strata__amr_fill zero = {0};
    ret = strata__amr_fill_submit(MPI_COMM_NULL, inf->lists[i].h, &zero);
  }
  return ret;
}

static int submit_update(strata_infer *inf, struct transfer *t, int64_t nt, strata_infer_stats *st)
{
  strata_amr *amr = inf->amr;
  const int me = amr->rank;
  const int64_t len = table_len(inf), m = amr->p.block_cells;
  int ret = make_lists(inf, t, nt);
  if (ret)
    return ret;
  struct strata__mailbox mb;
  ret = open_mailbox(inf, &mb, sizeof(double), 1);
  for (int64_t k = 0; k < nt && !ret; k++) {
    int from = inf->el[t[k].element].rank, to = t[k].leaf->rank;
    t[k].offset = from == to ? -1 : strata__mailbox_reserve(&mb, from, to, len);
  }
  if (!ret)
    ret = strata__mailbox_prepare(&mb);
  struct strata__amr_xfer copy = {.kind = STRATA__AMR_COPY,
                                  .dim = 1,
                                  .factor = 1,
                                  .is_double = 1,
                                  .count = {len, 1, 1},
                                  .dst_dims = {len, 1, 1},
                                  .src_dims = {len, 1, 1}};
  for (int64_t k = 0; k < nt && !ret; k++) {
    const struct element *e = &inf->el[t[k].element];
    if (e->rank != me || t[k].leaf->rank == me)
      continue;
    copy.dst_offset = t[k].offset;
    ret = strata__amr_xfer_submit(MPI_COMM_NULL, e->table, mb.outbox[t[k].leaf->rank], &copy);
  }
  if (!ret)
    ret = strata__mailbox_post(&mb, &st->messages);
  const double h_array = 1.0 / (double)strata__amr_blocks_at(amr, inf->p.level_array);
  for (int64_t k = 0; k < nt && !ret; k++) {
    const struct strata__amr_node *leaf = t[k].leaf;
    const struct element *e = &inf->el[t[k].element];
    if (leaf->rank != me)
      continue;
    const double h = 1.0 / (double)(strata__amr_blocks_at(amr, leaf->b.level) * m);
    struct strata__infer_mark mk = {.is_double = is_double(inf),
                                    .ghost = amr->p.ghost_depth,
                                    .cells = m,
                                    .h = h,
                                    .table_offset = e->rank == me ? 0 : t[k].offset,
                                    .table_capacity = inf->p.bubble_capacity,
                                    .list_capacity = inf->p.bubble_capacity};
    for (int a = 0; a < 3; a++) {
      mk.lower[a] = (double)(leaf->b.index[a] * m) * h;
      mk.array_lo[a] = (double)e->idx[a] * h_array;
      mk.array_hi[a] = (double)(e->idx[a] + 1) * h_array;
    }
    ret = strata__infer_mark_submit(
        e->rank == me ? e->table : mb.inbox[e->rank], find_list(inf, &leaf->b)->h,
        inf->p.marker_field >= 0 ? leaf->h[inf->p.marker_field] : NULL, &mk);
  }
  strata__mailbox_close(&mb);
  for (int64_t i = 0; i < inf->nlists; i++)
    note_phase_end(inf, STRATA_INFER_UPDATE, inf->lists[i].h);
  return ret;
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
    volume[t[k].element] += (double)cells_of(t[k].lo, t[k].hi);
  for (int64_t i = 0; i < inf->nel; i++) {
    double v = volume ? volume[i] / (double)(inf->n * inf->n * inf->n) : NAN;
    st->volume_min = fmin(st->volume_min, v);
    st->volume_max = fmax(st->volume_max, v);
    if (inf->el[i].rank == amr->rank) {
      st->elements_local++;
      st->bubbles_local += table_found(inf->el[i].table);
    }
  }
  free(volume);
  int64_t leaf_bubbles = 0;
  for (int64_t i = 0; i < inf->nlists; i++)
    leaf_bubbles += table_found(inf->lists[i].h);
  int64_t sums[4] = {st->bubbles_local, leaf_bubbles, st->messages, st->transfers};
  MPI_Allreduce(MPI_IN_PLACE, sums, 4, MPI_INT64_T, MPI_SUM, amr->meta);
  st->bubbles = sums[0];
  st->leaf_bubbles = sums[1];
  st->messages = sums[2];
  st->transfers = sums[3];
  MPI_Allreduce(MPI_IN_PLACE, st->transfers_by_kind, 3, MPI_INT64_T, MPI_SUM, amr->meta);
  MPI_Allreduce(&st->elements_local, &st->elements_max, 1, MPI_INT64_T, MPI_MAX, amr->meta);
  double ends[STRATA_INFER_PHASES + 1];
  memcpy(ends, inf->phase_end, sizeof inf->phase_end);
  ends[STRATA_INFER_PHASES] = starpu_timing_now() * 1e-6 - inf->t0;
  MPI_Allreduce(MPI_IN_PLACE, ends, STRATA_INFER_PHASES + 1, MPI_DOUBLE, MPI_MAX, amr->meta);
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
  inf->t0 = starpu_timing_now() * 1e-6;
  memset(inf->phase_end, 0, sizeof inf->phase_end);
  drop_masks(inf);
  drop_lists(inf);

  int local = submit_evaluate(inf);
  phase_barrier(inf);
  int64_t *needed = NULL, nneeded = 0;
  if (!local)
    local = gather_needed(inf, &needed, &nneeded);
  else
    strata__agree(local, NULL, 0); /* gather_needed's agreement */
  note_now(inf, STRATA_INFER_EVALUATE);

  struct transfer *t = NULL;
  int64_t nt = 0;
  if (!local)
    local = update_level_array(inf, needed, nneeded, &st);
  if (!local) {
    local = plan_transfers(inf, &t, &nt);
    st.reused = !st.created && !st.removed && inf->nel > 0;
    int *ranks = local ? NULL : malloc((size_t)(inf->nel ? inf->nel : 1) * sizeof *ranks);
    if (!local && !ranks)
      local = STRATA_ENOMEM;
    if (!local && !st.reused)
      local = place_elements(inf, t, nt, ranks);
    if (!local && !st.reused)
      local = apply_placement(inf, ranks, &st);
    free(ranks);
  }
  free(needed);
  note_now(inf, STRATA_INFER_ALLOCATE);
  phase_barrier(inf);

  if (!local && inf->nel > 0) {
    local = submit_populate(inf, t, nt, &st);
    phase_barrier(inf);
    if (!local)
      local = submit_apply(inf);
    phase_barrier(inf);
    if (!local)
      local = submit_update(inf, t, nt, &st);
  }
  starpu_task_wait_for_all();
  ret = strata__agree(local, NULL, 0);
  if (!ret) {
    finish_stats(inf, t, nt, &st);
    if (stats)
      *stats = st;
  }
  free(t);
  return local ? local : ret;
}

/* ---- queries ---- */

int strata_infer_elements(const strata_infer *inf, int64_t (*idx)[3], int *ranks, int64_t cap,
                          int64_t *n)
{
  strata__clear_error();
  if (!inf || !n || cap < 0 || (cap && !idx && !ranks))
    return STRATA_EINVAL;
  for (int64_t i = 0; i < inf->nel && i < cap; i++) {
    if (idx)
      memcpy(idx[i], inf->el[i].idx, sizeof idx[i]);
    if (ranks)
      ranks[i] = inf->el[i].rank;
  }
  *n = inf->nel;
  return 0;
}

int strata_infer_read_array(strata_infer *inf, const int64_t idx[3], int channel, float *out)
{
  strata__clear_error();
  if (!inf || !idx || !out || channel < 0 || channel >= inf->p.n_fields)
    return STRATA_EINVAL;
  struct element *e = find_element(inf, idx);
  if (!e)
    return STRATA_ERANGE;
  if (e->rank != inf->amr->rank)
    return STRATA_EINVAL;
  if (strata__acquire(e->in, STARPU_R) != 0)
    return STRATA_ESTARPU;
  const int64_t cells = inf->n * inf->n * inf->n;
  memcpy(out, (const float *)(const void *)starpu_vector_get_local_ptr(e->in) + channel * cells,
         (size_t)cells * sizeof *out);
  starpu_data_release(e->in);
  return 0;
}

int strata_infer_read_mask(strata_infer *inf, const strata_amr_block *b, uint8_t *out, int64_t *m)
{
  strata__clear_error();
  if (!inf || !b || !out || !m)
    return STRATA_EINVAL;
  struct mask *mk = find_mask(inf, b);
  if (!mk)
    return STRATA_ERANGE;
  if (mk->rank != inf->amr->rank)
    return STRATA_EINVAL;
  if (strata__acquire(mk->h, STARPU_R) != 0)
    return STRATA_ESTARPU;
  memcpy(out, (const void *)starpu_vector_get_local_ptr(mk->h),
         (size_t)(mk->cells * mk->cells * mk->cells));
  starpu_data_release(mk->h);
  *m = mk->cells;
  return 0;
}

int strata_infer_leaf_bubbles(strata_infer *inf, const strata_amr_block *b, strata_bubble **list,
                              int64_t *n, int64_t *found)
{
  strata__clear_error();
  if (!inf || !b || !list || !n)
    return STRATA_EINVAL;
  struct strata__amr_node *node = strata__amr_find(inf->amr, b);
  if (!node || !node->is_leaf || node->rank != inf->amr->rank)
    return STRATA_EINVAL;
  *list = malloc((size_t)inf->p.bubble_capacity * sizeof **list);
  if (!*list)
    return STRATA_ENOMEM;
  struct leaf_list *l = find_list(inf, b);
  if (!l) {
    *n = 0;
    if (found)
      *found = 0;
    return 0;
  }
  if (strata__acquire(l->h, STARPU_R) != 0) {
    free(*list);
    *list = NULL;
    return STRATA_ESTARPU;
  }
  *n = strata__bubble_rows((const void *)starpu_vector_get_local_ptr(l->h), inf->p.bubble_capacity,
                           *list, found);
  starpu_data_release(l->h);
  return 0;
}

/* A gathered bubble row: its element and its place among the rows. */
struct gathered {
  int64_t element, row;
};

static int gathered_cmp(const void *x, const void *y)
{
  const struct gathered *a = x, *b = y;
  if (a->element != b->element)
    return a->element < b->element ? -1 : 1;
  return (a->row > b->row) - (a->row < b->row);
}

int strata_infer_bubbles(strata_infer *inf, strata_bubble **list, int64_t **element, int64_t *n)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!inf || !list || !n)
    return STRATA_EINVAL;
  strata_amr *amr = inf->amr;
  /* Per bubble: element position, then the bubble's fields. */
  enum { ROW = 1 + sizeof(strata_bubble) / sizeof(double) };
  _Static_assert(sizeof(strata_bubble) % sizeof(double) == 0, "bubble is a row of 8-byte fields");
  int64_t cap = 0;
  for (int64_t i = 0; i < inf->nel; i++)
    cap += inf->el[i].rank == amr->rank ? inf->p.bubble_capacity : 0;
  double *mine = malloc((size_t)(cap * ROW + 1) * sizeof *mine);
  strata_bubble *rows = malloc((size_t)(inf->p.bubble_capacity) * sizeof *rows);
  int local = mine && rows ? 0 : STRATA_ENOMEM;
  int64_t k = 0;
  for (int64_t i = 0; i < inf->nel && !local; i++) {
    if (inf->el[i].rank != amr->rank)
      continue;
    if (strata__acquire(inf->el[i].table, STARPU_R) != 0) {
      local = STRATA_ESTARPU;
      break;
    }
    int64_t got = strata__bubble_rows((const void *)starpu_vector_get_local_ptr(inf->el[i].table),
                                      inf->p.bubble_capacity, rows, NULL);
    starpu_data_release(inf->el[i].table);
    for (int64_t b = 0; b < got; b++, k++) {
      mine[k * ROW] = (double)i;
      memcpy(mine + k * ROW + 1, &rows[b], sizeof rows[b]);
    }
  }
  free(rows);
  ret = strata__agree(local, NULL, 0);
  void *gathered_rows = NULL;
  int64_t total = 0;
  if (!ret)
    ret = allgather_values(amr, mine, k * ROW, MPI_DOUBLE, &gathered_rows, &total);
  const double *all = gathered_rows;
  if (!ret) {
    *n = total / ROW;
    *list = malloc((size_t)(*n + 1) * sizeof **list);
    int64_t *pos = element ? malloc((size_t)(*n + 1) * sizeof *pos) : NULL;
    struct gathered *order = malloc((size_t)(*n + 1) * sizeof *order);
    ret = strata__agree(*list && order && (!element || pos) ? 0 : STRATA_ENOMEM, NULL, 0);
    if (!ret) {
      /* Ranks own contiguous runs of elements only under the curve
       * policy: order by element, then by place in the gathered rows (an
       * element's rows are contiguous, in table order). */
      for (int64_t b = 0; b < *n; b++)
        order[b] = (struct gathered){(int64_t)all[b * ROW], b};
      qsort(order, (size_t)*n, sizeof *order, gathered_cmp);
      for (int64_t b = 0; b < *n; b++) {
        memcpy(&(*list)[b], all + order[b].row * ROW + 1, sizeof **list);
        if (pos)
          pos[b] = order[b].element;
      }
      if (element)
        *element = pos;
    } else {
      free(*list);
      *list = NULL;
      free(pos);
    }
    free(order);
  }
  free(gathered_rows);
  free(mine);
  return ret;
}
