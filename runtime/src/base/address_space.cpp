// Byte counts against the address space; see address_space.h.
#include "base/address_space.h"

kiln_status_t kiln_size_from_u64_limit(uint64_t value, uint64_t limit, unsigned address_bits,
                                       const char* what, size_t* out_size) {
  if (value > limit || value > (uint64_t)SIZE_MAX) {
    return kiln_make_status(KILN_UNSUPPORTED,
                            "%s is %llu bytes: more than this runtime's %u-bit address space can "
                            "hold (at most %llu)",
                            what, (unsigned long long)value, address_bits,
                            (unsigned long long)(limit < (uint64_t)SIZE_MAX ? limit : (uint64_t)SIZE_MAX));
  }
  if (out_size) *out_size = (size_t)value;
  return NULL;
}
