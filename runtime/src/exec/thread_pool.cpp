// The worker thread pool; see thread_pool.h.
//
// Synchronization is three futex words, each on its own cache line:
//   generation  bumped (release) by the caller to publish a task; workers
//               wait for it to change, spinning first, then FUTEX_WAIT.
//   remaining   set to thread_count - 1 before publishing; each worker
//               decrements it when its part is done; the caller waits for 0.
//   started     counts pool threads that have run thread_init (creation only).
// Sleeping is announced before the futex wait (`sleepers`, `caller_waiting`)
// so the other side only makes a wake system call when someone sleeps. Both
// handshakes are "store my flag, then load yours" with sequentially
// consistent atomics, so either the waker sees the flag or the sleeper's
// FUTEX_WAIT sees the new value and does not sleep.
#include "exec/thread_pool.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/allocator.h"
#include "exec/thread_wait.h"

// Spin iterations (each with a pause hint) before a waiter sleeps: about
// 100-200 microseconds, enough to cover the gap between two dispatches of a
// run and the load imbalance within one. Shorter (1000, ~16 us) made small
// models slower at 2 threads than at 1 on a 2-vCPU VM: a worker that slept
// between dispatches took tens of microseconds to wake (its vCPU had halted),
// at every dispatch.
#define KILN_THREAD_POOL_SPIN_COUNT 10000u

// One pool thread.
typedef struct kiln_thread_pool_worker_t {
  kiln_thread_pool_t* pool;  // the owning pool
  uint32_t index;            // worker index (1..thread_count-1)
  pthread_t thread;          // valid for index < pool->created
} kiln_thread_pool_worker_t;

struct kiln_thread_pool_t {
  // Published by the caller (read by workers after an acquire of `generation`).
  alignas(64) uint32_t generation;       // task number; futex word workers wait on
  uint32_t shutdown;                     // 1: workers exit at the next generation
  kiln_thread_pool_task_fn_t task;       // the current task
  void* context;                         // the current task's argument
  alignas(64) uint32_t sleepers;         // workers sleeping (or about to) on `generation`
  alignas(64) uint32_t remaining;        // workers still running the current task; futex word
  uint32_t caller_waiting;               // 1 while the caller sleeps on `remaining`
  alignas(64) uint32_t started;          // pool threads past thread_init; futex word
  uint32_t thread_count;                 // workers, the caller included
  uint32_t created;                      // pool threads created (workers 1..created)
  kiln_thread_pool_init_fn_t thread_init;  // optional start hook
  void* thread_init_user_data;           // its argument
  kiln_thread_pool_worker_t* workers;    // thread_count entries; [0] (the caller) unused
};

//===----------------------------------------------------------------------===//
// Primitives
//===----------------------------------------------------------------------===//

static inline void kiln_cpu_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ __volatile__("yield" ::: "memory");
#else
  __asm__ __volatile__("" ::: "memory");
#endif
}

static inline uint32_t kiln_load_acquire(const uint32_t* address) {
  return __atomic_load_n(address, __ATOMIC_ACQUIRE);
}

//===----------------------------------------------------------------------===//
// Workers
//===----------------------------------------------------------------------===//

// Waits until `generation` differs from `seen` and returns the new value.
static uint32_t kiln_thread_pool_wait_task(kiln_thread_pool_t* pool, uint32_t seen) {
  for (uint32_t i = 0; i < KILN_THREAD_POOL_SPIN_COUNT; ++i) {
    uint32_t generation = kiln_load_acquire(&pool->generation);
    if (generation != seen) return generation;
    kiln_cpu_pause();
  }
  for (;;) {
    __atomic_fetch_add(&pool->sleepers, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&pool->generation, __ATOMIC_SEQ_CST) == seen) {
      kiln_thread_wait(&pool->generation, seen);
    }
    __atomic_fetch_sub(&pool->sleepers, 1, __ATOMIC_SEQ_CST);
    uint32_t generation = kiln_load_acquire(&pool->generation);
    if (generation != seen) return generation;
  }
}

static void* kiln_thread_pool_worker_main(void* arg) {
  kiln_thread_pool_worker_t* worker = (kiln_thread_pool_worker_t*)arg;
  kiln_thread_pool_t* pool = worker->pool;
  if (pool->thread_init) pool->thread_init(worker->index, pool->thread_init_user_data);
  __atomic_fetch_add(&pool->started, 1, __ATOMIC_SEQ_CST);
  kiln_thread_wake(&pool->started, 1);
  uint32_t seen = 0;  // no task is published before creation completes
  for (;;) {
    seen = kiln_thread_pool_wait_task(pool, seen);
    if (__atomic_load_n(&pool->shutdown, __ATOMIC_ACQUIRE)) break;
    pool->task(pool->context, worker->index);
    if (__atomic_sub_fetch(&pool->remaining, 1, __ATOMIC_SEQ_CST) == 0 &&
        __atomic_load_n(&pool->caller_waiting, __ATOMIC_SEQ_CST)) {
      kiln_thread_wake(&pool->remaining, 1);
    }
  }
  return NULL;
}

