// The monotonic clock in nanoseconds, for profiling and start-up timing.
#ifndef KILN_BASE_CLOCK_H_
#define KILN_BASE_CLOCK_H_

#include <stdint.h>
#include <time.h>

// CLOCK_MONOTONIC in nanoseconds.
static inline uint64_t kiln_now_nanoseconds(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

// Nanoseconds since `start` (a kiln_now_nanoseconds value), at least 1 so a
// stage that ran is never reported as 0 ("did not run").
static inline uint64_t kiln_nanoseconds_since(uint64_t start) {
  uint64_t elapsed = kiln_now_nanoseconds() - start;
  return elapsed ? elapsed : 1;
}

#endif  // KILN_BASE_CLOCK_H_
