// XXH64 (seed 0), the bundle's integrity hash (Bundle.content_hash). Same
// result as llvm::xxHash64 and the reference xxHash library.
#ifndef KILN_BASE_HASH_H_
#define KILN_BASE_HASH_H_

#include <stddef.h>
#include <stdint.h>

// XXH64 of `size` bytes at `data`, reading the bytes in
// [zero_offset, zero_offset + zero_size) as zero (pass zero_size 0 for none).
uint64_t kiln_xxh64(const uint8_t* data, size_t size, size_t zero_offset, size_t zero_size);

#endif  // KILN_BASE_HASH_H_
