/* Internal interfaces of the AMR module (not installed). */
#ifndef STRATA_AMR_INTERNAL_H
#define STRATA_AMR_INTERNAL_H

#include <mpi.h>
#include <starpu.h>

#include <strata/amr.h>
#include <strata/io.h>
#include <strata/mesh.h>
#include <strata/model.h>

#include "internal/exchange.h"
#include "internal/runtime.h"

/* A block of the tree. Non-leaves keep no data; all 2^dim children of a
 * non-leaf exist. */
struct strata__amr_node {
  strata_amr_block b;
  int is_leaf;
  int rank;       /* owner of a leaf's handles, -1 for non-leaves */
  int64_t serial; /* creation number: the StarPU-MPI tags of its handles */
  starpu_data_handle_t h[STRATA_AMR_MAX_FIELDS];
  int64_t pos;                   /* index in the Morton order of all leaves */
  int64_t slot;                  /* index in amr->leaves (this rank's) or amr->ghosts */
  int8_t flag;                   /* adaptation scratch: +1 refine, -1 coarsen, 0 keep */
  int8_t unfilled;               /* new leaf whose values come from a problem once placed */
  uint32_t epoch;                /* the forest's last mirror that held it */
  struct strata__amr_node *next; /* hash bucket chain */
};

/* A flag of the leaves of a family that coarsens (decided before any does). */
#define STRATA__AMR_MERGE (-2)

/* A leaf that changes rank in a partition: leaving this rank (its node `n`,
 * to `peer`) or arriving (its name, serial and state, from `peer`). */
struct strata__amr_move {
  struct strata__amr_node *n;
  strata_amr_block b;
  int64_t serial, pos;
  int peer;
  int8_t unfilled, arrives;
};

struct strata__amr_moves {
  struct strata__amr_move *m;
  int64_t n, cap;
};

/* The hierarchy's structure on p4est (forest.c). Every operation is
 * collective; after create, refine, coarsen and partition the caller
 * brings the node hash in step with the forest (mirror), after moving the
 * handles of what a partition moved. */
struct strata__forest_ops {
  int (*create)(strata_amr *amr); /* the root blocks, spread evenly */
  void (*destroy)(strata_amr *amr);
  int (*mirror)(strata_amr *amr);
  int (*refine)(strata_amr *amr);  /* the leaves flagged 1, then 2:1 balance */
  int (*coarsen)(strata_amr *amr); /* the families flagged STRATA__AMR_MERGE */
  /* counts[r]: the leaves rank r holds now, moved so that no family is
   * cut; nonzero when that moves any (every rank answers alike) */
  int (*for_coarsening)(strata_amr *amr, int32_t *counts);
  int (*partition)(strata_amr *amr, const int32_t *counts, struct strata__amr_moves *mv);
  /* bytes of the forest and its ghost layer; of the connectivity */
  void (*memory)(const strata_amr *amr, int64_t *forest, int64_t *connectivity);
};

extern const struct strata__forest_ops strata__forest2_ops, strata__forest3_ops;

struct strata__forest {
  const struct strata__forest_ops *ops;
  void *p4est, *conn, *ghost; /* p4est_t or p8est_t and theirs */
  int root_level;             /* p4est's level of the root blocks (one tree) or 0 (a brick) */
  uint32_t epoch;
  const strata_amr_problem *filling; /* new leaves' values come from it (NULL: from family) */
  int error;                         /* the first error of the replacements in progress */
  int64_t changed;                   /* leaves made or dropped here by them */
};

/* A test problem: the function and what it owns. */
struct strata_amr_problem {
  strata_amr_problem_fn fn;
  void *ctx;
  void *owned;                     /* freed with the problem */
  struct strata_amr_problem *base; /* destroyed with the problem (clumps' background) */
  /* Collective over comm before this rank evaluates the problem in the
   * boxes [box[6i], box[6i + 3]) x ... (unit domain; NULL: nothing to
   * fetch), and what frees `owned` (NULL: free()). */
  int (*prepare)(void *ctx, MPI_Comm comm, const double *box, int64_t nboxes);
  void (*release)(void *owned);
  /* The kind of problem and what its cost per cell grows with (clumps,
   * blobs), alike in every run: the fill tasks' footprint keys on it. */
  uint32_t cost_key;
};