// Publishes the next generation (a task, or shutdown) and wakes sleepers.
static void kiln_thread_pool_publish(kiln_thread_pool_t* pool) {
  __atomic_add_fetch(&pool->generation, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&pool->sleepers, __ATOMIC_SEQ_CST) != 0) {
    kiln_thread_wake(&pool->generation, INT_MAX);
  }
}

// Stops and joins the threads created so far; frees the pool.
static void kiln_thread_pool_destroy(kiln_thread_pool_t* pool) {
  if (pool->created) {
    __atomic_store_n(&pool->shutdown, 1, __ATOMIC_RELEASE);
    kiln_thread_pool_publish(pool);
    for (uint32_t i = 1; i <= pool->created; ++i) pthread_join(pool->workers[i].thread, NULL);
  }
  free(pool->workers);
  kiln_aligned_free(pool);
}

//===----------------------------------------------------------------------===//
// API
//===----------------------------------------------------------------------===//

kiln_status_t kiln_thread_pool_create(const kiln_thread_pool_options_t* options,
                                      kiln_thread_pool_t** out_pool) {
  if (!options || !out_pool || options->thread_count < 2 ||
      options->thread_count > KILN_THREAD_POOL_MAX_THREADS) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "thread pool: bad options (%u threads)",
                            options ? options->thread_count : 0);
  }
  void* memory = NULL;
  KILN_RETURN_IF_ERROR(kiln_aligned_alloc(sizeof(kiln_thread_pool_t), 64, &memory));
  kiln_thread_pool_t* pool = (kiln_thread_pool_t*)memory;  // zeroed: all fields start at 0
  pool->thread_count = options->thread_count;
  pool->thread_init = options->thread_init;
  pool->thread_init_user_data = options->thread_init_user_data;
  kiln_status_t status = kiln_calloc_array(pool->thread_count, &pool->workers);
  if (status) {
    kiln_aligned_free(pool);
    return status;
  }

  // Pool threads start with every signal blocked, so asynchronous signals
  // are delivered to the application's threads, never to a worker.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  // A stack size of our own rather than the C library's default (8 MB with
  // glibc, 128 KB with musl, 512 KB for iOS threads): kernels keep their
  // scratch (register tiles, a Winograd tile row: up to ~160 KB) on it.
  pthread_attr_t attr;
  int error = pthread_attr_init(&attr);
  if (!error) error = pthread_attr_setstacksize(&attr, KILN_THREAD_POOL_STACK_BYTES);
  for (uint32_t i = 1; !error && i < pool->thread_count; ++i) {
    kiln_thread_pool_worker_t* worker = &pool->workers[i];
    worker->pool = pool;
    worker->index = i;
    error = i == options->debug_fail_create_at
                ? EAGAIN
                : pthread_create(&worker->thread, &attr, kiln_thread_pool_worker_main, worker);
    if (error) break;
    pool->created = i;
#if defined(__GLIBC__)
    char name[16];
    snprintf(name, sizeof(name), "kiln-w%u", i & 0xffffu);
    pthread_setname_np(worker->thread, name);  // best effort (at most 15 characters)
#endif
  }
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &previous, NULL);
  if (error) {
    uint32_t failed = pool->created + 1, count = pool->thread_count;
    kiln_thread_pool_destroy(pool);
    return kiln_make_status(error == EAGAIN ? KILN_OUT_OF_MEMORY : KILN_INTERNAL,
                            "thread pool: creating worker thread %u of %u failed: %s", failed,
                            count - 1, strerror(error));
  }
  // Wait until every thread has run thread_init.
  for (;;) {
    uint32_t started = __atomic_load_n(&pool->started, __ATOMIC_SEQ_CST);
    if (started == pool->created) break;
    kiln_thread_wait(&pool->started, started);
  }
  *out_pool = pool;
  return NULL;
}

void kiln_thread_pool_free(kiln_thread_pool_t* pool) {
  if (pool) kiln_thread_pool_destroy(pool);
}

uint32_t kiln_thread_pool_size(const kiln_thread_pool_t* pool) {
  return pool ? pool->thread_count : 1;
}

void kiln_thread_pool_run(kiln_thread_pool_t* pool, kiln_thread_pool_task_fn_t task,
                          void* context) {
  pool->task = task;
  pool->context = context;
  __atomic_store_n(&pool->remaining, pool->thread_count - 1, __ATOMIC_RELAXED);
  kiln_thread_pool_publish(pool);  // releases task, context and remaining
  task(context, 0);
  // The barrier: wait for the other workers.
  for (uint32_t i = 0; i < KILN_THREAD_POOL_SPIN_COUNT; ++i) {
    if (kiln_load_acquire(&pool->remaining) == 0) return;
    kiln_cpu_pause();
  }
  __atomic_store_n(&pool->caller_waiting, 1, __ATOMIC_SEQ_CST);
  for (;;) {
    uint32_t remaining = __atomic_load_n(&pool->remaining, __ATOMIC_SEQ_CST);
    if (remaining == 0) break;
    kiln_thread_wait(&pool->remaining, remaining);
  }
  __atomic_store_n(&pool->caller_waiting, 0, __ATOMIC_RELAXED);
}
