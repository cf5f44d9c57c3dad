/* The host memory cache (core/runtime/host_memory.c): a large freed block
 * comes back for the next allocation of its size, newest first, and the
 * budget (STRATA_HOST_CACHE_MB) evicts the oldest; small blocks and other
 * sizes are not cached; strata_finalize gives the blocks back. StarPU's own
 * large buffers come 2 MiB aligned and advised for huge pages. */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <starpu.h>

#include "check.h"
#include "internal/runtime.h"

enum { MIB = 1 << 20 };

static void *alloc_touched(size_t n)
{
  void *p = NULL;
  CHECK_EQ(strata__host_alloc(&p, n), 0);
  if (p)
    memset(p, 1, n);
  return p;
}

/* Default budget: reuse by size, newest first; small blocks not kept. */
static void reuse(void)
{
  void *a = alloc_touched(MIB), *b = alloc_touched(MIB);
  strata__host_free(a, MIB);
  strata__host_free(b, MIB);
  void *c = alloc_touched(MIB), *d = alloc_touched(MIB);
  CHECK(c == b); /* the newest block of that size first */
  CHECK(d == a);
  void *e = alloc_touched(2 * MIB); /* no block of that size is kept */
  CHECK(e != a && e != b);
  strata__host_free(c, MIB);
  void *f = alloc_touched(MIB + 4096); /* sizes must match exactly */
  CHECK(f != c);
  strata__host_free(d, MIB);
  strata__host_free(e, 2 * MIB);
  strata__host_free(f, MIB + 4096);
  void *small = alloc_touched(4096);
  strata__host_free(small, 4096);
}

/* A 2 MiB budget keeps the two newest of three 1 MiB blocks. */
static void budget(void)
{
  void *p[3];
  for (int k = 0; k < 3; k++)
    p[k] = alloc_touched(MIB);
  for (int k = 0; k < 3; k++)
    strata__host_free(p[k], MIB);
  void *q[3];
  for (int k = 0; k < 3; k++)
    q[k] = alloc_touched(MIB);
  CHECK(q[0] == p[2]);
  CHECK(q[1] == p[1]);
  CHECK(q[2] != p[1] && q[2] != p[2]); /* p[0] was given back: any address */
  for (int k = 0; k < 3; k++)
    strata__host_free(q[k], MIB);
}

/* This thread's faults only: StarPU's workers and the sanitizer's threads
 * fault in pages of their own meanwhile. */
static long minor_faults(void)
{
  struct rusage ru;
  return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_minflt : 0;
}

/* Of the mapping that holds p, from /proc/self/smaps: whether it carries
 * MADV_HUGEPAGE ("hg" among its VmFlags), the advice itself, and how many
 * kB of it the kernel gave as huge pages (AnonHugePages), which depends on
 * it having free ones (fragmentation, its defrag setting). 0 when smaps can
 * be read. */
static int mapping_info(const void *p, int *advised, long *huge_kb)
{
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f)
    return -1;
  char line[512];
  int inside = 0;
  *advised = 0;
  *huge_kb = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
      inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
    else if (inside && !strncmp(line, "AnonHugePages:", 14))
      *huge_kb = strtol(line + 14, NULL, 10);
    else if (inside && !strncmp(line, "VmFlags:", 8)) {
      *advised = strstr(line, " hg") != NULL;
      break;
    }
  }
  fclose(f);
  return 0;
}

/* A handle registered without memory: StarPU allocates it on first use,
 * through Strata's hook, 2 MiB aligned and advised for huge pages. Where
 * the kernel then backs it with huge pages, its first touch faults far
 * fewer than its 4 096 small pages in; where it has none free, the count
 * is printed only. */
static void starpu_buffers(void)
{
  if (starpu_cuda_worker_get_count() > 0)
    return; /* StarPU page-locks memory for GPUs itself: no hook */
  const uint32_t n = 16 * MIB;
  starpu_data_handle_t h;
  starpu_vector_data_register(&h, -1, 0, n, 1);
  CHECK_EQ(starpu_data_acquire(h, STARPU_W), 0);
  char *p = (char *)starpu_vector_get_local_ptr(h);
  CHECK(((uintptr_t)p & (2 * MIB - 1)) == 0);
  long before = minor_faults();
  memset(p, 1, n);
  long faults = minor_faults() - before, huge_kb = 0;
  int advised;
  if (mapping_info(p, &advised, &huge_kb) == 0) {
    CHECK_EQ(advised, 1);
    /* where it got huge pages (half of it or more): at most one fault per
     * small page of the rest, plus a quarter of its small pages; under
     * AddressSanitizer its shadow (an eighth of the buffer, in small pages)
     * faults in too: 1 030 faults were measured with all 16 MiB huge */
    long shadow_pages = 0;
#ifdef __SANITIZE_ADDRESS__
    shadow_pages = (long)(n / 8 / 4096);
#endif
    if (huge_kb >= 8 * 1024)
      CHECK(faults < (long)(n - huge_kb * 1024) / 4096 + shadow_pages + (long)(n / 4096) / 4);
  }
  printf("test_host_memory: first touch of 16 MiB: %ld minor faults (%u small pages), %ld kB "
         "in huge pages\n",
         faults, n / 4096, huge_kb);
  starpu_data_release(h);
  starpu_data_unregister(h);
}

int main(int argc, char **argv)
{
  int provided; /* the test owns MPI, so that Strata may start twice */
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  unsetenv("STRATA_HOST_CACHE_MB");
  check_init(&argc, &argv);
  reuse();
  starpu_buffers();
  CHECK_EQ(strata_finalize(), 0);
  setenv("STRATA_HOST_CACHE_MB", "2", 1); /* read again after a finalize */
  check_init(&argc, &argv);
  budget();
  CHECK_EQ(strata_finalize(), 0);
  MPI_Finalize();
  if (!check_failures)
    printf("test_host_memory: ok\n");
  return check_status();
}
