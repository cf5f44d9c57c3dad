/* The host time of each simulated thread, for scripts/simulate.sh: preloaded
 * into a simulation, it lets the patched StarPU charge the time a rank's
 * main thread spends on the host (submitting tasks, reading results,
 * planning) as a computation, as it charges its tasks.
 *
 * SimGrid runs every simulated thread on one system thread and switches
 * between them with raw_swapcontext() (its default "raw" contexts), which
 * it calls through the PLT: a definition here comes first. Each switch
 * adds the time since the last one to the context that ran, so a
 * context's account holds its own time and none of another's or of
 * SimGrid's scheduler.
 *
 * A simulated thread switches at every simcall, and a simcall costs it
 * more than the operation it stands for (an uncontended lock: 94 ns of the
 * thread's own time against about 10 for a pthread mutex here). So each
 * stretch is shortened by STRATA_HOST_CLOCK_SWITCH_NS, which the same
 * source measures when built with -DSTRATA_HOST_CLOCK_PROGRAM (below).
 *
 * Built by `simulate.sh build` into build-simgrid/libstrata_host_clock.so
 * and build-simgrid/strata_host_clock; the StarPU patch
 * (scripts/patches/starpu-1.4-simgrid) finds strata_host_clock_take() with
 * dlsym() and charges what it returns. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* A context's account: the address where SimGrid keeps its stack top. */
struct account {
  void **key;
  double seconds;
  double charged; /* taken with at_least > 0: what StarPU charged */
  long charges;
};

/* Open addressing, never shrunk: a few accounts per simulated rank. */
static struct account *accounts;
static size_t capacity, used;
static void **current;          /* the running context's key, NULL before a switch */
static double last;             /* seconds at the last switch */
static double switch_cost = -1; /* seconds taken off each stretch */

/* The simulation's one system thread has a core to itself, so its wall
 * clock is its CPU time; reading it costs 20 ns here against 390 for the
 * thread's CPU clock, which SimGrid's tens of millions of switches a
 * minute would add to the accounts. */
