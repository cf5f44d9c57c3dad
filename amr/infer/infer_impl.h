/* The inference method's private interface (amr/infer/ alone includes it):
 * its objects and the functions its phases share. The phases are one file
 * each: evaluate.c, allocate.c (with placement), populate.c, update.c
 * (apply and update); cycle.c runs a cycle, infer.c holds creation and
 * queries.
 *
 * The method reads a mesh (strata/mesh.h): each rank knows only its own
 * leaves. No rank holds the whole level array: a directory spread over the
 * ranks by ranges of Morton keys agrees on the element set and places it
 * (allocate.c, placement.c), and each rank knows only the elements its
 * leaves overlap, its own, and theirs within two elements (for the links
 * between arrays). Each rank plans the transfers of its own leaves, and one
 * exchange of their descriptions tells each element's rank what it
 * receives, so both sides of a pair of ranks hold the same list of
 * transfers between them, in the same order, and agree on the offsets of
 * their messages. Data only moves where it is needed: leaf parts and
 * bubble tables in one packed message per pair of ranks (the per-message
 * cost of StarPU-MPI dominates small transfers). */
#ifndef STRATA_AMR_INFER_IMPL_H
#define STRATA_AMR_INFER_IMPL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <starpu_mpi.h>
#include <strata/infer.h>
#include <strata/starpu.h>

#include "../amr_internal.h"
#include "codelets.h"
#include "internal/exchange.h"
#include "internal/model.h"
#include "internal/runtime.h"
#include "kernels/amr_kernels.h"
#include "kernels/bubble_kernels.h"
#include "kernels/infer_kernels.h"

/* One element of the level array, as a rank that knows it holds it. */
struct element {
  int64_t idx[3];
  uint64_t key; /* Morton key of idx: the order of the level array */
  int64_t pos;  /* its position in the whole level array, in that order */
  int rank;
  int64_t serial;                      /* StarPU-MPI tags of its handles */
  starpu_data_handle_t in, out, table; /* [C N^3] f32, [N^3] f32, bubble table */
  starpu_data_handle_t faces, links;   /* border faces, links with the neighbours */
};

/* An entry of the directory: the elements whose keys fall in this rank's
 * range of Morton keys, with what placing them needs. */
struct directory_entry {
  uint64_t key;
  int64_t idx[3];
  int rank;       /* -1 until placed */
  int64_t serial; /* -1 until placed */
  double weight;  /* in model tasks on a CPU worker (placement.c) */
  double cells;   /* that the leaves send it */
};

/* The mask of one local leaf at level >= level_base. */
struct mask {
  strata_amr_block b;
  uint64_t key;
  int64_t cells; /* per axis */
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
  strata_amr_block leaf;
  uint64_t leaf_key;
  int leaf_rank;
  const struct strata__mesh_leaf *local; /* the leaf, on its rank; NULL elsewhere */
  int kind;                              /* enum strata__amr_kind */
  int64_t lo[3], hi[3];
  int64_t offset; /* in the message between the two ranks, when they differ */
};

/* The plan and figures of the submitted cycle, until strata_infer_wait(). */
struct strata__infer_cycle {
  struct transfer *t;
  int64_t nt;
  strata_infer_stats st;
  double model_cpu; /* the model's CPU seconds on this rank before the cycle */
  double xfer_cpu;  /* and the transfer tasks' */
};

/* A joined bubble delivered to the local leaf that holds its centre. */
struct particle {
  strata_amr_block leaf;
  uint64_t key;
  int64_t bubble; /* index in strata_infer::delivered */
};

/* A rank whose leaves overlap the element of Morton key `key` (existing or
 * not), as the directory of that key heard. */
struct overlap {
  uint64_t key;
  int rank;
};

