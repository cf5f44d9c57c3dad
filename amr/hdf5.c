/* HDF5 output of a hierarchy (layout in docs/amr.md): one table per block
 * property and one dataset per field. With parallel HDF5 (Open MPI's
 * build) each rank writes its own leaves' blocks; with the serial library
 * they are gathered to rank 0, which writes the file. And the summary that
 * `strata amr-info` prints, and the reader. */
#define _GNU_SOURCE /* fallocate: the parallel writer reserves its file's blocks */
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "amr_internal.h"
#include "internal/runtime.h"
#include "strata_build_config.h"

/* `strata info` reports the build's choice; the header decides the code. */
#if STRATA_HDF5_PARALLEL != defined(H5_HAVE_PARALLEL)
#error "CMake's HDF5 choice and hdf5.h disagree on parallel HDF5"
#endif

#define NAME_LEN 64

/* Close an object with its dataspace and type, whichever were opened. */
static void close_with(hid_t obj, herr_t (*close_obj)(hid_t), hid_t space, hid_t type)
{
  if (type >= 0)
    H5Tclose(type);
  if (space >= 0)
    H5Sclose(space);
  if (obj >= 0)
    close_obj(obj);
}

/* The HDF5 memory type of fields of `dtype` (float32 or float64). */
static hid_t field_type(strata_dtype dtype)
{
  return dtype == STRATA_FLOAT64 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT;
}

/* A dataset created (by every rank under parallel HDF5) and, when `data` is
 * not NULL, written whole by this process. */
static int write_dataset(hid_t where, const char *name, hid_t type, int rank, const hsize_t *dims,
                         const void *data)
{
  hid_t space = H5Screate_simple(rank, dims, NULL);
  hid_t set =
      space < 0 ? -1 : H5Dcreate2(where, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  herr_t w = set < 0 ? -1 : data ? H5Dwrite(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) : 0;
  if (set >= 0)
    H5Dclose(set);
  if (space >= 0)
    H5Sclose(space);
  return w < 0 ? STRATA_EIO : 0;
}

static int write_int_attr(hid_t obj, const char *name, int64_t value)
{
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(obj, name, H5T_NATIVE_INT64, space, H5P_DEFAULT, H5P_DEFAULT);
  herr_t w = attr < 0 ? -1 : H5Awrite(attr, H5T_NATIVE_INT64, &value);
  if (attr >= 0)
    H5Aclose(attr);
  H5Sclose(space);
  return w < 0 ? STRATA_EIO : 0;
}

static int write_str_attr(hid_t obj, const char *name, const char *value)
{
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, strlen(value) + 1);
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  herr_t w = attr < 0 ? -1 : H5Awrite(attr, type, value);
  if (attr >= 0)
    H5Aclose(attr);
  H5Sclose(space);
  H5Tclose(type);
  return w < 0 ? STRATA_EIO : 0;
}

/* One row of the particles table. */
struct particle_row {
  int64_t id;
  double x, y, z, radius, mass, peak;
  int64_t cells, parts;
  int32_t leaf_level;
  int64_t leaf_index[3];
  double values[STRATA_BUBBLE_MAX_VALUES];
};

/* The particles as a compound table that h5py reads as a structured array;
 * its rows written when `rows_here`. */
static int write_particles(hid_t file, const struct strata__amr_particles *p, int rows_here)
{
  struct particle_row *rows = calloc((size_t)(p->n + 1), sizeof *rows);
  if (!rows)
    return STRATA_ENOMEM;
  for (int64_t k = 0; k < p->n; k++) {
    const strata_bubble *b = &p->bubbles[k];
    rows[k] = (struct particle_row){.id = b->id,
                                    .x = b->center[0],
                                    .y = b->center[1],
                                    .z = b->center[2],
                                    .radius = b->radius,
                                    .mass = b->mass,
                                    .peak = b->peak,
                                    .cells = b->cells,
                                    .parts = b->parts,
                                    .leaf_level = p->leaves[k].level};
    memcpy(rows[k].leaf_index, p->leaves[k].index, sizeof rows[k].leaf_index);
    memcpy(rows[k].values, b->values, sizeof rows[k].values);
  }
  hsize_t three = 3, n = (hsize_t)p->n;
  hid_t index = H5Tarray_create2(H5T_NATIVE_INT64, 1, &three);
  hid_t type = H5Tcreate(H5T_COMPOUND, sizeof(struct particle_row));
  struct {
    const char *name;
    size_t offset;
    hid_t type;
  } fields[] = {{"id", HOFFSET(struct particle_row, id), H5T_NATIVE_INT64},
                {"x", HOFFSET(struct particle_row, x), H5T_NATIVE_DOUBLE},
                {"y", HOFFSET(struct particle_row, y), H5T_NATIVE_DOUBLE},
                {"z", HOFFSET(struct particle_row, z), H5T_NATIVE_DOUBLE},
                {"radius", HOFFSET(struct particle_row, radius), H5T_NATIVE_DOUBLE},
                {"mass", HOFFSET(struct particle_row, mass), H5T_NATIVE_DOUBLE},
                {"peak", HOFFSET(struct particle_row, peak), H5T_NATIVE_DOUBLE},
                {"cells", HOFFSET(struct particle_row, cells), H5T_NATIVE_INT64},
                {"parts", HOFFSET(struct particle_row, parts), H5T_NATIVE_INT64},
                {"leaf_level", HOFFSET(struct particle_row, leaf_level), H5T_NATIVE_INT32},
                {"leaf_index", HOFFSET(struct particle_row, leaf_index), index}};
  int ret = index < 0 || type < 0 ? STRATA_EIO : 0;
  for (size_t k = 0; k < sizeof fields / sizeof *fields && !ret; k++)
    if (H5Tinsert(type, fields[k].name, fields[k].offset, fields[k].type) < 0)
      ret = STRATA_EIO;
  for (int k = 0; k < p->nvalues && !ret; k++)
    if (H5Tinsert(type, p->value_names[k],
                  HOFFSET(struct particle_row, values) + (size_t)k * sizeof(double),
                  H5T_NATIVE_DOUBLE) < 0)
      ret = strata__fail(STRATA_EIO, "particle column '%s' (a value channel) is taken",
                         p->value_names[k]);
  if (!ret)
    ret = write_dataset(file, "particles", type, 1, &n, rows_here ? rows : NULL);
  if (type >= 0)
    H5Tclose(type);
  if (index >= 0)
    H5Tclose(index);
  free(rows);
  return ret;
}

/* Block tables of the hierarchy, on the rank that writes them (rank 0). */
struct tables {
  int64_t n, cells;
  size_t block_bytes; /* one field's interior of one block */
  int32_t *level, *rank;
  int64_t *index;
  double *lower, *upper;
  char *names;
};

static void free_tables(struct tables *t)
{
  free(t->level);
  free(t->rank);
  free(t->index);
  free(t->lower);
  free(t->upper);
  free(t->names);
}

/* The interior of a block array (fields' type), x fastest: out of the
 * ghosted array into `interior`, or back into it when `into_block`. */
static void copy_interior(const strata_amr *amr, char *block, char *interior, int into_block)
{
  const strata_amr_params *p = &amr->p;
  const int64_t m = p->block_cells, g = p->ghost_depth, side = m + 2 * g;
  const size_t es = strata_dtype_size(p->dtype);
  const int64_t nz = p->dim == 3 ? m : 1, gz = p->dim == 3 ? g : 0;
  for (int64_t z = 0; z < nz; z++)
    for (int64_t y = 0; y < m; y++) {
      char *row = interior + (size_t)((z * m + y) * m) * es;
      char *ghosted = block + (size_t)(((z + gz) * side + y + g) * side + g) * es;
      memcpy(into_block ? ghosted : row, into_block ? row : ghosted, (size_t)m * es);
    }
}

/* Interiors of the leaves owned here, in Morton order, the fields of a leaf
 * one after the other. */
