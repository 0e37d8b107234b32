// Hashes; see hash.h.
#include "common/hash.h"

#include <openssl/evp.h>

#include <cstdio>
#include <stdexcept>

namespace fad {

struct Sha256::State {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : state_(std::make_unique<State>()) {
  state_->ctx = EVP_MD_CTX_new();
  // Only allocation can fail here: nothing a caller could do about it.
  if (!state_->ctx || EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("cannot initialise SHA-256");
}

Sha256::~Sha256() { EVP_MD_CTX_free(state_->ctx); }

Sha256& Sha256::update(std::string_view bytes) {
  EVP_DigestUpdate(state_->ctx, bytes.data(), bytes.size());
  return *this;
}

Sha256& Sha256::field(std::string_view bytes) {
  const std::string size = std::to_string(bytes.size()) + ":";
  update(size);
  return update(bytes);
}

std::string Sha256::raw() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(state_->ctx, digest, &n);
  return std::string(reinterpret_cast<const char*>(digest), n);
}

std::string Sha256::hex() {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw()) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) { return Sha256().update(bytes).hex(); }

}  // namespace fad
