/* The inference method: parameters, creation and destruction, queries. */
#include "bubbles.h"
#include "infer_impl.h"

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

/* ---- creation ---- */

/* The geometric conditions on the levels, for any mesh of these blocks. */
static int check_levels(int max_level, int block_cells, const strata_infer_params *p)
{
  if (max_level < 0 || max_level > STRATA_AMR_MAX_LEVEL || block_cells < 1)
    return strata__fail(STRATA_EINVAL, "max_level %d or block_cells %d out of range", max_level,
                        block_cells);
  if (p->level_base < 0 || p->level_base > p->level_array || p->level_array > p->level_infer ||
      p->level_infer > max_level)
    return strata__fail(STRATA_EINVAL,
                        "need 0 <= level_base (%d) <= level_array (%d) <= level_infer (%d) <= "
                        "max_level (%d)",
                        p->level_base, p->level_array, p->level_infer, max_level);
  if (((int64_t)1 << (p->level_array - p->level_base)) > block_cells ||
      block_cells % (1 << (p->level_array - p->level_base)))
    return strata__fail(STRATA_EINVAL,
                        "a level_base block holds 2^(level_array - level_base) = %d elements per "
                        "axis, more than its %d cells",
                        1 << (p->level_array - p->level_base), block_cells);
  if (block_cells % (1 << (max_level - p->level_infer)))
    return strata__fail(STRATA_EINVAL,
                        "leaves of level %d do not restrict to whole cells of level_infer %d "
                        "(block_cells %d)",
                        max_level, p->level_infer, block_cells);
  if (((int64_t)block_cells << (p->level_infer - p->level_array)) > 1024)
    return strata__fail(STRATA_EINVAL, "inference arrays of more than 1024 cells per axis");
  return 0;
}

int strata_infer_check_geometry(const strata_amr_params *a, const strata_infer_params *p)
{
  strata__clear_error();
  if (!a || !p)
    return STRATA_EINVAL;
  if (a->dim != 3)
    return strata__fail(STRATA_EINVAL, "inference arrays need a 3-D hierarchy");
  return check_levels(a->max_level, a->block_cells, p);
}

/* The particle table's column of each value channel: the name of the
 * model output holding it (with its channel within that output when the
 * output has several), "value<k>" when that name is missing, taken by a
 * column of the table or by an earlier value. */
static void name_values(strata_infer *inf)
{
  static const char *const taken[] = {"id",   "x",     "y",     "z",          "radius",    "mass",
                                      "peak", "cells", "parts", "leaf_level", "leaf_index"};
  for (int k = 0; k < inf->bubble.values; k++) {
    char *name = inf->value_names[k];
    const int size = (int)sizeof inf->value_names[k];
    snprintf(name, (size_t)size, "value%d", k);
    const char *output;
    int count = 0, first, channels;
    const int c = inf->bubble.value_channel[k];
    for (int i = 0; strata_model_outputs(inf->p.model, i, &count, &output, &first, &channels) == 0;
         i++)
      if (output && *output && c >= first && c < first + channels) {
        if (channels == 1)
          snprintf(name, (size_t)size, "%.*s", size - 1, output);
        else
          snprintf(name, (size_t)size, "%.*s_%d", size - 12, output, c - first);
      }
    int clash = 0;
    for (size_t t = 0; t < sizeof taken / sizeof *taken; t++)
      clash |= !strcmp(name, taken[t]);
    for (int j = 0; j < k; j++)
      clash |= !strcmp(name, inf->value_names[j]);
    if (clash)
      snprintf(name, (size_t)size, "value%d", k);
  }
}