static double now_seconds(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static struct account *account_of(void **key)
{
  if (2 * (used + 1) > capacity) {
    size_t grown = capacity ? 2 * capacity : 1024;
    struct account *next = calloc(grown, sizeof *next);
    if (!next) {
      fputs("strata host clock: out of memory\n", stderr);
      abort();
    }
    for (size_t i = 0; i < capacity; i++)
      if (accounts[i].key) {
        size_t j = ((uintptr_t)accounts[i].key >> 4) & (grown - 1);
        while (next[j].key)
          j = (j + 1) & (grown - 1);
        next[j] = accounts[i];
      }
    free(accounts);
    accounts = next;
    capacity = grown;
  }
  size_t j = ((uintptr_t)key >> 4) & (capacity - 1);
  while (accounts[j].key && accounts[j].key != key)
    j = (j + 1) & (capacity - 1);
  if (!accounts[j].key) {
    accounts[j].key = key;
    used++;
  }
  return &accounts[j];
}

typedef void swap_fn(void **old, void *next);

void raw_swapcontext(void **old, void *next)
{
  static swap_fn *real;
  if (!real)
    *(void **)&real = dlsym(RTLD_NEXT, "raw_swapcontext");
  if (switch_cost < 0) {
    const char *ns = getenv("STRATA_HOST_CLOCK_SWITCH_NS");
    switch_cost = ns ? 1e-9 * atof(ns) : 0;
  }
  /* The context that ran is the one saving itself in *old. One that has
   * not switched before ran under a key made from its stack top: its
   * account moves to its own key now. (Each lookup may move the table.) */
  double carried = 0;
  if (current && current != old) {
    struct account *fresh = account_of(current);
    carried = fresh->seconds;
    fresh->seconds = 0;
  }
  double now = now_seconds(), stretch = now - last - switch_cost;
  account_of(old)->seconds += carried + (stretch > 0 ? stretch : 0);
  /* Stack tops are aligned: an odd key is no context's own. */
  current = (void **)((uintptr_t)next | 1);
  last = now;
  real(old, next);
  /* Back in the context that saved itself in *old. */
  current = old;
  last = now_seconds();
}

/* The running context's seconds since its last take, and a new account;
 * 0 and the account kept while it holds less than `at_least`. */
double strata_host_clock_take(double at_least);
double strata_host_clock_take(double at_least)
{
  if (!current)
    return 0;
  double now = now_seconds();
  struct account *a = account_of(current);
  double seconds = a->seconds + (now - last);
  if (seconds < at_least)
    return 0;
  a->seconds = 0;
  last = now;
  if (at_least > 0) {
    a->charged += seconds;
    a->charges++;
  }
  return seconds;
}

/* With STRATA_HOST_CLOCK_REPORT=PATH, what each simulated thread was
 * charged (at least 1 ms in all), a line each: seconds, charges. */
__attribute__((destructor)) static void report(void)
{
  const char *path = getenv("STRATA_HOST_CLOCK_REPORT");
  FILE *f = path && used ? fopen(path, "w") : NULL;
  if (!f)
    return;
  for (size_t i = 0; i < capacity; i++)
    if (accounts[i].key && accounts[i].charged >= 1e-3)
      fprintf(f, "%.6f %ld\n", accounts[i].charged, accounts[i].charges);
  fclose(f);
}

#ifdef STRATA_HOST_CLOCK_PROGRAM
/* strata_host_clock calibrate|check PLATFORM HOST, on simulated threads of
 * HOST:
 * - calibrate: the nanoseconds a simulated thread spends in a simcall
 *   beyond the operation it stands for (a million uncontended locks and
 *   unlocks, simulated and as pthread mutexes, the quickest of 5 rounds);
 * - check: two threads taking turns, each busy for its own lengths between
 *   its turns, are each charged their own time (exit status 1 if not). */
#include <pthread.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mutex.h>

enum { PAIRS = 1000000, ROUNDS = 5, TURNS = 5 };

static void calibrate(int argc, char **argv)
{
  (void)argc, (void)argv;
  sg_mutex_t m = sg_mutex_init();
  pthread_mutex_t p = PTHREAD_MUTEX_INITIALIZER;
  double simulated = 1e9, real = 1e9; /* the quickest round of each */
  for (int round = 0; round < ROUNDS; round++) {
    strata_host_clock_take(0);
    for (int i = 0; i < PAIRS; i++) {
      sg_mutex_lock(m);
      sg_mutex_unlock(m);
    }
    double s = strata_host_clock_take(0);
    simulated = s < simulated ? s : simulated;
    double t0 = now_seconds();
    for (int i = 0; i < PAIRS; i++) {
      pthread_mutex_lock(&p);
      pthread_mutex_unlock(&p);
    }
    double r = now_seconds() - t0;
    real = r < real ? r : real;
  }
  sg_mutex_destroy(m);
  double ns = 1e9 * (simulated - real) / (2.0 * PAIRS);
  printf("%.0f\n", ns > 0 ? ns : 0);
}

static int failures;

/* Busy for argv[1] milliseconds before each of its turns, beside a thread
 * busy for argv[2]. Its account must hold its own time and none of the
 * other's: what a loaded machine adds (the system thread preempted between
 * a busy stretch and its switch) is let through up to half of the other's
 * time, which an account that held the other's would exceed. */
static void take_turns(int argc, char **argv)
{
  (void)argc;
  double busy = 1e-3 * atof(argv[1]), other = 1e-3 * atof(argv[2]);
  strata_host_clock_take(0);
  for (int turn = 0; turn < TURNS; turn++) {
    double t0 = now_seconds();
    while (now_seconds() - t0 < busy)
      ;
    sg_actor_yield();
  }
  double charged = strata_host_clock_take(0), want = TURNS * busy;
  int ok = charged > 0.95 * want && charged < want + 0.5 * TURNS * other;
  printf("%s: busy %.1f ms, charged %.1f ms%s\n", sg_actor_self_get_name(), 1e3 * want,
         1e3 * charged, ok ? "" : ": wrong");
  failures += !ok;
}

int main(int argc, char **argv)
{
  switch_cost = 0;
  simgrid_init(&argc, argv); /* takes SimGrid's own options out */
  int check = argc == 4 && !strcmp(argv[1], "check");
  if (argc != 4 || (!check && strcmp(argv[1], "calibrate"))) {
    fprintf(stderr, "usage: %s calibrate|check PLATFORM HOST\n", argv[0]);
    return 2;
  }
  simgrid_load_platform(argv[2]);
  sg_host_t host = sg_host_by_name(argv[3]);
  if (!host) {
    fprintf(stderr, "%s: no host %s in %s\n", argv[0], argv[3], argv[2]);
    return 2;
  }
  if (check) {
    const char *a[] = {"a", "20", "7"}, *b[] = {"b", "7", "20"};
    sg_actor_create_("a", host, take_turns, 3, a);
    sg_actor_create_("b", host, take_turns, 3, b);
  } else {
    sg_actor_create_("calibrate", host, calibrate, 0, NULL);
  }
  simgrid_run();
  return failures != 0;
}
#endif