static int pack_owned(strata_amr *amr, size_t block_bytes, char **out, size_t *bytes)
{
  *bytes = (size_t)amr->nleaves * (size_t)amr->p.nfields * block_bytes;
  char *buf = *out = malloc(*bytes ? *bytes : 1);
  if (!buf)
    return STRATA_ENOMEM;
  for (int64_t i = 0; i < amr->nleaves; i++) {
    const struct strata__amr_node *x = amr->leaves[i];
    for (int f = 0; f < amr->p.nfields; f++) {
      if (strata__acquire(x->h[f], STARPU_R) != 0)
        return STRATA_ESTARPU;
      copy_interior(amr, (char *)starpu_vector_get_local_ptr(x->h[f]), buf, 0);
      starpu_data_release(x->h[f]);
      buf += block_bytes;
    }
  }
  return 0;
}

/* The tables of every rank's leaves on rank 0, which writes them: the
 * ranks' leaves follow each other in Morton order. Collective. */
static int fill_tables(strata_amr *amr, struct tables *t)
{
  const strata_amr_params *p = &amr->p;
  const int64_t n = amr->total, m = p->block_cells;
  t->n = n;
  t->cells = p->dim == 3 ? m * m * m : m * m;
  t->block_bytes = (size_t)t->cells * strata_dtype_size(p->dtype);
  const size_t rows = (size_t)(n ? n : 1), width = 4; /* level, index */
  int64_t *mine = malloc((size_t)(amr->nleaves + 1) * width * sizeof *mine), *all = NULL;
  int *counts = NULL, *displs = NULL, local = mine ? 0 : STRATA_ENOMEM;
  for (int64_t i = 0; mine && i < amr->nleaves; i++) {
    const strata_amr_block *b = &amr->leaves[i]->b;
    int64_t *row = mine + width * (size_t)i;
    row[0] = b->level;
    memcpy(row + 1, b->index, sizeof b->index);
  }
  if (amr->rank == 0) {
    t->level = malloc(rows * sizeof *t->level);
    t->rank = malloc(rows * sizeof *t->rank);
    t->index = malloc(rows * 3 * sizeof *t->index);
    t->lower = malloc(rows * 3 * sizeof *t->lower);
    t->upper = malloc(rows * 3 * sizeof *t->upper);
    t->names = calloc(rows, NAME_LEN);
    all = malloc(rows * width * sizeof *all);
    counts = malloc((size_t)amr->size * sizeof *counts);
    displs = malloc((size_t)amr->size * sizeof *displs);
    if (!t->level || !t->rank || !t->index || !t->lower || !t->upper || !t->names || !all ||
        !counts || !displs)
      local = STRATA_ENOMEM;
    if (n * (int64_t)width > INT_MAX)
      local = strata__fail(STRATA_EINVAL, "amr_write_hdf5: %lld leaves are too many", (long long)n);
  }
  int ret = strata__agree(local, NULL, 0);
  int count = (int)(amr->nleaves * (int64_t)width);
  if (!ret && MPI_Gather(&count, 1, MPI_INT, counts, 1, MPI_INT, 0, amr->meta) != MPI_SUCCESS)
    ret = STRATA_EMPI;
  for (int r = 0, at = 0; !ret && amr->rank == 0 && r < amr->size; r++) {
    displs[r] = at;
    at += counts[r];
  }
  if (!ret && MPI_Gatherv(mine, count, MPI_INT64_T, all, counts, displs, MPI_INT64_T, 0,
                          amr->meta) != MPI_SUCCESS)
    ret = STRATA_EMPI;
  for (int r = 0, i = 0; !ret && amr->rank == 0 && r < amr->size; r++)
    for (int k = 0; k < counts[r] / (int)width; k++, i++) {
      const int64_t *row = all + width * (size_t)i;
      strata_amr_block b = {.level = (int)row[0], .index = {row[1], row[2], row[3]}};
      strata_amr_block_info info;
      strata_amr_block_query(amr, &b, &info);
      t->level[i] = b.level;
      t->rank[i] = r;
      for (int a = 0; a < 3; a++) {
        t->index[3 * i + a] = b.index[a];
        t->lower[3 * i + a] = info.lower[a];
        t->upper[3 * i + a] = info.upper[a];
      }
      strata_amr_block_name(amr, &b, t->names + (size_t)i * NAME_LEN, NAME_LEN);
    }
  free(mine);
  free(all);
  free(counts);
  free(displs);
  return ret;
}

/* HDF5's automatic error printing, switched off while Strata turns its
 * failures into error codes and restored after. */
struct hdf5_printing {
  H5E_auto2_t func;
  void *data;
};

