/* `strata trace-summary`: per-codelet and per-rank figures of a tasks.rec
 * written by starpu_fxt_tool (scripts/trace.sh). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "trace_records.h"

static const char usage_text[] =
    "usage: strata trace-summary [--json] TASKS.REC [PAJE.TRACE]\n"
    "\n"
    "Summarise a trace merged by starpu_fxt_tool (scripts/trace.sh): per codelet\n"
    "and worker kind, the number of tasks, their total and mean time; per rank,\n"
    "the tasks, busy time, span and iterations. Worker kinds (CPU, CUDA) come\n"
    "from the Paje trace, by default paje.trace next to TASKS.REC.\n"
    "  --json   print the figures as JSON instead of tables\n";

/* One row per (codelet, worker kind). */
struct codelet_row {
  char name[64], kind[16];
  long count;
  double total_us;
};

/* One row per rank. */
struct rank_row {
  int rank;
  long count;
  double busy_us, first_us, last_us;
  long iteration_min, iteration_max;
  int workers;
  int seen_worker[TRACE_MAX_WORKERS];
};

struct summary {
  struct codelet_row *codelets;
  int ncodelets, codelets_cap;
  struct rank_row *ranks;
  int nranks, ranks_cap;
  long tasks;
};

/* Room for item n of a growable array: the array (possibly moved), or NULL
 * (the old one is still valid). */
static void *reserve(void *items, int n, int *cap, size_t elem)
{
  if (n < *cap)
    return items;
  int grown = *cap ? *cap * 2 : 16;
  void *q = realloc(items, (size_t)grown * elem);
  if (q)
    *cap = grown;
  return q;
}

static struct codelet_row *codelet_row(struct summary *s, const char *name, const char *kind)
{
  for (int i = 0; i < s->ncodelets; i++)
    if (!strcmp(s->codelets[i].name, name) && !strcmp(s->codelets[i].kind, kind))
      return &s->codelets[i];
  struct codelet_row *rows = reserve(s->codelets, s->ncodelets, &s->codelets_cap, sizeof *rows);
  if (!rows)
    return NULL;
  s->codelets = rows;
  struct codelet_row *r = &rows[s->ncodelets++];
  *r = (struct codelet_row){0};
  snprintf(r->name, sizeof r->name, "%s", name);
  snprintf(r->kind, sizeof r->kind, "%s", kind);
  return r;
}

static struct rank_row *rank_row(struct summary *s, int rank)
{
  for (int i = 0; i < s->nranks; i++)
    if (s->ranks[i].rank == rank)
      return &s->ranks[i];
  struct rank_row *rows = reserve(s->ranks, s->nranks, &s->ranks_cap, sizeof *rows);
  if (!rows)
    return NULL;
  s->ranks = rows;
  struct rank_row *r = &rows[s->nranks++];
  *r = (struct rank_row){.rank = rank, .iteration_min = -1, .iteration_max = -1};
  return r;
}

static int add_task(const struct trace_task *t, void *ctx)
{
  struct summary *s = ctx;
  struct codelet_row *c = codelet_row(s, t->name, t->kind);
  struct rank_row *r = rank_row(s, t->rank);
  if (!c || !r)
    return -ENOMEM;
  double us = t->end_us - t->start_us;
  c->count++;
  c->total_us += us;
  if (r->count == 0 || t->start_us < r->first_us)
    r->first_us = t->start_us;
  if (r->count == 0 || t->end_us > r->last_us)
    r->last_us = t->end_us;
  r->count++;
  r->busy_us += us;
  if (t->iteration >= 0) {
    if (r->iteration_min < 0 || t->iteration < r->iteration_min)
      r->iteration_min = t->iteration;
    if (t->iteration > r->iteration_max)
      r->iteration_max = t->iteration;
  }
  if (t->worker >= 0 && t->worker < TRACE_MAX_WORKERS && !r->seen_worker[t->worker]) {
    r->seen_worker[t->worker] = 1;
    r->workers++;
  }
  s->tasks++;
  return 0;
}

static int by_total_time(const void *a, const void *b)
{
  double x = ((const struct codelet_row *)a)->total_us,
         y = ((const struct codelet_row *)b)->total_us;
  return (x < y) - (x > y);
}

static int by_rank(const void *a, const void *b)
{
  return ((const struct rank_row *)a)->rank - ((const struct rank_row *)b)->rank;
}

