// The two kinds of file in the compile cache, as bytes. A manifest lists, for
// one call key, the header sets seen with it and the result each gave; a
// result holds what one compile produced. Both end in a SHA-256 of everything
// before it, so a torn or corrupted file is recognised, never restored. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace fad {

/// What a compile produced.
struct CompileResult {
  std::string object;
  std::optional<std::string> depfile_template;  ///< see depfile.h; nullopt when the call wrote none
  std::string stdout_text;
  std::string stderr_text;
  bool operator==(const CompileResult&) const = default;
};

/// One header set of a call key: every file the compile read (as the
/// dependency file named it, the project root marked) with its content's
/// SHA-256, and the key of the result it gave.
struct CacheManifestEntry {
  std::string result_key;
  std::vector<std::pair<std::string, std::string>> files;  ///< (path, sha256 hex)
  bool operator==(const CacheManifestEntry&) const = default;
};

struct CacheManifest {
  std::vector<CacheManifestEntry> entries;  ///< newest first
  bool operator==(const CacheManifest&) const = default;
};

std::string encode_result(const CompileResult& result);
/// Fails, saying why, for anything but an intact result file.
Result<CompileResult> decode_result(std::string_view bytes);

std::string encode_manifest(const CacheManifest& manifest);
/// Fails, saying why, for anything but an intact manifest file.
Result<CacheManifest> decode_manifest(std::string_view bytes);

}  // namespace fad
