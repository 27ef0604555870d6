// Versioned structs: see struct_size.h.
#include "base/struct_size.h"

#include <stdint.h>
#include <string.h>

// The caller's struct_size, checked against the first published size.
static kiln_status_t kiln_struct_size(const void* caller, size_t min_size, const char* type_name,
                                      size_t* out_size) {
  size_t size;
  memcpy(&size, caller, sizeof(size));
  if (size < min_size) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "%s.struct_size is %zu, below the struct's first version (%zu "
                            "bytes): set it to sizeof(%s) (the kiln_*_init functions do)",
                            type_name, size, min_size, type_name);
  }
  *out_size = size;
  return NULL;
}

kiln_status_t kiln_struct_read(const void* in, size_t own_size, size_t min_size,
                               const char* type_name, void* out) {
  size_t size = 0;
  KILN_RETURN_IF_ERROR(kiln_struct_size(in, min_size, type_name, &size));
  memset(out, 0, own_size);
  memcpy(out, in, size < own_size ? size : own_size);
  memcpy(out, &own_size, sizeof(own_size));
  return NULL;
}

kiln_status_t kiln_struct_write(const void* value, size_t own_size, size_t min_size,
                                const char* type_name, void* out) {
  size_t size = 0;
  KILN_RETURN_IF_ERROR(kiln_struct_size(out, min_size, type_name, &size));
  size_t bytes = size < own_size ? size : own_size;  // >= min_size >= sizeof(size_t)
  memcpy((uint8_t*)out + sizeof(size_t), (const uint8_t*)value + sizeof(size_t),
         bytes - sizeof(size_t));
  return NULL;
}
