/* Registry of live library objects (contexts, graphs, global indexers,
 * models, hierarchies, inference methods): strata_finalize() reports the
 * ones the application did not destroy and destroys them, newest first, so
 * an object goes before the objects it was built on. Arrays keep their own
 * registry (array.c) and go last, after everything that may hold them. */
#include <pthread.h>

#include "internal.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static strata__live *newest;

void strata__live_add(strata__live *l, const char *kind, void *object, int (*destroy)(void *))
{
  pthread_mutex_lock(&lock);
  *l = (strata__live){.kind = kind, .object = object, .destroy = destroy, .older = newest};
  if (newest)
    newest->newer = l;
  newest = l;
  pthread_mutex_unlock(&lock);
}

void strata__live_remove(strata__live *l)
{
  pthread_mutex_lock(&lock);
  if (l->newer)
    l->newer->older = l->older;
  else if (newest == l)
    newest = l->older;
  if (l->older)
    l->older->newer = l->newer;
  l->newer = l->older = NULL;
  pthread_mutex_unlock(&lock);
}

int strata__live_count(void)
{
  int n = 0;
  pthread_mutex_lock(&lock);
  for (strata__live *l = newest; l; l = l->older)
    n++;
  pthread_mutex_unlock(&lock);
  return n;
}

void strata__live_destroy_all(void)
{
  for (;;) {
    pthread_mutex_lock(&lock);
    strata__live *l = newest;
    pthread_mutex_unlock(&lock);
    if (!l)
      return;
    strata_log(STRATA_LOG_DEBUG, "finalize: destroying live %s %p", l->kind, l->object);
    if (l->destroy(l->object) != 0 || newest == l) /* never loop on a destroy that failed */
      strata__live_remove(l);
  }
}