static struct hdf5_printing hdf5_quiet(void)
{
  struct hdf5_printing saved;
  H5Eget_auto2(H5E_DEFAULT, &saved.func, &saved.data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  return saved;
}

static void hdf5_restore(struct hdf5_printing saved)
{
  H5Eset_auto2(H5E_DEFAULT, saved.func, saved.data);
}

/* Annotations of the file: string attributes of a `parameters` group. */
struct annotations {
  const char *const *keys, *const *values;
  int n;
};

static int write_parameters(hid_t file, const struct annotations *a)
{
  if (a->n == 0)
    return 0;
  hid_t group = H5Gcreate2(file, "parameters", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int ret = group < 0 ? STRATA_EIO : 0;
  for (int k = 0; k < a->n && !ret; k++)
    ret = write_str_attr(group, a->keys[k], a->values[k]);
  if (group >= 0)
    H5Gclose(group);
  return ret;
}

/* What this process writes into an open file. With the serial library one
 * process writes everything; with parallel HDF5 every rank takes part in
 * creating each object, rank 0 writes the tables and particles, and each
 * rank writes the field blocks of its own leaves in one collective call per
 * field. */
struct part {
  MPI_Comm comm;        /* parallel HDF5: the writers, who agree after each step */
  int tables;           /* writes the tables' and the particles' data */
  int64_t first, count; /* the leaves whose blocks are in `blocks`: rows first, ... */
  const char *blocks;   /* their interiors, Morton order, fields inner */
  hid_t transfer;       /* transfer properties of the field blocks */
};

/* After a step of a parallel write, every rank's error on every rank, so
 * that all of them take the same next HDF5 call: one that failed on a rank
 * (its part of a field beyond a full disk) must not leave the others in a
 * collective call it never makes. */
static int step(const struct part *w, int ret) { return strata__agree_on(w->comm, ret, NULL, 0); }

/* One field's dataset of `n` blocks of `cells`: the blocks of `part` picked
 * out of its buffer (every nfields-th block) into their rows. */
static int write_field(hid_t group, const strata_amr *amr, const struct part *w, int64_t cells,
                       int f)
{
  const strata_amr_params *p = &amr->p;
  const int64_t n = amr->total;
  const hsize_t m = (hsize_t)p->block_cells;
  const hsize_t dims[4] = {(hsize_t)n, m, m, m};
  hid_t type = field_type(p->dtype);
  hid_t file_space = H5Screate_simple(p->dim + 1, dims, NULL);
  hid_t create = H5Pcreate(H5P_DATASET_CREATE);
  /* Every row is written: no fill pass over the dataset first. */
  if (create >= 0)
    H5Pset_fill_time(create, H5D_FILL_TIME_NEVER);
  hid_t set = file_space < 0 || create < 0 ? -1
                                           : H5Dcreate2(group, p->field_names[f], type, file_space,
                                                        H5P_DEFAULT, create, H5P_DEFAULT);
  int ret = set < 0 ? STRATA_EIO : 0;
  const int64_t mine = w->count;
  const hsize_t start[4] = {(hsize_t)w->first, 0, 0, 0}, count[4] = {(hsize_t)mine, m, m, m};
  if (!ret && (mine ? H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, NULL, count, NULL)
                    : H5Sselect_none(file_space)) < 0)
    ret = STRATA_EIO;
  const hsize_t stride = (hsize_t)(p->nfields * cells);
  const hsize_t total = mine ? (hsize_t)mine * stride : 1, first = (hsize_t)f * (hsize_t)cells;
  const hsize_t blocks = (hsize_t)mine, block = (hsize_t)cells;
  hid_t memory_space = ret ? -1 : H5Screate_simple(1, &total, NULL);
  if (!ret && memory_space < 0)
    ret = STRATA_EIO;
  if (!ret &&
      (mine ? H5Sselect_hyperslab(memory_space, H5S_SELECT_SET, &first, &stride, &blocks, &block)
            : H5Sselect_none(memory_space)) < 0)
    ret = STRATA_EIO;
  if (!ret && H5Dwrite(set, type, memory_space, file_space, w->transfer, w->blocks) < 0)
    ret = STRATA_EIO;
  ret = step(w, ret);
  if (!ret) /* the field's number: names alone would order fields alphabetically */
    ret = write_int_attr(set, "index", f);
  close_with(set, H5Dclose, memory_space, -1);
  close_with(create, H5Pclose, file_space, -1);
  return ret;
}

/* Attributes, tables, fields and particles into an open file. */
static int write_contents(hid_t file, const strata_amr *amr, const struct tables *t,
                          const struct annotations *a,
                          const struct strata__amr_particles *particles, const struct part *w)
{
  const strata_amr_params *p = &amr->p;
  int ret = write_str_attr(file, "format", "strata-amr");
  const char *keys[] = {"version",     "dim",       "root_blocks", "block_cells",
                        "ghost_depth", "max_level", "ranks",       "nfields"};
  const int64_t values[] = {
      1,         p->dim,    p->root_blocks, p->block_cells, p->ghost_depth, p->max_level,
      amr->size, p->nfields};
  for (int k = 0; k < 8 && !ret; k++)
    ret = write_int_attr(file, keys[k], values[k]);
  if (!ret)
    ret = write_str_attr(file, "boundary",
                         p->boundary == STRATA_AMR_PERIODIC ? "periodic" : "extrapolate");
  if (!ret)
    ret = write_parameters(file, a);
  ret = step(w, ret);
  hsize_t n = (hsize_t)t->n, n3[2] = {n, 3};
  if (!ret)
    ret = write_dataset(file, "level", H5T_NATIVE_INT32, 1, &n, w->tables ? t->level : NULL);
  if (!ret)
    ret = write_dataset(file, "rank", H5T_NATIVE_INT32, 1, &n, w->tables ? t->rank : NULL);
  if (!ret)
    ret = write_dataset(file, "index", H5T_NATIVE_INT64, 2, n3, w->tables ? t->index : NULL);
  if (!ret)
    ret = write_dataset(file, "lower", H5T_NATIVE_DOUBLE, 2, n3, w->tables ? t->lower : NULL);
  if (!ret)
    ret = write_dataset(file, "upper", H5T_NATIVE_DOUBLE, 2, n3, w->tables ? t->upper : NULL);
  if (!ret) {
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, NAME_LEN);
    ret = write_dataset(file, "name", str, 1, &n, w->tables ? t->names : NULL);
    H5Tclose(str);
  }
  ret = step(w, ret);
  hid_t group = ret ? -1 : H5Gcreate2(file, "fields", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (!ret && group < 0)
    ret = STRATA_EIO;
  for (int f = 0; f < p->nfields && !ret; f++)
    ret = write_field(group, amr, w, t->cells, f);
  if (group >= 0)
    H5Gclose(group);
  if (!ret && particles)
    ret = step(w, write_particles(file, particles, w->tables));
  return ret;
}

#ifdef H5_HAVE_PARALLEL
/* An upper bound of the file's size: its datasets plus room for HDF5's
 * object headers, attributes and group indices (measured: under 64 KiB for
 * `strata infer`'s files). */
static MPI_Offset file_bound(const strata_amr *amr, const struct tables *t,
                             const struct annotations *a,
                             const struct strata__amr_particles *particles)
{
  MPI_Offset bytes = (MPI_Offset)t->n * (2 * 4 + 3 * 3 * 8 + NAME_LEN) +
                     (MPI_Offset)t->n * amr->p.nfields * (MPI_Offset)t->block_bytes;
  if (particles)
    bytes += (MPI_Offset)particles->n * (MPI_Offset)sizeof(struct particle_row);
  for (int k = 0; k < a->n; k++)
    bytes += (MPI_Offset)(strlen(a->keys[k]) + strlen(a->values[k]) + 256);
  return bytes + (1 << 20);
}

/* What a parallel write checks before HDF5 writes a block: HDF5 1.10 cannot
 * close a file after a failed MPI-IO write (the ranks fall out of step, or
 * the library crashes at MPI_Finalize), so a file that may not fit is
 * refused first. Every rank's limit on file sizes (`ulimit -f`) must allow
 * the whole file; rank 0 reserves its blocks on the disk beyond the empty
 * file's end (a full disk fails there). The errno of a refusal, or 0. */
static int room_for(const char *temp, MPI_Offset bound, int rank)
{
  struct rlimit limit;
  if (!getrlimit(RLIMIT_FSIZE, &limit) && limit.rlim_cur != RLIM_INFINITY &&
      (rlim_t)bound > limit.rlim_cur)
    return EFBIG;
  if (rank != 0)
    return 0;
  int fd = open(temp, O_WRONLY);
  if (fd < 0)
    return errno;
  int err = fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)bound) ? errno : 0;
  close(fd);
  return err == EOPNOTSUPP ? 0 : err; /* a file system without reservations */
}

/* Parallel HDF5: every rank writes its own leaves' blocks straight into a
 * temporary file beside `path` (MPI-IO on the hierarchy's communicator),
 * and rank 0 renames it over `path` once every rank has succeeded. */
static int write_parallel(strata_amr *amr, const struct tables *t, const char *path,
                          const struct annotations *a,
                          const struct strata__amr_particles *particles)
{
  char *blocks = NULL;
  size_t bytes;
  int local = pack_owned(amr, t->block_bytes, &blocks, &bytes);
  strata_output *out = NULL;
  if (amr->rank == 0 && !local)
    local = strata_output_begin(path, &out);
  /* Rank 0's temporary name, for every rank (mkstemp made it, so it fits). */
  char temp[PATH_MAX] = "";
  if (out)
    snprintf(temp, sizeof temp, "%s", strata_output_temp_path(out));
  int ret = strata__agree(local, NULL, 0);
  if (!ret)
    MPI_Bcast(temp, (int)sizeof temp, MPI_CHAR, 0, amr->meta);
  struct hdf5_printing printing = hdf5_quiet();
  hid_t access = ret ? -1 : H5Pcreate(H5P_FILE_ACCESS);
  hid_t transfer = ret ? -1 : H5Pcreate(H5P_DATASET_XFER);
  if (access >= 0)
    H5Pset_fapl_mpio(access, amr->meta, MPI_INFO_NULL);
  if (transfer >= 0)
    H5Pset_dxpl_mpio(transfer, H5FD_MPIO_COLLECTIVE);
  /* H5Fcreate is collective: it fails on every rank or on none. */
  hid_t file =
      access < 0 || transfer < 0 ? -1 : H5Fcreate(temp, H5F_ACC_TRUNC, H5P_DEFAULT, access);
  if (!ret)
    ret = strata__agree(file < 0 ? STRATA_EIO : 0, NULL, 0);
  int cause = ret ? 0 : room_for(temp, file_bound(amr, t, a, particles), amr->rank);
  if (!ret)
    ret = strata__agree(cause ? STRATA_EIO : 0, NULL, 0);
  if (!ret) {
    const struct part w = {amr->meta, amr->rank == 0, amr->first, amr->nleaves, blocks, transfer};
    ret = write_contents(file, amr, t, a, particles, &w);
  }
  local = file >= 0 && H5Fclose(file) < 0 ? STRATA_EIO : 0;
  if (transfer >= 0)
    H5Pclose(transfer);
  if (access >= 0)
    H5Pclose(access);
  hdf5_restore(printing);
  if (out) /* the message names the path, the cause and the removal */
    local = ret || local ? strata_output_abandon(out, cause) : strata_output_commit(out);
  /* Rank 0's outcome (its commit, or the write's), for every rank. */
  ret = strata__agree(ret ? ret : local, NULL, 0);
  free(blocks);
  return ret;
}
#endif

/* Every rank's packed leaves to rank 0, in Morton order: the ranks' leaves
 * follow each other in it (MPI_Gatherv on Strata's own communicator: one
 * collective instead of a message per block). */
