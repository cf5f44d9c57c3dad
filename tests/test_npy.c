/* .npy files: round trip of every element type and shape rank, a
 * big-endian file, and every kind of bad file with its error code and a
 * message naming the file. */
#include <string.h>

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "check.h"

/* A file from a header dictionary and raw data bytes. */
static const char *write_npy(const char *name, int version, const char *dict, const void *data,
                             size_t bytes)
{
  const char *path = check_path(name);
  FILE *f = fopen(path, "wb");
  size_t len = strlen(dict);
  unsigned char pre[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', (unsigned char)version, 0};
  if (version == 1) {
    pre[8] = len & 0xff, pre[9] = (unsigned char)(len >> 8);
    fwrite(pre, 1, 10, f);
  } else {
    pre[8] = len & 0xff, pre[9] = (len >> 8) & 0xff, pre[10] = 0, pre[11] = 0;
    fwrite(pre, 1, 12, f);
  }
  fwrite(dict, 1, len, f);
  fwrite(data, 1, bytes, f);
  fclose(f);
  return path;
}

static void check_round_trip(void)
{
  for (int t = 0; t < STRATA_NDTYPES; t++)
    for (int ndim = 0; ndim <= 3; ndim++) {
      int64_t shape[3] = {3, 2, 5};
      strata_array *a, *b;
      CHECK_EQ(strata_array_create(ndim, shape, (strata_dtype)t, &a), 0);
      unsigned char *p;
      strata_array_acquire(a, STRATA_WRITE, (void **)&p);
      for (int64_t i = 0; i < strata_array_nbytes(a); i++)
        p[i] = t == STRATA_BOOL ? (unsigned char)(i % 2) : (unsigned char)(i * 37 + t);
      strata_array_release(a);
      CHECK_EQ(strata_npy_save(check_path("rt.npy"), a), 0);
      CHECK_EQ(strata_npy_load(check_path("rt.npy"), &b), 0);
      int64_t got[3];
      CHECK_EQ(strata_array_ndim(b), ndim);
      CHECK_EQ(strata_array_dtype(b), t);
      strata_array_shape(b, got);
      CHECK(memcmp(got, shape, (size_t)ndim * sizeof *got) == 0);
      unsigned char *q;
      strata_array_acquire(a, STRATA_READ, (void **)&p);
      strata_array_acquire(b, STRATA_READ, (void **)&q);
      CHECK(memcmp(p, q, (size_t)strata_array_nbytes(a)) == 0);
      strata_array_release(a);
      strata_array_release(b);
      strata_array_destroy(a);
      strata_array_destroy(b);
    }
}

static void check_big_endian_and_v2(void)
{
  const unsigned char be[8] = {0x3f, 0x80, 0, 0, 0xc0, 0x20, 0, 0}; /* 1.0f, -2.5f */
  strata_array *a;
  CHECK_EQ(strata_npy_load(write_npy("be.npy", 1,
                                     "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n",
                                     be, 8),
                           &a),
           0);
  float *p;
  strata_array_acquire(a, STRATA_READ, (void **)&p);
  CHECK(p[0] == 1.0f && p[1] == -2.5f);
  strata_array_release(a);
  strata_array_destroy(a);
  int32_t v[4] = {1, 2, 3, 4};
  CHECK_EQ(
      strata_npy_load(write_npy("v2.npy", 2,
                                "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (2, 2)}",
                                v, 16),
                      &a),
      0);
  CHECK_EQ(strata_array_nelems(a), 4);
  strata_array_destroy(a);
}

static void check_bad(const char *name, int version, const char *dict, size_t data_bytes, int want)
{
  static const unsigned char zeros[64];
  strata_array *a = (strata_array *)1;
  const char *path = write_npy(name, version, dict, zeros, data_bytes);
  int ret = strata_npy_load(path, &a);
  if (ret != want)
    fprintf(stderr, "%s: got %d (%s), want %d\n", name, ret, strata_error_message(), want);
  CHECK_EQ(ret, want);
  CHECK(a == NULL);
  CHECK(strstr(strata_error_message(), name) != NULL);
}

static void check_bad_files(void)
{
  const char *ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }";
  check_bad("truncated.npy", 1, ok_dict, 15, STRATA_EIO);
  check_bad("fortran.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16,
            STRATA_EINVAL);
  check_bad("complex.npy", 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16,
            STRATA_ETYPE);
  check_bad("order.npy", 1, "{'descr': '!f4', 'fortran_order': False, 'shape': (2,), }", 8,
            STRATA_EIO);
  check_bad("noshape.npy", 1, "{'descr': '<f4', 'fortran_order': False}", 8, STRATA_EIO);
  check_bad("badshape.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': 4}", 16,
            STRATA_EIO);
  check_bad("negshape.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-4,)}", 16,
            STRATA_EIO);
  check_bad("ninedims.npy", 1,
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1)}", 4,
            STRATA_EINVAL);
  check_bad("version9.npy", 9, ok_dict, 16, STRATA_EIO);
  check_bad("huge.npy", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999,)}",
            8, STRATA_EIO);

  strata_array *a;
  FILE *f = fopen(check_path("magic.npy"), "wb");
  fputs("not numpy at all", f);
  fclose(f);
  CHECK_EQ(strata_npy_load(check_path("magic.npy"), &a), STRATA_EIO);
  f = fopen(check_path("short.npy"), "wb");
  fwrite("\x93NUMPY\x01\x00\xff\x00{'descr'", 1, 17, f); /* header shorter than announced */
  fclose(f);
  CHECK_EQ(strata_npy_load(check_path("short.npy"), &a), STRATA_EIO);
  CHECK_EQ(strata_npy_load(check_path("missing.npy"), &a), STRATA_EIO);
  CHECK(strstr(strata_error_message(), "missing.npy") != NULL);
  CHECK_EQ(strata_npy_load(NULL, &a), STRATA_EINVAL);
  CHECK_EQ(strata_npy_save("/nonexistent/dir/x.npy", NULL), STRATA_EINVAL);
}

