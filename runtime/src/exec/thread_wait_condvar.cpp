// kiln_thread_wait/kiln_thread_wake where there are no futexes (Apple):
// POSIX mutexes and condition variables, statically initialized, one pair
// per bucket of addresses (see thread_wait.h).
//
// A waiter checks the word under its bucket's mutex and sleeps on the
// condition variable (which releases the mutex atomically); a waker, whose
// store to the word came first, takes the same mutex before broadcasting.
// So either the waiter's check sees the new value, or the waiter is already
// asleep when the broadcast comes: no wake-up is lost. Addresses sharing a
// bucket only cause spurious wake-ups, which callers tolerate; `count` is
// therefore ignored (every sleeper of the bucket is woken).
#include "exec/thread_wait.h"

#include <pthread.h>

#define KILN_THREAD_WAIT_BUCKETS 8

typedef struct kiln_thread_wait_bucket_t {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
} kiln_thread_wait_bucket_t;

static kiln_thread_wait_bucket_t kiln_thread_wait_buckets[KILN_THREAD_WAIT_BUCKETS] = {
#define KILN_THREAD_WAIT_BUCKET {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER}
    KILN_THREAD_WAIT_BUCKET, KILN_THREAD_WAIT_BUCKET, KILN_THREAD_WAIT_BUCKET,
    KILN_THREAD_WAIT_BUCKET, KILN_THREAD_WAIT_BUCKET, KILN_THREAD_WAIT_BUCKET,
    KILN_THREAD_WAIT_BUCKET, KILN_THREAD_WAIT_BUCKET,
#undef KILN_THREAD_WAIT_BUCKET
};

static kiln_thread_wait_bucket_t* kiln_thread_wait_bucket(const uint32_t* address) {
  // The pool's words sit on separate 64-byte lines: hash the line number.
  return &kiln_thread_wait_buckets[((uintptr_t)address >> 6) % KILN_THREAD_WAIT_BUCKETS];
}

void kiln_thread_wait(uint32_t* address, uint32_t expected) {
  kiln_thread_wait_bucket_t* bucket = kiln_thread_wait_bucket(address);
  pthread_mutex_lock(&bucket->mutex);
  if (__atomic_load_n(address, __ATOMIC_SEQ_CST) == expected) {
    pthread_cond_wait(&bucket->cond, &bucket->mutex);
  }
  pthread_mutex_unlock(&bucket->mutex);
}

void kiln_thread_wake(uint32_t* address, int) {
  kiln_thread_wait_bucket_t* bucket = kiln_thread_wait_bucket(address);
  pthread_mutex_lock(&bucket->mutex);
  pthread_cond_broadcast(&bucket->cond);
  pthread_mutex_unlock(&bucket->mutex);
}
