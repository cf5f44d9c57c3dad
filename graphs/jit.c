/* Generated kernels: C source compiled by the system C compiler into a
 * shared object, cached on disk by a hash of the source and the compiler
 * command, and loaded with dlopen. Several processes (MPI ranks) may build
 * the same kernel at once: each writes private files and renames the result
 * into place, which is atomic. Loaded kernels stay until strata_finalize(),
 * since tasks submitted with them may still be waiting to run. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "graph_impl.h"
#include "jit_prelude.h"

extern char **environ;

/* Tuned for this processor (kernels are built where they run; the cache key
 * includes the processor), with the instructions of march(). No errno from
 * sqrt and log, so that they vectorise; no contraction into FMA, which
 * would round differently from the unfused kernels. */
#define JIT_FLAGS                                                                                  \
  "-O3", "-mtune=native", "-fno-math-errno", "-ffp-contract=off", "-std=gnu17", "-fPIC",           \
      "-shared", "-w"

/* The instruction set the kernels may use. On x86-64, the highest level
 * this process's processor supports as the process sees it: under an
 * emulator such as valgrind's, fewer than the host offers, while the
 * compiler, which runs natively, would take the host's (-march=native).
 * Each level by the features GCC and Clang both name (not MOVBE, LZCNT or
 * F16C, which come with AVX2 and BMI2 on every x86-64 processor). */
static const char *march(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  const int v2 = __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("ssse3") &&
                 __builtin_cpu_supports("sse4.2");
  const int v3 = v2 && __builtin_cpu_supports("avx") && __builtin_cpu_supports("avx2") &&
                 __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
                 __builtin_cpu_supports("bmi2");
  const int v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                 __builtin_cpu_supports("avx512vl");
  return v4   ? "-march=x86-64-v4"
         : v3 ? "-march=x86-64-v3"
         : v2 ? "-march=x86-64-v2"
              : "-march=x86-64";
#else
  return "-march=native";
#endif
}

static const char *compiler(void)
{
  const char *cc = getenv("STRATA_JIT_CC");
  return cc && *cc ? cc : STRATA_JIT_DEFAULT_CC;
}

/* Flags added after JIT_FLAGS (later ones win: -march=..., -O2, -g,
 * -fsanitize=...), blank-separated. */
static const char *extra_flags(void)
{
  const char *flags = getenv("STRATA_JIT_FLAGS");
  return flags ? flags : "";
}

