// SHA-512 (FIPS 180-4), the hash inside Ed25519 bundle signatures
// (bundle/bundle_signature.h). Incremental, so a signature over a mapped
// bundle of any size is checked without copying it.
#ifndef KILN_BASE_SHA512_H_
#define KILN_BASE_SHA512_H_

#include <stddef.h>
#include <stdint.h>

#define KILN_SHA512_BYTES 64

typedef struct kiln_sha512_t {
  uint64_t state[8];   // the chaining value H0..H7
  uint64_t total;      // bytes absorbed so far (messages stay far below 2^61)
  uint8_t block[128];  // the partial block not yet compressed
  size_t filled;       // its bytes, 0..127
} kiln_sha512_t;

void kiln_sha512_init(kiln_sha512_t* sha);
void kiln_sha512_update(kiln_sha512_t* sha, const uint8_t* data, size_t size);
void kiln_sha512_final(kiln_sha512_t* sha, uint8_t out_digest[KILN_SHA512_BYTES]);

#endif  // KILN_BASE_SHA512_H_
