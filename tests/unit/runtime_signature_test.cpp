// Signed bundles: the runtime's SHA-512 and Ed25519 verifier against
// OpenSSL (random inputs, RFC 8032's test vectors, malformed signatures and
// keys), then the load path (bundle/bundle_signature.h): with trusted keys,
// an unsigned, foreign-signed, tampered, truncated or extended bundle is
// refused before anything else reads it; the signer's key is reported.
#include <doctest/doctest.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "base/ed25519.h"
#include "base/sha512.h"
#include "kiln/kiln.hpp"
#include "runtime_bundle_builder.h"

namespace {

using namespace kiln_test;
using Bytes = std::vector<uint8_t>;

Bytes FromHex(const char* hex) {
  Bytes out;
  for (size_t i = 0; hex[i] && hex[i + 1]; i += 2) {
    unsigned v = 0;
    sscanf(hex + i, "%2x", &v);
    out.push_back((uint8_t)v);
  }
  return out;
}

// An OpenSSL Ed25519 key pair.
struct KeyPair {
  Bytes seed = Bytes(32), public_key = Bytes(32);
};

KeyPair KeyFromSeed(const Bytes& seed) {
  KeyPair k;
  k.seed = seed;
  EVP_PKEY* pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, seed.data(), 32);
  REQUIRE(pkey);
  size_t n = 32;
  REQUIRE(EVP_PKEY_get_raw_public_key(pkey, k.public_key.data(), &n) == 1);
  EVP_PKEY_free(pkey);
  return k;
}

Bytes OpenSslSign(const KeyPair& key, const Bytes& message) {
  EVP_PKEY* pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, key.seed.data(), 32);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  Bytes signature(64);
  size_t n = 64;
  REQUIRE(EVP_DigestSignInit(ctx, nullptr, nullptr, nullptr, pkey) == 1);
  REQUIRE(EVP_DigestSign(ctx, signature.data(), &n, message.data(), message.size()) == 1);
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(pkey);
  return signature;
}

bool OpenSslVerify(const Bytes& public_key, const Bytes& signature, const Bytes& message) {
  EVP_PKEY* pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, public_key.data(), 32);
  if (!pkey) return false;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = EVP_DigestVerifyInit(ctx, nullptr, nullptr, nullptr, pkey) == 1 &&
            EVP_DigestVerify(ctx, signature.data(), 64, message.data(), message.size()) == 1;
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(pkey);
  return ok;
}

bool KilnVerify(const Bytes& public_key, const Bytes& signature, const Bytes& message) {
  return kiln_ed25519_verify(signature.data(), public_key.data(), message.data(), message.size());
}

Bytes RandomBytes(std::mt19937_64* rng, size_t n) {
  Bytes out(n);
  for (auto& b : out) b = (uint8_t)(*rng)();
  return out;
}

TEST_CASE("signature: SHA-512 equals OpenSSL's at every block boundary, fed in pieces") {
  std::mt19937_64 rng(512);
  for (size_t size = 0; size < 700; size += (size < 300 ? 1 : 37)) {
    Bytes message = RandomBytes(&rng, size);
    uint8_t expected[64], actual[64];
    SHA512(message.data(), message.size(), expected);
    kiln_sha512_t sha;
    kiln_sha512_init(&sha);
    for (size_t at = 0; at < size;) {  // random piece sizes, empty ones included
      size_t piece = std::min<size_t>(size - at, rng() % 150);
      kiln_sha512_update(&sha, message.data() + at, piece);
      at += piece;
    }
    kiln_sha512_final(&sha, actual);
    REQUIRE_MESSAGE(memcmp(expected, actual, 64) == 0, "size " << size);
  }
}

