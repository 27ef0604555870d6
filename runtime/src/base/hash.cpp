// XXH64; see hash.h. Follows the reference algorithm
// (https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md).
#include "base/hash.h"

#include <string.h>

static const uint64_t kPrime1 = 11400714785074694791ull;
static const uint64_t kPrime2 = 14029467366897019727ull;
static const uint64_t kPrime3 = 1609587929392839161ull;
static const uint64_t kPrime4 = 9650029242287828579ull;
static const uint64_t kPrime5 = 2870177450012600261ull;

static inline uint64_t kiln_rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t kiln_read64(const uint8_t* p) {
  uint64_t v;
  memcpy(&v, p, 8);  // little-endian host
  return v;
}

static inline uint32_t kiln_read32(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

static inline uint64_t kiln_xxh64_round(uint64_t acc, uint64_t input) {
  acc += input * kPrime2;
  acc = kiln_rotl64(acc, 31);
  return acc * kPrime1;
}

static inline uint64_t kiln_xxh64_merge(uint64_t acc, uint64_t value) {
  acc ^= kiln_xxh64_round(0, value);
  return acc * kPrime1 + kPrime4;
}

// Copies [offset, offset + length) of the input to `out`, zeroing the window.
static void kiln_xxh64_copy_masked(const uint8_t* data, size_t offset, size_t length,
                                   size_t zero_offset, size_t zero_size, uint8_t* out) {
  memcpy(out, data + offset, length);
  for (size_t i = 0; i < length; ++i) {
    size_t at = offset + i;
    if (at >= zero_offset && at - zero_offset < zero_size) out[i] = 0;
  }
}

static bool kiln_xxh64_overlaps(size_t offset, size_t length, size_t zero_offset,
                                size_t zero_size) {
  return zero_size != 0 && offset < zero_offset + zero_size && zero_offset < offset + length;
}

uint64_t kiln_xxh64(const uint8_t* data, size_t size, size_t zero_offset, size_t zero_size) {
  size_t offset = 0;
  uint64_t hash;
  if (size >= 32) {
    uint64_t v1 = kPrime1 + kPrime2, v2 = kPrime2, v3 = 0, v4 = 0 - kPrime1;
    uint8_t stripe[32];
    for (; size - offset >= 32; offset += 32) {
      const uint8_t* p = data + offset;
      if (kiln_xxh64_overlaps(offset, 32, zero_offset, zero_size)) {
        kiln_xxh64_copy_masked(data, offset, 32, zero_offset, zero_size, stripe);
        p = stripe;
      }
      v1 = kiln_xxh64_round(v1, kiln_read64(p));
      v2 = kiln_xxh64_round(v2, kiln_read64(p + 8));
      v3 = kiln_xxh64_round(v3, kiln_read64(p + 16));
      v4 = kiln_xxh64_round(v4, kiln_read64(p + 24));
    }
    hash = kiln_rotl64(v1, 1) + kiln_rotl64(v2, 7) + kiln_rotl64(v3, 12) + kiln_rotl64(v4, 18);
    hash = kiln_xxh64_merge(hash, v1);
    hash = kiln_xxh64_merge(hash, v2);
    hash = kiln_xxh64_merge(hash, v3);
    hash = kiln_xxh64_merge(hash, v4);
  } else {
    hash = kPrime5;
  }
  hash += (uint64_t)size;

  // The tail (< 32 bytes), copied so the zero window is easy to apply.
  uint8_t tail[32];
  size_t remaining = size - offset;
  kiln_xxh64_copy_masked(data, offset, remaining, zero_offset, zero_size, tail);
  const uint8_t* p = tail;
  for (; remaining >= 8; remaining -= 8, p += 8) {
    hash ^= kiln_xxh64_round(0, kiln_read64(p));
    hash = kiln_rotl64(hash, 27) * kPrime1 + kPrime4;
  }
  if (remaining >= 4) {
    hash ^= (uint64_t)kiln_read32(p) * kPrime1;
    hash = kiln_rotl64(hash, 23) * kPrime2 + kPrime3;
    p += 4;
    remaining -= 4;
  }
  for (; remaining > 0; --remaining, ++p) {
    hash ^= (uint64_t)(*p) * kPrime5;
    hash = kiln_rotl64(hash, 11) * kPrime1;
  }
  hash ^= hash >> 33;
  hash *= kPrime2;
  hash ^= hash >> 29;
  hash *= kPrime3;
  hash ^= hash >> 32;
  return hash;
}
