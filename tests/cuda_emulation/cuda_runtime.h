/* A host-only stand-in for the part of the CUDA runtime that Strata's
 * kernels use, for machines without a GPU. "Device" memory is host memory,
 * streams are the calling thread, and a launch runs the grid block after
 * block on the calling thread, each thread of a block as a fiber (ucontext)
 * so that __syncthreads() suspends it until every thread of its block has
 * arrived. __shared__ variables are static (one block runs at a time) and
 * atomics are plain read-modify-writes (fibers switch only at barriers).
 * Enough to check a kernel's index arithmetic, barriers and reductions
 * against the CPU kernels; nothing about real devices (warps, memory
 * spaces, timing, concurrency between threads) is checked. The tests put
 * this directory first on the include path in place of the toolkit's. */
#ifndef STRATA_CUDA_EMULATION_RUNTIME_H
#define STRATA_CUDA_EMULATION_RUNTIME_H

#include <math.h> /* the toolkit's runtime header brings the math functions */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2
} cudaError_t;
typedef enum {
  cudaMemcpyHostToHost,
  cudaMemcpyHostToDevice,
  cudaMemcpyDeviceToHost,
  cudaMemcpyDeviceToDevice,
  cudaMemcpyDefault
} cudaMemcpyKind;
typedef struct CUstream_st *cudaStream_t;

/* One emulated device. */
static inline cudaError_t cudaGetDeviceCount(int *count)
{
  *count = 1;
  return cudaSuccess;
}

static inline cudaError_t cudaMalloc(void **p, size_t bytes)
{
  *p = malloc(bytes ? bytes : 1);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

static inline cudaError_t cudaFree(void *p)
{
  free(p);
  return cudaSuccess;
}

static inline cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
  (void)kind;
  memcpy(dst, src, bytes);
  return cudaSuccess;
}

static inline cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                                          cudaMemcpyKind kind, cudaStream_t stream)
{
  (void)stream;
  return cudaMemcpy(dst, src, bytes, kind);
}

static inline cudaError_t cudaMemcpy2DAsync(void *dst, size_t dst_pitch, const void *src,
                                            size_t src_pitch, size_t width, size_t height,
                                            cudaMemcpyKind kind, cudaStream_t stream)
{
  (void)kind;
  (void)stream;
  if (width > dst_pitch || width > src_pitch)
    return cudaErrorInvalidValue;
  for (size_t row = 0; row < height; row++)
    memcpy((char *)dst + row * dst_pitch, (const char *)src + row * src_pitch, width);
  return cudaSuccess;
}

static inline cudaError_t cudaMemset(void *p, int value, size_t bytes)
{
  memset(p, value, bytes);
  return cudaSuccess;
}

static inline cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t stream)
{
  (void)stream;
  return cudaMemset(p, value, bytes);
}

/* Launches run to completion before they return: nothing is pending. */
static inline cudaError_t cudaGetLastError(void) { return cudaSuccess; }
static inline cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
  (void)stream;
  return cudaSuccess;
}
static inline cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

#ifdef __cplusplus
#include <memory>
#include <tuple>
#include <ucontext.h>
#include <vector>

/* AddressSanitizer is told of every switch between fiber stacks (GCC and
 * clang announce it differently). */
#if defined(__SANITIZE_ADDRESS__)
#define STRATA_EMULATION_ASAN
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRATA_EMULATION_ASAN
#endif
#endif
#ifdef STRATA_EMULATION_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#define __global__
#define __launch_bounds__(...)
#define __grid_constant__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__      static

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

/* The running thread's coordinates, as the kernels read them: one set for
 * the whole program, whichever file's launch is running. */
inline uint3 blockIdx, threadIdx;
inline dim3 gridDim, blockDim;

namespace strata_cuda_emulation
{

/* The threads of the block being run, each a fiber with its own stack;
 * launches come from one host thread. */
struct block_run {
  static constexpr size_t kStack = 128 * 1024;
  struct fiber {
    ucontext_t context;
    std::unique_ptr<char[]> stack;
    bool done;
  };
  ucontext_t scheduler;
  std::vector<fiber> fibers;
  unsigned current = 0;
  void (*body)(const void *) = nullptr;
  const void *kernel_call = nullptr;
  void *fake_stack = nullptr; // AddressSanitizer's, across switches

