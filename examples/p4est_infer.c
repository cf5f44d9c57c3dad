/* A small p4est simulation that runs Strata's inference method on its own
 * mesh, in place.
 *
 * The simulation, written the way a p8est user writes one:
 * - a brick forest of 2 x 2 x 2 periodic trees, each quadrant holding in
 *   its user data a ghosted block of BLOCK^3 cells of two fields (a density
 *   and a star-forming marker);
 * - its own refinement criterion (a quadrant is refined where the density
 *   it holds is high), p8est_balance and p8est_partition, which moves the
 *   blocks with their quadrants;
 * - ghost layers from p4est's ghost exchange (p8est_ghost_new,
 *   p8est_ghost_exchange_data, p8est_iterate over the faces between
 *   quadrants of one size); the cells a face exchange does not reach
 *   (edges, corners, faces between levels) are set from the initial
 *   condition, where a real code would interpolate;
 * - every step, the density is written by the application (two blobs that
 *   drift), Strata's inference cycle runs on the blocks where they lie,
 *   and the marker is read back in the quadrants' own memory.
 *
 * The mesh description is the whole integration: after each (re)mesh, each
 * rank describes its own quadrants, strata_mesh_add_leaf() with the
 * address of the quadrant's block, and strata_mesh_commit().
 *
 * With --compare, each step is also run on Strata's own octree refined to
 * the same leaves, holding the same values, and the bubble lists must be
 * equal byte for byte (the check gathers the leaves, which the method
 * itself never does). --bubbles FILE writes the last step's bubbles.
 * --model FILE names the application's model; without it, Strata's default
 * (the trained U-Net, which looks for compact collapsed clumps and finds
 * none in these two broad blobs). The tests pass the analytic blob detector
 * (models/blob_detector/model.json), which marks them.
 *
 * usage: p4est_infer [--steps N] [--compare] [--bubbles FILE] [--model FILE] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <p8est_bits.h>
#include <p8est_extended.h>
#include <p8est_ghost.h>
#include <p8est_iterate.h>
#include <strata/mesh.h>
#include <strata/starpu.h>
#include <strata/strata.h>

#include "p4est_mesh.h"

enum { BLOCK = 8, GHOST = 1, SIDE = BLOCK + 2 * GHOST, CUBE = SIDE * SIDE * SIDE };
enum { DENSITY, MARKER, FIELDS };
enum { ROOT = 2, MAX_LEVEL = 3 };

/* A quadrant's user data: its two ghosted blocks, x fastest. */
typedef struct block {
  double field[FIELDS][CUBE];
} block_t;

static double now; /* simulated time */

/* The density at cell (gx, gy, gz) of the grid of `level`: two blobs that
 * drift; computed from the cell's wrapped integer position, so that every
 * copy of a cell (interior or ghost) gets the same bits. */
static double density_at(int level, const int64_t g[3])
{
  const int64_t cells = (int64_t)(ROOT << level) * BLOCK;
  const double centres[2][3] = {{0.74 + 0.04 * now, 0.31, 0.62}, {0.12, 0.78 - 0.04 * now, 0.2}};
  double v = 1;
  for (int k = 0; k < 2; k++) {
    double d2 = 0;
    for (int a = 0; a < 3; a++) {
      const int64_t w = ((g[a] % cells) + cells) % cells;
      double d = fabs(((double)w + 0.5) / (double)cells - centres[k][a]);
      d = fmin(d, 1 - d);
      d2 += d * d;
    }
    v += 12 * exp(-d2 / (2 * 0.04 * 0.04));
  }
  return v;
}

/* Which cells fill() sets from the density (the marker is 0 in each). */
enum cells {
  ALL_CELLS,      /* interior and ghosts */
  INTERIOR,       /* the interior; ghost densities become NaN, for the exchange */
  MISSING_GHOSTS, /* ghost cells still NaN after the exchange */
};

static void fill(const strata_amr_block *b, block_t *d, enum cells which)
{
  for (int k = 0; k < SIDE; k++)
    for (int j = 0; j < SIDE; j++)
      for (int i = 0; i < SIDE; i++) {
        const int c[3] = {i, j, k};
        int ghost = 0;
        int64_t g[3];
        for (int a = 0; a < 3; a++) {
          g[a] = b->index[a] * BLOCK + c[a] - GHOST;
          ghost |= c[a] < GHOST || c[a] >= BLOCK + GHOST;
        }
        double *v = &d->field[DENSITY][(k * SIDE + j) * SIDE + i];
        if (which == MISSING_GHOSTS && !(ghost && isnan(*v)))
          continue;
        *v = which == INTERIOR && ghost ? NAN : density_at(b->level, g);
        d->field[MARKER][(k * SIDE + j) * SIDE + i] = 0;
      }
}

