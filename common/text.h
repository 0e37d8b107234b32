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

}  // namespace fad
