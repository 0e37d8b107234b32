// The content hash units are known by: the bundled planner hashes a kernel's
// source and headers, `fad launch` the source it compiles (with the user's
// rights, so that fadd never opens a path a client names).
#pragma once

#include <string>
#include <string_view>

namespace fad {

/// 64-bit FNV-1a of a byte string, as 16 hex digits.
std::string content_hash(std::string_view data);

}  // namespace fad