static int gather_blocks(strata_amr *amr, size_t block_bytes, char **blocks)
{
  char *mine = NULL, *all = NULL;
  size_t bytes;
  int local = pack_owned(amr, block_bytes, &mine, &bytes);
  if (!local && bytes > INT_MAX)
    local = strata__fail(STRATA_EINVAL, "amr_write_hdf5: more than 2 GiB per rank");
  int *counts = calloc((size_t)amr->size, sizeof *counts);
  int *displs = calloc((size_t)amr->size, sizeof *displs);
  if (!local && (!counts || !displs))
    local = STRATA_ENOMEM;
  int ret = strata__agree(local, NULL, 0);
  if (!ret) {
    int count = (int)bytes;
    MPI_Gather(&count, 1, MPI_INT, counts, 1, MPI_INT, 0, amr->meta);
    int64_t total = 0;
    for (int r = 0; r < amr->size; r++) {
      displs[r] = (int)total;
      total += counts[r];
    }
    if (amr->rank == 0 && !(all = *blocks = malloc(total ? (size_t)total : 1)))
      local = STRATA_ENOMEM;
    if (amr->rank == 0 && total > INT_MAX)
      local = STRATA_EINVAL;
    if (!(ret = strata__agree(local, NULL, 0)))
      MPI_Gatherv(mine, count, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, amr->meta);
  }
  free(mine);
  free(counts);
  free(displs);
  return ret ? ret : local;
}

/* The file, made in memory by HDF5's core driver: `image` receives its
 * bytes (malloc'd). Disk errors then meet a plain write of those bytes;
 * HDF5 1.10 crashes at exit after a failed H5Fclose of a disk file. */
static int write_image(const strata_amr *amr, const struct tables *t, const struct annotations *a,
                       const struct strata__amr_particles *particles, const char *blocks,
                       void **image, size_t *bytes)
{
  struct hdf5_printing printing = hdf5_quiet();
  hid_t access = H5Pcreate(H5P_FILE_ACCESS);
  hid_t file = access < 0 || H5Pset_fapl_core(access, 1 << 20, 0) < 0
                   ? -1
                   : H5Fcreate("strata-amr-image", H5F_ACC_TRUNC, H5P_DEFAULT, access);
  if (access >= 0)
    H5Pclose(access);
  if (file < 0) {
    hdf5_restore(printing);
    return STRATA_EIO;
  }
  const struct part w = {MPI_COMM_NULL, 1, 0, t->n, blocks, H5P_DEFAULT};
  int ret = write_contents(file, amr, t, a, particles, &w);
  ssize_t size =
      ret || H5Fflush(file, H5F_SCOPE_GLOBAL) < 0 ? -1 : H5Fget_file_image(file, NULL, 0);
  *image = size > 0 ? malloc((size_t)size) : NULL;
  if (!ret && !*image)
    ret = size > 0 ? STRATA_ENOMEM : STRATA_EIO;
  if (!ret && H5Fget_file_image(file, *image, (size_t)size) != size)
    ret = STRATA_EIO;
  *bytes = (size_t)size;
  if (H5Fclose(file) < 0 && !ret)
    ret = STRATA_EIO;
  hdf5_restore(printing);
  return ret;
}

/* Serial HDF5: the blocks gathered to rank 0, which writes the file's image
 * beside `path` and renames it over it. */
static int write_serial(strata_amr *amr, const struct tables *t, const char *path,
                        const struct annotations *a, const struct strata__amr_particles *particles)
{
  char *blocks = NULL;
  int ret = gather_blocks(amr, t->block_bytes, &blocks);
  if (ret) {
    free(blocks);
    return ret;
  }
  int local = 0;
  if (amr->rank == 0) {
    void *image = NULL;
    size_t bytes = 0;
    strata_output *out = NULL;
    local = write_image(amr, t, a, particles, blocks, &image, &bytes);
    if (local)
      local = strata__fail(local, "amr_write_hdf5: HDF5 could not make the file for %s", path);
    else if (!(local = strata_output_begin(path, &out))) {
      FILE *f = strata_output_stream(out);
      if (f)
        fwrite(image, 1, bytes, f);
      local = strata_output_finish(out, f);
    }
    free(image);
  }
  free(blocks);
  /* Rank 0's message, for the ranks that did not write. */
  return strata__agree(local, NULL, 0) ? (local ? local : STRATA_EIO) : 0;
}

/* How files are written: parallel HDF5 when the build has it, unless
 * STRATA_HDF5_WRITE=serial (file systems where MPI-IO misbehaves, such as
 * NFS without locks; and the benchmark's baseline). 1 serial, 0 parallel,
 * -1 for a value that is neither. */
static int serial_writes(void)
{
  const char *mode = getenv("STRATA_HDF5_WRITE");
  if (!mode || !*mode)
    return !STRATA_HDF5_PARALLEL;
  if (!strcmp(mode, "serial"))
    return 1;
  return !strcmp(mode, "parallel") && STRATA_HDF5_PARALLEL ? 0 : -1;
}

int strata_amr_write_hdf5_annotated(strata_amr *amr, const char *path, const char *const *keys,
                                    const char *const *values, int n)
{
  return strata__amr_write_hdf5(amr, path, keys, values, n, NULL);
}

int strata__amr_write_hdf5(strata_amr *amr, const char *path, const char *const *keys,
                           const char *const *values, int n,
                           const struct strata__amr_particles *particles)
{
  strata__clear_error();
  if (!amr)
    return STRATA_EINVAL;
  /* One file from every rank's calls: a path or an annotation that differs
   * between ranks is a mistake every rank should hear of. */
  int local = path && path[0] && n >= 0 && (n == 0 || (keys && values)) ? 0 : STRATA_EINVAL;
  for (int k = 0; !local && k < n; k++)
    if (!keys[k] || !keys[k][0] || !values[k])
      local = STRATA_EINVAL;
  uint32_t crc = local ? 0 : starpu_hash_crc32c_string(path, 0);
  for (int k = 0; !local && k < n; k++)
    crc = starpu_hash_crc32c_string(values[k], starpu_hash_crc32c_string(keys[k], crc));
  const int serial = serial_writes();
  int64_t same[2] = {crc, serial};
  int ret = strata__agree(local, same, 2);
  if (ret)
    return strata__fail(ret, "amr_write_hdf5: no path, a bad annotation, or ranks passed "
                             "different paths, annotations or STRATA_HDF5_WRITE");
  if (serial < 0)
    return strata__fail(STRATA_EINVAL, "amr_write_hdf5: STRATA_HDF5_WRITE is '%s': serial%s",
                        getenv("STRATA_HDF5_WRITE"),
                        STRATA_HDF5_PARALLEL ? " or parallel"
                                             : " (this build has no parallel HDF5)");
  struct tables t = {0};
  struct annotations a = {keys, values, n};
  ret = fill_tables(amr, &t);
  if (!ret && serial)
    ret = write_serial(amr, &t, path, &a, particles);
#ifdef H5_HAVE_PARALLEL
  else if (!ret)
    ret = write_parallel(amr, &t, path, &a, particles);
#endif
  free_tables(&t);
  return ret;
}

int strata_amr_write_hdf5(strata_amr *amr, const char *path)
{
  strata__clear_error();
  return strata_amr_write_hdf5_annotated(amr, path, NULL, NULL, 0);
}

/* ---- reading back: every attribute and dataset checked before use ---- */

/* Limits of a file's own description, beyond which it is refused rather
 * than believed (they bound every allocation the reader makes). */
enum { READ_MAX_RANKS = 1 << 20, READ_LIST_RANKS = 1024 };

