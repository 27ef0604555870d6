// Allocation helpers. The runtime never uses operator new/delete: objects are
// malloc'ed (zeroed) and constructed field by field.
#ifndef KILN_BASE_ALLOCATOR_H_
#define KILN_BASE_ALLOCATOR_H_

#include <stddef.h>

#include "base/status.h"

// Allocates `count` * `size` zeroed bytes (overflow-checked) into *out_ptr.
kiln_status_t kiln_calloc(size_t count, size_t size, void** out_ptr);

// Allocates `size` zeroed bytes aligned to `alignment` (a power of two that is
// a multiple of sizeof(void*)). Free with kiln_aligned_free. A size of 0
// allocates a minimal block so the result is never NULL.
kiln_status_t kiln_aligned_alloc(size_t size, size_t alignment, void** out_ptr);
void kiln_aligned_free(void* ptr);

// Maps `size` zeroed bytes of private anonymous memory (page aligned, so
// 64-byte aligned; pages are only committed when first touched). A size of 0
// maps one page. Free with kiln_pages_free and the same size.
kiln_status_t kiln_pages_alloc(size_t size, void** out_ptr);
void kiln_pages_free(void* ptr, size_t size);

// Typed convenience wrapper over kiln_calloc.
template <typename T>
static inline kiln_status_t kiln_calloc_array(size_t count, T** out_array) {
  void* ptr = NULL;
  KILN_RETURN_IF_ERROR(kiln_calloc(count, sizeof(T), &ptr));
  *out_array = static_cast<T*>(ptr);
  return NULL;
}

#endif  // KILN_BASE_ALLOCATOR_H_
