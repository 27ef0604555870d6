// Signed bundles; see bundle_signature.h.
#include "bundle/bundle_signature.h"

#include <stdio.h>
#include <string.h>

#include "base/ed25519.h"

namespace {

uint64_t LoadLittleEndian(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// The first 8 bytes of a key in hex, to name it in messages.
void KeyPrefix(const uint8_t* key, char out[17]) {
  for (int i = 0; i < 8; ++i) snprintf(out + 2 * i, 3, "%02x", key[i]);
}

}  // namespace

kiln_status_t kiln_bundle_signature_check(const uint8_t* data, size_t size,
                                          const uint8_t* trusted_keys, size_t trusted_key_count,
                                          kiln_bundle_signature_t* out_signature) {
  memset(out_signature, 0, sizeof(*out_signature));
  const uint8_t* trailer = size >= KILN_SIGNATURE_TRAILER_BYTES
                               ? data + size - KILN_SIGNATURE_TRAILER_BYTES
                               : NULL;
  if (trailer && memcmp(trailer + 120, KILN_SIGNATURE_MAGIC, 8) == 0) {
    uint64_t signed_size = LoadLittleEndian(trailer + 96, 8);
    uint32_t algorithm = (uint32_t)LoadLittleEndian(trailer + 104, 4);
    uint32_t version = (uint32_t)LoadLittleEndian(trailer + 108, 4);
    if (version != KILN_SIGNATURE_TRAILER_VERSION) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: signature trailer version %u is not %d (a newer kilnc "
                              "signed it?)", version, KILN_SIGNATURE_TRAILER_VERSION);
    }
    if (signed_size != size - KILN_SIGNATURE_TRAILER_BYTES) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: the signature covers %llu bytes but %zu precede it "
                              "(truncated or appended to after signing)",
                              (unsigned long long)signed_size, size - KILN_SIGNATURE_TRAILER_BYTES);
    }
    if (algorithm != KILN_SIGNATURE_ALGORITHM_ED25519) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: signature algorithm %u is unknown (1: Ed25519)", algorithm);
    }
    out_signature->present = 1;
    out_signature->signed_size = (size_t)signed_size;
    out_signature->algorithm = algorithm;
    memcpy(out_signature->public_key, trailer + 64, 32);
  }
  if (trusted_key_count == 0) return NULL;  // nothing to check against

  if (!out_signature->present) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: not signed, and the load options list %zu trusted key%s: "
                            "sign it (kilnc --sign-key=KEY.pem)",
                            trusted_key_count, trusted_key_count == 1 ? "" : "s");
  }
  char prefix[17];
  KeyPrefix(out_signature->public_key, prefix);
  bool trusted = false;
  for (size_t i = 0; i < trusted_key_count && !trusted; ++i) {
    trusted = memcmp(trusted_keys + 32 * i, out_signature->public_key, 32) == 0;
  }
  if (!trusted) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: signed by key %s..., which is not among the %zu trusted "
                            "key%s",
                            prefix, trusted_key_count, trusted_key_count == 1 ? "" : "s");
  }
  kiln_sha512_t sha;
  kiln_ed25519_verify_begin(trailer, out_signature->public_key, &sha);
  kiln_sha512_update(&sha, data, out_signature->signed_size);
  kiln_sha512_update(&sha, trailer + 64, KILN_SIGNATURE_TRAILER_BYTES - 64);
  if (!kiln_ed25519_verify_final(trailer, out_signature->public_key, &sha)) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: the signature by key %s... does not verify (the bundle was "
                            "changed after signing)",
                            prefix);
  }
  out_signature->verified = 1;
  return NULL;
}
