// Sleeping on a 32-bit word until another thread changes it: the thread
// pool's only blocking primitive. runtime/meson.build picks one
// implementation per system: thread_wait_futex.cpp (Linux and Android:
// the futex system call) or thread_wait_condvar.cpp (elsewhere, e.g. Apple:
// mutexes and condition variables, POSIX only).
//
// Both have futex semantics: kiln_thread_wait returns at once when
// *address != expected and may return spuriously, so callers re-check in a
// loop; a kiln_thread_wake that follows a store to *address wakes every
// thread that saw the old value and went to sleep.
#ifndef KILN_EXEC_THREAD_WAIT_H_
#define KILN_EXEC_THREAD_WAIT_H_

#include <stdint.h>

// Sleeps while *address == expected (returns early on wake, signal or change).
void kiln_thread_wait(uint32_t* address, uint32_t expected);
// Wakes up to `count` threads sleeping on `address` (INT_MAX: all of them).
void kiln_thread_wake(uint32_t* address, int count);

#endif  // KILN_EXEC_THREAD_WAIT_H_