static int check_params(const strata_mesh *mesh, strata_infer_params *p)
{
  const strata_mesh_params *a = &mesh->p;
  int ret = check_levels(a->max_level, a->block_cells, p);
  if (ret)
    return ret;
  if (!p->model)
    return strata__fail(STRATA_EINVAL, "no model");
  int in_ch = 0;
  strata_model_describe(p->model, &in_ch, NULL, NULL);
  if (p->n_fields == 0) {
    /* The model's named fields, else field 0. */
    p->n_fields = in_ch;
    for (int c = 0; c < in_ch; c++) {
      const char *name = strata_model_input_field(p->model, c);
      p->fields[c] = name || in_ch > 1 ? -1 : 0;
      for (int f = 0; name && f < a->nfields; f++)
        if (!strcmp(name, mesh->names[f]))
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
  if (p->placement != STRATA_INFER_PLACE_CURVE && p->placement != STRATA_INFER_PLACE_GREEDY &&
      p->placement != STRATA_INFER_PLACE_MEASURED)
    return strata__fail(STRATA_EINVAL, "unknown placement policy");
  return strata__model_check_extent(p->model,
                                    (int64_t)a->block_cells << (p->level_infer - p->level_array));
}

static int destroy_live(void *inf) { return strata_infer_destroy(inf); }

/* Output `name` of the model: its first channel and channel count. */
static int find_output(const strata_model *m, const char *name, size_t len, int *first, int *n)
{
  const char *output;
  int count = 0;
  for (int i = 0; strata_model_outputs(m, i, &count, &output, first, n) == 0; i++)
    if (output && strlen(output) == len && !strncmp(output, name, len))
      return 0;
  return strata__fail(STRATA_EINVAL, "model '%s' has no output '%.*s'", strata_model_name(m),
                      (int)len, name);
}

static int add_value(struct strata__bubble_params *c, int channel)
{
  if (c->values == STRATA_BUBBLE_MAX_VALUES)
    return strata__fail(STRATA_EINVAL, "more than %d value channels", STRATA_BUBBLE_MAX_VALUES);
  c->value_channel[c->values++] = channel;
  return 0;
}

/* The model's channels that bubble extraction reads (c is zeroed): all of
 * them, the probability's and the value channels, from the parameters'
 * output names. */
static int select_channels(const strata_infer_params *p, struct strata__bubble_params *c)
{
  strata_model_output kind;
  int first, n, ret = 0;
  strata_model_describe(p->model, NULL, &c->channels, &kind);
  if (p->probability_output) {
    if ((ret = find_output(p->model, p->probability_output, strlen(p->probability_output), &first,
                           &n)))
      return ret;
    c->probability = first;
  } else if (kind != STRATA_MODEL_PROBABILITY) {
    return strata__fail(STRATA_EINVAL,
                        "model '%s' does not output a probability first: name the output that "
                        "does (probability_output)",
                        strata_model_name(p->model));
  }
  if (!p->value_outputs) { /* every channel but the probability's */
    for (int k = 0; k < c->channels && !ret; k++)
      if (k != c->probability)
        ret = add_value(c, k);
    return ret;
  }
  for (const char *s = p->value_outputs; *s && !ret;) {
    size_t len = strcspn(s, ",");
    if ((ret = find_output(p->model, s, len, &first, &n)))
      return ret;
    for (int k = first; k < first + n && !ret; k++)
      ret = add_value(c, k);
    s += len + (s[len] == ',');
  }
  return ret;
}

/* The method on `mesh`, which it owns when the mesh describes Strata's
 * octree (mesh->amr). */
static int create(strata_mesh *mesh, const strata_infer_params *params, strata_infer **out)
{
  strata_infer_params p = *params;
  /* Every part is kept: bubble_min_cells applies to the joined bubbles. */
  struct strata__bubble_params bubble = {.threshold = p.bubble_threshold, .min_cells = 1};
  int local = mesh->committed || mesh->amr
                  ? check_params(mesh, &p)
                  : strata__fail(STRATA_EINVAL, "the mesh is not committed");
  if (!local)
    local = select_channels(&p, &bubble);
  int64_t same[] = {p.level_base,      p.level_array,      p.level_infer,      p.n_fields,
                    p.criterion_field, p.reference,        p.bubble_capacity,  p.marker_field,
                    p.placement,       p.bulk_synchronous, bubble.probability, bubble.values,
                    bubble.channels},
          value_channels[STRATA_BUBBLE_MAX_VALUES];
  for (int k = 0; k < STRATA_BUBBLE_MAX_VALUES; k++)
    value_channels[k] = bubble.value_channel[k];
  int ret = strata__agree(local, same, (int)(sizeof same / sizeof *same));
  if (!ret) /* 16 values an agreement */
    ret = strata__agree(0, value_channels, STRATA_BUBBLE_MAX_VALUES);
  if (ret)
    return local ? local : ret;
  strata_infer *inf = calloc(1, sizeof *inf);
  if ((ret = strata__agree(inf ? 0 : STRATA_ENOMEM, NULL, 0)) ||
      (ret = strata__tags_take(strata__coll_comm(), "infer", &inf->tags))) {
    free(inf);
    return ret;
  }
  inf->mesh = mesh;
  mesh->users++;
  inf->p = p;
  inf->n = (int64_t)mesh->p.block_cells << (p.level_infer - p.level_array);
  inf->bubble = bubble;
  name_values(inf);
  inf->bubble_scratch =
      strata__scratch_register(strata__bubbles_scratch_bytes(inf->n, inf->bubble.values));
  starpu_pthread_mutex_init(&inf->lock, NULL);
  strata__live_add(&strata__objects, &inf->live, "inference method", inf, destroy_live);
  *out = inf;
  return 0;
}

int strata_infer_create(strata_amr *amr, const strata_infer_params *params, strata_infer **out)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!amr || !params || !out)
    return STRATA_EINVAL;
  *out = NULL;
  if (amr->p.dim != 3)
    ret = strata__fail(STRATA_EINVAL, "inference arrays need a 3-D hierarchy");
  strata_mesh *mesh = NULL;
  if ((ret = strata__agree(ret, NULL, 0)) || (ret = strata__mesh_of_amr(amr, &mesh)))
    return ret;
  if ((ret = create(mesh, params, out)))
    strata__mesh_free(mesh);
  return ret;
}