struct strata_infer {
  strata_mesh *mesh; /* what the method reads and writes (mesh->amr: Strata's octree, or NULL) */
  strata_infer_params p;
  int64_t n; /* array cells per axis */
  /* Bubble extraction's settings that do not change: the threshold, the
   * model's channels, the probability's and the values' (origin and cell
   * size are each array's) */
  struct strata__bubble_params bubble;
  char value_names[STRATA_BUBBLE_MAX_VALUES][64]; /* their particle table columns */
  strata__tags tags;                              /* StarPU-MPI tags: elements, masks, mailboxes */
  int64_t cycles;
  int64_t next_serial;     /* of the elements this rank's directory places */
  int neighbourhood_known; /* the last allocation succeeded: el holds what
                              is within two of this rank's own elements */
  int64_t xfer_cpu_ns;     /* CPU time of this method's transfer tasks (atomic adds) */
  struct element *el;      /* the elements this rank knows, in Morton order */
  int64_t nel;
  uint64_t dir_keys;           /* Morton keys in each rank's range of the directory */
  struct directory_entry *dir; /* this rank's range of the directory, in Morton order */
  int64_t ndir;
  int64_t dir_first; /* the position of dir[0] in the level array */
  int64_t elements;  /* in the whole level array */
  struct mask *masks;
  int64_t nmasks;
  struct leaf_list *lists;
  int64_t nlists;
  starpu_data_handle_t bubble_scratch;
  int64_t *dir_firsts;      /* every directory rank's first position */
  struct overlap *overlaps; /* this rank's directory range: who overlaps each key */
  int64_t noverlaps;        /* (each is asked about every key its leaves overlap) */
  strata_bubble *bubbles;   /* the joined bubbles this rank collected, by id */
  int64_t *bubble_element;  /* per bubble, the position of the element of its first cell */
  int64_t nbubbles;         /* (the bubbles rooted in its directory range) */
  strata_bubble *delivered; /* the joined bubbles whose centre lies in a local leaf */
  int64_t ndelivered;
  struct particle *particles; /* on local leaves, in leaf order */
  int64_t nparticles;
  double phase_end[STRATA_INFER_PHASES]; /* seconds after the cycle's start, this rank */
  double t0;
  starpu_pthread_mutex_t lock;       /* phase_end, written from callbacks */
  struct strata__infer_cycle *cycle; /* submitted, not yet waited for (cycle.c) */
  strata__live live;
};

static inline int is_double(const strata_infer *inf)
{
  return inf->mesh->p.dtype == STRATA_FLOAT64;
}
static inline size_t amr_elemsize(const strata_infer *inf) { return is_double(inf) ? 8 : 4; }
/* Elements along axis a. */
static inline int64_t array_blocks(const strata_infer *inf, int a)
{
  return strata__mesh_blocks(inf->mesh, a, inf->p.level_array);
}
/* Edge of an element and of an array cell, in domain units. */
static inline double array_edge(const strata_infer *inf)
{
  return (inf->mesh->p.upper[0] - inf->mesh->p.lower[0]) / (double)array_blocks(inf, 0);
}
static inline double array_cell(const strata_infer *inf)
{
  return (inf->mesh->p.upper[0] - inf->mesh->p.lower[0]) / (double)(array_blocks(inf, 0) * inf->n);
}
static inline int64_t table_len(const strata_infer *inf)
{
  return (1 + (int64_t)inf->p.bubble_capacity) * strata__bubble_columns(inf->bubble.values);
}

/* cycle.c */
/* The cycle in flight (NULL: none), taken from the method once its tasks
 * are done; waits for this method's tasks and for nothing else. */
struct strata__infer_cycle *strata__infer_take_cycle(strata_infer *inf);

/* infer.c */
/* Is b a leaf of this rank? (the leaf queries' condition) */
int strata__infer_is_local_leaf(const strata_infer *inf, const strata_amr_block *b);
/* Unregister e's handles on this rank (those it registered). */
void strata__infer_drop_element(struct element *e);
/* Element handles registered on this rank. */
int64_t strata__infer_count_handles(strata_infer *inf);
/* e's faces, and its links when `links`, on this rank, for a links task
 * that this rank runs or sends faces to: registered the first time. */
int strata__infer_link_handles(strata_infer *inf, struct element *e, int links);
void strata__infer_drop_masks(strata_infer *inf);
void strata__infer_drop_lists(strata_infer *inf);

/* cycle.c */
/* Record when the last writer of `h` so far finishes, without waiting. */
void strata__infer_note_phase_end(strata_infer *inf, int phase, starpu_data_handle_t h);

/* evaluate.c */
struct mask *strata__infer_find_mask(const strata_infer *inf, const strata_amr_block *b);
int strata__infer_submit_evaluate(strata_infer *inf);

/* allocate.c */
struct element *strata__infer_find_element(const strata_infer *inf, const int64_t idx[3]);
/* The known element at position `pos` of the level array (NULL: unknown here). */
struct element *strata__infer_element_at(const strata_infer *inf, int64_t pos);
/* The directory rank of Morton key `key`. */
int strata__infer_directory_rank(const strata_infer *inf, uint64_t key);
/* The cell of the finest level holding point x of the domain (clamped
 * inside): what the leaf and the element holding x are found from. */
void strata__infer_finest_cell(const strata_mesh *mesh, const double x[3], int64_t cell[3]);
/* Every rank's `n` 8-byte values of `type` concatenated in rank order, on
 * every rank: *all (malloc'd) and *total. Collective; errors agreed. */