/* A scalar integer attribute in [lo, hi]. */
static int read_int_attr(hid_t obj, const char *file, const char *name, int64_t lo, int64_t hi,
                         int64_t *value)
{
  /* H5Aopen alone: 1.10's H5Aexists crashes on some damaged headers that
   * H5Aopen refuses. */
  hid_t attr = H5Aopen(obj, name, H5P_DEFAULT);
  if (attr < 0)
    return strata__fail(STRATA_EIO, "%s: attribute '%s' is missing or damaged", file, name);
  hid_t space = H5Aget_space(attr), type = H5Aget_type(attr);
  int ret = 0;
  if (space < 0 || type < 0)
    ret = strata__fail(STRATA_EIO, "%s: attribute '%s' cannot be read", file, name);
  else if (H5Sget_simple_extent_type(space) != H5S_SCALAR || H5Tget_class(type) != H5T_INTEGER)
    ret = strata__fail(STRATA_EIO, "%s: attribute '%s' is not a scalar integer", file, name);
  else if (H5Aread(attr, H5T_NATIVE_INT64, value) < 0)
    ret = strata__fail(STRATA_EIO, "%s: attribute '%s' cannot be read", file, name);
  else if (*value < lo || *value > hi)
    ret = strata__fail(STRATA_EIO, "%s: attribute '%s' is %lld, outside %lld..%lld", file, name,
                       (long long)*value, (long long)lo, (long long)hi);
  close_with(attr, H5Aclose, space, type);
  return ret;
}

/* A scalar string attribute into text (size bytes, zero-terminated):
 * fixed-length, with or without its terminating zero (Strata writes one,
 * h5py's np.bytes_ none), or variable-length (h5py's str). 0 when read. */
static int read_str_attr(hid_t obj, const char *name, char *text, size_t size)
{
  memset(text, 0, size);
  hid_t attr = H5Aopen(obj, name, H5P_DEFAULT);
  hid_t type = attr < 0 ? -1 : H5Aget_type(attr);
  hid_t space = attr < 0 ? -1 : H5Aget_space(attr);
  int ok = type >= 0 && space >= 0 && H5Tget_class(type) == H5T_STRING &&
           H5Sget_simple_extent_type(space) == H5S_SCALAR;
  if (ok && H5Tis_variable_str(type) > 0) {
    char *vtext = NULL;
    hid_t mem = H5Tcopy(H5T_C_S1);
    H5Tset_size(mem, H5T_VARIABLE);
    ok = H5Aread(attr, mem, &vtext) >= 0 && vtext && strlen(vtext) < size;
    if (ok)
      strcpy(text, vtext);
    H5free_memory(vtext);
    H5Tclose(mem);
  } else if (ok) {
    size_t length = H5Tget_size(type);
    ok = length > 0 && length + 1 < size;
    hid_t mem = H5Tcopy(H5T_C_S1); /* zero-terminated: one more byte than a padded file's */
    if (ok && H5Tset_size(mem, length + 1) >= 0)
      ok = H5Aread(attr, mem, text) >= 0;
    H5Tclose(mem);
  }
  close_with(attr, H5Aclose, space, type);
  return ok ? 0 : -1;
}

/* The string attribute `format` says "strata-amr". */
static int check_format(hid_t obj, const char *file)
{
  char text[16];
  return read_str_attr(obj, "format", text, sizeof text) == 0 && !strcmp(text, "strata-amr")
             ? 0
             : strata__fail(STRATA_EIO,
                            "%s: not a Strata AMR file (no attribute format = "
                            "\"strata-amr\")",
                            file);
}

/* A dataset of class `cls` and exactly the shape `dims` (`rank` axes), read
 * as `memtype` into a new buffer of `elem`-byte values. Its stored bytes
 * must be what the shape needs: a file cannot make the reader allocate
 * more than it holds. */