  void enter(unsigned t)
  {
    current = t;
    threadIdx = {t % blockDim.x, t / blockDim.x % blockDim.y, t / (blockDim.x * blockDim.y)};
#ifdef STRATA_EMULATION_ASAN
    __sanitizer_start_switch_fiber(&fake_stack, fibers[t].stack.get(), kStack);
#endif
    swapcontext(&scheduler, &fibers[t].context);
#ifdef STRATA_EMULATION_ASAN
    __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
  }

  /* The running fiber gives the thread back to the scheduler. */
  void leave(bool finished)
  {
    fiber &f = fibers[current];
    f.done = finished;
#ifdef STRATA_EMULATION_ASAN
    void *own = nullptr;
    __sanitizer_start_switch_fiber(finished ? nullptr : &own, nullptr, 0);
#endif
    swapcontext(&f.context, &scheduler);
#ifdef STRATA_EMULATION_ASAN
    __sanitizer_finish_switch_fiber(own, nullptr, nullptr);
#endif
  }

  /* Every thread runs until it finishes or reaches a barrier; then those
   * at the barrier go on, in thread order, until all have finished. */
  void run(unsigned threads)
  {
    if (fibers.size() < threads)
      fibers.resize(threads);
    for (unsigned t = 0; t < threads; t++) {
      fiber &f = fibers[t];
      if (!f.stack)
        f.stack.reset(new char[kStack]);
      getcontext(&f.context);
      f.context.uc_stack.ss_sp = f.stack.get();
      f.context.uc_stack.ss_size = kStack;
      f.context.uc_link = nullptr;
      f.done = false;
      makecontext(&f.context, thread_main, 0);
      enter(t);
    }
    for (bool waiting = true; waiting;) {
      waiting = false;
      for (unsigned t = 0; t < threads; t++)
        if (!fibers[t].done) {
          enter(t);
          waiting |= !fibers[t].done;
        }
    }
  }

  static void thread_main();
};

inline block_run &running_block()
{
  static block_run block;
  return block;
}

inline void block_run::thread_main()
{
  block_run &b = running_block();
#ifdef STRATA_EMULATION_ASAN
  __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
  b.body(b.kernel_call);
  b.leave(true);
}

template <typename Kernel, typename... Args> struct kernel_call {
  Kernel *kernel;
  std::tuple<Args...> args;
  static void invoke(const void *self)
  {
    const kernel_call *c = static_cast<const kernel_call *>(self);
    std::apply(c->kernel, c->args);
  }
};

template <typename Kernel> struct launcher {
  dim3 grid, block;
  Kernel *kernel;
  template <typename... Args> void operator()(Args... args) const
  {
    kernel_call<Kernel, Args...> call{kernel, {args...}};
    block_run &b = running_block();
    b.body = kernel_call<Kernel, Args...>::invoke;
    b.kernel_call = &call;
    gridDim = grid;
    blockDim = block;
    for (unsigned bz = 0; bz < grid.z; bz++)
      for (unsigned by = 0; by < grid.y; by++)
        for (unsigned bx = 0; bx < grid.x; bx++) {
          blockIdx = {bx, by, bz};
          b.run(block.x * block.y * block.z);
        }
  }
};

/* STRATA_LAUNCH(grid, block, stream, kernel)(args...) under emulation. */
template <typename Kernel> launcher<Kernel> launch(dim3 grid, dim3 block, Kernel *kernel)
{
  return {grid, block, kernel};
}

} // namespace strata_cuda_emulation

/* Every thread of the block reaches this point before any goes on. */
inline void __syncthreads() { strata_cuda_emulation::running_block().leave(false); }

/* Atomics: only one thread runs between barriers. */
template <typename T> inline T atomicAdd(T *p, T v)
{
  T old = *p;
  *p = old + v;
  return old;
}
template <typename T> inline T atomicMin(T *p, T v)
{
  T old = *p;
  *p = v < old ? v : old;
  return old;
}
template <typename T> inline T atomicMax(T *p, T v)
{
  T old = *p;
  *p = v > old ? v : old;
  return old;
}

inline int __float_as_int(float f)
{
  int i;
  memcpy(&i, &f, sizeof i);
  return i;
}
inline float __int_as_float(int i)
{
  float f;
  memcpy(&f, &i, sizeof f);
  return f;
}
#endif

#endif
