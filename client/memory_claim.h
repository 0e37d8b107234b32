// Compiles hold machine-wide memory claims while they run, so launchers keep
// memory safe even when fadd cannot be reached: a claim is a small file in a
// shared directory (default /tmp/fad-claims, mode 1777; $FAD_CLAIMS_DIR
// elsewhere), flock'ed by its owner for as long as its compile runs, holding
// the bytes the compile is expected to need. A claim whose lock is free
// belongs to a process that died and no longer counts.
//
// Every launched compile claims memory: one fadd admitted claims fadd's
// estimate; without fadd a launcher waits, under a directory-wide lock, until
// the fallback admits it (fallback_admits), then claims its prior. Every user
// can write the directory and hold its lock, so neither is trusted to stop a
// compile: the lock is waited for briefly, other users' claims for minutes.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/config.h"

namespace fad::client {

/// Memory as the fallback sees it.
struct FallbackView {
  std::uint64_t available = 0;        ///< MemAvailable, or less in a memory cgroup (limit - working set)
  std::uint64_t reserve = 0;          ///< kept free for everything else
  std::vector<std::uint64_t> claims;  ///< live claims of running compiles
};

/// The fallback's rule, pure: a compile needing `need` starts when no other
/// compile holds a claim (one at a time always runs: a build never stalls), or
/// when every claim plus `need` fits in what is available beyond the reserve.
/// The claims are counted whole although running compiles already hold part
/// of them: without fadd's profiles, erring on the safe side.
bool fallback_admits(const FallbackView& view, std::uint64_t need);

/// Reads the machine's (and this process's memory cgroup's) available memory
/// and the reserve for it.
FallbackView read_fallback_memory(const Reserve& reserve);

/// A held claim; released when destroyed.
class MemoryClaim {
 public:
  /// Registers a claim of `bytes` without asking (the compile was admitted by
  /// fadd). nullopt when the directory cannot be used (then nothing is claimed).
  static std::optional<MemoryClaim> hold(const std::string& dir, std::uint64_t bytes);

  /// Waits until fallback_admits lets a compile of `bytes` start, then claims
  /// it. `view` reads memory (read_fallback_memory in production); `on_wait`
  /// is told, once, why it waits (and again if it starts past `patience`).
  /// Other users' claims are files anyone can make, so one whose own user
  /// holds no claim waits at most `patience` for theirs, then starts: they
  /// can slow its compiles down, not stop them. nullopt when the directory
  /// cannot be used.
  static std::optional<MemoryClaim> admit(const std::string& dir, std::uint64_t bytes,
                                          const std::function<FallbackView()>& view,
                                          const std::function<void(const std::string&)>& on_wait,
                                          std::chrono::milliseconds patience = kOtherUsersPatience);
  static constexpr std::chrono::milliseconds kOtherUsersPatience = std::chrono::minutes(5);

  /// The claims live in `dir` now (stale ones skipped), for tests and
  /// messages; `own`, when given, counts those of the calling user.
  static std::vector<std::uint64_t> live_claims(const std::string& dir, std::size_t* own = nullptr);

  MemoryClaim(MemoryClaim&& other) noexcept;
  MemoryClaim& operator=(MemoryClaim&&) = delete;
  ~MemoryClaim();

 private:
  MemoryClaim() = default;
  /// Creates a locked claim file; the caller holds the directory lock.
  static std::optional<MemoryClaim> create_locked(const std::string& dir, std::uint64_t bytes);
  std::string path_;
  int fd_ = -1;
};

/// $FAD_CLAIMS_DIR, else /tmp/fad-claims (created mode 1777: every user's
/// compiles count); a per-user directory when that one is unusable.
std::string claims_dir();
/// Whether `uid` may keep its claims in `dir`: a real directory (no link),
/// its own or sticky, and for root owned by root.
bool usable_claims_dir(const std::string& dir, uid_t uid);

}  // namespace fad::client
