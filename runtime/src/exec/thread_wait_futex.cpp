// kiln_thread_wait/kiln_thread_wake on Linux and Android: private futexes
// (see thread_wait.h).
#include "exec/thread_wait.h"

#include <linux/futex.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

void kiln_thread_wait(uint32_t* address, uint32_t expected) {
  syscall(SYS_futex, address, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

void kiln_thread_wake(uint32_t* address, int count) {
  syscall(SYS_futex, address, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}
