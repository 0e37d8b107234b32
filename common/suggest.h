// "Did you mean ...?" for a mistyped command, option or key: shared by fad
// and fadd so that both name the closest word the same way.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace fad {

/// Optimal-string-alignment distance (insert, delete, substitute, swap neighbours).
std::size_t edit_distance(const std::string& a, const std::string& b);

/// The candidate closest to a mistyped `word` ("stauts" -> "status"), if one
/// is close enough to be what was meant; nullopt otherwise.
std::optional<std::string> suggest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace fad