static int read_dataset(hid_t where, const char *file, const char *name, H5T_class_t cls,
                        hid_t memtype, size_t elem, int rank, const hsize_t *dims, void **out)
{
  *out = NULL;
  if (H5Lexists(where, name, H5P_DEFAULT) <= 0)
    return strata__fail(STRATA_EIO, "%s: dataset '%s' is missing", file, name);
  hid_t set = H5Dopen2(where, name, H5P_DEFAULT);
  hid_t space = set < 0 ? -1 : H5Dget_space(set);
  hid_t type = set < 0 ? -1 : H5Dget_type(set);
  hsize_t have[H5S_MAX_RANK];
  int ret = 0;
  size_t count = 1;
  for (int a = 0; a < rank; a++)
    if (__builtin_mul_overflow(count, (size_t)dims[a], &count))
      count = SIZE_MAX;
  size_t stored = 0;
  if (space < 0 || type < 0)
    ret = strata__fail(STRATA_EIO, "%s: dataset '%s' cannot be opened", file, name);
  else if (H5Tget_class(type) != cls)
    ret = strata__fail(STRATA_EIO, "%s: dataset '%s' has the wrong element type", file, name);
  else if (H5Sget_simple_extent_ndims(space) != rank ||
           H5Sget_simple_extent_dims(space, have, NULL) != rank)
    ret = strata__fail(STRATA_EIO, "%s: dataset '%s' has %d axes, expected %d", file, name,
                       H5Sget_simple_extent_ndims(space), rank);
  for (int a = 0; !ret && a < rank; a++)
    if (have[a] != dims[a])
      ret = strata__fail(STRATA_EIO, "%s: dataset '%s' has %llu along axis %d, expected %llu", file,
                         name, (unsigned long long)have[a], a, (unsigned long long)dims[a]);
  if (!ret) {
    stored = (size_t)H5Dget_storage_size(set);
    if (count == SIZE_MAX || __builtin_mul_overflow(count, H5Tget_size(type), &count) ||
        stored != count)
      ret = strata__fail(STRATA_EIO, "%s: dataset '%s' stores %zu bytes, its shape needs %zu", file,
                         name, stored, count);
  }
  size_t values = count / (H5Tget_size(type) ? H5Tget_size(type) : 1);
  if (!ret && !(*out = malloc((values ? values : 1) * elem)))
    ret = STRATA_ENOMEM;
  if (!ret && H5Dread(set, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0)
    ret = strata__fail(STRATA_EIO, "%s: dataset '%s' cannot be read (truncated file?)", file, name);
  if (ret) {
    free(*out);
    *out = NULL;
  }
  close_with(set, H5Dclose, space, type);
  return ret;
}

/* What the file says of its hierarchy, checked. */
struct summary {
  const char *file;
  int64_t dim, root_blocks, block_cells, ghost_depth, max_level, ranks, nfields;
  int64_t n;     /* leaves */
  int64_t cells; /* interior cells of a block */
  int32_t *level, *rank;
  int64_t *index; /* n x 3 */
};

static int read_geometry(hid_t file, struct summary *s)
{
  int64_t version;
  int ret = check_format(file, s->file);
  if (!ret)
    ret = read_int_attr(file, s->file, "version", 1, 1, &version);
  if (!ret)
    ret = read_int_attr(file, s->file, "dim", 2, 3, &s->dim);
  if (!ret)
    ret = read_int_attr(file, s->file, "root_blocks", 1, 1024, &s->root_blocks);
  if (!ret)
    ret = read_int_attr(file, s->file, "block_cells", 4, 1024, &s->block_cells);
  if (!ret)
    ret = read_int_attr(file, s->file, "ghost_depth", 0, s->block_cells / 2, &s->ghost_depth);
  if (!ret)
    ret = read_int_attr(file, s->file, "max_level", 0, STRATA_AMR_MAX_LEVEL, &s->max_level);
  if (!ret)
    ret = read_int_attr(file, s->file, "ranks", 1, READ_MAX_RANKS, &s->ranks);
  if (!ret)
    ret = read_int_attr(file, s->file, "nfields", 1, STRATA_AMR_MAX_FIELDS, &s->nfields);
  if (ret)
    return ret;
  s->cells = s->block_cells * s->block_cells * (s->dim == 3 ? s->block_cells : 1);
  return 0;
}

/* A leaf as the range of finest cells it holds along the Morton curve of
 * the whole domain: root block first, then the interleaved bits within it
 * (up to 30 + 36 bits, hence 128-bit keys). */
struct cell_range {
  unsigned __int128 first, end;
};

static struct cell_range leaf_range(const struct summary *s, int64_t i)
{
  const int64_t l = s->level[i], shift = s->max_level - l, nb = s->root_blocks;
  int64_t root = 0, code = 0;
  for (int a = (int)s->dim - 1; a >= 0; a--)
    root = root * nb + (s->index[3 * i + a] >> l);
  for (int64_t bit = 0; bit < s->max_level; bit++)
    for (int a = 0; a < s->dim; a++) {
      int64_t local = (s->index[3 * i + a] & ((INT64_C(1) << l) - 1)) << shift;
      code |= ((local >> bit) & 1) << (bit * s->dim + a);
    }
  const unsigned __int128 per_root = (unsigned __int128)1 << (s->dim * s->max_level);
  struct cell_range c;
  c.first = (unsigned __int128)root * per_root + (unsigned __int128)code;
  c.end = c.first + ((unsigned __int128)1 << (s->dim * shift));
  return c;
}

static int compare_ranges(const void *a, const void *b)
{
  const struct cell_range *x = a, *y = b;
  return x->first < y->first ? -1 : x->first > y->first;
}

/* The leaves tile the domain: sorted along the curve, each starts where
 * the previous ends, from the first cell to the last. */
static int check_cover(const struct summary *s)
{
  struct cell_range *c = malloc((size_t)s->n * sizeof *c);
  if (!c)
    return STRATA_ENOMEM;
  for (int64_t i = 0; i < s->n; i++)
    c[i] = leaf_range(s, i);
  qsort(c, (size_t)s->n, sizeof *c, compare_ranges);
  unsigned __int128 at = 0, all = (unsigned __int128)1 << (s->dim * s->max_level);
  for (int d = 0; d < s->dim; d++)
    all *= (unsigned __int128)s->root_blocks;
  int64_t bad = -1;
  for (int64_t i = 0; i < s->n && bad < 0; i++) {
    if (c[i].first != at)
      bad = i;
    at = c[i].end;
  }
  free(c);
  if (bad >= 0 || at != all)
    return strata__fail(STRATA_EIO, "%s: the leaves %s the domain (%lld leaves along the curve)",
                        s->file, bad >= 0 ? "overlap or leave a gap in" : "do not reach the end of",
                        (long long)(bad >= 0 ? bad : s->n));
  return 0;
}

/* The leaf tables: their shapes agree, every leaf lies in the domain on its
 * level, and the leaves cover the domain's volume exactly once. */
static int read_leaves(hid_t file, struct summary *s)
{
  hid_t set = H5Lexists(file, "level", H5P_DEFAULT) > 0 ? H5Dopen2(file, "level", H5P_DEFAULT) : -1;
  hid_t space = set < 0 ? -1 : H5Dget_space(set);
  hsize_t n = 0;
  if (space < 0 || H5Sget_simple_extent_ndims(space) != 1 ||
      H5Sget_simple_extent_dims(space, &n, NULL) != 1)
    n = 0;
  if (space >= 0)
    H5Sclose(space);
  if (set >= 0)
    H5Dclose(set);
  if (n == 0)
    return strata__fail(STRATA_EIO, "%s: dataset 'level' is missing, empty or not 1-D", s->file);
  s->n = (int64_t)n;
  const hsize_t n3[2] = {n, 3};
  int ret = read_dataset(file, s->file, "level", H5T_INTEGER, H5T_NATIVE_INT32, 4, 1, &n,
                         (void **)&s->level);
  if (!ret)
    ret = read_dataset(file, s->file, "rank", H5T_INTEGER, H5T_NATIVE_INT32, 4, 1, &n,
                       (void **)&s->rank);
  if (!ret)
    ret = read_dataset(file, s->file, "index", H5T_INTEGER, H5T_NATIVE_INT64, 8, 2, n3,
                       (void **)&s->index);
  for (int64_t i = 0; !ret && i < s->n; i++) {
    const int64_t l = s->level[i], r = s->rank[i];
    if (l < 0 || l > s->max_level)
      return strata__fail(STRATA_EIO, "%s: leaf %lld has level %lld, outside 0..%lld", s->file,
                          (long long)i, (long long)l, (long long)s->max_level);
    if (r < 0 || r >= s->ranks)
      return strata__fail(STRATA_EIO, "%s: leaf %lld has rank %lld, outside 0..%lld", s->file,
                          (long long)i, (long long)r, (long long)s->ranks - 1);
    const int64_t side = s->root_blocks << l; /* <= 1024 << 12 */
    for (int a = 0; a < 3; a++) {
      const int64_t x = s->index[3 * i + a], hi = a < s->dim ? side : 1;
      if (x < 0 || x >= hi)
        return strata__fail(STRATA_EIO,
                            "%s: leaf %lld lies outside the domain (index %lld "
                            "along axis %d on level %lld)",
                            s->file, (long long)i, (long long)x, a, (long long)l);
    }
  }
  return ret ? ret : check_cover(s);
}

static void print_geometry(const struct summary *s, FILE *out)
{
  fprintf(out,
          "%s: %lldD, %lld^%lld root blocks of %lld^%lld cells (+%lld ghosts), "
          "levels 0..%lld, %lld blocks on %lld ranks\n",
          s->file, (long long)s->dim, (long long)s->root_blocks, (long long)s->dim,
          (long long)s->block_cells, (long long)s->dim, (long long)s->ghost_depth,
          (long long)s->max_level, (long long)s->n, (long long)s->ranks);
  int64_t per_level[STRATA_AMR_MAX_LEVEL + 1] = {0};
  for (int64_t i = 0; i < s->n; i++)
    per_level[s->level[i]]++;
  for (int64_t l = 0; l <= s->max_level; l++)
    fprintf(out, "level %lld: %lld blocks\n", (long long)l, (long long)per_level[l]);
  int64_t *per_rank = calloc((size_t)s->ranks, sizeof *per_rank);
  if (!per_rank)
    return;
  int64_t lo = INT64_MAX, hi = 0;
  for (int64_t i = 0; i < s->n; i++)
    per_rank[s->rank[i]]++;
  for (int64_t r = 0; r < s->ranks; r++) {
    if (s->ranks <= READ_LIST_RANKS)
      fprintf(out, "rank %lld: %lld blocks\n", (long long)r, (long long)per_rank[r]);
    lo = per_rank[r] < lo ? per_rank[r] : lo;
    hi = per_rank[r] > hi ? per_rank[r] : hi;
  }
  if (s->ranks > READ_LIST_RANKS)
    fprintf(out, "blocks per rank: %lld to %lld\n", (long long)lo, (long long)hi);
  free(per_rank);
}

/* Range and integral of one field, whose shape the leaves fix. */
static int summarize_field(hid_t group, const struct summary *s, const char *name, FILE *out)
{
  const hsize_t m = (hsize_t)s->block_cells;
  const hsize_t dims[4] = {(hsize_t)s->n, m, m, m};
  double *v;
  char where[300];
  snprintf(where, sizeof where, "fields/%s", name);
  int ret = read_dataset(group, s->file, name, H5T_FLOAT, H5T_NATIVE_DOUBLE, sizeof(double),
                         (int)s->dim + 1, dims, (void **)&v);
  if (ret)
    return ret;
  double lo = INFINITY, hi = -INFINITY, mass = 0;
  for (int64_t b = 0; b < s->n; b++) {
    double cell =
        pow(1.0 / (double)((s->root_blocks << s->level[b]) * s->block_cells), (double)s->dim);
    double sum = 0;
    for (int64_t k = 0; k < s->cells; k++) {
      double x = v[b * s->cells + k];
      lo = x < lo ? x : lo;
      hi = x > hi ? x : hi;
      sum += x;
    }
    mass += sum * cell;
  }
  fprintf(out, "field %-12s min %-12.6g max %-12.6g integral (mean) %.9g\n", name, lo, hi, mass);
  free(v);
  return 0;
}

/* fn(group, k, name, ctx) on every dataset of the group 'fields', whose
 * number of links must be nfields (`exact`) or at most that; stops at the
 * first error. */
static int for_each_field(hid_t file, const struct summary *s, int exact,
                          int (*fn)(hid_t group, hsize_t k, const char *name, void *ctx), void *ctx)
{
  hid_t group =
      H5Lexists(file, "fields", H5P_DEFAULT) > 0 ? H5Gopen2(file, "fields", H5P_DEFAULT) : -1;
  H5G_info_t info;
  int ret = 0;
  if (group < 0 || H5Gget_info(group, &info) < 0)
    ret = strata__fail(STRATA_EIO, "%s: group 'fields' is missing", s->file);
  else if (exact ? (int64_t)info.nlinks != s->nfields : (int64_t)info.nlinks > s->nfields)
    ret = strata__fail(STRATA_EIO, "%s: 'fields' holds %llu fields, attribute nfields says %lld",
                       s->file, (unsigned long long)info.nlinks, (long long)s->nfields);
  for (hsize_t k = 0; !ret && k < info.nlinks; k++) {
    char name[64];
    ssize_t len = H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, k, name, sizeof name,
                                     H5P_DEFAULT);
    if (len <= 0 || len >= (ssize_t)sizeof name)
      ret = strata__fail(STRATA_EIO, "%s: field %llu has no name of 1 to 63 bytes", s->file,
                         (unsigned long long)k);
    else
      ret = fn(group, k, name, ctx);
  }
  if (group >= 0)
    H5Gclose(group);
  return ret;
}

