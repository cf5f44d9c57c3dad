/* Live-object registries: strata_finalize() reports the objects the
 * application did not destroy and destroys them, newest first, so an object
 * goes before the objects it was built on. Arrays have their own registry
 * and go last, after everything that may hold them. */
#include "internal/runtime.h"

strata__registry strata__objects = {PTHREAD_MUTEX_INITIALIZER, NULL};
strata__registry strata__arrays = {PTHREAD_MUTEX_INITIALIZER, NULL};

void strata__live_add(strata__registry *r, strata__live *l, const char *kind, void *object,
                      int (*destroy)(void *))
{
  pthread_mutex_lock(&r->lock);
  *l = (strata__live){
      .registry = r, .kind = kind, .object = object, .destroy = destroy, .older = r->newest};
  if (r->newest)
    r->newest->newer = l;
  r->newest = l;
  pthread_mutex_unlock(&r->lock);
}

void strata__live_remove(strata__live *l)
{
  strata__registry *r = l->registry;
  if (!r)
    return;
  pthread_mutex_lock(&r->lock);
  if (l->newer)
    l->newer->older = l->older;
  else
    r->newest = l->older;
  if (l->older)
    l->older->newer = l->newer;
  l->newer = l->older = NULL;
  l->registry = NULL;
  pthread_mutex_unlock(&r->lock);
}

int64_t strata__live_count(strata__registry *r)
{
  int64_t n = 0;
  pthread_mutex_lock(&r->lock);
  for (strata__live *l = r->newest; l; l = l->older)
    n++;
  pthread_mutex_unlock(&r->lock);
  return n;
}

void strata__live_destroy_all(strata__registry *r)
{
  for (;;) {
    pthread_mutex_lock(&r->lock);
    strata__live *l = r->newest;
    pthread_mutex_unlock(&r->lock);
    if (!l)
      return;
    strata_log(STRATA_LOG_DEBUG, "finalize: destroying live %s %p", l->kind, l->object);
    l->destroy(l->object); /* frees l with the object, unless it failed */
    pthread_mutex_lock(&r->lock);
    int kept = r->newest == l;
    pthread_mutex_unlock(&r->lock);
    if (kept) /* the object outlives a failed destroy: stop tracking it, never loop */
      strata__live_remove(l);
  }
}
