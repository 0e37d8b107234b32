// The content hash a launched compile is learnt under: its source and the
// project headers that source includes. Real kernels live in headers
// (FlashAttention's .cu files are instantiation stubs of a few lines, the
// same from one version to the next), so a hash of the .cu alone gave a new
// version's units the old version's exact learning key.
//
// Quoted includes are followed, resolved as the compiler resolves them (the
// including file's directory, then each -I directory in order). Angle
// includes are the toolkit's and libraries' (the compiler version and the
// flags key those), and following them would read thousands of headers per
// compile. Each header counts by the name it is included as and its content,
// never its absolute path: pip unpacks every build into a fresh directory.
// Computed by the launcher with the user's rights (fadd never opens a path a
// client names).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace fad::client {

/// At most this many headers are followed, and no more than kMaxHeaderBytes
/// read in all: a cut that falls the same way every time.
inline constexpr std::size_t kMaxHeaders = 1024;
inline constexpr std::size_t kMaxHeaderBytes = 256u << 20;
/// And at most this many include directives looked up, found or not: a file
/// of many includes that resolve nowhere costs one lookup per directory each.
inline constexpr std::size_t kMaxLookups = 16 * kMaxHeaders;

/// The source's content hash (common/content_hash.h), extended by the
/// headers it includes; a source that includes no header of its project keeps
/// the hash of its text alone. Relative `include_dirs` are taken against
/// `cwd`. nullopt when the source is not a regular file fad can read.
std::optional<std::string> source_digest(const std::string& source, const std::vector<std::string>& include_dirs,
                                         const std::string& cwd);

/// The names of a text's `#include "name"` directives, in order.
std::vector<std::string> quoted_includes(const std::string& text);

}  // namespace fad::client
