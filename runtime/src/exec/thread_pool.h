// A fixed pool of worker threads that run one task at a time, all together.
//
// The thread that calls kiln_thread_pool_run is worker 0; the pool owns
// workers 1..thread_count-1. kiln_thread_pool_run publishes a task, runs it
// as worker 0, and returns once every worker has returned from it (a
// barrier), so consecutive runs never overlap and everything a task wrote is
// visible to the caller afterwards.
//
// Waiting: an idle worker spins a bounded number of iterations (with a CPU
// pause/yield hint) for the next task, then sleeps (thread_wait.h: a futex
// on Linux); the caller does the same while it waits for the other workers
// to finish. Publishing a task only makes a wake call when some worker is
// asleep.
//
// Nothing here allocates or locks after kiln_thread_pool_create. One thread
// at a time may call kiln_thread_pool_run (the session's rule).
#ifndef KILN_EXEC_THREAD_POOL_H_
#define KILN_EXEC_THREAD_POOL_H_

#include <stdint.h>

#include "base/status.h"

// Most threads a pool (the calling thread included) may have.
#define KILN_THREAD_POOL_MAX_THREADS 1024u
// Stack of each worker thread: kernels keep their scratch on it (at most
// ~160 KB; the calling thread, which runs its share too, needs as much).
#define KILN_THREAD_POOL_STACK_BYTES (1024u * 1024u)

// The task: called once on every worker per kiln_thread_pool_run.
typedef void (*kiln_thread_pool_task_fn_t)(void* context, uint32_t worker_index);

// Called at the start of each pool thread (worker_index 1..thread_count-1).
typedef void (*kiln_thread_pool_init_fn_t)(uint32_t worker_index, void* user_data);

typedef struct kiln_thread_pool_options_t {
  uint32_t thread_count;                  // workers including the caller; 2..KILN_THREAD_POOL_MAX_THREADS
  kiln_thread_pool_init_fn_t thread_init; // optional hook run first on every pool thread
  void* thread_init_user_data;            // passed to `thread_init`
  uint32_t debug_fail_create_at;          // tests only: creating worker N fails (0: never)
} kiln_thread_pool_options_t;

typedef struct kiln_thread_pool_t kiln_thread_pool_t;

// Starts thread_count - 1 threads and returns once each has run `thread_init`
// and is waiting for work. On failure the threads already started are
// stopped and joined, and nothing is left behind.
kiln_status_t kiln_thread_pool_create(const kiln_thread_pool_options_t* options,
                                      kiln_thread_pool_t** out_pool);

// Stops and joins every pool thread. NULL is ignored.
void kiln_thread_pool_free(kiln_thread_pool_t* pool);

// Workers in the pool, the calling thread included.
uint32_t kiln_thread_pool_size(const kiln_thread_pool_t* pool);

// Runs task(context, w) on every worker w in [0, size): w == 0 on the calling
// thread. Returns when all of them have returned.
void kiln_thread_pool_run(kiln_thread_pool_t* pool, kiln_thread_pool_task_fn_t task,
                          void* context);

#endif  // KILN_EXEC_THREAD_POOL_H_