/* mkdir -p */
static int make_dirs(char *path)
{
  for (char *p = path + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    int bad = mkdir(path, 0755) != 0 && errno != EEXIST;
    *p = '/';
    if (bad)
      return -1;
  }
  return mkdir(path, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* $STRATA_JIT_CACHE, else $XDG_CACHE_HOME/strata/jit, else
 * $HOME/.cache/strata/jit, else /tmp/strata-jit-UID. */
static int cache_dir(char *dir, size_t size)
{
  const char *env = getenv("STRATA_JIT_CACHE"), *xdg = getenv("XDG_CACHE_HOME"),
             *home = getenv("HOME");
  if (env && *env)
    snprintf(dir, size, "%s", env);
  else if (xdg && *xdg)
    snprintf(dir, size, "%s/strata/jit", xdg);
  else if (home && *home)
    snprintf(dir, size, "%s/.cache/strata/jit", home);
  else
    snprintf(dir, size, "/tmp/strata-jit-%u", (unsigned)getuid());
  if (make_dirs(dir))
    return strata__fail(STRATA_EIO, "cannot create the kernel cache %s: %s", dir, strerror(errno));
  return 0;
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* The extra flags one by one, so that spacing does not matter. */
static uint64_t hash_flags(uint64_t h)
{
  const char *f = extra_flags();
  while (*f) {
    size_t blank = strspn(f, " \t"), len = strcspn(f + blank, " \t");
    for (size_t k = 0; k < len; k++)
      h = (h ^ (unsigned char)f[blank + k]) * 1099511628211ull;
    if (len)
      h = (h ^ (unsigned char)' ') * 1099511628211ull;
    f += blank + len;
  }
  return h;
}

/* The processor's model and flags (-mtune=native depends on them). */
static uint64_t hash_cpu(uint64_t h)
{
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[8192];
  int seen = 0;
  while (f && seen < 2 && fgets(line, sizeof line, f))
    if (strncmp(line, "model name", 10) == 0 || strncmp(line, "flags", 5) == 0) {
      h = fnv1a(h, line);
      seen++;
    }
  if (f)
    fclose(f);
  return h;
}

/* The kernels' element functions must inline whatever their number: a
 * call per element and operation would cost more than fusion saves. */
static const char jit_define[] =
    "#define STRATA__ELEM static inline __attribute__((always_inline))\n";

static int write_file(const char *path, const char *kernel)
{
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  int bad = fputs(jit_define, f) < 0 || fputs(strata__jit_prelude, f) < 0 || fputs(kernel, f) < 0;
  return fclose(f) != 0 || bad ? -1 : 0;
}

/* Run the compiler on src into so, its messages into log. */
static int run_compiler(const char *src, const char *so, const char *log)
{
  enum { MAX_EXTRA = 32 };
  char *fixed[] = {(char *)compiler(), (char *)march(), JIT_FLAGS},
       *argv[sizeof fixed / sizeof *fixed + MAX_EXTRA + 5];
  int argc = 0;
  for (size_t k = 0; k < sizeof fixed / sizeof *fixed; k++)
    argv[argc++] = fixed[k];
  char *extra = strdup(extra_flags()), *save = NULL;
  if (!extra)
    return STRATA_ENOMEM;
  for (char *f = strtok_r(extra, " \t", &save); f; f = strtok_r(NULL, " \t", &save)) {
    if (argc == (int)(sizeof fixed / sizeof *fixed) + MAX_EXTRA) {
      free(extra);
      return strata__fail(STRATA_EINVAL, "STRATA_JIT_FLAGS: more than %d flags", MAX_EXTRA);
    }
    argv[argc++] = f;
  }
  char *tail[] = {"-o", (char *)so, (char *)src, "-lm", NULL};
  for (size_t k = 0; k < sizeof tail / sizeof *tail; k++)
    argv[argc++] = tail[k];
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int status = 0, ret = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  free(extra);
  if (ret != 0)
    return strata__fail(STRATA_EIO, "cannot run the C compiler '%s': %s", argv[0], strerror(ret));
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return strata__fail(STRATA_EIO, "the C compiler '%s' failed on a fused kernel (see %s)",
                        argv[0], log);
  return 0;
}

/* Build dir/ID.so, leaving its source next to it as dir/ID.c for readers. */
static int build(const char *dir, uint64_t id, const char *source, const char *so)
{
  char src[4200], tmp_src[4200], tmp[4200], log[4200];
  long tag = (long)getpid();
  snprintf(src, sizeof src, "%s/%016llx.c", dir, (unsigned long long)id);
  snprintf(tmp_src, sizeof tmp_src, "%s/%016llx.%ld.c", dir, (unsigned long long)id, tag);
  snprintf(tmp, sizeof tmp, "%s/%016llx.%ld.so", dir, (unsigned long long)id, tag);
  snprintf(log, sizeof log, "%s/%016llx.log", dir, (unsigned long long)id);
  if (write_file(tmp_src, source))
    return strata__fail(STRATA_EIO, "cannot write %s: %s", tmp_src, strerror(errno));
  int ret = run_compiler(tmp_src, tmp, log);
  if (!ret && (rename(tmp_src, src) != 0 || rename(tmp, so) != 0))
    ret = strata__fail(STRATA_EIO, "cannot rename %s: %s", tmp, strerror(errno));
  unlink(tmp_src);
  unlink(tmp);
  if (!ret)
    unlink(log);
  return ret;
}

/* Loaded kernels, shared by every graph of the process, unloaded at
 * strata_finalize() once no task can call them any more. */
static struct loaded {
  struct strata__jit_kernel k;
  struct loaded *next;
} * loaded;
static pthread_mutex_t loaded_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned generation = 1;

static void unload_all(void)
{
  pthread_mutex_lock(&loaded_lock);
  while (loaded) {
    struct loaded *next = loaded->next;
    dlclose(loaded->k.dl);
    free(loaded);
    loaded = next;
  }
  generation++;
  pthread_mutex_unlock(&loaded_lock);
}

unsigned strata__jit_generation(void)
{
  pthread_mutex_lock(&loaded_lock);
  unsigned g = generation;
  pthread_mutex_unlock(&loaded_lock);
  return g;
}

static int load(const char *so, uint64_t id, const struct strata__jit_kernel **out)
{
  for (struct loaded *l = loaded; l; l = l->next)
    if (l->k.id == id) {
      *out = &l->k;
      return 0;
    }
  struct loaded *l = calloc(1, sizeof *l);
  if (!l)
    return STRATA_ENOMEM;
  l->k.id = id;
  l->k.dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (l->k.dl)
    *(void **)&l->k.fn = dlsym(l->k.dl, "strata_fused");
  if (!l->k.dl || !l->k.fn) {
    int ret = strata__fail(STRATA_EIO, "cannot load the fused kernel %s: %s", so, dlerror());
    if (l->k.dl)
      dlclose(l->k.dl);
    free(l);
    return ret;
  }
  if (!loaded)
    strata__on_finalize(unload_all);
  l->next = loaded;
  loaded = l;
  *out = &l->k;
  return 0;
}

int strata__jit_build(const char *source, const struct strata__jit_kernel **out)
{
  *out = NULL;
  char dir[4096], so[4200];
  int ret = cache_dir(dir, sizeof dir);
  if (ret)
    return ret;
  uint64_t id = hash_cpu(hash_flags(fnv1a(fnv1a(14695981039346656037ull, compiler()), march())));
  id = fnv1a(fnv1a(fnv1a(id, jit_define), strata__jit_prelude), source);
  snprintf(so, sizeof so, "%s/%016llx.so", dir, (unsigned long long)id);
  pthread_mutex_lock(&loaded_lock);
  if (access(so, R_OK) != 0)
    ret = build(dir, id, source, so);
  if (!ret)
    ret = load(so, id, out);
  pthread_mutex_unlock(&loaded_lock);
  return ret;
}
