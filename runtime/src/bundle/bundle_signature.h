// Signed bundles: an Ed25519 signature appended to the bundle as a fixed
// 128-byte trailer (docs/bundle.md, "Signatures"). Checked first of all,
// on the raw bytes, before the FlatBuffers verifier or any other parser sees
// the bundle and long before any kernel code is mapped or called, so a
// tampered bundle is refused whatever else it contains.
//
// Trailer (little-endian), the file's last 128 bytes:
//    0  signature[64]   Ed25519 over the message below
//   64  public_key[32]  the signer's key
//   96  signed_size u64 bytes of the file before the trailer
//  104  algorithm u32   1: Ed25519
//  108  version u32     1
//  112  reserved[8]     zero
//  120  magic[8]        "KILNSIG1"
// Message = the first signed_size bytes, then trailer bytes 64..127 (the
// key, sizes, algorithm and magic are signed too).
#ifndef KILN_BUNDLE_BUNDLE_SIGNATURE_H_
#define KILN_BUNDLE_BUNDLE_SIGNATURE_H_

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#define KILN_SIGNATURE_TRAILER_BYTES 128
#define KILN_SIGNATURE_MAGIC "KILNSIG1"
#define KILN_SIGNATURE_ALGORITHM_ED25519 1
#define KILN_SIGNATURE_TRAILER_VERSION 1

// What the trailer says (zeroed when the bundle has none).
typedef struct kiln_bundle_signature_t {
  int present;                 // nonzero: the bundle ends with a trailer
  size_t signed_size;          // bytes before the trailer (the bundle proper)
  uint32_t algorithm;          // KILN_SIGNATURE_ALGORITHM_*
  uint8_t public_key[32];      // the signer's key as the trailer names it
  int verified;                // nonzero: checked against a trusted key
} kiln_bundle_signature_t;

// Reads the trailer of `size` bytes at `data`, if there is one (a file that
// does not end with the magic has none). A trailer whose fields are wrong is
// KILN_INVALID_BUNDLE. With `trusted_key_count` keys (32 bytes each at
// `trusted_keys`), the bundle must be signed by one of them and the
// signature must verify, else KILN_INVALID_BUNDLE saying which.
kiln_status_t kiln_bundle_signature_check(const uint8_t* data, size_t size,
                                          const uint8_t* trusted_keys, size_t trusted_key_count,
                                          kiln_bundle_signature_t* out_signature);

#endif  // KILN_BUNDLE_BUNDLE_SIGNATURE_H_