/* Whether the problem or one of its bases fetches before it is evaluated
 * (the same on every rank: problems are made alike on all of them). */
int strata__amr_problem_fetches(const strata_amr_problem *problem);

/* Every prepare() of the problem and its bases, in turn. Collective. */
int strata__amr_problem_prepare(const strata_amr_problem *problem, MPI_Comm comm, const double *box,
                                int64_t nboxes);

struct strata_amr {
  strata_amr_params p;
  char names[STRATA_AMR_MAX_FIELDS][64];
  MPI_Comm comm; /* StarPU-MPI communicator (strata_comm()) */
  MPI_Comm meta; /* Strata's own collectives on the tree */
  int rank, size;
  strata__tags tags; /* StarPU-MPI tags: leaves' handles, halo exchanges */
  int64_t next_serial;
  int64_t exchanges;
  struct strata__forest forest;
  struct strata__amr_node **buckets;
  int64_t nbuckets, nnodes;
  struct strata__amr_node **leaves; /* this rank's, in Morton order */
  int64_t nleaves;
  struct strata__amr_node **ghosts; /* the leaves touching them, by rank and order */
  int64_t nghosts;
  int64_t first, total; /* global position of leaves[0]; the number of all leaves */
  double (*weight)(void *ctx, const strata_amr_block *b);
  void *weight_ctx;
  int busy; /* inference cycles in flight, whose plans point into the tree */
  strata__live live;
};

/* Interleave the low 21 bits of x, y, z. */
static inline uint64_t strata__morton(const int64_t idx[3])
{
  uint64_t key = 0;
  for (int bit = 20; bit >= 0; bit--)
    for (int a = 2; a >= 0; a--)
      key = key << 1 | (((uint64_t)idx[a] >> bit) & 1);
  return key;
}

/* The order of blocks by level, then Morton key of the index (ka, kb). */
static inline int strata__block_cmp(const strata_amr_block *a, uint64_t ka,
                                    const strata_amr_block *b, uint64_t kb)
{
  if (a->level != b->level)
    return a->level < b->level ? -1 : 1;
  return ka < kb ? -1 : ka > kb;
}

/* A leaf of a mesh, on its owner: its field handles (`owned`: registered
 * by Strata on the application's memory, unregistered with the leaf). */
struct strata__mesh_leaf {
  strata_amr_block b;
  uint64_t key; /* Morton key of the index */
  int owned;
  starpu_data_handle_t h[STRATA_AMR_MAX_FIELDS];
};

/* A mesh: this rank's leaves only, sorted by (level, key) once committed. */
struct strata_mesh {
  strata_mesh_params p;
  char names[STRATA_AMR_MAX_FIELDS][64];
  MPI_Comm comm; /* StarPU-MPI communicator (strata_comm()) */
  MPI_Comm meta; /* Strata's own collectives */
  int rank, size;
  struct strata__mesh_leaf *leaves;
  int64_t nleaves, cap;
  int error; /* the first error of the description in progress */
  char error_message[512];
  int committed;
  int users;       /* inference methods reading it */
  int busy;        /* their cycles in flight */
  strata_amr *amr; /* the hierarchy it describes (Strata's own octree), or NULL */
  strata__live live;
};

/* A mesh describing `amr` (not registered as a live object: its method
 * owns it); strata__mesh_describe_amr() fills it. Collective. */
int strata__mesh_of_amr(strata_amr *amr, strata_mesh **out);
/* This rank's leaves of the hierarchy as they are now, with its handles,
 * committed without the checks (the octree tiles its domain). Not
 * collective. */
