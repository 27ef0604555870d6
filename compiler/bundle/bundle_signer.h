// Signs a finished bundle with an Ed25519 private key (kilnc --sign-key),
// appending the 128-byte signature trailer the runtime checks before it
// reads anything else (runtime/src/bundle/bundle_signature.h; the format is
// in docs/bundle.md, "Signatures"). Signing runs on the developer's machine
// with OpenSSL's libcrypto; the runtime only verifies, with its own code.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace kiln {

// An Ed25519 key pair read from a PEM file.
struct SigningKey {
  std::string path;                       // where it was read from (for messages)
  std::array<uint8_t, 32> private_key{};  // the RFC 8032 seed
  std::array<uint8_t, 32> public_key{};   // what applications trust
};

// Reads a PKCS#8 PEM Ed25519 private key (`openssl genpkey -algorithm
// ed25519 -out KEY.pem`); a user error names the file and what is wrong
// (missing, not PEM, another key type, encrypted).
SigningKey read_signing_key(const std::string& pem_path);

// `bundle` followed by its signature trailer (signed_size = bundle.size()).
// A bundle that already ends with a trailer is a compiler bug.
std::string sign_bundle(const std::string& bundle, const SigningKey& key);

// The public key as a C initializer ("{0x12, 0x34, ...}") for
// kiln_model_load_options_t.trusted_public_keys, and as hex.
std::string public_key_c_array(const std::array<uint8_t, 32>& key);
std::string public_key_hex(const std::array<uint8_t, 32>& key);

}  // namespace kiln
