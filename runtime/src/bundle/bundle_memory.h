// Who owns a bundle's bytes: a read-only file mapping, a heap copy, or the
// caller. The rest of the runtime only sees `data` and `size`.
#ifndef KILN_BUNDLE_BUNDLE_MEMORY_H_
#define KILN_BUNDLE_BUNDLE_MEMORY_H_

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef enum kiln_bundle_memory_kind_e {
  KILN_BUNDLE_MEMORY_BORROWED = 0,  // the caller's memory, used in place
  KILN_BUNDLE_MEMORY_MAPPED = 1,    // a read-only mmap of a file; munmap on release
  KILN_BUNDLE_MEMORY_HEAP = 2,      // a 64-byte aligned heap copy; free on release
} kiln_bundle_memory_kind_t;

typedef struct kiln_bundle_memory_t {
  const uint8_t* data;             // first byte of the bundle, 64-byte aligned
  size_t size;                     // bytes in the bundle
  kiln_bundle_memory_kind_t kind;  // how to release `data`
} kiln_bundle_memory_t;

// Maps `path` read-only (private). The file must not be modified while
// mapped. A file larger than `max_bytes` is KILN_OUT_OF_MEMORY, unmapped.
kiln_status_t kiln_bundle_memory_map_file(const char* path, uint64_t max_bytes,
                                          kiln_bundle_memory_t* out_memory);
// Uses `data` in place when 64-byte aligned, else copies it. More than
// `max_bytes` is KILN_OUT_OF_MEMORY, uncopied.
kiln_status_t kiln_bundle_memory_wrap(const void* data, size_t size, uint64_t max_bytes,
                                      kiln_bundle_memory_t* out_memory);
// Releases what the memory owns; safe on a zeroed struct.
void kiln_bundle_memory_release(kiln_bundle_memory_t* memory);

#endif  // KILN_BUNDLE_BUNDLE_MEMORY_H_