int strata_infer_create_on_mesh(strata_mesh *mesh, const strata_infer_params *params,
                                strata_infer **out)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!mesh || !params || !out)
    return STRATA_EINVAL;
  *out = NULL;
  return create(mesh, params, out);
}

int strata__infer_is_local_leaf(const strata_infer *inf, const strata_amr_block *b)
{
  return strata__mesh_find(inf->mesh, b) != NULL;
}

void strata__infer_drop_masks(strata_infer *inf)
{
  for (int64_t i = 0; i < inf->nmasks; i++)
    if (inf->masks[i].h) /* NULL: not registered, the cycle failed first */
      starpu_data_unregister_submit(inf->masks[i].h);
  free(inf->masks);
  inf->masks = NULL;
  inf->nmasks = 0;
}

void strata__infer_drop_lists(strata_infer *inf)
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
  struct strata__infer_cycle *c = strata__infer_take_cycle(inf); /* never waited for */
  if (c)
    free(c->t);
  free(c);
  /* The handles go once their last tasks are done; this waits for none. */
  strata__infer_drop_elements(inf);
  strata__infer_drop_masks(inf);
  strata__infer_drop_lists(inf);
  strata__infer_drop_bubbles(inf);
  starpu_data_unregister_submit(inf->bubble_scratch);
  starpu_pthread_mutex_destroy(&inf->lock);
  strata__tags_release(&inf->tags);
  inf->mesh->users--;
  if (inf->mesh->amr) /* the method's own description of the octree */
    strata__mesh_free(inf->mesh);
  free(inf);
  return 0;
}

int64_t strata_infer_array_cells(const strata_infer *inf) { return inf ? inf->n : 0; }

int strata_infer_values(const strata_infer *inf) { return inf ? inf->bubble.values : 0; }

const char *strata_infer_value_name(const strata_infer *inf, int k)
{
  return inf && k >= 0 && k < inf->bubble.values ? inf->value_names[k] : NULL;
}

const strata_infer_params *strata_infer_get_params(const strata_infer *inf)
{
  return inf ? &inf->p : NULL;
}

/* ---- queries ---- */

int strata_infer_elements(const strata_infer *inf, int64_t (*idx)[3], int *ranks, int64_t cap,
                          int64_t *n)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!inf)
    return STRATA_EINVAL;
  ret = strata__agree(!n || cap < 0 || (cap && !idx && !ranks) ? STRATA_EINVAL : 0, NULL, 0);
  /* Each directory rank's range, in rank order: the Morton order. */
  enum { WIDTH = 4 };
  int64_t *mine = ret ? NULL : malloc((size_t)(WIDTH * inf->ndir + 1) * sizeof *mine);
  if (!ret)
    ret = strata__agree(mine ? 0 : STRATA_ENOMEM, NULL, 0);
  for (int64_t i = 0; !ret && i < inf->ndir; i++) {
    memcpy(mine + WIDTH * i, inf->dir[i].idx, 3 * sizeof *mine);
    mine[WIDTH * i + 3] = inf->dir[i].rank;
  }
  void *all = NULL;
  int64_t total = 0;
  if (!ret)
    ret = strata__infer_allgather_values(inf->mesh, mine, WIDTH * inf->ndir, MPI_INT64_T, &all,
                                         &total);
  free(mine);
  const int64_t *v = all;
  for (int64_t i = 0; !ret && i < total / WIDTH && i < cap; i++) {
    if (idx)
      memcpy(idx[i], v + WIDTH * i, sizeof idx[i]);
    if (ranks)
      ranks[i] = (int)v[WIDTH * i + 3];
  }
  if (!ret)
    *n = total / WIDTH;
  free(all);
  return ret;
}

