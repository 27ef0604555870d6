// Ed25519 signature verification (RFC 8032, PureEdDSA), for signed bundles
// (bundle/bundle_signature.h). Verification only: the runtime never holds a
// private key; kilnc signs with OpenSSL.
//
// Why a verifier of our own: libkiln depends on libc only, and the one
// operation needed is small (~350 lines with SHA-512). It is written from the
// RFC for clarity over speed (a verification takes well under a millisecond
// next to the SHA-512 pass over the bundle), is not constant-time (it handles
// only public data: keys, signatures, bundles), and is checked against
// OpenSSL on random keys and messages and against the RFC's test vectors
// (tests/unit/runtime_signature_test.cpp).
#ifndef KILN_BASE_ED25519_H_
#define KILN_BASE_ED25519_H_

#include <stddef.h>
#include <stdint.h>

#include "base/sha512.h"

#define KILN_ED25519_PUBLIC_KEY_BYTES 32
#define KILN_ED25519_SIGNATURE_BYTES 64

// Begins verifying `signature` by `public_key`: hashes R || A; the caller
// then feeds the message with kiln_sha512_update(sha, ...) in any number of
// pieces and calls kiln_ed25519_verify_final.
void kiln_ed25519_verify_begin(const uint8_t signature[KILN_ED25519_SIGNATURE_BYTES],
                               const uint8_t public_key[KILN_ED25519_PUBLIC_KEY_BYTES],
                               kiln_sha512_t* sha);

// Whether the signature is valid for the message fed to `sha` (cofactorless
// check [S]B == R + [k]A, S < L, canonical point encodings, a key not of
// small order). Returns false on
// any malformed input.
bool kiln_ed25519_verify_final(const uint8_t signature[KILN_ED25519_SIGNATURE_BYTES],
                               const uint8_t public_key[KILN_ED25519_PUBLIC_KEY_BYTES],
                               kiln_sha512_t* sha);

// One-call form for a message in memory.
bool kiln_ed25519_verify(const uint8_t signature[KILN_ED25519_SIGNATURE_BYTES],
                         const uint8_t public_key[KILN_ED25519_PUBLIC_KEY_BYTES],
                         const uint8_t* message, size_t size);

#endif  // KILN_BASE_ED25519_H_