int strata__infer_allgather_values(const strata_mesh *mesh, const void *mine, int64_t n,
                                   MPI_Datatype type, void **all, int64_t *total);
/* Records of `width` 8-byte values, each for rank dest[i], built up before
 * one exchange (strata__exchange_records). */
struct strata__infer_records {
  int64_t *v;
  int *dest;
  int64_t n, cap;
  int width;
  int64_t sent_everywhere; /* after a send: the records of all ranks */
};
/* Room for one more record, for `dest`; NULL when out of memory. */
int64_t *strata__infer_add_record(struct strata__infer_records *r, int dest);
void strata__infer_free_records(struct strata__infer_records *r);
/* Send r's records (emptied then), agreeing on `local`, this rank's error
 * so far, on the way; *got, *ngot: what this rank receives; *bytes (or
 * NULL) grows by what came from the other ranks; r->sent_everywhere: what
 * all ranks sent. Collective. */
int strata__infer_send_records(strata_infer *inf, int local, struct strata__infer_records *r,
                               int64_t **got, int64_t *ngot, int64_t *bytes);
/* Phase 2: the elements that every rank's level_base masks mark, agreed
 * through the directory and placed (unless the same as before: st->reused);
 * this rank's known elements and their handles brought up to date (kept
 * ones keep their handles, new ones of this rank are registered, others
 * dropped); the transfers of this rank's leaves planned into *t.
 * Collective; `local`: this rank's error from the evaluate phase, agreed
 * by the first exchange (nothing is allocated then). */
int strata__infer_allocate(strata_infer *inf, int local, struct transfer **t, int64_t *nt,
                           strata_infer_stats *st);
/* Every known element's handles unregistered, the lists freed (destroy). */
void strata__infer_drop_elements(strata_infer *inf);

/* placement.c */
/* Owner ranks of this rank's directory entries into `ranks`, by the
 * policy, from every rank's transfers `t` (of its own leaves, into the
 * elements of `seen`). Collective. */
int strata__infer_place(strata_infer *inf, const struct element *seen, const struct transfer *t,
                        int64_t nt, int *ranks, strata_infer_stats *st);

/* populate.c */
int64_t strata__infer_element_lo(const strata_infer *inf, const struct element *e, int a);
/* Every (element, local leaf) pair, in transfer order (element, then
 * leaf level and key). */
int strata__infer_plan_transfers(strata_infer *inf, struct transfer **out, int64_t *n);
/* After placement: the transfers of other ranks' leaves into this rank's
 * elements added to this rank's list (one exchange of their
 * descriptions), the list sorted in transfer order; transfers between
 * two other ranks dropped. Collective. */
int strata__infer_share_transfers(strata_infer *inf, struct transfer **t, int64_t *nt);
int64_t strata__infer_cells_of(const int64_t lo[3], const int64_t hi[3]);
/* Values per channel of a transfer's piece in a message. */
int64_t strata__infer_piece_cells(const strata_infer *inf, const struct transfer *t);
/* The time StarPU's histories expect for transfer t (a local leaf's, all
 * channels, as it runs when the element is on the leaf's rank) on worker
 * `workerid` (seconds; NAN without enough measurements), and the cells it
 * reads into *work_cells (a restriction reads factor^3 per cell). */
double strata__infer_transfer_seconds(const strata_infer *inf, const struct transfer *t,
                                      int workerid, double *work_cells);
/* The mailbox of this cycle's phase `which` (0: populate, 1: update). */
int strata__infer_open_mailbox(strata_infer *inf, struct strata__mailbox *mb, size_t elemsize,
                               int which);
int strata__infer_submit_populate(strata_infer *inf, struct transfer *t, int64_t nt,
                                  strata_infer_stats *st);

/* update.c */
int strata__infer_submit_apply(strata_infer *inf);
struct leaf_list *strata__infer_find_list(const strata_infer *inf, const strata_amr_block *b);
int strata__infer_submit_update(strata_infer *inf, struct transfer *t, int64_t nt,
                                strata_infer_stats *st);

/* bubbles.c */
/* The element next to `e` in direction d (periodic domains wrap), NULL
 * when there is none. */
struct element *strata__infer_neighbour(const strata_infer *inf, const struct element *e,
                                        const int d[3]);
/* Link tasks of every element with its forward neighbours (after the
 * extraction tasks). */
int strata__infer_submit_links(strata_infer *inf);
/* After the cycle's tasks: the parts of every array joined across borders
 * and ranks into bubbles, delivered as particles. Collective. */
int strata__infer_join_bubbles(strata_infer *inf, strata_infer_stats *st);
void strata__infer_drop_bubbles(strata_infer *inf);

#endif
