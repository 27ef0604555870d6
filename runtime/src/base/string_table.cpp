// String tables; see string_table.h.
#include "base/string_table.h"

#include <string.h>

#include "base/checked_math.h"

kiln_status_t kiln_string_table_check(const void* table, size_t size, uint64_t count, bool exact,
                                      kiln_status_code_t code, size_t* out_used) {
  uint64_t header = 0;  // 4 * (count + 1): the offsets
  if (!kiln_add_u64(count, 1, &header) || !kiln_mul_u64(header, 4, &header) || header > size) {
    return kiln_make_status(code, "%zu bytes are too few for the %llu + 1 offsets of %llu strings (4 bytes each)",
                            size, (unsigned long long)count, (unsigned long long)count);
  }
  const uint8_t* offsets = (const uint8_t*)table;  // read with memcpy: any alignment
  const uint64_t room = size - header;              // what the bytes area may use
  uint32_t previous = 0;
  for (uint64_t i = 0; i <= count; ++i) {
    uint32_t offset;
    memcpy(&offset, offsets + i * 4, 4);  // little-endian host (bundle_verify.cpp)
    if (i == 0 && offset != 0) return kiln_make_status(code, "offset 0 is %u, not 0", offset);
    if (offset < previous) {
      return kiln_make_status(code, "offset %llu (%u) is less than offset %llu (%u)", (unsigned long long)i, offset,
                              (unsigned long long)(i - 1), previous);
    }
    if (offset > room) {
      return kiln_make_status(code, "offset %llu (%u) is outside its table of %zu bytes", (unsigned long long)i,
                              offset, size);
    }
    previous = offset;
  }
  if (exact && previous != room) {
    return kiln_make_status(code, "its strings end at byte %llu, but the table has %zu bytes",
                            (unsigned long long)(header + previous), size);
  }
  *out_used = (size_t)(header + previous);  // <= size
  return NULL;
}