/* Channel `channel` of element idx's input, or its model output. */
static int read_element(strata_infer *inf, const int64_t idx[3], int output, int channel,
                        float *out)
{
  strata__clear_error();
  if (!inf || !idx || !out || channel < 0 ||
      channel >= (output ? inf->bubble.channels : inf->p.n_fields))
    return STRATA_EINVAL;
  for (int a = 0; a < 3; a++)
    if (idx[a] < 0 || idx[a] >= array_blocks(inf, a))
      return STRATA_ERANGE;
  struct element *e = strata__infer_find_element(inf, idx);
  if (!e || e->rank != inf->mesh->rank) /* another rank's, or none */
    return STRATA_EINVAL;
  starpu_data_handle_t h = output ? e->out : e->in;
  if (strata__acquire(h, STARPU_R) != 0)
    return STRATA_ESTARPU;
  const int64_t cells = inf->n * inf->n * inf->n;
  memcpy(out, (const float *)(const void *)starpu_vector_get_local_ptr(h) + channel * cells,
         (size_t)cells * sizeof *out);
  starpu_data_release(h);
  return 0;
}

int strata_infer_read_array(strata_infer *inf, const int64_t idx[3], int channel, float *out)
{
  return read_element(inf, idx, 0, channel, out);
}

int strata_infer_read_probability(strata_infer *inf, const int64_t idx[3], float *out)
{
  return read_element(inf, idx, 1, inf ? inf->bubble.probability : 0, out);
}

int strata_infer_read_output(strata_infer *inf, const int64_t idx[3], int channel, float *out)
{
  return read_element(inf, idx, 1, channel, out);
}

int strata_infer_read_mask(strata_infer *inf, const strata_amr_block *b, uint8_t *out, int64_t *m)
{
  strata__clear_error();
  if (!inf || !b || !out || !m)
    return STRATA_EINVAL;
  struct mask *mk = strata__infer_find_mask(inf, b);
  if (!mk) /* a mask exists for each leaf at level_base or finer, on its rank */
    return b->level < inf->p.level_base ? STRATA_ERANGE : STRATA_EINVAL;
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
  if (!inf || !b || !list || !n || !strata__infer_is_local_leaf(inf, b))
    return STRATA_EINVAL;
  *list = malloc((size_t)inf->p.bubble_capacity * sizeof **list);
  if (!*list)
    return STRATA_ENOMEM;
  struct leaf_list *l = strata__infer_find_list(inf, b);
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
                           inf->bubble.values, *list, found);
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

int strata_infer_bubble_parts(strata_infer *inf, strata_bubble **list, int64_t **element,
                              int64_t *n)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!inf || !list || !n)
    return STRATA_EINVAL;
  strata_mesh *mesh = inf->mesh;
  /* Per bubble: element position, then the bubble's fields. */
  enum { ROW = 1 + sizeof(strata_bubble) / sizeof(double) };
  _Static_assert(sizeof(strata_bubble) % sizeof(double) == 0, "bubble is a row of 8-byte fields");
  int64_t cap = 0;
  for (int64_t i = 0; i < inf->nel; i++)
    cap += inf->el[i].rank == mesh->rank ? inf->p.bubble_capacity : 0;
  double *mine = malloc((size_t)(cap * ROW + 1) * sizeof *mine);
  strata_bubble *rows = malloc((size_t)(inf->p.bubble_capacity) * sizeof *rows);
  int local = mine && rows ? 0 : STRATA_ENOMEM;
  int64_t k = 0;
  for (int64_t i = 0; i < inf->nel && !local; i++) {
    if (inf->el[i].rank != mesh->rank)
      continue;
    if (strata__acquire(inf->el[i].table, STARPU_R) != 0) {
      local = STRATA_ESTARPU;
      break;
    }
    int64_t got = strata__bubble_rows((const void *)starpu_vector_get_local_ptr(inf->el[i].table),
                                      inf->p.bubble_capacity, inf->bubble.values, rows, NULL);
    starpu_data_release(inf->el[i].table);
    for (int64_t b = 0; b < got; b++, k++) {
      mine[k * ROW] = (double)inf->el[i].pos;
      memcpy(mine + k * ROW + 1, &rows[b], sizeof rows[b]);
    }
  }
  free(rows);
  ret = strata__agree(local, NULL, 0);
  void *gathered_rows = NULL;
  int64_t total = 0;
  if (!ret)
    ret = strata__infer_allgather_values(mesh, mine, k * ROW, MPI_DOUBLE, &gathered_rows, &total);
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
