/* n-dimensional arrays registered as StarPU vector handles. */
#include <stdlib.h>
#include <string.h>

#include <strata/starpu.h>

#include "codelets.h"
#include "internal/runtime.h"

/* Storage of at least one element, so that empty arrays have a real
 * pointer. */
static size_t allocation_size(int64_t nbytes, strata_dtype dtype)
{
  return nbytes > 0 ? (size_t)nbytes : strata_dtype_size(dtype);
}

/* Unregister (waiting for the tasks using it and for the cleaning of the
 * plans that split it), free the storage and the object. */
static void free_array(strata_array *a)
{
  if (a->handle)
    strata__unregister(a->handle);
  if (a->owns_data)
    strata__host_free(a->data, allocation_size(a->nbytes, a->dtype));
  strata__live_remove(&a->live);
  free(a);
}

void strata__array_retain(strata_array *a) { a->refs++; }

void strata__array_unref(strata_array *a)
{
  if (--a->refs == 0)
    free_array(a);
}

/* Finalize: an array left acquired is released first. */
static int destroy_live(void *object)
{
  strata_array *a = object;
  if (a->acquired)
    strata_array_release(a);
  free_array(a);
  return 0;
}

/* Validate a shape and compute its element and byte counts. */
static int check_shape(int ndim, const int64_t *shape, strata_dtype dtype, int64_t *nelems,
                       int64_t *nbytes)
{
  size_t elem = strata_dtype_size(dtype);
  if (elem == 0 || ndim < 0 || ndim > STRATA_MAX_DIMS || (ndim > 0 && !shape))
    return STRATA_EINVAL;
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] < 0)
      return STRATA_EINVAL;
    if (shape[d] > 0 && n > INT64_MAX / shape[d])
      return STRATA_EINVAL;
    n *= shape[d];
  }
  if (n > INT64_MAX / (int64_t)elem || (uint64_t)n * elem > SIZE_MAX)
    return STRATA_EINVAL;
  *nelems = n;
  *nbytes = n * (int64_t)elem;
  return 0;
}

/* A tracked array object without storage; extents may be -1 (unknown). */
static strata_array *new_object(int ndim, const int64_t *shape, strata_dtype dtype)
{
  strata_array *a = calloc(1, sizeof *a);
  if (!a)
    return NULL;
  a->ndim = ndim;
  a->dtype = dtype;
  a->nelems = 1;
  for (int d = 0; d < ndim; d++) {
    a->shape[d] = shape[d];
    a->nelems = shape[d] < 0 || a->nelems < 0 ? -1 : a->nelems * shape[d];
  }
  a->nbytes = a->nelems < 0 ? -1 : a->nelems * (int64_t)strata_dtype_size(dtype);
  a->redux_op = -1;
  a->refs = 1;
  strata__live_add(&strata__arrays, &a->live, "array", a, destroy_live);
  return a;
}

/* Give `a` its storage (owned or not) with its final shape, checked by
 * check_shape: the StarPU handle. */
static void set_storage(strata_array *a, void *data, int owns, const int64_t *shape, int64_t nelems,
                        int64_t nbytes)
{
  if (a->ndim > 0)
    memcpy(a->shape, shape, (size_t)a->ndim * sizeof *shape);
  a->nelems = nelems;
  a->nbytes = nbytes;
  a->data = data;
  a->owns_data = owns;
  starpu_vector_data_register(&a->handle, STARPU_MAIN_RAM, (uintptr_t)data, (uint32_t)nelems,
                              strata_dtype_size(a->dtype));
}

static int make_array(void *data, int owns, int ndim, const int64_t *shape, strata_dtype dtype,
                      int64_t nelems, int64_t nbytes, strata_array **out)
{
  strata_array *a = new_object(ndim, shape, dtype);
  if (!a)
    return STRATA_ENOMEM;
  set_storage(a, data, owns, shape, nelems, nbytes);
  *out = a;
  return 0;
}

static void *allocate(int64_t nbytes, strata_dtype dtype)
{
  void *data = NULL;
  if (strata__host_alloc(&data, allocation_size(nbytes, dtype)) != 0)
    return NULL;
  return data;
}

/* Checks shared by create and wrap; clears *out first. */
static int check_new(int ndim, const int64_t *shape, strata_dtype dtype, strata_array **out,
                     int64_t *nelems, int64_t *nbytes)
{
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!out)
    return STRATA_EINVAL;
  *out = NULL;
  if ((ret = check_shape(ndim, shape, dtype, nelems, nbytes)))
    return ret;
  if (*nelems > UINT32_MAX) /* StarPU 1.3 vectors count elements in 32 bits */
    return STRATA_EINVAL;
  return 0;
}

int strata_array_create(int ndim, const int64_t *shape, strata_dtype dtype, strata_array **out)
{
  strata__clear_error();
  int64_t nelems, nbytes;
  int ret = check_new(ndim, shape, dtype, out, &nelems, &nbytes);
  if (ret)
    return ret;
  void *data = allocate(nbytes, dtype);
  if (!data)
    return STRATA_ENOMEM;
  ret = make_array(data, 1, ndim, shape, dtype, nelems, nbytes, out);
  if (ret)
    strata__host_free(data, allocation_size(nbytes, dtype));
  return ret;
}