struct summarizing {
  const struct summary *s;
  FILE *out;
};

static int summarize_one(hid_t group, hsize_t k, const char *name, void *ctx)
{
  (void)k;
  const struct summarizing *z = ctx;
  return summarize_field(group, z->s, name, z->out);
}

static int summarize_fields(hid_t file, const struct summary *s, FILE *out)
{
  struct summarizing z = {s, out};
  return for_each_field(file, s, 1, summarize_one, &z);
}

/* HDF5's signature at offset 0, 512, 1024, ... (a user block may precede
 * the superblock), looked for without opening the file in HDF5: 1.10's
 * H5Fis_hdf5 and a later H5Fopen of a damaged file share freed state. */
static int has_hdf5_signature(const char *path)
{
  static const unsigned char signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  unsigned char head[8];
  FILE *f = fopen(path, "rb");
  int found = 0;
  for (long at = 0; f && !found && at <= (1L << 20); at = at ? 2 * at : 512)
    found = fseek(f, at, SEEK_SET) == 0 && fread(head, 1, 8, f) == 8 && !memcmp(head, signature, 8);
  if (f)
    fclose(f);
  return found;
}

/* Open a Strata AMR file and read its geometry and leaves, checked. */
static int open_hierarchy(const char *path, hid_t *file, struct summary *s)
{
  *file = -1;
  if (access(path, R_OK) != 0)
    return strata__fail(STRATA_EIO, "%s: %s", path, strerror(errno));
  if (!has_hdf5_signature(path))
    return strata__fail(STRATA_EIO, "%s: not an HDF5 file, or a truncated one", path);
  if ((*file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT)) < 0)
    return strata__fail(STRATA_EIO, "%s: HDF5 cannot open it (truncated or damaged?)", path);
  int ret = read_geometry(*file, s);
  return ret ? ret : read_leaves(*file, s);
}

int strata_amr_hdf5_summary(const char *path, FILE *out)
{
  strata__clear_error();
  if (!path || !out)
    return STRATA_EINVAL;
  struct hdf5_printing printing = hdf5_quiet(); /* a wrong file is an error code */
  struct summary s = {.file = path};
  hid_t file = -1;
  int ret = open_hierarchy(path, &file, &s);
  /* The summary goes out whole or not at all. */
  char *text = NULL;
  size_t length = 0;
  FILE *buffer = ret ? NULL : open_memstream(&text, &length);
  if (!ret && !buffer)
    ret = STRATA_ENOMEM;
  if (!ret)
    print_geometry(&s, buffer);
  if (!ret)
    ret = summarize_fields(file, &s, buffer);
  if (buffer && fclose(buffer) && !ret)
    ret = STRATA_ENOMEM;
  if (!ret && fwrite(text, 1, length, out) != length)
    ret = strata__fail(STRATA_EIO, "%s: the summary could not be written", path);
  free(text);
  free(s.level);
  free(s.rank);
  free(s.index);
  if (file >= 0)
    H5Fclose(file);
  hdf5_restore(printing);
  return ret;
}

/* ---- loading a hierarchy back ---- */

/* A block of the file by level and index, and its row. */
struct named_block {
  int64_t level, index[3], row;
};

static int named_cmp(const void *x, const void *y)
{
  const struct named_block *a = x, *b = y;
  if (a->level != b->level)
    return a->level < b->level ? -1 : 1;
  for (int k = 2; k >= 0; k--)
    if (a->index[k] != b->index[k])
      return a->index[k] < b->index[k] ? -1 : 1;
  return 0;
}

/* The file's leaves (row >= 0) and their ancestors (row -1), sorted. */
static struct named_block *name_blocks(const struct summary *s, int64_t *count)
{
  struct named_block *all = malloc((size_t)(s->n * (s->max_level + 1)) * sizeof *all);
  if (!all)
    return NULL;
  int64_t n = 0;
  for (int64_t i = 0; i < s->n; i++)
    for (int64_t l = s->level[i], up = 0; l >= 0; l--, up++) {
      struct named_block *b = &all[n++];
      b->level = l;
      b->row = up ? -1 : i;
      for (int a = 0; a < 3; a++)
        b->index[a] = s->index[3 * i + a] >> up;
    }
  qsort(all, (size_t)n, sizeof *all, named_cmp);
  int64_t u = 0; /* one entry per block; a leaf's own entry sorts like its ancestors' */
  for (int64_t i = 0; i < n; i++) {
    if (u && !named_cmp(&all[u - 1], &all[i])) {
      all[u - 1].row = all[u - 1].row >= 0 ? all[u - 1].row : all[i].row;
      continue;
    }
    all[u++] = all[i];
  }
  *count = u;
  return all;
}

static const struct named_block *find_named(const struct named_block *all, int64_t n,
                                            const strata_amr_block *b)
{
  struct named_block key = {.level = b->level, .index = {b->index[0], b->index[1], b->index[2]}};
  return bsearch(&key, all, (size_t)n, sizeof *all, named_cmp);
}

/* Whether obj has attribute `name` (H5Aopen: see read_int_attr). */
static int has_attr(hid_t obj, const char *name)
{
  hid_t attr = H5Aopen(obj, name, H5P_DEFAULT);
  if (attr >= 0)
    H5Aclose(attr);
  return attr >= 0;
}

/* The fields' names in their numbered order, and their one type. */
struct naming {
  const struct summary *s;
  char (*names)[64];
  strata_dtype *dtype;
};

static int name_one(hid_t group, hsize_t k, const char *name, void *ctx)
{
  const struct naming *z = ctx;
  const struct summary *s = z->s;
  hid_t set = H5Dopen2(group, name, H5P_DEFAULT);
  hid_t type = set < 0 ? -1 : H5Dget_type(set);
  int64_t index = (int64_t)k; /* files without numbers: by name */
  int ret = 0;
  if (type < 0 || H5Tget_class(type) != H5T_FLOAT)
    ret = strata__fail(STRATA_EIO, "%s: field '%s' is not a floating-point dataset", s->file, name);
  else if (has_attr(set, "index"))
    ret = read_int_attr(set, s->file, "index", 0, s->nfields - 1, &index);
  if (!ret && z->names[index][0])
    ret = strata__fail(STRATA_EIO, "%s: two fields have number %lld", s->file, (long long)index);
  if (!ret) {
    strcpy(z->names[index], name);
    strata_dtype t = H5Tget_size(type) == 8 ? STRATA_FLOAT64 : STRATA_FLOAT32;
    if (k > 0 && t != *z->dtype)
      ret = strata__fail(STRATA_EIO, "%s: the fields have different types", s->file);
    *z->dtype = t;
  }
  close_with(set, H5Dclose, -1, type);
  return ret;
}

static int read_field_names(hid_t file, const struct summary *s, char names[][64],
                            strata_dtype *dtype)
{
  for (int f = 0; f < s->nfields; f++)
    names[f][0] = 0;
  struct naming z = {s, names, dtype};
  int ret = for_each_field(file, s, 0, name_one, &z);
  for (int f = 0; !ret && f < s->nfields; f++)
    if (!names[f][0])
      ret = strata__fail(STRATA_EIO, "%s: field number %d of %lld is missing from 'fields'",
                         s->file, f, (long long)s->nfields);
  return ret;
}