static void init_quadrant(p8est_t *p, p4est_topidx_t t, p8est_quadrant_t *q)
{
  strata_amr_block b;
  p4est_mesh_name(p, t, q, &b);
  fill(&b, q->p.user_data, ALL_CELLS);
}

/* The application's own criterion: refine where the density the quadrant
 * holds exceeds 1.5, to the finest level. */
static int refine_where_dense(p8est_t *p, p4est_topidx_t t, p8est_quadrant_t *q)
{
  (void)p, (void)t;
  if (q->level >= MAX_LEVEL)
    return 0;
  const block_t *d = q->p.user_data;
  for (int c = 0; c < CUBE; c++)
    if (d->field[DENSITY][c] > 1.5)
      return 1;
  return 0;
}

/* Coarsen a family where none of its blocks exceeds 1.2. */
static int coarsen_where_thin(p8est_t *p, p4est_topidx_t t, p8est_quadrant_t *family[])
{
  (void)p, (void)t;
  for (int k = 0; k < P8EST_CHILDREN; k++) {
    const block_t *d = family[k]->p.user_data;
    if (family[k]->level <= 1)
      return 0;
    for (int c = 0; c < CUBE; c++)
      if (d->field[DENSITY][c] > 1.2)
        return 0;
  }
  return 1;
}

/* ---- ghost exchange with p4est ---- */

struct exchange {
  p8est_t *p;
  block_t *ghosts; /* the ghost quadrants' blocks, from p8est_ghost_exchange_data */
  int64_t copied;  /* ghost cells set by the exchange */
};

static block_t *side_block(const struct exchange *x, const p8est_iter_face_side_t *s)
{
  return s->is.full.is_ghost ? &x->ghosts[s->is.full.quadid] : s->is.full.quad->p.user_data;
}

/* Across a face between two quadrants of one size, each side's ghost layer
 * gets the other side's first interior layer. */
static void copy_face(p8est_iter_face_info_t *info, void *user)
{
  struct exchange *x = user;
  if (info->sides.elem_count != 2)
    return;
  p8est_iter_face_side_t *s[2] = {p8est_iter_fside_array_index_int(&info->sides, 0),
                                  p8est_iter_fside_array_index_int(&info->sides, 1)};
  if (s[0]->is_hanging || s[1]->is_hanging || info->orientation != 0)
    return;
  for (int me = 0; me < 2; me++) {
    if (s[me]->is.full.is_ghost)
      continue;
    block_t *to = side_block(x, s[me]), *from = side_block(x, s[!me]);
    const int axis = s[me]->face / 2, high = s[me]->face % 2;
    for (int v = GHOST; v < BLOCK + GHOST; v++)
      for (int u = GHOST; u < BLOCK + GHOST; u++)
        for (int f = 0; f < FIELDS; f++) {
          int dst[3], src[3];
          dst[axis] = high ? BLOCK + GHOST : GHOST - 1;
          src[axis] = high ? GHOST : BLOCK + GHOST - 1;
          dst[axis == 0 ? 1 : 0] = src[axis == 0 ? 1 : 0] = u;
          dst[axis == 2 ? 1 : 2] = src[axis == 2 ? 1 : 2] = v;
          to->field[f][(dst[2] * SIDE + dst[1]) * SIDE + dst[0]] =
              from->field[f][(src[2] * SIDE + src[1]) * SIDE + src[0]];
        }
    x->copied += BLOCK * BLOCK;
  }
}

/* The density of every block at the current time: the interior, then
 * the ghost layers across faces between quadrants of one size from p4est's
 * exchange, and the ghost cells it does not reach (edges, corners, faces
 * between levels) from the initial condition. */
static void fill_quadrant(void *ctx, p8est_quadrant_t *q, const strata_amr_block *b)
{
  fill(b, q->p.user_data, *(const enum cells *)ctx);
}