static void print_tables(const struct summary *s)
{
  printf("%-28s %-6s %8s %12s %11s\n", "codelet", "worker", "tasks", "total ms", "mean us");
  for (int i = 0; i < s->ncodelets; i++) {
    const struct codelet_row *c = &s->codelets[i];
    printf("%-28s %-6s %8ld %12.3f %11.1f\n", c->name, c->kind, c->count, c->total_us * 1e-3,
           c->total_us / (double)c->count);
  }
  printf("\n%-6s %8s %8s %12s %12s %8s %11s\n", "rank", "tasks", "workers", "busy ms", "span ms",
         "busy %", "iterations");
  for (int i = 0; i < s->nranks; i++) {
    const struct rank_row *r = &s->ranks[i];
    double span = r->last_us - r->first_us;
    char iters[32] = "-";
    if (r->iteration_min >= 0)
      snprintf(iters, sizeof iters, "%ld-%ld", r->iteration_min, r->iteration_max);
    printf("%-6d %8ld %8d %12.3f %12.3f %8.1f %11s\n", r->rank, r->count, r->workers,
           r->busy_us * 1e-3, span * 1e-3,
           span > 0 ? 100.0 * r->busy_us / (span * (r->workers ? r->workers : 1)) : 0.0, iters);
  }
}

static int print_json(const struct summary *s)
{
  cJSON *root = cJSON_CreateObject(), *codelets = cJSON_AddArrayToObject(root, "codelets"),
        *ranks = cJSON_AddArrayToObject(root, "ranks");
  cJSON_AddNumberToObject(root, "tasks", (double)s->tasks);
  for (int i = 0; i < s->ncodelets; i++) {
    const struct codelet_row *c = &s->codelets[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", c->name);
    cJSON_AddStringToObject(o, "worker", c->kind);
    cJSON_AddNumberToObject(o, "tasks", (double)c->count);
    cJSON_AddNumberToObject(o, "total_ms", c->total_us * 1e-3);
    cJSON_AddNumberToObject(o, "mean_us", c->total_us / (double)c->count);
    cJSON_AddItemToArray(codelets, o);
  }
  for (int i = 0; i < s->nranks; i++) {
    const struct rank_row *r = &s->ranks[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "rank", r->rank);
    cJSON_AddNumberToObject(o, "tasks", (double)r->count);
    cJSON_AddNumberToObject(o, "workers", r->workers);
    cJSON_AddNumberToObject(o, "busy_ms", r->busy_us * 1e-3);
    cJSON_AddNumberToObject(o, "span_ms", (r->last_us - r->first_us) * 1e-3);
    cJSON_AddNumberToObject(o, "first_iteration", (double)r->iteration_min);
    cJSON_AddNumberToObject(o, "last_iteration", (double)r->iteration_max);
    cJSON_AddItemToArray(ranks, o);
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text)
    return -ENOMEM;
  puts(text);
  cJSON_free(text);
  return 0;
}

/* paje.trace next to the tasks file. */
static char *sibling_paje(const char *tasks)
{
  const char *slash = strrchr(tasks, '/');
  size_t dir = slash ? (size_t)(slash - tasks + 1) : 0;
  char *p = malloc(dir + sizeof "paje.trace");
  if (p) {
    memcpy(p, tasks, dir);
    strcpy(p + dir, "paje.trace");
  }
  return p;
}

int cmd_trace_summary(int argc, char **argv)
{
  if (wants_help(argc, argv)) {
    fputs(usage_text, stdout);
    return 0;
  }
  int json = 0, npos = 0;
  const char *pos[2] = {NULL, NULL};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json"))
      json = 1;
    else if (argv[i][0] == '-' || npos == 2) {
      fprintf(stderr, "strata trace-summary: unexpected argument '%s' (see --help)\n", argv[i]);
      return 2;
    } else
      pos[npos++] = argv[i];
  }
  if (npos == 0) {
    fputs(usage_text, stderr);
    return 2;
  }
  char *paje = pos[1] ? NULL : sibling_paje(pos[0]);
  struct trace_workers workers = {0};
  int ret = trace_read_workers(pos[1] ? pos[1] : paje, &workers);
  free(paje);
  if (ret && pos[1]) {
    fprintf(stderr, "strata trace-summary: %s: %s\n", pos[1], strerror(-ret));
    return 1;
  }
  struct summary s = {0};
  ret = trace_read_tasks(pos[0], &workers, add_task, &s);
  trace_workers_free(&workers);
  if (!ret) {
    qsort(s.codelets, (size_t)s.ncodelets, sizeof *s.codelets, by_total_time);
    qsort(s.ranks, (size_t)s.nranks, sizeof *s.ranks, by_rank);
    if (json)
      ret = print_json(&s);
    else
      print_tables(&s);
  }
  free(s.codelets);
  free(s.ranks);
  if (ret) {
    fprintf(stderr, "strata trace-summary: %s: %s\n", pos[0], strerror(-ret));
    return 1;
  }
  return 0;
}
