/* Bubbles joined across arrays and ranks, on 1 to 4 ranks: a Gaussian blob
 * across 2, 4 and 8 arrays and across the periodic boundary is one bubble
 * whose mass and cells are the sums of its parts and that is delivered as
 * a particle to exactly the leaf holding its centre; two blobs are two
 * bubbles. On one rank, the default `strata infer` job's bubbles against a
 * brute-force 26-connected labelling of its whole thresholded probability
 * field. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <strata/infer.h>

#include "amr_check.h"
#include "blob_method.h"
#include "infer_job.h"
#include "step_model.h"

/* Periodic distance along one axis. */
static double wrapped(double d) { return d - round(d); }

/* The elements this rank should know, from the whole list and its leaves
 * (which are the level-array elements here): those of its leaves, its own,
 * and those within two of its own in each axis, the domain periodic. */
static int64_t expected_known(strata_amr *amr, strata_infer *inf)
{
  int64_t n = 0, nleaves = strata_amr_num_leaves(amr), known = 0;
  CHECK_EQ(strata_infer_elements(inf, NULL, NULL, 0, &n), 0);
  int64_t(*idx)[3] = malloc((size_t)(n + 1) * sizeof *idx);
  int *ranks = malloc((size_t)(n + 1) * sizeof *ranks);
  strata_amr_block *leaves = malloc((size_t)nleaves * sizeof *leaves);
  CHECK_EQ(strata_infer_elements(inf, idx, ranks, n, &n), 0);
  strata_amr_leaves(amr, leaves, nleaves, &nleaves);
  const int64_t blocks = 8;
  for (int64_t i = 0; i < n; i++) {
    int near = ranks[i] == my_rank();
    for (int64_t j = 0; j < n && !near; j++) {
      int within = ranks[j] == my_rank();
      for (int a = 0; a < 3; a++) {
        int64_t d = llabs(idx[i][a] - idx[j][a]);
        within = within && (d <= 2 || blocks - d <= 2);
      }
      near = within;
    }
    for (int64_t l = 0; l < nleaves && !near; l++) {
      strata_amr_block_info info;
      strata_amr_block_query(amr, &leaves[l], &info);
      near = info.rank == my_rank() && leaves[l].level == 2 &&
             !memcmp(leaves[l].index, idx[i], sizeof idx[i]);
    }
    known += near;
  }
  free(idx), free(ranks), free(leaves);
  return known;
}

