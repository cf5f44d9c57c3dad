/* Output files written whole or not at all: a temporary file beside the
 * target, flushed to disk, then renamed over it (rename is atomic within a
 * directory), so an interrupted or failed writer never leaves the target
 * truncated and never destroys the previous good file. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <strata/io.h>

#include "internal/runtime.h"

struct strata_output {
  char *path, *temp;
};

/* The directory part of `path` ("." for a bare name), newly allocated. */
static char *directory_of(const char *path)
{
  char *copy = strdup(path);
  if (!copy)
    return NULL;
  char *dir = strdup(dirname(copy));
  free(copy);
  return dir;
}

int strata_output_check(const char *path, uint64_t bytes_needed)
{
  strata__clear_error();
  if (!path || !path[0])
    return strata__fail(STRATA_EINVAL, "output: no path");
  struct stat st;
  if (stat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode))
      return strata__fail(STRATA_EIO, "%s is a directory", path);
    if (!S_ISREG(st.st_mode))
      return strata__fail(STRATA_EIO, "%s exists and is not a regular file", path);
  }
  char *dir = directory_of(path);
  if (!dir)
    return STRATA_ENOMEM;
  int ret = 0;
  struct statvfs fs;
  const int known = statvfs(dir, &fs) == 0; /* what the file system says, where it says */
  if (stat(dir, &st) != 0)
    ret = strata__fail(STRATA_EIO, "directory %s of %s: %s", dir, path, strerror(errno));
  else if (!S_ISDIR(st.st_mode))
    ret = strata__fail(STRATA_EIO, "%s (in the path %s) is not a directory", dir, path);
  else if (access(dir, W_OK | X_OK) != 0)
    ret = strata__fail(STRATA_EIO, "directory %s of %s is not writable: %s", dir, path,
                       strerror(errno));
  else if (known && (fs.f_flag & ST_RDONLY))
    ret = strata__fail(STRATA_EIO, "directory %s of %s is on a read-only file system", dir, path);
  else if (known && bytes_needed && (uint64_t)fs.f_bavail * fs.f_frsize < bytes_needed)
    ret = strata__fail(STRATA_EIO, "%s needs about %.1f MB, %.1f MB are free in %s", path,
                       (double)bytes_needed / 1e6, (double)fs.f_bavail * fs.f_frsize / 1e6, dir);
  free(dir);
  return ret;
}

/* The mode a newly created file gets (0666 less the umask), read without
 * changing the process's umask, which other threads may rely on. */
static mode_t new_file_mode(void)
{
  unsigned mask = 022;
  FILE *f = fopen("/proc/self/status", "r");
  char line[128];
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "Umask: %o", &mask) == 1)
      break;
  if (f)
    fclose(f);
  return (mode_t)(0666 & ~mask);
}

int strata_output_begin(const char *path, strata_output **out)
{
  strata__clear_error();
  if (!out)
    return STRATA_EINVAL;
  *out = NULL;
  int ret = strata_output_check(path, 0);
  if (ret)
    return ret;
  strata_output *o = calloc(1, sizeof *o);
  char *dir = directory_of(path);
  char *copy = strdup(path);
  if (o && dir && copy) {
    o->path = strdup(path);
    size_t len = strlen(dir) + strlen(basename(copy)) + 16;
    o->temp = malloc(len);
    if (o->temp)
      snprintf(o->temp, len, "%s/.%s.XXXXXX", dir, basename(copy));
  }
  free(dir);
  free(copy);
  if (!o || !o->path || !o->temp) {
    if (o) {
      free(o->path);
      free(o->temp);
    }
    free(o);
    return STRATA_ENOMEM;
  }
  int fd = mkstemp(o->temp);
  struct stat st;
  if (fd < 0) {
    ret = strata__fail(STRATA_EIO, "cannot create a temporary file beside %s: %s", path,
                       strerror(errno));
    free(o->path);
    free(o->temp);
    free(o);
    return ret;
  }
  /* The target's mode when it exists, else what a plain create gives. */
  fchmod(fd, stat(path, &st) == 0 ? st.st_mode & 07777 : new_file_mode());
  close(fd);
  *out = o;
  return 0;
}

const char *strata_output_temp_path(const strata_output *o) { return o ? o->temp : NULL; }

static void output_free(strata_output *o)
{
  free(o->path);
  free(o->temp);
  free(o);
}

int strata_output_abandon(strata_output *o, int err)
{
  strata__clear_error();
  if (!o)
    return STRATA_EINVAL;
  struct stat st;
  int kept = stat(o->path, &st) == 0;
  int ret = strata__fail(STRATA_EIO, "writing %s failed%s%s%s; the partial file was removed%s",
                         o->path, err ? " (" : "", err ? strerror(err) : "", err ? ")" : "",
                         kept ? " and the previous file is unchanged" : "");
  unlink(o->temp);
  output_free(o);
  return ret;
}

FILE *strata_output_stream(strata_output *o)
{
  FILE *f = o ? fopen(o->temp, "wb") : NULL;
  if (f)
    errno = 0; /* what a failing write sets is what strata_output_finish reports */
  return f;
}

int strata_output_finish(strata_output *o, FILE *f)
{
  if (!o) {
    if (f)
      fclose(f);
    return STRATA_EINVAL;
  }
  int err = !f || ferror(f) ? (errno ? errno : EIO) : 0;
  if (f && fclose(f) && !err)
    err = errno ? errno : EIO;
  return err ? strata_output_abandon(o, err) : strata_output_commit(o);
}

/* fsync a file or directory by name; 0 or the errno. */
static int sync_path(const char *path, int flags)
{
  int fd = open(path, flags);
  if (fd < 0)
    return errno;
  int err = fsync(fd) ? errno : 0;
  if (close(fd) && !err)
    err = errno;
  return err;
}

int strata_output_commit(strata_output *o)
{
  strata__clear_error();
  if (!o)
    return STRATA_EINVAL;
  int err = sync_path(o->temp, O_RDONLY);
  if (!err && rename(o->temp, o->path))
    err = errno;
  if (err)
    return strata_output_abandon(o, err);
  /* The rename itself reaches the disk with the directory. */
  char *dir = directory_of(o->path);
  if (dir)
    sync_path(dir, O_RDONLY | O_DIRECTORY);
  free(dir);
  output_free(o);
  return 0;
}
