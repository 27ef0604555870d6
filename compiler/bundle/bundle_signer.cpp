// Bundle signatures with OpenSSL; see bundle_signer.h.
#include "bundle/bundle_signer.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "support/diagnostics.h"

namespace kiln {

namespace {

// The trailer's layout (runtime/src/bundle/bundle_signature.h).
constexpr size_t kTrailerBytes = 128;
constexpr char kMagic[] = "KILNSIG1";
constexpr uint32_t kAlgorithmEd25519 = 1;
constexpr uint32_t kTrailerVersion = 1;

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* p) const { EVP_MD_CTX_free(p); }
};
struct BioFree {
  void operator()(BIO* p) const { BIO_free(p); }
};

// OpenSSL's last error as text ("" if none), clearing the queue.
std::string openssl_error() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (!e) return "";
  char text[256];
  ERR_error_string_n(e, text, sizeof(text));
  return text;
}

void store_le(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) p[i] = (uint8_t)(v >> (8 * i));
}

// A passphrase callback that refuses: kilnc never prompts (it runs in builds).
int no_passphrase(char*, int, int, void*) { return -1; }

}  // namespace

SigningKey read_signing_key(const std::string& pem_path) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_file(pem_path.c_str(), "rb"));
  user_assert(bio) << "cannot open the key file '" << pem_path << "'";
  std::unique_ptr<EVP_PKEY, PkeyFree> pkey(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr));
  std::string why = openssl_error();
  user_assert(pkey) << "'" << pem_path << "' is not an unencrypted PEM private key (" << why
                    << "); make one with: openssl genpkey -algorithm ed25519 -out KEY.pem";
  user_assert(EVP_PKEY_get_id(pkey.get()) == EVP_PKEY_ED25519)
      << "'" << pem_path << "' holds a " << EVP_PKEY_get0_type_name(pkey.get())
      << " key; bundles are signed with Ed25519 keys: openssl genpkey -algorithm ed25519 -out KEY.pem";
  SigningKey key;
  key.path = pem_path;
  size_t n = key.private_key.size();
  internal_assert(EVP_PKEY_get_raw_private_key(pkey.get(), key.private_key.data(), &n) == 1 && n == 32)
      << "Ed25519 raw private key: " << openssl_error();
  n = key.public_key.size();
  internal_assert(EVP_PKEY_get_raw_public_key(pkey.get(), key.public_key.data(), &n) == 1 && n == 32)
      << "Ed25519 raw public key: " << openssl_error();
  return key;
}

std::string sign_bundle(const std::string& bundle, const SigningKey& key) {
  internal_assert(bundle.size() < kTrailerBytes ||
                  bundle.compare(bundle.size() - 8, 8, kMagic) != 0)
      << "the bundle is signed already";
  uint8_t trailer[kTrailerBytes] = {};
  memcpy(trailer + 64, key.public_key.data(), 32);
  store_le(trailer + 96, bundle.size(), 8);
  store_le(trailer + 104, kAlgorithmEd25519, 4);
  store_le(trailer + 108, kTrailerVersion, 4);
  memcpy(trailer + 120, kMagic, 8);
  // PureEdDSA signs the whole message in one call: the bundle, then the
  // trailer after the signature.
  std::string message = bundle;
  message.append(reinterpret_cast<const char*>(trailer) + 64, kTrailerBytes - 64);

  std::unique_ptr<EVP_PKEY, PkeyFree> pkey(
      EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, key.private_key.data(), key.private_key.size()));
  internal_assert(pkey) << "Ed25519 key from '" << key.path << "': " << openssl_error();
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  size_t signature_size = 64;
  internal_assert(ctx && EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, pkey.get()) == 1 &&
                  EVP_DigestSign(ctx.get(), trailer, &signature_size,
                                 reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1 &&
                  signature_size == 64)
      << "Ed25519 signing failed: " << openssl_error();
  return bundle + std::string(reinterpret_cast<const char*>(trailer), kTrailerBytes);
}

std::string public_key_c_array(const std::array<uint8_t, 32>& key) {
  std::string out = "{";
  char byte[8];
  for (size_t i = 0; i < key.size(); i++) {
    snprintf(byte, sizeof(byte), "%s0x%02x", i ? ", " : "", key[i]);
    out += byte;
  }
  return out + "}";
}

std::string public_key_hex(const std::array<uint8_t, 32>& key) {
  std::string out;
  char byte[4];
  for (uint8_t b : key) {
    snprintf(byte, sizeof(byte), "%02x", b);
    out += byte;
  }
  return out;
}

}  // namespace kiln