/* Blobs at `centres`; `parts[b]`: arrays blob b spans. */
static void check_blobs(strata_model *model, int nblobs, const double *centres, const int *parts)
{
  strata_amr *amr = blob_hierarchy(nblobs, centres);
  strata_infer *inf = blob_method(amr, model);
  strata_infer_stats st;
  CHECK_EQ(strata_infer_run(inf, &st), 0);
  strata_bubble *b = NULL, *pieces = NULL;
  int64_t nb = 0, np = 0, *piece_element = NULL, ne = 0;
  CHECK_EQ(strata_infer_bubbles(inf, &b, NULL, &nb), 0);
  CHECK_EQ(strata_infer_bubble_parts(inf, &pieces, &piece_element, &np), 0);
  CHECK_EQ(strata_infer_elements(inf, NULL, NULL, 0, &ne), 0);
  int *owner = malloc((size_t)(ne + 1) * sizeof *owner);
  CHECK_EQ(strata_infer_elements(inf, NULL, owner, ne, &ne), 0);
  CHECK_EQ(nb, nblobs);
  CHECK_EQ(st.bubbles, nblobs);
  CHECK_EQ(st.parts, np);
  CHECK_EQ(st.parts_lost, 0);
  /* No rank holds the whole level array: each knows the elements its
   * leaves overlap, its own, and those within two of its own (periodic). */
  CHECK_EQ(st.elements_known, expected_known(amr, inf));
  int64_t owned = st.elements_local, join_bytes = st.join_bytes_local;
  MPI_Allreduce(MPI_IN_PLACE, &owned, 1, MPI_INT64_T, MPI_SUM, strata_comm());
  MPI_Allreduce(MPI_IN_PLACE, &join_bytes, 1, MPI_INT64_T, MPI_SUM, strata_comm());
  CHECK_EQ(st.elements, owned);
  if (num_ranks() == 1)
    CHECK_EQ(st.join_bytes_local, 0);
  int split = 0, delivered = 0; /* a bubble with parts on two ranks; its leaf's checks */
  int want_parts = 0;
  for (int k = 0; k < nblobs; k++)
    want_parts += parts[k];
  CHECK_EQ(np, want_parts);
  for (int64_t i = 0; i < nb && nb == nblobs; i++) {
    /* Which blob: the nearest centre. */
    int k = 0;
    double best = INFINITY;
    for (int c = 0; c < nblobs; c++) {
      double d2 = 0;
      for (int a = 0; a < 3; a++)
        d2 += pow(wrapped(b[i].center[a] - centres[3 * c + a]), 2);
      if (d2 < best)
        best = d2, k = c;
    }
    CHECK(sqrt(best) < 1.0 / 64); /* within half a cell of the blob's centre */
    CHECK_EQ(b[i].parts, parts[k]);
    /* The parts within 0.15 of this blob (the others are > 0.7 away) sum to the bubble. */
    double mass = 0;
    int64_t cells = 0;
    int rank_of_part = -1;
    for (int64_t j = 0; j < np; j++) {
      double d2 = 0;
      for (int a = 0; a < 3; a++)
        d2 += pow(wrapped(pieces[j].center[a] - centres[3 * k + a]), 2);
      if (sqrt(d2) < 0.15) {
        mass += pieces[j].mass;
        cells += pieces[j].cells;
        const int r = owner[piece_element[j]];
        split |= rank_of_part >= 0 && r != rank_of_part;
        rank_of_part = r;
      }
    }
    CHECK(fabs(b[i].mass - mass) <= 1e-12 * mass);
    CHECK_EQ(b[i].cells, cells);
    CHECK(b[i].cells > 50); /* a sphere of radius ~2.75 cells */
    /* Delivered to the leaf holding its centre, and to no other: checked
     * by that leaf's owner (a rank knows its own leaves and those touching
     * them; no other rank finds it, or finds it another rank's). */
    strata_amr_block leaf;
    strata_amr_block_info info = {.rank = -1};
    const int known = strata_amr_block_at_point(amr, b[i].center, -1, &leaf);
    CHECK(known == 0 || known == STRATA_ERANGE);
    if (known == 0)
      CHECK_EQ(strata_amr_block_query(amr, &leaf, &info), 0);
    delivered += info.rank == my_rank();
    if (info.rank == my_rank()) {
      strata_bubble *got = NULL;
      int64_t ng = 0;
      CHECK_EQ(strata_infer_leaf_particles(inf, &leaf, &got, &ng), 0);
      int found = 0;
      for (int64_t g = 0; g < ng; g++)
        found += got[g].id == b[i].id && got[g].mass == b[i].mass;
      CHECK_EQ(found, 1);
      free(got);
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &delivered, 1, MPI_INT, MPI_SUM, strata_comm());
  CHECK_EQ(delivered, nblobs); /* each bubble's leaf checked on exactly one rank */
  int64_t particles = st.particles_local;
  MPI_Allreduce(MPI_IN_PLACE, &particles, 1, MPI_INT64_T, MPI_SUM, strata_comm());
  CHECK_EQ(particles, nblobs);
  /* The join moves a bubble's parts to one rank: some bytes travel when its
   * parts lie on two ranks (a part is at least 10 values of 8 bytes). */
  if (split)
    CHECK(join_bytes >= 80);
  if (my_rank() == 0)
    printf("%d blob(s): %lld bubble(s) from %lld parts%s, %lld join bytes over the ranks\n", nblobs,
           (long long)nb, (long long)np, split ? " on several ranks" : "", (long long)join_bytes);
  free(b);
  free(pieces);
  free(piece_element);
  free(owner);
  CHECK_EQ(strata_infer_destroy(inf), 0);
  CHECK_EQ(strata_amr_destroy(amr), 0);
}

/* ---- the default job against a brute-force labelling ---- */

struct labelling {
  int64_t n, side, blocks; /* array cells, grid cells and elements per axis */
  int64_t *slot;           /* element position per element index, -1: none */
  float *prob;             /* per element, n^3 */
  int32_t *parent;         /* per cell of every element */
};

static int32_t find(int32_t *parent, int32_t i)
{
  while (parent[i] != i)
    i = parent[i] = parent[parent[i]];
  return i;
}

/* The cell at global (x, y, z) (wrapped), as element slot * n^3 + local; -1 outside arrays. */
static int64_t cell_at(const struct labelling *L, int64_t x, int64_t y, int64_t z)
{
  int64_t g[3] = {(x + L->side) % L->side, (y + L->side) % L->side, (z + L->side) % L->side};
  int64_t e = L->slot[((g[2] / L->n) * L->blocks + g[1] / L->n) * L->blocks + g[0] / L->n];
  if (e < 0)
    return -1;
  int64_t l[3] = {g[0] % L->n, g[1] % L->n, g[2] % L->n};
  return e * L->n * L->n * L->n + (l[2] * L->n + l[1]) * L->n + l[0];
}

struct region {
  int64_t id, cells;
  double mass;
};

static int region_cmp(const void *x, const void *y)
{
  const struct region *a = x, *b = y;
  return (a->id > b->id) - (a->id < b->id);
}

static void check_default_job(void)
{
  struct infer_job job;
  infer_job_defaults(&job);
  struct infer_run run;
  CHECK_EQ(infer_job_setup(&job, &run), 0);
  strata_infer *inf = NULL;
  CHECK_EQ(infer_job_method(&run, 0, &inf), 0);
  strata_infer_stats st;
  CHECK_EQ(strata_infer_run(inf, &st), 0);
  const float threshold = strata_infer_get_params(inf)->bubble_threshold;
  struct labelling L = {.n = strata_infer_array_cells(inf)};
  int64_t ne = 0;
  strata_infer_elements(inf, NULL, NULL, 0, &ne);
  int64_t(*idx)[3] = malloc((size_t)ne * sizeof *idx);
  strata_infer_elements(inf, idx, NULL, ne, &ne);
  L.blocks = (int64_t)strata_amr_get_params(run.amr)->root_blocks
             << strata_infer_get_params(inf)->level_array;
  L.side = L.blocks * L.n;
  const int64_t vol = L.n * L.n * L.n, total = ne * vol;
  L.slot = malloc((size_t)(L.blocks * L.blocks * L.blocks) * sizeof *L.slot);
  for (int64_t i = 0; i < L.blocks * L.blocks * L.blocks; i++)
    L.slot[i] = -1;
  L.prob = malloc((size_t)total * sizeof *L.prob);
  L.parent = malloc((size_t)total * sizeof *L.parent);
  for (int64_t e = 0; e < ne; e++) {
    L.slot[(idx[e][2] * L.blocks + idx[e][1]) * L.blocks + idx[e][0]] = e;
    CHECK_EQ(strata_infer_read_probability(inf, idx[e], L.prob + e * vol), 0);
  }
  for (int64_t c = 0; c < total; c++)
    L.parent[c] = L.prob[c] > threshold ? (int32_t)c : -1;
  /* Every pair of 26-neighbours above threshold, over the periodic grid. */
  for (int64_t e = 0; e < ne; e++)
    for (int64_t l = 0; l < vol; l++) {
      int64_t c = e * vol + l;
      if (L.parent[c] < 0)
        continue;
      int64_t g[3] = {idx[e][0] * L.n + l % L.n, idx[e][1] * L.n + l / L.n % L.n,
                      idx[e][2] * L.n + l / (L.n * L.n)};
      for (int dz = -1; dz <= 1; dz++)
        for (int dy = -1; dy <= 1; dy++)
          for (int dx = -1; dx <= 1; dx++) {
            int64_t o = cell_at(&L, g[0] + dx, g[1] + dy, g[2] + dz);
            if (o < 0 || L.parent[o] < 0)
              continue;
            int32_t a = find(L.parent, (int32_t)c), b = find(L.parent, (int32_t)o);
            if (a != b)
              L.parent[a > b ? a : b] = a < b ? a : b;
          }
    }
  /* Per region: cells, mass, and the first cell in global scan order. */
  struct region *r = calloc((size_t)total, sizeof *r);
  for (int64_t c = 0; c < total; c++)
    r[c].id = INT64_MAX;
  for (int64_t c = 0; c < total; c++) {
    if (L.parent[c] < 0)
      continue;
    int64_t e = c / vol, l = c % vol;
    int64_t g[3] = {idx[e][0] * L.n + l % L.n, idx[e][1] * L.n + l / L.n % L.n,
                    idx[e][2] * L.n + l / (L.n * L.n)};
    struct region *x = &r[find(L.parent, (int32_t)c)];
    x->cells++;
    x->mass += L.prob[c];
    int64_t id = (g[2] * L.side + g[1]) * L.side + g[0];
    x->id = id < x->id ? id : x->id;
  }
  int64_t nr = 0;
  for (int64_t c = 0; c < total; c++)
    if (r[c].cells)
      r[nr++] = r[c];
  qsort(r, (size_t)nr, sizeof *r, region_cmp);
  strata_bubble *b = NULL;
  int64_t nb = 0;
  CHECK_EQ(strata_infer_bubbles(inf, &b, NULL, &nb), 0);
  printf("default job: %lld parts in %lld arrays, %lld bubbles, brute force %lld regions\n",
         (long long)st.parts, (long long)ne, (long long)nb, (long long)nr);
  CHECK_EQ(nb, nr);
  CHECK(nb < st.parts); /* some regions do straddle arrays */
  int64_t wrong = 0;
  for (int64_t i = 0; i < nb && nb == nr; i++)
    wrong += b[i].id != r[i].id || b[i].cells != r[i].cells ||
             fabs(b[i].mass - r[i].mass) > 1e-9 * r[i].mass;
  CHECK_EQ(wrong, 0);
  free(b);
  free(r);
  free(L.slot);
  free(L.prob);
  free(L.parent);
  free(idx);
  CHECK_EQ(strata_infer_destroy(inf), 0);
  infer_job_teardown(&run);
}

int main(int argc, char **argv)
{
  CHECK_EQ(strata_init(&argc, &argv, NULL), 0);
  strata_model *model = step_model();
  const double e = 2.5 / 8; /* the middle of element 2 along an axis */
  /* Across a face, an edge, a corner, and the periodic boundary at x = 0. */
  const double face[3] = {0.5, e, e}, edge[3] = {0.5, 0.5, e}, corner[3] = {0.5, 0.5, 0.5},
               wrap[3] = {0.0, e, e};
  const int two = 2, four = 4, eight = 8;
  check_blobs(model, 1, face, &two);
  check_blobs(model, 1, edge, &four);
  check_blobs(model, 1, corner, &eight);
  check_blobs(model, 1, wrap, &two);
  const double pair[6] = {0.5, e, e, 2.5 / 8, 6.5 / 8, 6.5 / 8};
  const int pair_parts[2] = {2, 1};
  check_blobs(model, 2, pair, pair_parts);
  strata_model_destroy(model);
  if (num_ranks() == 1)
    check_default_job();
  CHECK_EQ(strata_finalize(), 0);
  return check_status();
}
