// Allocation helpers; see allocator.h.
#include "base/allocator.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

kiln_status_t kiln_calloc(size_t count, size_t size, void** out_ptr) {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) {
    return kiln_make_status(KILN_OUT_OF_MEMORY,
                            "allocation of %zu x %zu bytes overflows", count, size);
  }
  void* ptr = calloc(total ? total : 1, 1);
  if (!ptr) {
    return kiln_make_status(KILN_OUT_OF_MEMORY, "out of memory allocating %zu bytes",
                            total);
  }
  *out_ptr = ptr;
  return NULL;
}

kiln_status_t kiln_aligned_alloc(size_t size, size_t alignment, void** out_ptr) {
  void* ptr = NULL;
  if (posix_memalign(&ptr, alignment, size ? size : alignment) != 0 || !ptr) {
    return kiln_make_status(KILN_OUT_OF_MEMORY,
                            "out of memory allocating %zu bytes (aligned to %zu)",
                            size, alignment);
  }
  memset(ptr, 0, size);
  *out_ptr = ptr;
  return NULL;
}

void kiln_aligned_free(void* ptr) { free(ptr); }

kiln_status_t kiln_pages_alloc(size_t size, void** out_ptr) {
  void* ptr = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (ptr == MAP_FAILED) {
    return kiln_make_status(KILN_OUT_OF_MEMORY, "out of memory mapping %zu bytes", size);
  }
  *out_ptr = ptr;
  return NULL;
}

void kiln_pages_free(void* ptr, size_t size) {
  if (ptr) munmap(ptr, size ? size : 1);
}
