/* Readers of starpu_fxt_tool's tasks.rec and of the worker containers of its
 * paje.trace (trace_records.h). */
#include "trace_records.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Split a Paje event line into fields (blanks separate, double quotes group). */
static int split_fields(char *line, char **field, int max)
{
  int n = 0;
  char *p = line;
  while (n < max) {
    while (*p == ' ' || *p == '\t')
      p++;
    if (!*p || *p == '\n')
      break;
    if (*p == '"') {
      field[n++] = ++p;
      while (*p && *p != '"')
        p++;
    } else {
      field[n++] = p;
      while (*p && !isspace((unsigned char)*p))
        p++;
    }
    if (*p)
      *p++ = '\0';
  }
  return n;
}

/* A worker container: alias "<prefix>w<id>", name "<prefix><KIND><dev>...",
 * prefix "" or "<rank>_" in merged multi-rank traces. */
static int add_worker(struct trace_workers *w, const char *alias, const char *name)
{
  int rank = 0, worker;
  const char *a = strchr(alias, '_');
  if (a)
    rank = atoi(alias);
  const char *id = a ? a + 1 : alias;
  if (*id != 'w' || sscanf(id + 1, "%d", &worker) != 1)
    return 0; /* not a worker alias: ignore */
  const char *n = strchr(name, '_');
  n = a && n ? n + 1 : name;
  if (w->n == w->cap) {
    int cap = w->cap ? 2 * w->cap : 16;
    struct trace_worker *q = realloc(w->w, (size_t)cap * sizeof *q);
    if (!q)
      return -ENOMEM;
    w->w = q;
    w->cap = cap;
  }
  struct trace_worker *t = &w->w[w->n++];
  t->rank = rank;
  t->worker = worker;
  size_t k = 0;
  while (k + 1 < sizeof t->kind && isalpha((unsigned char)n[k]))
    k++;
  memcpy(t->kind, n, k);
  t->kind[k] = '\0';
  return 0;
}

int trace_read_workers(const char *paje_path, struct trace_workers *w)
{
  FILE *f = fopen(paje_path, "r");
  if (!f)
    return -errno;
  char *line = NULL;
  size_t cap = 0;
  int ret = 0, create_id = -1, in_create = 0, nfields = 0;
  int at_alias = -1, at_type = -1, at_name = -1;
  while (!ret && getline(&line, &cap, f) > 0) {
    if (line[0] == '%') {
      char key[64], arg[64];
      int id;
      if (sscanf(line, "%%EventDef %63s %d", key, &id) == 2) {
        in_create = !strcmp(key, "PajeCreateContainer");
        if (in_create)
          create_id = id;
      } else if (in_create && sscanf(line, "%% %63s %63s", key, arg) == 2) {
        if (!strcmp(key, "Alias"))
          at_alias = nfields;
        else if (!strcmp(key, "Type"))
          at_type = nfields;
        else if (!strcmp(key, "Name"))
          at_name = nfields;
        nfields++;
      } else if (!strncmp(line, "%EndEventDef", 12))
        in_create = 0;
      continue;
    }
    char *field[16];
    int n = split_fields(line, field, 16);
    if (create_id < 0 || n < 1 || atoi(field[0]) != create_id || at_alias < 0 || at_type < 0 ||
        at_name < 0 || n <= 1 + at_name || n <= 1 + at_alias || n <= 1 + at_type)
      continue;
    if (!strcmp(field[1 + at_type], "W"))
      ret = add_worker(w, field[1 + at_alias], field[1 + at_name]);
  }
  free(line);
  fclose(f);
  return ret;
}

void trace_workers_free(struct trace_workers *w)
{
  free(w->w);
  *w = (struct trace_workers){0};
}

static const char *worker_kind(const struct trace_workers *w, int rank, int worker)
{
  for (int i = 0; i < w->n; i++)
    if (w->w[i].rank == rank && w->w[i].worker == worker)
      return w->w[i].kind;
  return "?";
}

/* The record collected so far, and whether it has both times. */
struct record {
  struct trace_task t;
  int has_start, has_end, control;
};
static const struct record empty_record = {.t = {.worker = -1, .iteration = -1}};

static int flush(struct record *r, const struct trace_workers *w,
                 int (*fn)(const struct trace_task *, void *), void *ctx)
{
  int ret = 0;
  if (r->has_start && r->has_end && !r->control) {
    if (!r->t.name[0])
      strcpy(r->t.name, "(unnamed)");
    snprintf(r->t.kind, sizeof r->t.kind, "%s", worker_kind(w, r->t.rank, r->t.worker));
    ret = fn(&r->t, ctx);
  }
  *r = empty_record;
  return ret;
}

static void copy_value(char *dst, size_t size, const char *value)
{
  size_t n = strcspn(value, "\n");
  if (n >= size)
    n = size - 1;
  memcpy(dst, value, n);
  dst[n] = '\0';
}

int trace_read_tasks(const char *tasks_path, const struct trace_workers *w,
                     int (*fn)(const struct trace_task *t, void *ctx), void *ctx)
{
  FILE *f = fopen(tasks_path, "r");
  if (!f)
    return -errno;
  char *line = NULL;
  size_t cap = 0;
  int ret = 0;
  struct record r = empty_record;
  while (!ret && getline(&line, &cap, f) > 0) {
    if (line[0] == '\n') {
      ret = flush(&r, w, fn, ctx);
      continue;
    }
    char *colon = strchr(line, ':');
    if (!colon)
      continue;
    *colon = '\0';
    const char *key = line, *value = colon + 1 + (colon[1] == ' ');
    double ms; /* starpu_fxt_tool writes milliseconds */
    if (!strcmp(key, "Name"))
      copy_value(r.t.name, sizeof r.t.name, value);
    else if (!strcmp(key, "Control"))
      r.control = 1;
    else if (!strcmp(key, "MPIRank") && atoi(value) > 0) /* -1: a run without MPI */
      r.t.rank = atoi(value);
    else if (!strcmp(key, "WorkerId"))
      r.t.worker = atoi(value);
    else if (!strcmp(key, "Iteration"))
      r.t.iteration = strtol(value, NULL, 10);
    else if (!strcmp(key, "StartTime") && sscanf(value, "%lf", &ms) == 1) {
      r.t.start_us = ms * 1e3;
      r.has_start = 1;
    } else if (!strcmp(key, "EndTime") && sscanf(value, "%lf", &ms) == 1) {
      r.t.end_us = ms * 1e3;
      r.has_end = 1;
    }
  }
  if (!ret)
    ret = flush(&r, w, fn, ctx);
  free(line);
  if (!ret && ferror(f))
    ret = -EIO;
  fclose(f);
  return ret;
}