static int64_t write_density(p8est_t *p)
{
  int64_t copied = 0;
  for (int pass = 0; pass < 2; pass++) { /* the interior, then the ghosts no face reached */
    if (pass == 1) {
      p8est_ghost_t *ghost = p8est_ghost_new(p, P8EST_CONNECT_FACE);
      struct exchange x = {p, malloc((ghost->ghosts.elem_count + 1) * sizeof(block_t)), 0};
      p8est_ghost_exchange_data(p, ghost, x.ghosts);
      p8est_iterate(p, ghost, &x, NULL, copy_face, NULL, NULL);
      copied = x.copied;
      free(x.ghosts);
      p8est_ghost_destroy(ghost);
    }
    enum cells which = pass ? MISSING_GHOSTS : INTERIOR;
    p4est_mesh_each(p, fill_quadrant, &which);
  }
  return copied;
}

/* For --compare: every ghost cell of this rank's blocks, set by p4est's
 * exchange or from the initial condition, holds the field's value there
 * (the octree of the comparison is filled with those values); the cells
 * that differ, summed over the ranks. */
struct ghost_check {
  block_t want;
  int64_t wrong;
};

static void check_ghosts(void *ctx, p8est_quadrant_t *q, const strata_amr_block *b)
{
  struct ghost_check *g = ctx;
  const block_t *d = q->p.user_data;
  fill(b, &g->want, ALL_CELLS);
  for (int c = 0; c < CUBE; c++)
    g->wrong += memcmp(&d->field[DENSITY][c], &g->want.field[DENSITY][c], sizeof(double)) != 0;
}

static int64_t wrong_ghosts(p8est_t *p)
{
  struct ghost_check *g = calloc(1, sizeof *g);
  p4est_mesh_each(p, check_ghosts, g);
  int64_t wrong = g->wrong;
  free(g);
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT64_T, MPI_SUM, strata_comm());
  return wrong;
}

/* ---- the Strata side ---- */

/* A quadrant's fields, for the mesh description: its blocks' addresses. */
static void block_fields(void *user_data, void **out)
{
  block_t *d = user_data;
  for (int f = 0; f < FIELDS; f++)
    out[f] = d->field[f];
}

static void method_params(strata_infer_params *ip, strata_model *model)
{
  strata_infer_params_init(ip);
  ip->level_base = 1;
  ip->level_array = 2;
  ip->level_infer = 3;
  ip->model = model;
  ip->reference = STRATA_INFER_FIXED;
  ip->overdensity_threshold = 2;
  ip->fields[0] = DENSITY;
  ip->n_fields = 1;
  ip->marker_field = MARKER;
}

/* Marked cells in the application's blocks: read in its own memory, after
 * acquiring each marker's handle (a GPU worker may hold the latest copy). */
struct marked {
  strata_mesh *mesh;
  int64_t cells;
};

static void count_marked(void *ctx, p8est_quadrant_t *q, const strata_amr_block *b)
{
  struct marked *m = ctx;
  const block_t *d = q->p.user_data;
  starpu_data_handle_t h;
  strata_mesh_field_handle(m->mesh, b, MARKER, &h);
  starpu_data_acquire(h, STARPU_R);
  for (int c = 0; c < CUBE; c++)
    m->cells += d->field[MARKER][c] == 1;
  starpu_data_release(h);
}

static int64_t marked_cells(p8est_t *p, strata_mesh *mesh)
{
  struct marked m = {mesh, 0};
  p4est_mesh_each(p, count_marked, &m);
  MPI_Allreduce(MPI_IN_PLACE, &m.cells, 1, MPI_INT64_T, MPI_SUM, strata_comm());
  return m.cells;
}

/* ---- the comparison with Strata's own octree ---- */

static int leaf_cmp(const void *x, const void *y)
{
  const int64_t *a = x, *b = y;
  for (int k = 0; k < 4; k++)
    if (a[k] != b[k])
      return a[k] < b[k] ? -1 : 1;
  return 0;
}

static void add_name(void *ctx, p8est_quadrant_t *q, const strata_amr_block *b)
{
  int64_t **at = ctx;
  (void)q;
  *(*at)++ = b->level;
  for (int a = 0; a < 3; a++)
    *(*at)++ = b->index[a];
}

/* Strata's octree refined to the forest's leaves (gathered here, for the
 * check only), every block holding the same values as the quadrant's. */
