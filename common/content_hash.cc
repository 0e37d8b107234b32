// FNV-1a content hash; see content_hash.h.
#include "common/content_hash.h"

#include <cstdint>
#include <cstdio>

namespace fad {

std::string content_hash(std::string_view data) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace fad
