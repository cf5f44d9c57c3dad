/* Host memory for arrays and exchange buffers, with a cache of freed large
 * blocks. Without it, every graph run's new output and every variable-size
 * exchange's buffers come from fresh pages: the kernel zeroes each 4 KiB
 * page on first touch, which on this VM cost more than the work in some
 * benchmarks (GLIBC_TUNABLES=glibc.malloc.hugetlb=1 made the fused 8-op
 * chain 149 -> 19 ms). Blocks of at least CACHE_MIN bytes that are freed
 * are kept, up to a budget, and handed out again for the same size, newest
 * first (still in cache); the oldest go when the budget is exceeded. */
#ifndef _DEFAULT_SOURCE /* SMPI's compiler wrapper defines it already */
#define _DEFAULT_SOURCE /* madvise */
#endif
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "codelets.h"
#include "internal/runtime.h"

enum { CACHE_MIN = 1 << 16, CACHE_SLOTS = 64, HUGE_PAGE = 2 << 20 };

static struct {
  pthread_mutex_t lock;
  int configured;
  size_t budget, held;
  int count;
  struct {
    void *p;
    size_t n;
  } slot[CACHE_SLOTS]; /* oldest first */
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* STRATA_HOST_CACHE_MB (0 turns the cache off), else 512 MiB. */
static void configure(void)
{
  if (cache.configured)
    return;
  cache.configured = 1;
  cache.budget = (size_t)512 << 20;
  const char *env = getenv("STRATA_HOST_CACHE_MB");
  if (env && *env) {
    char *end;
    errno = 0;
    long long mb = strtoll(env, &end, 10);
    if (!*end && !errno && mb >= 0 && mb <= (1LL << 30))
      cache.budget = (size_t)mb << 20;
    else
      strata_log(STRATA_LOG_WARN, "STRATA_HOST_CACHE_MB=%s ignored (a number of MiB)", env);
  }
}

static void take_slot(int k)
{
  cache.held -= cache.slot[k].n;
  cache.count--;
  for (int j = k; j < cache.count; j++)
    cache.slot[j] = cache.slot[j + 1];
}

/* Give the oldest kept block back to StarPU (the lock held). */
static void drop_oldest(void)
{
  void *p = cache.slot[0].p;
  size_t n = cache.slot[0].n;
  take_slot(0);
  starpu_free_flags(p, n, STARPU_MALLOC_PINNED);
}

/* Huge pages for the whole 2 MiB pages inside a large fresh block: fewer
 * faults and TLB misses. Not for CUDA's page-locked memory. */
static void advise_huge(void *p, size_t n)
{
  if (n < 2 * (size_t)HUGE_PAGE || starpu_cuda_worker_get_count() > 0)
    return;
  uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
  uintptr_t hi = ((uintptr_t)p + n) & ~(uintptr_t)(HUGE_PAGE - 1);
  if (hi > lo)
    madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

/* StarPU's own host buffers (message buffers, and handles registered
 * without memory, which StarPU allocates on first use) through the same
 * advice. Without it, zeroing a fresh 21 MB outbox on 2 ranks took 145 ms
 * of a worker's time (fresh 4 KiB pages fault at ~28 us each on this VM),
 * 1.2 s per 3-cycle inference job. The blocks are plain aligned heap
 * memory, freed with free(), as StarPU's own allocator would make them
 * without GPUs, so blocks from either can be freed by the other. */
static int starpu_host_malloc(unsigned node, void **p, size_t n, int flags)
{
  (void)node, (void)flags;
  size_t align = n >= 2 * (size_t)HUGE_PAGE ? HUGE_PAGE : 64;
  if (posix_memalign(p, align, n ? n : 1) != 0)
    return -ENOMEM;
  advise_huge(*p, n);
  return 0;
}

static int starpu_host_free(unsigned node, void *p, size_t n, int flags)
{
  (void)node, (void)n, (void)flags;
  free(p);
  return 0;
}

void strata__host_hooks(int on)
{
  if (on && starpu_cuda_worker_get_count() > 0)
    return; /* StarPU page-locks host memory for the GPUs itself */
  starpu_malloc_set_hooks(on ? starpu_host_malloc : NULL, on ? starpu_host_free : NULL);
}

int strata__host_alloc(void **p, size_t n)
{
  if (n >= CACHE_MIN) {
    pthread_mutex_lock(&cache.lock);
    for (int k = cache.count - 1; k >= 0; k--)
      if (cache.slot[k].n == n) {
        *p = cache.slot[k].p;
        take_slot(k);
        pthread_mutex_unlock(&cache.lock);
        return 0;
      }
    pthread_mutex_unlock(&cache.lock);
  }
  int ret = starpu_malloc_flags(p, n, STARPU_MALLOC_PINNED);
  if (ret == 0 && n >= CACHE_MIN)
    advise_huge(*p, n);
  return ret;
}

void strata__host_free(void *p, size_t n)
{
  if (!p)
    return;
  if (n >= CACHE_MIN && strata_initialized()) {
    pthread_mutex_lock(&cache.lock);
    configure();
    if (n <= cache.budget) {
      while (cache.count > 0 && (cache.count == CACHE_SLOTS || cache.held + n > cache.budget))
        drop_oldest();
      cache.slot[cache.count].p = p;
      cache.slot[cache.count].n = n;
      cache.count++;
      cache.held += n;
      pthread_mutex_unlock(&cache.lock);
      return;
    }
    pthread_mutex_unlock(&cache.lock);
  }
  starpu_free_flags(p, n, STARPU_MALLOC_PINNED);
}

/* Blocks of handles whose unregistration is pending (their tasks still
 * run): the flush waits for them, so that none comes back to the cache
 * after it. */
static int drops_pending;

void strata__host_cache_flush(void)
{
  while (__atomic_load_n(&drops_pending, __ATOMIC_ACQUIRE) > 0)
    usleep(100);
  pthread_mutex_lock(&cache.lock);
  while (cache.count > 0)
    drop_oldest();
  cache.configured = 0; /* read the variable again at the next start */
  pthread_mutex_unlock(&cache.lock);
}

struct host_drop {
  starpu_data_handle_t h;
  void *p;
  size_t n;
};

/* Every task on the handle has run: nothing reads the block any more. */
static void drop_when_done(void *arg)
{
  struct host_drop *d = arg;
  starpu_data_release_on_node(d->h, STARPU_ACQUIRE_NO_NODE);
  starpu_data_unregister_submit(d->h);
  strata__host_free(d->p, d->n);
  free(d);
  __atomic_sub_fetch(&drops_pending, 1, __ATOMIC_RELEASE);
}

void strata__host_unregister_submit(starpu_data_handle_t h, void *p, size_t n)
{
  struct host_drop *d = malloc(sizeof *d);
  if (d) {
    *d = (struct host_drop){h, p, n};
    __atomic_add_fetch(&drops_pending, 1, __ATOMIC_RELAXED);
    if (starpu_data_acquire_on_node_cb(h, STARPU_ACQUIRE_NO_NODE, STARPU_W, drop_when_done, d) == 0)
      return;
    __atomic_sub_fetch(&drops_pending, 1, __ATOMIC_RELAXED);
    free(d);
  }
  strata__unregister(h); /* out of memory: wait */
  strata__host_free(p, n);
}