int strata_array_wrap(void *data, int ndim, const int64_t *shape, strata_dtype dtype,
                      strata_array **out)
{
  strata__clear_error();
  int64_t nelems, nbytes;
  int ret = check_new(ndim, shape, dtype, out, &nelems, &nbytes);
  if (ret)
    return ret;
  if (!data)
    return STRATA_EINVAL;
  return make_array(data, 0, ndim, shape, dtype, nelems, nbytes, out);
}

int strata__array_new_lazy(int ndim, const int64_t *shape, strata_dtype dtype,
                           int (*realize)(strata_array *), strata_array **out)
{
  if (!(*out = new_object(ndim, shape, dtype)))
    return STRATA_ENOMEM;
  (*out)->realize = realize;
  return 0;
}

int strata__array_attach(strata_array *a, const int64_t *shape)
{
  int64_t nelems, nbytes;
  int ret = check_shape(a->ndim, shape, a->dtype, &nelems, &nbytes);
  if (ret || nelems > UINT32_MAX)
    return STRATA_EINVAL;
  void *data = allocate(nbytes, a->dtype);
  if (!data)
    return STRATA_ENOMEM;
  set_storage(a, data, 1, shape, nelems, nbytes);
  return 0;
}

int strata__array_ready(strata_array *a) { return a->handle || !a->realize ? 0 : a->realize(a); }

int strata__array_busy(void)
{
  return strata__fail(STRATA_ESTATE, "an array of the operation is acquired by the "
                                     "application: release it first");
}

int strata__array_writable(strata_array *a)
{
  if (a->history)
    return strata__fail(STRATA_EINPLACE,
                        "the array has recorded history (strata_graph_clear releases it)");
  /* Lazy results that read the old values are computed first, as an eager
   * run would have: a write never changes a result recorded before it. */
  int ret = a->lazy_readers > 0 && a->before_write ? a->before_write(a) : 0;
  return ret ? ret : strata__array_ready(a);
}

int strata_array_destroy(strata_array *a)
{
  if (!a)
    return 0;
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (a->acquired)
    return strata__fail(STRATA_ESTATE, "the array is acquired: strata_array_release it first");
  if (a->user_gone)
    return strata__fail(STRATA_ESTATE, "the array was destroyed already");
  a->user_gone = 1;
  strata__array_unref(a);
  return 0;
}

int strata_array_acquire(strata_array *a, strata_access mode, void **data)
{
  strata__clear_error();
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!a || mode < STRATA_READ || mode > STRATA_READWRITE)
    return STRATA_EINVAL;
  if (a->acquired)
    return strata__fail(STRATA_ESTATE, "the array is acquired already: release it before "
                                       "acquiring it again");
  if ((ret = mode == STRATA_READ ? strata__array_ready(a) : strata__array_writable(a)))
    return ret;
  enum starpu_data_access_mode m = mode == STRATA_READ    ? STARPU_R
                                   : mode == STRATA_WRITE ? STARPU_W
                                                          : STARPU_RW;
  if (strata__acquire(a->handle, m) != 0)
    return STRATA_ESTARPU;
  a->acquired = 1;
  if (data)
    *data = a->data;
  return 0;
}

int strata_array_release(strata_array *a)
{
  int ret = strata__check_ready();
  if (ret)
    return ret;
  if (!a)
    return STRATA_EINVAL;
  if (!a->acquired)
    return strata__fail(STRATA_ESTATE, "the array is not acquired");
  starpu_data_release(a->handle);
  a->acquired = 0;
  return 0;
}

int strata_array_ndim(const strata_array *a) { return a ? a->ndim : STRATA_EINVAL; }

/* The shape of a lazy array of data-dependent shape is known once it is
 * computed: queries compute it. */
static int known_shape(const strata_array *a)
{
  strata__clear_error();
  return a->nelems >= 0 ? 0 : strata__array_ready((strata_array *)a);
}

int strata_array_shape(const strata_array *a, int64_t *shape)
{
  strata__clear_error();
  if (!a || (!shape && a->ndim > 0))
    return STRATA_EINVAL;
  int ret = known_shape(a);
  if (ret)
    return ret;
  if (a->ndim > 0)
    memcpy(shape, a->shape, (size_t)a->ndim * sizeof *shape);
  return 0;
}

int strata_array_dtype(const strata_array *a) { return a ? (int)a->dtype : STRATA_EINVAL; }

int64_t strata_array_nelems(const strata_array *a)
{
  strata__clear_error();
  if (!a)
    return STRATA_EINVAL;
  int ret = known_shape(a);
  return ret ? ret : a->nelems;
}

int64_t strata_array_nbytes(const strata_array *a)
{
  if (!a)
    return STRATA_EINVAL;
  int ret = known_shape(a);
  return ret ? ret : a->nbytes;
}

starpu_data_handle_t strata_array_handle(const strata_array *a)
{
  return a && strata__array_ready((strata_array *)a) == 0 ? a->handle : NULL;
}

int64_t strata__cube_extent(const strata_array *a, int channels)
{
  if (!a || a->dtype != STRATA_FLOAT32)
    return -1;
  const int64_t *s = a->shape;
  if (a->ndim == 4 && s[0] == channels && s[1] == s[2] && s[2] == s[3])
    return s[1];
  if (a->ndim == 3 && channels == 1 && s[0] == s[1] && s[1] == s[2])
    return s[0];
  return -1;
}

starpu_data_handle_t strata__scratch_register(uint64_t bytes)
{
  starpu_data_handle_t h;
  starpu_vector_data_register(&h, -1, 0, (uint32_t)(bytes ? bytes : 1), 1);
  return h;
}
