// What a compiler (nvcc or an nvcc-compatible program) is: its resolved path,
// version line and the archs it can build. Probing runs `--version` and
// `--list-gpu-arch` as child processes read asynchronously on the event loop,
// with a time limit, so a compiler that hangs delays only the submit that named
// it. A root fadd probes a user's compiler as that user.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "common/arch.h"
#include "common/result.h"
#include "daemon/credentials.h"

namespace fad {

struct Toolchain {
  std::string path;     ///< absolute
  std::string version;  ///< last line of `--version` ("Build cuda_13.0.r13.0/..."), at most 512 bytes
  std::vector<Arch> archs;
};

/// Finds `name` on PATH (or /usr/local/cuda/bin) when it has no slash.
Result<std::string> resolve_executable(const std::string& name);

/// A toolchain from the outputs of `--version` and `--list-gpu-arch`.
Result<Toolchain> toolchain_from_output(const std::string& path, const std::string& version_output,
                                        const std::string& arch_list_output);

/// Which compiler to probe, and as whom.
struct ToolchainQuery {
  std::string nvcc;                   ///< as named by the client or the config
  std::optional<Credentials> run_as;  ///< probe as this user; nullopt: as fadd
};

using ToolchainCallback = std::function<void(Result<Toolchain>)>;

/// Probes compilers asynchronously on `io` and caches the results per
/// (resolved path, user), revalidated by the file's size and mtime. Concurrent
/// requests for one compiler share a probe; at most `max_in_flight` compilers
/// are probed at once, at most kMaxInFlightPerUser of them for one user (more
/// get an error at once).
class ToolchainProber {
 public:
  /// Answers remembered: the most recently used ones. One user naming endless
  /// paths (a//n, a/./n, ...) must not grow fadd's memory without end.
  static constexpr std::size_t kMaxCached = 64;
  /// One user's probes of slow "compilers" must leave room for everyone else's.
  static constexpr std::size_t kMaxInFlightPerUser = 2;

  explicit ToolchainProber(boost::asio::io_context& io, std::chrono::milliseconds timeout = std::chrono::seconds(30),
                           std::size_t max_in_flight = 8);
  /// Kills probes still running; their callbacks never run.
  ~ToolchainProber();
  ToolchainProber(const ToolchainProber&) = delete;
  ToolchainProber& operator=(const ToolchainProber&) = delete;

  /// Calls `done` on the event loop with the toolchain or why not. May call it
  /// before returning (a cached answer, an unresolvable name).
  void get(const ToolchainQuery& query, ToolchainCallback done);

  /// Compilers being probed now.
  std::size_t in_flight() const { return probes_.size(); }
  /// Answers remembered now.
  std::size_t cached() const { return cache_.size(); }

 private:
  struct Key {
    std::string path;
    uid_t uid;
    auto operator<=>(const Key&) const = default;
  };
  struct Cached {
    Toolchain toolchain;
    std::int64_t size = 0;
    std::int64_t mtime_ns = 0;
    std::uint64_t used = 0;  ///< when last answered from (uses_ then)
  };
  struct Probe;
  void finish(const Key& key, Result<Toolchain> result, std::int64_t size, std::int64_t mtime_ns);

  boost::asio::io_context& io_;
  std::chrono::milliseconds timeout_;
  std::size_t max_in_flight_;
  std::map<Key, Cached> cache_;
  std::uint64_t uses_ = 0;
  std::map<Key, std::shared_ptr<Probe>> probes_;
  std::shared_ptr<bool> alive_;
};

}  // namespace fad