static strata_amr *same_octree(p8est_t *p)
{
  int64_t mine = (int64_t)p->local_num_quadrants, *names = malloc((size_t)(4 * mine + 1) * 8);
  int64_t *at = names;
  p4est_mesh_each(p, add_name, &at);
  int size = strata_size(), count = (int)(4 * mine);
  int *counts = malloc((size_t)size * sizeof *counts),
      *displs = malloc((size_t)size * sizeof *displs);
  MPI_Allgather(&count, 1, MPI_INT, counts, 1, MPI_INT, strata_comm());
  int total = 0;
  for (int r = 0; r < size; r++)
    displs[r] = total, total += counts[r];
  int64_t *all = malloc((size_t)total * 8);
  MPI_Allgatherv(names, count, MPI_INT64_T, all, counts, displs, MPI_INT64_T, strata_comm());
  const int64_t n = total / 4;
  qsort(all, (size_t)n, 4 * sizeof *all, leaf_cmp);

  strata_amr_params ap;
  strata_amr_params_init(&ap);
  ap.block_cells = BLOCK;
  ap.max_level = MAX_LEVEL;
  ap.nfields = FIELDS;
  ap.field_names[MARKER] = "marker";
  strata_amr *amr = NULL;
  if (strata_amr_create(&ap, &amr))
    return NULL;
  for (int level = 0; level < MAX_LEVEL; level++) { /* refine the ancestors of finer leaves */
    int64_t nl = strata_amr_num_leaves(amr);
    strata_amr_block *leaves = malloc((size_t)nl * sizeof *leaves);
    int8_t *flags = calloc((size_t)nl, 1);
    strata_amr_leaves(amr, leaves, nl, &nl);
    for (int64_t i = 0; i < nl; i++)
      for (int64_t j = 0; j < n && !flags[i]; j++) {
        const int64_t *f = all + 4 * j;
        int inside = f[0] > leaves[i].level;
        for (int a = 0; a < 3 && inside; a++)
          inside = (f[1 + a] >> (f[0] - leaves[i].level)) == leaves[i].index[a];
        flags[i] = (int8_t)inside;
      }
    strata_amr_adapt_flags(amr, flags, NULL);
    free(leaves), free(flags);
  }
  int64_t nl = strata_amr_num_leaves(amr);
  strata_amr_block *leaves = malloc((size_t)nl * sizeof *leaves);
  strata_amr_leaves(amr, leaves, nl, &nl);
  block_t *scratch = malloc(sizeof *scratch);
  for (int64_t i = 0; i < nl; i++) {
    strata_amr_block_info info;
    strata_amr_block_query(amr, &leaves[i], &info);
    if (info.rank != strata_rank())
      continue;
    fill(&leaves[i], scratch, ALL_CELLS);
    for (int f = 0; f < FIELDS; f++) {
      starpu_data_handle_t h = strata_amr_field_handle(amr, &leaves[i], f);
      starpu_data_acquire(h, STARPU_W);
      memcpy(starpu_data_get_local_ptr(h), scratch->field[f], sizeof scratch->field[f]);
      starpu_data_release(h);
    }
  }
  if (nl != n && strata_rank() == 0)
    fprintf(stderr, "the octree has %lld leaves, the forest %lld\n", (long long)nl, (long long)n);
  free(scratch), free(leaves), free(all), free(names), free(counts), free(displs);
  return nl == n ? amr : NULL;
}

static void bubble_text(strata_infer *inf, char **text, size_t *size)
{
  strata_bubble *b = NULL;
  int64_t n = 0;
  strata_infer_bubbles(inf, &b, NULL, &n);
  FILE *f = open_memstream(text, size);
  for (int64_t i = 0; i < n; i++)
    fprintf(f, "%lld %.17g %.17g %.17g %.17g %.17g %.17g %lld %lld\n", (long long)b[i].id,
            b[i].center[0], b[i].center[1], b[i].center[2], b[i].radius, b[i].mass, b[i].peak,
            (long long)b[i].cells, (long long)b[i].parts);
  fclose(f);
  free(b);
}

static int compare_with_octree(p8est_t *p, strata_infer *theirs, strata_model *model)
{
  strata_amr *amr = same_octree(p);
  if (!amr)
    return 1;
  strata_infer_params ip;
  method_params(&ip, model);
  strata_infer *own = NULL;
  int bad = strata_infer_create(amr, &ip, &own) || strata_infer_run(own, NULL);
  char *a = NULL, *b = NULL;
  size_t na = 0, nb = 0;
  if (!bad) {
    bubble_text(own, &a, &na);
    bubble_text(theirs, &b, &nb);
    bad = na != nb || memcmp(a, b, na) != 0;
  }
  if (strata_rank() == 0)
    printf("  the octree's bubbles: %s\n", bad ? "DIFFERENT" : "the same, byte for byte");
  free(a), free(b);
  strata_infer_destroy(own);
  strata_amr_destroy(amr);
  return bad;
}

