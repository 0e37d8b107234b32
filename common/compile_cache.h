// The compile cache's directory: manifests and results (see cache_entry.h)
// under content-addressed names, written atomically (a temporary file in the
// same directory, fsync, rename) so that a crash or two writers never leave a
// torn file; every file is checked on read, and a corrupted one is removed and
// counted. The directory has a size limit kept by least-recently-used eviction
// (a hit refreshes its files' modification time). Used by the launcher (fad
// launch, fad-nvcc, fad run: compiles with the user's own rights) and by fadd
// (bundled units) alike.
//
// Sharing: a directory whose group may write it (the ccache way: chgrp a
// group, chmod 2775) is shared by everyone in that group: fad then creates its
// subdirectories setgid and group-writable and its files group-writable,
// whatever the umask. Everyone who can write the directory is trusted: a
// checksum catches corruption, not a colleague writing wrong objects.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "common/cache_entry.h"
#include "common/result.h"

namespace fad {

struct CacheSettings {
  std::string dir;
  std::uint64_t max_bytes = 0;  ///< 0: the cache is off
};

/// What `fad cache stats` shows. Counters add up over the directory's life
/// (or since `fad cache clear`), across every user and process of it.
struct CacheStats {
  std::string dir;
  bool shared = false;  ///< group-writable (see above)
  std::uint64_t max_bytes = 0;
  std::uint64_t size_bytes = 0;  ///< results and manifests, measured
  std::uint64_t results = 0;
  std::uint64_t manifests = 0;
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t uncacheable = 0;
  std::uint64_t stored = 0;
  std::uint64_t evicted = 0;
  std::uint64_t corrupt = 0;  ///< corrupted files found, removed (and recompiled)
};

enum class CacheEvent { hit, miss, uncacheable, stored, corrupt };

class CompileCache {
 public:
  /// Opens the directory, creating it (and its parents) when missing. Fails
  /// with a message naming the directory and the reason.
  static Result<std::unique_ptr<CompileCache>> open(const CacheSettings& settings);
  ~CompileCache();
  CompileCache(const CompileCache&) = delete;
  CompileCache& operator=(const CompileCache&) = delete;

  const std::string& dir() const { return settings_.dir; }

  /// The manifest of a call key; nullopt when there is none (or it was
  /// corrupted: then it is removed and counted).
  std::optional<CacheManifest> manifest(const std::string& call_key);
  Status put_manifest(const std::string& call_key, const CacheManifest& manifest);

  /// A stored result, its use recorded for eviction; nullopt when there is
  /// none or it was corrupted (removed and counted).
  std::optional<CompileResult> result(const std::string& result_key);
  /// Stores a result (counted as stored) and evicts least recently used files
  /// when the directory grew past its limit. A result larger than half the
  /// limit is not stored.
  Status put_result(const std::string& result_key, const CompileResult& result);

  /// Small checked notes beside the entries (compiler identities); nullopt
  /// when absent or damaged.
  std::optional<std::string> note(const std::string& name);
  Status put_note(const std::string& name, const std::string& text);

  void count(CacheEvent event);
  Result<CacheStats> stats();
  /// Removes every entry and note and zeroes the counters.
  Status clear();

  /// Evicts least recently used files until the directory holds at most 90%
  /// of its limit (called by put_result; public for tests and tools).
  void evict();

 private:
  explicit CompileCache(CacheSettings settings);
  std::string path_of(char kind, const std::string& key) const;
  Status write_file(const std::string& path, const std::string& bytes);
  std::optional<std::string> read_file(const std::string& path);
  void make_dir(const std::filesystem::path& dir) const;
  void add_size(std::int64_t delta);

  CacheSettings settings_;
  bool shared_ = false;
  int lock_fd_ = -1;
};

}  // namespace fad