TEST_CASE("signature: RFC 8032 test vectors (7.1, tests 1-3)") {
  struct Vector {
    const char *seed, *public_key, *message, *signature;
  } vectors[] = {
      {"9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
       "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
       "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"},
      {"4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
       "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
       "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
      {"c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
       "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
       "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"},
  };
  for (const Vector& v : vectors) {
    KeyPair key = KeyFromSeed(FromHex(v.seed));
    Bytes message = FromHex(v.message), signature = FromHex(v.signature);
    CHECK(key.public_key == FromHex(v.public_key));  // the vector is transcribed right
    CHECK(OpenSslSign(key, message) == signature);
    CHECK(KilnVerify(key.public_key, signature, message));
    message.push_back(0);
    CHECK_FALSE(KilnVerify(key.public_key, signature, message));
  }
}

TEST_CASE("signature: OpenSSL's signatures verify; any flipped bit does not (as OpenSSL says)") {
  std::mt19937_64 rng(25519);
  for (int round = 0; round < 150; ++round) {
    KeyPair key = KeyFromSeed(RandomBytes(&rng, 32));
    Bytes message = RandomBytes(&rng, rng() % 1200);
    Bytes signature = OpenSslSign(key, message);
    REQUIRE(KilnVerify(key.public_key, signature, message));
    // One flipped bit in the signature, the key or the message.
    Bytes s = signature, k = key.public_key, m = message;
    switch (round % 3) {
      case 0: s[rng() % 64] ^= (uint8_t)(1u << (rng() % 8)); break;
      case 1: k[rng() % 32] ^= (uint8_t)(1u << (rng() % 8)); break;
      default:
        if (m.empty()) m.push_back(0); else m[rng() % m.size()] ^= (uint8_t)(1u << (rng() % 8));
    }
    CHECK_FALSE(KilnVerify(k, s, m));
    CHECK(KilnVerify(k, s, m) == OpenSslVerify(k, s, m));
  }
}

// s + L, little-endian (s < L, so no carry past 256 bits).
Bytes AddOrder(Bytes s) {
  const Bytes order = FromHex("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010");
  unsigned carry = 0;
  for (int i = 0; i < 32; ++i) {
    unsigned v = s[i] + order[i] + carry;
    s[i] = (uint8_t)v;
    carry = v >> 8;
  }
  return s;
}

TEST_CASE("signature: malleable and malformed signatures and keys are refused") {
  std::mt19937_64 rng(7);
  KeyPair key = KeyFromSeed(RandomBytes(&rng, 32));
  Bytes message = RandomBytes(&rng, 100);
  Bytes signature = OpenSslSign(key, message);
  REQUIRE(KilnVerify(key.public_key, signature, message));

  // S + L: the same point equation, but S is not reduced (RFC 8032 5.1.7).
  Bytes s(signature.begin() + 32, signature.end());
  Bytes high = AddOrder(s);
  Bytes malleated = signature;
  std::copy(high.begin(), high.end(), malleated.begin() + 32);
  CHECK_FALSE(KilnVerify(key.public_key, malleated, message));
  CHECK_FALSE(OpenSslVerify(key.public_key, malleated, message));

  // A key whose y is not below p: p + 1 encodes the point y = 1 twice over.
  Bytes non_canonical = FromHex("eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f");
  CHECK_FALSE(KilnVerify(non_canonical, signature, message));
  // Not a point at all (x^2 has no root for y = 2).
  Bytes not_a_point = FromHex("0200000000000000000000000000000000000000000000000000000000000000");
  CHECK_FALSE(KilnVerify(not_a_point, signature, message));
  // The neutral element as the key with R = neutral, S = 0: [0]B = R + [k]A
  // holds for every message under a cofactorless check, so small-order keys
  // are refused outright.
  Bytes identity = FromHex("0100000000000000000000000000000000000000000000000000000000000000");
  Bytes forged(64, 0);
  forged[0] = 1;
  CHECK_FALSE(KilnVerify(identity, forged, message));
  // A point of order 8 as the key.
  Bytes order8 = FromHex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a");
  CHECK_FALSE(KilnVerify(order8, forged, message));
  // Zero R and S under the real key.
  CHECK_FALSE(KilnVerify(key.public_key, Bytes(64, 0), message));
}

//===--- Bundles --------------------------------------------------------------===//

// `bundle` with the trailer docs/bundle.md describes, written here from the
// format's description (a second writer beside kilnc's bundle_signer).
Bytes SignBundle(const Bytes& bundle, const KeyPair& key, uint32_t version = 1) {
  Bytes trailer(128, 0);
  std::copy(key.public_key.begin(), key.public_key.end(), trailer.begin() + 64);
  for (int i = 0; i < 8; ++i) trailer[96 + i] = (uint8_t)((uint64_t)bundle.size() >> (8 * i));
  trailer[104] = 1;  // Ed25519
  trailer[108] = (uint8_t)version;
  memcpy(trailer.data() + 120, "KILNSIG1", 8);
  Bytes message = bundle;
  message.insert(message.end(), trailer.begin() + 64, trailer.end());
  Bytes signature = OpenSslSign(key, message);
  std::copy(signature.begin(), signature.end(), trailer.begin());
  Bytes out = bundle;
  out.insert(out.end(), trailer.begin(), trailer.end());
  return out;
}

kiln::Status LoadSigned(const Bytes& file, const Bytes& trusted, kiln::Model* model, uint32_t flags = 0) {
  kiln_model_load_options_t options = LoadOptions(flags);
  options.trusted_public_keys = trusted.empty() ? nullptr : trusted.data();
  options.trusted_public_key_count = trusted.size() / 32;
  return kiln::Model::LoadMemory(file.data(), file.size(), options, model);
}

// Runs the add/scale model once and checks its output.
void CheckRuns(const kiln::Model& model) {
  kiln::Session session;
  REQUIRE(kiln::Session::Create(model, nullptr, &session).ok());
  std::vector<float> a(kAddScaleElements, 1.0f), out(kAddScaleElements);
  REQUIRE(session.set_input(0, a.data(), a.size() * 4).ok());
  REQUIRE(session.run().ok());
  REQUIRE(session.get_output(0, out.data(), out.size() * 4).ok());
  for (int i = 0; i < kAddScaleElements; ++i) CHECK(out[i] == (1.0f + 0.5f * (float)i) * 2.0f);
}

TEST_CASE("signature: signed bundles load with a trusted key; the rest are refused first") {
  std::mt19937_64 rng(128);
  KeyPair key = KeyFromSeed(RandomBytes(&rng, 32)), other = KeyFromSeed(RandomBytes(&rng, 32));
  const Bytes bundle = AddScaleBundle().Build();
  const Bytes signed_bundle = SignBundle(bundle, key);
  Bytes both_keys = other.public_key;
  both_keys.insert(both_keys.end(), key.public_key.begin(), key.public_key.end());

  kiln::Model model;
  kiln::Status status = LoadSigned(signed_bundle, both_keys, &model);
  REQUIRE_MESSAGE(status.ok(), status.message());
  kiln_model_info_t info;
  kiln_struct_init(&info, sizeof(info));
  REQUIRE(model.get_info(&info).ok());
  CHECK(info.signature == KILN_SIGNATURE_ED25519);
  CHECK(info.signature_verified == 1);
  CHECK(memcmp(info.signer_public_key, key.public_key.data(), 32) == 0);
  CheckRuns(model);

  // Without trusted keys a signed bundle loads; the signer is reported, unverified.
  REQUIRE(LoadSigned(signed_bundle, {}, &model).ok());
  REQUIRE(model.get_info(&info).ok());
  CHECK(info.signature == KILN_SIGNATURE_ED25519);
  CHECK(info.signature_verified == 0);
  CheckRuns(model);
  REQUIRE(LoadSigned(bundle, {}, &model).ok());
  REQUIRE(model.get_info(&info).ok());
  CHECK(info.signature == KILN_SIGNATURE_NONE);

  // Unsigned, or signed by a key not trusted.
  status = LoadSigned(bundle, key.public_key, &model);
  CHECK(status.code() == KILN_INVALID_BUNDLE);
  CHECK(Contains(status.message(), "not signed"));
  status = LoadSigned(signed_bundle, other.public_key, &model);
  CHECK(status.code() == KILN_INVALID_BUNDLE);
  CHECK(Contains(status.message(), "not among the 1 trusted key"));

  // A constant's byte changed and the content hash recomputed (what an
  // attacker who can write the file does): the hash passes, the signature
  // does not.
  REQUIRE(LoadSigned(bundle, {}, &model).ok());
  REQUIRE(model.get_info(&info).ok());
  Bytes tampered = bundle;
  tampered[info.data_segment_offset + 4 * 3 + 2] ^= 0x40;  // the 4th constant float
  RehashBundle(&tampered, FindHashFields(bundle));
  status = LoadSigned(tampered, {}, &model);
  REQUIRE_MESSAGE(status.ok(), std::string(status.message()));  // no key: the hash alone cannot tell
  Bytes tampered_signed = signed_bundle;
  std::copy(tampered.begin(), tampered.end(), tampered_signed.begin());
  status = LoadSigned(tampered_signed, key.public_key, &model);
  CHECK(status.code() == KILN_INVALID_BUNDLE);
  CHECK(Contains(status.message(), "does not verify"));
  status = LoadSigned(tampered_signed, key.public_key, &model, KILN_MODEL_LOAD_VERIFY_ONLY);
  CHECK(status.code() == KILN_INVALID_BUNDLE);  // inspection is refused as well

  // Bytes appended after the trailer, or the file cut short.
  Bytes extended = signed_bundle;
  extended.insert(extended.end(), 64, 0);
  CHECK(LoadSigned(extended, key.public_key, &model).code() == KILN_INVALID_BUNDLE);
  Bytes truncated(signed_bundle.begin() + 64, signed_bundle.end());
  status = LoadSigned(truncated, key.public_key, &model);
  CHECK(status.code() == KILN_INVALID_BUNDLE);
  CHECK(Contains(status.message(), "truncated"));
  // A trailer of a later version is refused, keys or not.
  status = LoadSigned(SignBundle(bundle, key, 2), {}, &model);
  CHECK(status.code() == KILN_INVALID_BUNDLE);
  CHECK(Contains(status.message(), "version 2"));
  // Every single-bit change in the trailer is refused.
  for (size_t byte = 0; byte < 128; ++byte) {
    Bytes flipped = signed_bundle;
    flipped[bundle.size() + byte] ^= (uint8_t)(1u << (byte % 8));
    CHECK_MESSAGE(!LoadSigned(flipped, key.public_key, &model).ok(), "trailer byte " << byte);
  }

  // The same from a file (mapped, not copied).
  std::string path = WriteTemp(signed_bundle);
  kiln_model_load_options_t options = LoadOptions(0);
  options.trusted_public_keys = key.public_key.data();
  options.trusted_public_key_count = 1;
  status = kiln::Model::LoadFile(path.c_str(), options, &model);
  CHECK_MESSAGE(status.ok(), status.message());
  options.trusted_public_keys = other.public_key.data();
  CHECK(kiln::Model::LoadFile(path.c_str(), options, &model).code() == KILN_INVALID_BUNDLE);
  unlink(path.c_str());

  // A key count without keys is the caller's mistake.
  options.trusted_public_keys = nullptr;
  status = kiln::Model::LoadMemory(signed_bundle.data(), signed_bundle.size(), options, &model);
  CHECK(status.code() == KILN_INVALID_ARGUMENT);
}

}  // namespace