int strata__mesh_describe_amr(strata_mesh *m);
/* Free a mesh (the public destroy without its checks). */
void strata__mesh_free(strata_mesh *m);
/* The local leaf named b, NULL when b is not a leaf of this rank. */
struct strata__mesh_leaf *strata__mesh_find(const strata_mesh *m, const strata_amr_block *b);
/* Blocks along axis a at `level`. */
static inline int64_t strata__mesh_blocks(const strata_mesh *m, int a, int level)
{
  return (int64_t)m->p.root[a] << level;
}
/* Edge of a cell at `level` in domain units (cells are cubes). */
static inline double strata__mesh_cell(const strata_mesh *m, int level)
{
  return (m->p.upper[0] - m->p.lower[0]) /
         (double)(strata__mesh_blocks(m, 0, level) * m->p.block_cells);
}

/* Cells of a block array (ghosts included) and per axis. */
int64_t strata__amr_side(const strata_amr *amr);
int64_t strata__amr_block_size(const strata_amr *amr);

/* Blocks per axis at `level`. */
int64_t strata__amr_blocks_at(const strata_amr *amr, int level);

/* A valid block name (level and index in range)? */
int strata__amr_valid(const strata_amr *amr, const strata_amr_block *b);

struct strata__amr_node *strata__amr_find(const strata_amr *amr, const strata_amr_block *b);
/* A new non-leaf node without handles (NULL when out of memory). */
struct strata__amr_node *strata__amr_add(strata_amr *amr, const strata_amr_block *b);
void strata__amr_remove(strata_amr *amr, struct strata__amr_node *n);

/* A serial for a new leaf, unique among all ranks: its handles' tags. */
int64_t strata__amr_new_serial(strata_amr *amr);
/* The forest's replacements (forest.c calls them): leaf `parent` of this
 * rank split into `kids` (octant order) with their serials, or this rank's
 * children of `parent` merged into it. Errors go to amr->forest.error. */
void strata__amr_split(strata_amr *amr, const strata_amr_block *parent,
                       const strata_amr_block *kids, const int64_t *serials);
void strata__amr_merge(strata_amr *amr, const strata_amr_block *parent, int64_t serial);
/* A node no longer mirrored: its handles let go, then removed. */
void strata__amr_forget(strata_amr *amr, struct strata__amr_node *n);
/* The ghost leaf at global position pos, NULL if none. */
struct strata__amr_node *strata__amr_ghost_at(const strata_amr *amr, int64_t pos);

/* Sort `n` records of `size` bytes and keep the first of equals; the new
 * count. */
int64_t strata__amr_sort_unique(void *base, int64_t n, size_t size,
                                int (*cmp)(const void *, const void *));

/* Records of two or three int64 values, compared in lexicographic order. */
int strata__amr_compare_pairs(const void *a, const void *b);
int strata__amr_compare_triples(const void *a, const void *b);

/* Call `fn` on every leaf overlapping the box [lo, hi) given in cells of
 * `level` (inside the domain); stops at the first nonzero return. */
int strata__amr_visit_box(const strata_amr *amr, int level, const int64_t lo[3],
                          const int64_t hi[3], int (*fn)(void *ctx, struct strata__amr_node *leaf),
                          void *ctx);

/* The cells next to block b in direction delta (each -1, 0 or +1), a
 * layer `thickness` cells thick in the directions that are not 0, in cells
 * of b's level; wrapped into the domain when periodic (`shift` is what was
 * added per axis). 0 when it leaves a non-periodic domain. */
int strata__amr_neighbor_region(const strata_amr *amr, const strata_amr_block *b,
                                const int delta[3], int64_t thickness, int64_t lo[3], int64_t hi[3],
                                int64_t shift[3]);

/* Particles written with a hierarchy: the bubbles and, per bubble, the
 * leaf that holds it; the bubbles' value channels as named columns. */
struct strata__amr_particles {
  int64_t n;
  const strata_bubble *bubbles;
  const strata_amr_block *leaves;
  int nvalues;                    /* value columns after the fixed ones */
  const char *const *value_names; /* their names */
};

/* strata_amr_write_hdf5_annotated() plus, when `particles` is not NULL, a
 * compound table "particles" (layout in docs/infer.md). Collective;
 * `particles` is read on rank 0. */
int strata__amr_write_hdf5(strata_amr *amr, const char *path, const char *const *keys,
                           const char *const *values, int n,
                           const struct strata__amr_particles *particles);

#endif
