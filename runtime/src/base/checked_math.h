// Overflow-checked arithmetic for sizes and offsets read from untrusted input.
// Each returns true on success and writes the result; false on overflow.
#ifndef KILN_BASE_CHECKED_MATH_H_
#define KILN_BASE_CHECKED_MATH_H_

#include <stddef.h>
#include <stdint.h>

static inline bool kiln_add_u64(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

static inline bool kiln_mul_u64(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

// True when [offset, offset + size) lies inside [0, limit).
static inline bool kiln_range_within(uint64_t offset, uint64_t size, uint64_t limit) {
  uint64_t end;
  return kiln_add_u64(offset, size, &end) && end <= limit;
}

// True when `value` is a multiple of `alignment` (a power of two).
static inline bool kiln_is_aligned(uint64_t value, uint64_t alignment) {
  return (value & (alignment - 1)) == 0;
}

// Rounds down / up to a multiple of `alignment` (a power of two). The round-up
// returns false on overflow.
static inline uint64_t kiln_align_down(uint64_t value, uint64_t alignment) {
  return value & ~(alignment - 1);
}
static inline bool kiln_align_up(uint64_t value, uint64_t alignment, uint64_t* out) {
  uint64_t sum;
  if (!kiln_add_u64(value, alignment - 1, &sum)) return false;
  *out = sum & ~(alignment - 1);
  return true;
}

#endif  // KILN_BASE_CHECKED_MATH_H_
