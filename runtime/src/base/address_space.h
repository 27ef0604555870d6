// Sizes read from a bundle are 64-bit; the runtime's objects are addressed
// with size_t, which has 32 bits on 32-bit targets (ARMv7). Every byte count
// that becomes a size_t (a file to map, an arena to allocate, a tensor) goes
// through kiln_size_from_u64 first, so a bundle too large for the address
// space is refused with a message saying so instead of being truncated.
#ifndef KILN_BASE_ADDRESS_SPACE_H_
#define KILN_BASE_ADDRESS_SPACE_H_

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

// The largest object the runtime maps or allocates: PTRDIFF_MAX, so that
// differences of pointers into it cannot overflow (2 GiB - 1 with a 32-bit
// address space).
#define KILN_MAX_OBJECT_BYTES ((uint64_t)PTRDIFF_MAX)
// Bits of this runtime's addresses: 32 or 64.
#define KILN_ADDRESS_BITS ((unsigned)(sizeof(void*) * 8))

// Converts `value` (bytes) to size_t when it is at most `limit`; otherwise
// KILN_UNSUPPORTED "<what> is <value> bytes: more than this runtime's
// <address_bits>-bit address space can hold (at most <limit>)". Tests pass a
// smaller limit and address_bits to simulate a 32-bit target on a 64-bit host.
// `out_size` may be NULL (only the check).
kiln_status_t kiln_size_from_u64_limit(uint64_t value, uint64_t limit, unsigned address_bits,
                                       const char* what, size_t* out_size);

// kiln_size_from_u64_limit with this runtime's own limit.
static inline kiln_status_t kiln_size_from_u64(uint64_t value, const char* what, size_t* out_size) {
  return kiln_size_from_u64_limit(value, KILN_MAX_OBJECT_BYTES, KILN_ADDRESS_BITS, what, out_size);
}

#endif  // KILN_BASE_ADDRESS_SPACE_H_