/* Saving is atomic: a write that fails (a file-size limit stands in for a
 * full disk) leaves the previous file byte for byte and no partial file. */
static void check_atomic_save(void)
{
  int64_t n = 1 << 16;
  strata_array *small, *big;
  CHECK_EQ(strata_array_create(1, &n, STRATA_FLOAT64, &big), 0);
  CHECK_EQ(strata_array_fill_identity(big, STRATA_SUM), 0);
  n = 4;
  CHECK_EQ(strata_array_create(1, &n, STRATA_FLOAT64, &small), 0);
  CHECK_EQ(strata_array_fill_identity(small, STRATA_PROD), 0);
  char keep[256];
  snprintf(keep, sizeof keep, "%s", check_path("keep.npy"));
  CHECK_EQ(strata_npy_save(keep, small), 0);
  struct stat before, after;
  CHECK_EQ(stat(keep, &before), 0);
  struct rlimit old, limit = {1 << 12, 1 << 12};
  getrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, SIG_IGN);
  setrlimit(RLIMIT_FSIZE, &limit);
  CHECK_EQ(strata_npy_save(keep, big), STRATA_EIO);
  setrlimit(RLIMIT_FSIZE, &old);
  CHECK(strstr(strata_error_message(), "File too large") != NULL);
  CHECK(strstr(strata_error_message(), "previous file is unchanged") != NULL);
  CHECK_EQ(stat(keep, &after), 0);
  CHECK_EQ(after.st_size, before.st_size);
  strata_array *back = NULL;
  CHECK_EQ(strata_npy_load(keep, &back), 0);
  CHECK_EQ(strata_array_nelems(back), 4);
  strata_array_destroy(back);
  DIR *d = opendir(check_scratch);
  for (struct dirent *e; d && (e = readdir(d));)
    CHECK(strncmp(e->d_name, ".keep.npy.", 10) != 0);
  if (d)
    closedir(d);
  /* The checks before a write: a directory, a missing directory, no room. */
  CHECK_EQ(strata_output_check(check_scratch, 0), STRATA_EIO);
  CHECK(strstr(strata_error_message(), "is a directory") != NULL);
  CHECK_EQ(strata_output_check(keep, 0), 0);
  CHECK_EQ(strata_output_check(keep, (uint64_t)1 << 62), STRATA_EIO);
  CHECK(strstr(strata_error_message(), "MB are free in") != NULL);
  CHECK_EQ(strata_npy_save("/nonexistent/dir/x.npy", small), STRATA_EIO);
  CHECK(strstr(strata_error_message(), "No such file or directory") != NULL);
  strata_array_destroy(small);
  strata_array_destroy(big);
}

int main(int argc, char **argv)
{
  check_init(&argc, &argv);
  check_scratch_open("strata_npy");
  check_round_trip();
  check_big_endian_and_v2();
  check_bad_files();
  check_atomic_save();
  strata_finalize();
  check_scratch_close();
  return check_status();
}
