// Small string helpers shared by the daemon and the client.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fad {

/// The parts with `sep` between them ("" for none).
inline std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

/// At most `max_bytes` of `text`, cut before a UTF-8 character rather than
/// inside it (a name shown in every user's listing stays valid UTF-8).
inline std::string utf8_prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::size_t cut = max_bytes;
  // Continuation bytes are 10xxxxxx: back off to the start of their character.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut));
}

}  // namespace fad
