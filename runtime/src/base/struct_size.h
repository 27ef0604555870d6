// Versioned structs (kiln.h, "Versioned structs"): every struct the API reads
// or fills starts with `size_t struct_size`, the caller's sizeof of it. These
// helpers read or write only the bytes both sides know, and refuse a size
// below the struct's first published one.
#ifndef KILN_BASE_STRUCT_SIZE_H_
#define KILN_BASE_STRUCT_SIZE_H_

#include <stddef.h>

#include "base/status.h"

// Copies the caller's struct at `in` into `out` (`own_size` bytes, the
// library's sizeof): zeroes `out`, then copies min(struct_size, own_size)
// bytes and sets out's struct_size to own_size. KILN_INVALID_ARGUMENT when
// in's struct_size is below `min_size` (`type_name` names the struct).
kiln_status_t kiln_struct_read(const void* in, size_t own_size, size_t min_size,
                               const char* type_name, void* out);

// Copies the library's struct at `value` (`own_size` bytes) into the
// caller's `out`: the bytes after struct_size up to min(out's struct_size,
// own_size); out's struct_size stays. KILN_INVALID_ARGUMENT (nothing
// written) when out's struct_size is below `min_size`.
kiln_status_t kiln_struct_write(const void* value, size_t own_size, size_t min_size,
                                const char* type_name, void* out);

#endif  // KILN_BASE_STRUCT_SIZE_H_
