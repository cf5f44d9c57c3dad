/* Fuzzing target: the AMR HDF5 reader behind `strata amr-info`. Each input
 * is a list of edits applied through HDF5's own API to a real file made by
 * `strata infer` (tests/fuzz/hdf5_base/): attributes set to other values,
 * types and shapes, or deleted; datasets deleted, reshaped, retyped or
 * overwritten element by element. The files stay valid HDF5 with hostile
 * contents, which is the layer Strata's reader owns: libhdf5 1.10's own
 * parser crashes on byte-mutated containers (docs/reliability.md).
 * Properties: a rejected file says why and names itself; no HDF5 object is
 * left open; no crash, leak or unbounded allocation. */
#include <hdf5.h>
#include <strata/amr.h>

#include "fuzz_util.h"

static char path[128];
static uint8_t *base;
static size_t base_size;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc, (void)argv;
  snprintf(path, sizeof path, "%s/in.h5", fuzz_scratch());
  FILE *f = fopen(STRATA_SOURCE_DIR "/tests/fuzz/hdf5_base/infer_1rank.h5", "rb");
  if (!f)
    fuzz_fail("no base file");
  fseek(f, 0, SEEK_END);
  base_size = (size_t)ftell(f);
  rewind(f);
  base = malloc(base_size);
  if (!base || fread(base, 1, base_size, f) != base_size)
    fuzz_fail("cannot read the base file");
  fclose(f);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  return 0;
}

static const char *const attributes[] = {"format",      "version",     "dim",
                                         "root_blocks", "block_cells", "ghost_depth",
                                         "max_level",   "ranks",       "nfields"};
static const char *const objects[] = {"level",          "rank",   "index",
                                      "lower",          "upper",  "name",
                                      "fields/density", "fields", "fields/star_forming"};
#define COUNT(a) (sizeof(a) / sizeof *(a))

static void set_attribute(hid_t file, const char *name, hid_t type, int rank, hsize_t n,
                          const void *value)
{
  H5Adelete(file, name);
  hid_t space = rank ? H5Screate_simple(1, &n, NULL) : H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  if (attr >= 0) {
    H5Awrite(attr, type, value);
    H5Aclose(attr);
  }
  H5Sclose(space);
}

/* The dataset `name` made again with another shape or element class, all
 * zeros (written, so that its storage exists). */
static void remake(hid_t file, const char *name, int axis, int delta, int retype)
{
  hid_t set = H5Dopen2(file, name, H5P_DEFAULT);
  if (set < 0)
    return;
  hid_t space = H5Dget_space(set), type = H5Dget_type(set);
  hsize_t dims[H5S_MAX_RANK];
  int rank = H5Sget_simple_extent_dims(space, dims, NULL);
  int real = H5Tget_class(type) == H5T_FLOAT;
  H5Sclose(space);
  H5Tclose(type);
  H5Dclose(set);
  if (rank < 1)
    return;
  axis %= rank;
  dims[axis] = (hsize_t)((int64_t)dims[axis] + delta > 0 ? (int64_t)dims[axis] + delta : 0);
  size_t count = 1;
  for (int a = 0; a < rank; a++)
    count *= (size_t)dims[a];
  if (count > (1 << 22))
    return;
  hid_t mem = (real != retype) ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64;
  void *zeros = calloc(count ? count : 1, 8);
  H5Ldelete(file, name, H5P_DEFAULT);
  space = H5Screate_simple(rank, dims, NULL);
  set = H5Dcreate2(file, name, mem, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (set >= 0) {
    H5Dwrite(set, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros);
    H5Dclose(set);
  }
  H5Sclose(space);
  free(zeros);
}

/* One element of a dataset set to `value` (converted to its type). */
static void poke(hid_t file, const char *name, uint64_t at, int64_t value)
{
  hid_t set = H5Dopen2(file, name, H5P_DEFAULT);
  if (set < 0)
    return;
  hid_t space = H5Dget_space(set);
  hssize_t n = H5Sget_simple_extent_npoints(space);
  int rank = H5Sget_simple_extent_ndims(space);
  hsize_t dims[H5S_MAX_RANK], coord[H5S_MAX_RANK], one = 1;
  if (n > 0 && rank > 0 && H5Sget_simple_extent_dims(space, dims, NULL) == rank) {
    at %= (uint64_t)n;
    for (int a = rank - 1; a >= 0; a--) {
      coord[a] = at % dims[a];
      at /= dims[a];
    }
    H5Sselect_elements(space, H5S_SELECT_SET, 1, coord);
    hid_t mem = H5Screate_simple(1, &one, NULL);
    H5Dwrite(set, H5T_NATIVE_INT64, mem, space, H5P_DEFAULT, &value);
    H5Sclose(mem);
  }
  H5Sclose(space);
  H5Dclose(set);
}

static void edit(hid_t file, uint8_t op, uint8_t target, uint64_t v)
{
  const char *attr = attributes[target % COUNT(attributes)];
  const char *obj = objects[target % COUNT(objects)];
  int64_t iv = (int64_t)v;
  switch (op % 9) {
  case 0: set_attribute(file, attr, H5T_NATIVE_INT64, 0, 1, &iv); break;
  case 1: {
    double d = (double)(iv % 100000) / 16;
    set_attribute(file, attr, H5T_NATIVE_DOUBLE, 0, 1, &d);
    break;
  }
  case 2: {
    int64_t values[9] = {iv, iv, iv, iv, iv, iv, iv, iv, iv};
    set_attribute(file, attr, H5T_NATIVE_INT64, 1, 1 + v % 9, values);
    break;
  }
  case 3: H5Adelete(file, attr); break;
  case 4: H5Ldelete(file, obj, H5P_DEFAULT); break;
  case 5: poke(file, obj, v & 0xffffffffu, iv >> 32); break;
  case 6: remake(file, obj, (int)(v % 5), (int)((v >> 8) % 5) - 2, 0); break;
  case 7: remake(file, obj, 0, 0, 1); break;
  case 8: {
    hid_t str = H5Tcopy(H5T_C_S1);
    char text[16] = {0};
    memcpy(text, &v, 8);
    H5Tset_size(str, 1 + v % 12);
    set_attribute(file, "format", str, 0, 1, text);
    H5Tclose(str);
    break;
  }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  enum { EDIT = 10, MAX_EDITS = 8 };
  fuzz_write(path, base, base_size);
  hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  if (file < 0)
    fuzz_fail("the base file does not open");
  for (size_t k = 0; k + EDIT <= size && k < MAX_EDITS * EDIT; k += EDIT) {
    uint64_t v;
    memcpy(&v, data + k + 2, 8);
    edit(file, data[k], data[k + 1], v);
  }
  H5Fclose(file);
  if (H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) != 0)
    fuzz_fail("the target's own edits left objects open");
  int ret = strata_amr_hdf5_summary(path, fuzz_devnull());
  if (ret != 0 && ret != STRATA_EIO && ret != STRATA_ENOMEM)
    fuzz_fail("code %d", ret);
  if (H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) != 0)
    fuzz_fail("%lld HDF5 objects left open", (long long)H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL));
  if (ret == STRATA_EIO && !strstr(strata_error_message(), path))
    fuzz_fail("a rejection without its reason: '%s'", strata_error_message());
  if (size < EDIT && ret != 0)
    fuzz_fail("the unedited file is refused: %s", strata_error_message());
  return 0;
}
