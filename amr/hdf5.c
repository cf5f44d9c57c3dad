/* HDF5 output of a hierarchy (layout in docs/amr.md): the leaves' interiors
 * are gathered to rank 0, which writes one table per block property and one
 * dataset per field; and the summary that `strata amr-info` prints. */
#include <errno.h>
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "amr_internal.h"

#define NAME_LEN 64

static int write_dataset(hid_t where, const char *name, hid_t type, int rank, const hsize_t *dims,
                         const void *data)
{
  hid_t space = H5Screate_simple(rank, dims, NULL);
  hid_t set =
      space < 0 ? -1 : H5Dcreate2(where, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  herr_t w = set < 0 ? -1 : H5Dwrite(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
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

/* Block tables and field data of the hierarchy, on rank 0. */
struct tables {
  int64_t n, cells;
  int32_t *level, *rank;
  int64_t *index;
  double *lower, *upper;
  char *names;
  void *fields; /* nfields x n x cells, the fields' type */
};

static void free_tables(struct tables *t)
{
  free(t->level);
  free(t->rank);
  free(t->index);
  free(t->lower);
  free(t->upper);
  free(t->names);
  free(t->fields);
}

/* The interior of a block array (fields' type), x fastest. */
static void copy_interior(const strata_amr *amr, const char *src, char *dst)
{
  const strata_amr_params *p = &amr->p;
  const int64_t m = p->block_cells, g = p->ghost_depth, side = m + 2 * g;
  const size_t es = p->dtype == STRATA_FLOAT64 ? 8 : 4;
  const int64_t nz = p->dim == 3 ? m : 1, gz = p->dim == 3 ? g : 0;
  for (int64_t z = 0; z < nz; z++)
    for (int64_t y = 0; y < m; y++)
      memcpy(dst + (size_t)((z * m + y) * m) * es,
             src + (size_t)(((z + gz) * side + y + g) * side + g) * es, (size_t)m * es);
}

/* Interiors of the leaves owned here, in Morton order, field after field. */
static int pack_owned(strata_amr *amr, size_t block_bytes, char **out, size_t *bytes)
{
  int64_t mine = 0;
  for (int64_t i = 0; i < amr->nleaves; i++)
    mine += amr->leaves[i]->rank == amr->rank;
  *bytes = (size_t)mine * (size_t)amr->p.nfields * block_bytes;
  char *buf = *out = malloc(*bytes ? *bytes : 1);
  if (!buf)
    return STRATA_ENOMEM;
  for (int64_t i = 0; i < amr->nleaves; i++) {
    const struct strata__amr_node *x = amr->leaves[i];
    for (int f = 0; x->rank == amr->rank && f < amr->p.nfields; f++) {
      if (strata__acquire(x->h[f], STARPU_R) != 0)
        return STRATA_ESTARPU;
      copy_interior(amr, (const char *)starpu_vector_get_local_ptr(x->h[f]), buf);
      starpu_data_release(x->h[f]);
      buf += block_bytes;
    }
  }
  return 0;
}

/* Every rank's packed leaves to rank 0 (MPI_Gatherv on Strata's own
 * communicator: one collective instead of a message per block). */
static int gather_fields(strata_amr *amr, struct tables *t, size_t block_bytes)
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
    if (amr->rank == 0 && !(all = malloc(total ? (size_t)total : 1)))
      local = STRATA_ENOMEM;
    if (amr->rank == 0 && total > INT_MAX)
      local = STRATA_EINVAL;
    if (!(ret = strata__agree(local, NULL, 0)))
      MPI_Gatherv(mine, count, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, amr->meta);
  }
  /* Rank 0: back into Morton order, field-major. */
  for (int64_t i = 0; !ret && amr->rank == 0 && i < amr->nleaves; i++) {
    int r = amr->leaves[i]->rank;
    for (int f = 0; f < amr->p.nfields; f++) {
      memcpy((char *)t->fields + ((size_t)f * (size_t)t->n + (size_t)i) * block_bytes,
             all + displs[r], block_bytes);
      displs[r] += (int)block_bytes;
    }
  }
  free(mine);
  free(all);
  free(counts);
  free(displs);
  return ret ? ret : local;
}

static int fill_tables(strata_amr *amr, struct tables *t)
{
  const strata_amr_params *p = &amr->p;
  const int64_t n = amr->nleaves, m = p->block_cells;
  const size_t es = p->dtype == STRATA_FLOAT64 ? 8 : 4;
  t->n = n;
  t->cells = p->dim == 3 ? m * m * m : m * m;
  size_t rows = (size_t)(n ? n : 1);
  int local = 0;
  if (amr->rank == 0) {
    t->level = malloc(rows * sizeof *t->level);
    t->rank = malloc(rows * sizeof *t->rank);
    t->index = malloc(rows * 3 * sizeof *t->index);
    t->lower = malloc(rows * 3 * sizeof *t->lower);
    t->upper = malloc(rows * 3 * sizeof *t->upper);
    t->names = calloc(rows, NAME_LEN);
    t->fields = malloc(rows * (size_t)p->nfields * (size_t)t->cells * es);
    if (!t->level || !t->rank || !t->index || !t->lower || !t->upper || !t->names || !t->fields)
      local = STRATA_ENOMEM;
  }
  int ret = strata__agree(local, NULL, 0);
  if (ret)
    return ret;
  for (int64_t i = 0; amr->rank == 0 && i < n; i++) {
    const struct strata__amr_node *x = amr->leaves[i];
    strata_amr_block_info info;
    strata_amr_block_query(amr, &x->b, &info);
    t->level[i] = x->b.level;
    t->rank[i] = x->rank;
    for (int a = 0; a < 3; a++) {
      t->index[3 * i + a] = x->b.index[a];
      t->lower[3 * i + a] = info.lower[a];
      t->upper[3 * i + a] = info.upper[a];
    }
    strata_amr_block_name(amr, &x->b, t->names + i * NAME_LEN, NAME_LEN);
  }
  return gather_fields(amr, t, (size_t)t->cells * es);
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

/* The file, made in memory by HDF5's core driver: `image` receives its
 * bytes (malloc'd). Disk errors then meet a plain write of those bytes;
 * HDF5 1.10 crashes at exit after a failed H5Fclose of a disk file. */
static int write_image(const strata_amr *amr, const struct tables *t, const struct annotations *a,
                       void **image, size_t *bytes)
{
  const strata_amr_params *p = &amr->p;
  struct hdf5_printing printing = hdf5_quiet();
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  hid_t file = fapl < 0 || H5Pset_fapl_core(fapl, 1 << 20, 0) < 0
                   ? -1
                   : H5Fcreate("strata-amr-image", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  if (fapl >= 0)
    H5Pclose(fapl);
  if (file < 0) {
    hdf5_restore(printing);
    return STRATA_EIO;
  }
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
  hsize_t n = (hsize_t)t->n, n3[2] = {n, 3};
  if (!ret)
    ret = write_dataset(file, "level", H5T_NATIVE_INT32, 1, &n, t->level);
  if (!ret)
    ret = write_dataset(file, "rank", H5T_NATIVE_INT32, 1, &n, t->rank);
  if (!ret)
    ret = write_dataset(file, "index", H5T_NATIVE_INT64, 2, n3, t->index);
  if (!ret)
    ret = write_dataset(file, "lower", H5T_NATIVE_DOUBLE, 2, n3, t->lower);
  if (!ret)
    ret = write_dataset(file, "upper", H5T_NATIVE_DOUBLE, 2, n3, t->upper);
  if (!ret) {
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, NAME_LEN);
    ret = write_dataset(file, "name", str, 1, &n, t->names);
    H5Tclose(str);
  }
  hid_t group = ret ? -1 : H5Gcreate2(file, "fields", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (!ret && group < 0)
    ret = STRATA_EIO;
  const hsize_t m = (hsize_t)p->block_cells;
  hsize_t dims[4] = {n, m, m, m};
  hid_t type = p->dtype == STRATA_FLOAT64 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT;
  size_t es = p->dtype == STRATA_FLOAT64 ? 8 : 4;
  for (int f = 0; f < p->nfields && !ret; f++)
    ret = write_dataset(group, p->field_names[f], type, p->dim + 1, dims,
                        (const char *)t->fields + (size_t)f * n * (size_t)t->cells * es);
  if (group >= 0)
    H5Gclose(group);
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

/* Rank 0's part: the image written beside `path` and renamed over it. */
static int write_atomically(const strata_amr *amr, const struct tables *t, const char *path,
                            const struct annotations *a)
{
  void *image = NULL;
  size_t bytes = 0;
  int ret = write_image(amr, t, a, &image, &bytes);
  strata_output *out = NULL;
  if (ret)
    ret = strata__fail(ret, "amr_write_hdf5: HDF5 could not make the file for %s", path);
  else if (!(ret = strata_output_begin(path, &out))) {
    FILE *f = fopen(strata_output_temp_path(out), "wb");
    int err = f ? 0 : errno;
    if (f && fwrite(image, 1, bytes, f) != bytes)
      err = errno;
    if (f && fclose(f) && !err)
      err = errno;
    ret = f && !err ? strata_output_commit(out) : strata_output_abandon(out, err);
  }
  free(image);
  return ret;
}

int strata_amr_write_hdf5_annotated(strata_amr *amr, const char *path, const char *const *keys,
                                    const char *const *values, int n)
{
  if (!amr)
    return STRATA_EINVAL;
  strata__clear_error();
  /* Rank 0 writes the file, but a path that differs between ranks is a
   * mistake every rank should hear of. */
  int local = path && path[0] && n >= 0 && (n == 0 || (keys && values)) ? 0 : STRATA_EINVAL;
  for (int k = 0; !local && k < n; k++)
    if (!keys[k] || !keys[k][0] || !values[k])
      local = STRATA_EINVAL;
  int64_t same_path = local ? 0 : (int64_t)starpu_hash_crc32c_string(path, 0);
  int ret = strata__agree(local, &same_path, 1);
  if (ret)
    return strata__fail(ret, "amr_write_hdf5: no path, a bad annotation, or ranks passed "
                             "different paths");
  struct tables t = {0};
  ret = fill_tables(amr, &t);
  if (ret) {
    free_tables(&t);
    return ret;
  }
  struct annotations a = {keys, values, n};
  if (amr->rank == 0)
    local = write_atomically(amr, &t, path, &a);
  free_tables(&t);
  /* Rank 0's message, for the ranks that did not write. */
  return strata__agree(local, NULL, 0) ? (local ? local : STRATA_EIO) : 0;
}

int strata_amr_write_hdf5(strata_amr *amr, const char *path)
{
  return strata_amr_write_hdf5_annotated(amr, path, NULL, NULL, 0);
}

/* ---- summary ---- */

static int read_int_attr(hid_t file, const char *name, int64_t *value)
{
  hid_t attr = H5Aopen(file, name, H5P_DEFAULT);
  herr_t r = attr < 0 ? -1 : H5Aread(attr, H5T_NATIVE_INT64, value);
  if (attr >= 0)
    H5Aclose(attr);
  return r < 0 ? STRATA_EIO : 0;
}

static void *read_all(hid_t where, const char *name, hid_t type, size_t elem, int64_t *count)
{
  hid_t set = H5Dopen2(where, name, H5P_DEFAULT);
  if (set < 0)
    return NULL;
  hid_t space = H5Dget_space(set);
  hssize_t n = H5Sget_simple_extent_npoints(space);
  void *data = n >= 0 ? malloc((size_t)(n ? n : 1) * elem) : NULL;
  if (data && H5Dread(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    free(data);
    data = NULL;
  }
  H5Sclose(space);
  H5Dclose(set);
  *count = n;
  return data;
}

struct field_iter {
  FILE *out;
  const int32_t *level;
  int64_t nblocks, cells, dim, root_blocks, block_cells;
};

static int summarize_field(hid_t group, const char *name, struct field_iter *it)
{
  int64_t count;
  double *v = read_all(group, name, H5T_NATIVE_DOUBLE, sizeof(double), &count);
  if (!v || count != it->nblocks * it->cells) {
    free(v);
    return STRATA_EIO;
  }
  double lo = INFINITY, hi = -INFINITY, mass = 0;
  for (int64_t b = 0; b < it->nblocks; b++) {
    double cell =
        pow(1.0 / (double)((it->root_blocks << it->level[b]) * it->block_cells), (double)it->dim);
    double sum = 0;
    for (int64_t k = 0; k < it->cells; k++) {
      double x = v[b * it->cells + k];
      lo = x < lo ? x : lo;
      hi = x > hi ? x : hi;
      sum += x;
    }
    mass += sum * cell;
  }
  fprintf(it->out, "field %-12s min %-12.6g max %-12.6g integral (mean) %.9g\n", name, lo, hi,
          mass);
  free(v);
  return 0;
}

int strata_amr_hdf5_summary(const char *path, FILE *out)
{
  if (!path || !out)
    return STRATA_EINVAL;
  struct hdf5_printing printing = hdf5_quiet(); /* a wrong file is an error code */
  int ret = STRATA_EIO;
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  int64_t dim = 0, nb = 0, m = 0, g = 0, maxl = 0, ranks = 0;
  int32_t *level = NULL, *rank = NULL;
  int64_t n = 0, nr = 0;
  if (file >= 0 && !read_int_attr(file, "dim", &dim) && !read_int_attr(file, "root_blocks", &nb) &&
      !read_int_attr(file, "block_cells", &m) && !read_int_attr(file, "ghost_depth", &g) &&
      !read_int_attr(file, "max_level", &maxl) && !read_int_attr(file, "ranks", &ranks) &&
      (level = read_all(file, "level", H5T_NATIVE_INT32, sizeof *level, &n)) &&
      (rank = read_all(file, "rank", H5T_NATIVE_INT32, sizeof *rank, &nr)) && n == nr && dim >= 2 &&
      dim <= 3 && maxl >= 0 && maxl <= STRATA_AMR_MAX_LEVEL && ranks > 0) {
    fprintf(out,
            "%s: %lldD, %lld^%lld root blocks of %lld^%lld cells (+%lld ghosts), "
            "levels 0..%lld, %lld blocks on %lld ranks\n",
            path, (long long)dim, (long long)nb, (long long)dim, (long long)m, (long long)dim,
            (long long)g, (long long)maxl, (long long)n, (long long)ranks);
    int64_t per_level[STRATA_AMR_MAX_LEVEL + 1] = {0};
    int64_t *per_rank = calloc((size_t)ranks, sizeof *per_rank);
    ret = per_rank ? 0 : STRATA_ENOMEM;
    for (int64_t i = 0; i < n && !ret; i++) {
      if (level[i] < 0 || level[i] > maxl || rank[i] < 0 || rank[i] >= ranks)
        ret = STRATA_EIO;
      else {
        per_level[level[i]]++;
        per_rank[rank[i]]++;
      }
    }
    for (int64_t l = 0; l <= maxl && !ret; l++)
      fprintf(out, "level %lld: %lld blocks\n", (long long)l, (long long)per_level[l]);
    for (int64_t r = 0; r < ranks && !ret; r++)
      fprintf(out, "rank %lld: %lld blocks\n", (long long)r, (long long)per_rank[r]);
    free(per_rank);
    struct field_iter it = {out, level, n, dim == 3 ? m * m * m : m * m, dim, nb, m};
    hid_t group = ret ? -1 : H5Gopen2(file, "fields", H5P_DEFAULT);
    H5G_info_t ginfo;
    if (!ret && (group < 0 || H5Gget_info(group, &ginfo) < 0))
      ret = STRATA_EIO;
    for (hsize_t k = 0; !ret && k < ginfo.nlinks; k++) {
      char name[256];
      if (H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, k, name, sizeof name,
                             H5P_DEFAULT) < 0)
        ret = STRATA_EIO;
      else
        ret = summarize_field(group, name, &it);
    }
    if (group >= 0)
      H5Gclose(group);
  }
  free(level);
  free(rank);
  if (file >= 0)
    H5Fclose(file);
  hdf5_restore(printing);
  return ret;
}