/* Refine the root grid until its leaves are the file's. */
static int rebuild_tree(strata_amr *amr, const struct named_block *all, int64_t nall,
                        const struct summary *s)
{
  int ret = 0;
  for (int step = 0; step <= s->max_level && !ret; step++) {
    int64_t n = strata_amr_num_leaves(amr), refine = 0;
    strata_amr_block *leaves = malloc((size_t)n * sizeof *leaves);
    int8_t *flags = malloc((size_t)n);
    if (!leaves || !flags)
      ret = STRATA_ENOMEM;
    if (!ret)
      ret = strata_amr_leaves(amr, leaves, n, &n);
    for (int64_t i = 0; !ret && i < n; i++) {
      const struct named_block *b = find_named(all, nall, &leaves[i]);
      flags[i] = b && b->row < 0; /* an ancestor of the file's leaves */
      refine += flags[i];
    }
    if (!ret && refine)
      ret = strata_amr_adapt_flags(amr, flags, NULL);
    free(leaves);
    free(flags);
    if (!refine)
      break;
  }
  if (!ret && strata_amr_num_leaves(amr) != s->n)
    ret = strata__fail(STRATA_EIO,
                       "%s: its %lld leaves are not a 2:1-balanced tree (rebuilt: %lld leaves)",
                       s->file, (long long)s->n, (long long)strata_amr_num_leaves(amr));
  return ret;
}

/* A leaf of this rank and its row in the file. */
struct owned_row {
  int64_t row;
  struct strata__amr_node *leaf;
};

static int owned_cmp(const void *x, const void *y)
{
  const struct owned_row *a = x, *b = y;
  return (a->row > b->row) - (a->row < b->row);
}

/* Each rank reads the rows of its own leaves, field after field, into them. */
static int read_owned_fields(strata_amr *amr, hid_t file, const struct summary *s,
                             const struct named_block *all, int64_t nall)
{
  const size_t es = strata_dtype_size(amr->p.dtype);
  const hid_t memtype = field_type(amr->p.dtype);
  struct owned_row *mine = malloc((size_t)(amr->nleaves + 1) * sizeof *mine);
  int64_t k = 0;
  char *data = NULL;
  int ret = mine ? 0 : STRATA_ENOMEM;
  for (int64_t i = 0; !ret && i < amr->nleaves; i++) {
    if (amr->leaves[i]->rank != amr->rank)
      continue;
    const struct named_block *b = find_named(all, nall, &amr->leaves[i]->b);
    if (!b || b->row < 0)
      ret = strata__fail(STRATA_EIO, "%s: a leaf of the rebuilt tree is not in the file", s->file);
    else
      mine[k++] = (struct owned_row){b->row, amr->leaves[i]};
  }
  if (!ret) /* a selection is read in file order */
    qsort(mine, (size_t)k, sizeof *mine, owned_cmp);
  if (!ret && !(data = malloc((size_t)(k ? k : 1) * (size_t)s->cells * es)))
    ret = STRATA_ENOMEM;
  hid_t group = ret ? -1 : H5Gopen2(file, "fields", H5P_DEFAULT);
  if (!ret && group < 0)
    ret = strata__fail(STRATA_EIO, "%s: group 'fields' cannot be opened", s->file);
  const hsize_t m = (hsize_t)s->block_cells;
  const hsize_t dims[4] = {(hsize_t)s->n, m, m, m}, mem_dims[2] = {(hsize_t)k, (hsize_t)s->cells};
  for (int f = 0; !ret && f < amr->p.nfields; f++) {
    const char *name = amr->p.field_names[f];
    hid_t set = H5Dopen2(group, name, H5P_DEFAULT);
    hid_t space = set < 0 ? -1 : H5Dget_space(set);
    hsize_t have[4] = {0};
    int rank = space < 0 ? -1 : H5Sget_simple_extent_dims(space, have, NULL);
    int ok = rank == (int)s->dim + 1;
    for (int a = 0; ok && a < rank; a++)
      ok = have[a] == dims[a];
    if (!ok)
      ret =
          strata__fail(STRATA_EIO, "%s: field '%s' is not [%lld leaves, %lld^%lld cells]", s->file,
                       name, (long long)s->n, (long long)s->block_cells, (long long)s->dim);
    /* This rank's rows, one hyperslab each, read in one call. */
    if (!ret)
      H5Sselect_none(space);
    for (int64_t j = 0; !ret && j < k; j++) {
      hsize_t start[4] = {(hsize_t)mine[j].row, 0, 0, 0}, count[4] = {1, m, m, m};
      if (H5Sselect_hyperslab(space, H5S_SELECT_OR, start, NULL, count, NULL) < 0)
        ret = STRATA_EIO;
    }
    hid_t memspace = ret ? -1 : H5Screate_simple(2, mem_dims, NULL);
    if (!ret && k && H5Dread(set, memtype, memspace, space, H5P_DEFAULT, data) < 0)
      ret = strata__fail(STRATA_EIO, "%s: field '%s' cannot be read (truncated file?)", s->file,
                         name);
    if (memspace >= 0)
      H5Sclose(memspace);
    close_with(set, H5Dclose, space, -1);
    for (int64_t j = 0; !ret && j < k; j++) {
      starpu_data_handle_t h = mine[j].leaf->h[f];
      if (strata__acquire(h, STARPU_W) != 0) {
        ret = STRATA_ESTARPU;
        break;
      }
      copy_interior(amr, (char *)starpu_vector_get_local_ptr(h),
                    data + (size_t)j * (size_t)s->cells * es, 1);
      starpu_data_release(h);
    }
  }
  if (group >= 0)
    H5Gclose(group);
  free(mine);
  free(data);
  return ret;
}

int strata_amr_read_hdf5(const char *path, strata_amr **out)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!out)
    return STRATA_EINVAL;
  *out = NULL;
  int local = path && path[0] ? 0 : STRATA_EINVAL;
  int64_t same_path = local ? 0 : (int64_t)starpu_hash_crc32c_string(path, 0);
  if ((ret = strata__agree(local, &same_path, 1)))
    return strata__fail(ret, "amr_read_hdf5: no path, or ranks passed different paths");
  /* Every rank reads the small tables; the fields, each its own leaves. */
  struct hdf5_printing printing = hdf5_quiet();
  struct summary s = {.file = path};
  hid_t file = -1;
  char names[STRATA_AMR_MAX_FIELDS][64], boundary[32] = "";
  strata_amr_params p;
  strata_amr_params_init(&p);
  local = open_hierarchy(path, &file, &s);
  if (!local)
    local = read_field_names(file, &s, names, &p.dtype);
  if (!local && (read_str_attr(file, "boundary", boundary, sizeof boundary) != 0 ||
                 (strcmp(boundary, "periodic") && strcmp(boundary, "extrapolate"))))
    local =
        strata__fail(STRATA_EIO, "%s: attribute 'boundary' is not periodic or extrapolate", path);
  int64_t nall = 0;
  struct named_block *all = local ? NULL : name_blocks(&s, &nall);
  if (!local && !all)
    local = STRATA_ENOMEM;
  ret = strata__agree(local, NULL, 0);
  strata_amr *amr = NULL;
  if (!ret) {
    p.dim = (int)s.dim;
    p.root_blocks = (int)s.root_blocks;
    p.block_cells = (int)s.block_cells;
    p.ghost_depth = (int)s.ghost_depth;
    p.max_level = (int)s.max_level;
    p.nfields = (int)s.nfields;
    p.boundary = strcmp(boundary, "periodic") ? STRATA_AMR_EXTRAPOLATE : STRATA_AMR_PERIODIC;
    for (int f = 0; f < p.nfields; f++)
      p.field_names[f] = names[f];
    ret = strata_amr_create(&p, &amr);
  }
  if (!ret)
    ret = strata__agree(rebuild_tree(amr, all, nall, &s), NULL, 0);
  if (!ret)
    ret = strata__agree(read_owned_fields(amr, file, &s, all, nall), NULL, 0);
  if (!ret)
    ret = strata_amr_fill_ghosts(amr);
  free(all);
  free(s.level);
  free(s.rank);
  free(s.index);
  if (file >= 0)
    H5Fclose(file);
  hdf5_restore(printing);
  if (ret)
    strata_amr_destroy(amr);
  else
    *out = amr;
  return ret;
}
