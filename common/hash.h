// SHA-256 (OpenSSL) names compile-cache entries and checks their integrity: a
// shared cache holds many thousands of entries, so keys must not collide by
// chance. The estimator's short FNV-1a key is in content_hash.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/content_hash.h"

namespace fad {

/// An incremental SHA-256. Each `field` is length-prefixed, so ("ab","c") and
/// ("a","bc") never hash alike.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  Sha256& update(std::string_view bytes);
  Sha256& field(std::string_view bytes);
  /// The digest as 64 hex digits; the hasher may not be used afterwards.
  std::string hex();
  /// The 32 raw digest bytes; the hasher may not be used afterwards.
  std::string raw();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// SHA-256 of `bytes` as 64 hex digits.
std::string sha256_hex(std::string_view bytes);

}  // namespace fad