int main(int argc, char **argv)
{
  int steps = 3, compare = 0;
  const char *bubbles = NULL, *model_path = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--steps") && i + 1 < argc)
      steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--compare"))
      compare = 1;
    else if (!strcmp(argv[i], "--bubbles") && i + 1 < argc)
      bubbles = argv[++i];
    else if (!strcmp(argv[i], "--model") && i + 1 < argc)
      model_path = argv[++i];
    else {
      fprintf(stderr,
              "usage: p4est_infer [--steps N] [--compare] [--bubbles FILE] [--model FILE]\n");
      return 2;
    }
  }
  int ret = strata_init(&argc, &argv, NULL); /* MPI too, for p4est */
  if (ret) {
    fprintf(stderr, "strata_init: %s\n", strata_strerror(ret));
    return ret == STRATA_ENODEV ? 77 : 1;
  }
  sc_init(strata_comm(), 0, 0, NULL, SC_LP_ERROR);
  p4est_init(NULL, SC_LP_ERROR);

  p8est_connectivity_t *conn = p8est_connectivity_new_brick(ROOT, ROOT, ROOT, 1, 1, 1);
  p8est_t *p = p8est_new_ext(strata_comm(), conn, 0, 1, 1, sizeof(block_t), init_quadrant, NULL);
  strata_mesh_params mp;
  strata_mesh_params_init(&mp); /* the unit cube, periodic */
  for (int a = 0; a < 3; a++)
    mp.root[a] = ROOT;
  mp.block_cells = BLOCK;
  mp.ghost_depth = GHOST;
  mp.max_level = MAX_LEVEL;
  mp.nfields = FIELDS;
  mp.field_names[MARKER] = "marker";
  strata_mesh *mesh = NULL;
  strata_model *model = NULL;
  strata_infer *inf = NULL;
  int failed = strata_mesh_create(&mp, &mesh) || (model_path ? strata_model_load(model_path, &model)
                                                             : strata_model_load_default(&model));
  for (int step = 0; step < steps && !failed; step++) {
    now = step;
    /* Remesh: the application's criteria, balance, partition. */
    p8est_coarsen(p, 0, coarsen_where_thin, init_quadrant);
    p8est_refine(p, 1, refine_where_dense, init_quadrant);
    p8est_balance(p, P8EST_CONNECT_FULL, init_quadrant); /* as Strata's octree balances */
    p8est_partition(p, 0, NULL);
    int64_t copied = write_density(p), wrong = compare ? wrong_ghosts(p) : 0;
    MPI_Allreduce(MPI_IN_PLACE, &copied, 1, MPI_INT64_T, MPI_SUM, strata_comm());
    if (compare && strata_rank() == 0)
      printf("  ghost layers: %lld cells from p4est's exchange, %lld cells unlike the field\n",
             (long long)copied, (long long)wrong);
    failed = wrong != 0 || copied == 0; /* the same on every rank */
    if (!failed)
      failed = p4est_mesh_describe(p, mesh, block_fields);
    if (!failed && !inf) {
      strata_infer_params ip;
      method_params(&ip, model);
      failed = strata_infer_create_on_mesh(mesh, &ip, &inf);
    }
    strata_infer_stats st;
    if (!failed)
      failed = strata_infer_run(inf, &st);
    if (failed) {
      fprintf(stderr, "rank %d: %s\n", strata_rank(), strata_error_message());
      break;
    }
    int64_t marked = marked_cells(p, mesh);
    if (strata_rank() == 0)
      printf("step %d: %lld quadrants, %lld arrays, %lld bubbles, %lld cells marked, cycle %.3f "
             "s\n",
             step, (long long)p->global_num_quadrants, (long long)st.elements,
             (long long)st.bubbles, (long long)marked, st.total);
    if (compare)
      failed = compare_with_octree(p, inf, model);
  }
  if (!failed && bubbles) { /* gathered on every rank (collective), written by rank 0 */
    char *text = NULL;
    size_t n = 0;
    bubble_text(inf, &text, &n);
    FILE *f = strata_rank() == 0 ? fopen(bubbles, "w") : NULL;
    failed = strata_rank() == 0 && (!f || fwrite(text, 1, n, f) != n);
    if (f)
      fclose(f);
    free(text);
  }
  strata_infer_destroy(inf);
  strata_mesh_destroy(mesh);
  strata_model_destroy(model);
  p8est_destroy(p);
  p8est_connectivity_destroy(conn);
  sc_finalize();
  strata_finalize();
  return failed ? 1 : 0;
}
