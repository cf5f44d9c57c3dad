/* Replay driver: runs a fuzzing target on every file of the given files and
 * directories (the committed corpus and crash reproducers), so the regular
 * test suite checks them with any compiler. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static int run_file(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return fprintf(stderr, "replay: cannot open %s\n", path), 1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
  size_t got = buf ? fread(buf, 1, (size_t)(n > 0 ? n : 0), f) : 0;
  fclose(f);
  if (!buf || got != (size_t)(n > 0 ? n : 0))
    return free(buf), fprintf(stderr, "replay: cannot read %s\n", path), 1;
  LLVMFuzzerTestOneInput(buf, got);
  free(buf);
  return 0;
}

static int compare_names(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files of a directory in name order; returns how many ran. */
static int run_dir(const char *dir, int *errors)
{
  DIR *d = opendir(dir);
  if (!d)
    return ++*errors, fprintf(stderr, "replay: cannot open %s\n", dir), 0;
  char **names = NULL;
  int n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.')
      continue;
    if (n == cap && !(names = realloc(names, (size_t)(cap = cap ? 2 * cap : 64) * sizeof *names)))
      abort();
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    if (!(names[n] = malloc(len)))
      abort();
    snprintf(names[n++], len, "%s/%s", dir, e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, compare_names);
  for (int i = 0; i < n; i++) {
    *errors += run_file(names[i]);
    free(names[i]);
  }
  free(names);
  return n;
}

int main(int argc, char **argv)
{
  LLVMFuzzerInitialize(&argc, &argv);
  int errors = 0, inputs = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
      inputs += run_dir(argv[i], &errors);
    else if (stat(argv[i], &st) == 0) {
      errors += run_file(argv[i]);
      inputs++;
    } /* a missing path (no reproducers yet) is no input */
  }
  printf("replayed %d input(s), %d error(s)\n", inputs, errors);
  return errors != 0;
}
