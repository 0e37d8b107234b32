// What a compiler (nvcc or an nvcc-compatible program) is: its resolved path,
// version line and the archs it can build. Probing runs `--version` and
// `--list-gpu-arch` as child processes read asynchronously on the event loop,
// with a time limit, so a compiler that hangs delays only the submit that named
// it. Finding the file (PATH, access, stat) runs on a thread of its own: a path
// on a network filesystem that stopped answering blocks that thread, never the
// event loop. A root fadd probes a user's compiler as that user.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "common/arch.h"
#include "common/result.h"
#include "daemon/credentials.h"

namespace fad {

class CgroupManager;

struct Toolchain {
  std::string path;     ///< absolute
  std::string version;  ///< last line of `--version` ("Build cuda_13.0.r13.0/..."), at most 512 bytes
  std::vector<Arch> archs;
  /// The binary's and its nvcc.profile's size and mtime, as found when this
  /// answer was given (compiler_file_identity): part of the compile cache's key.
  std::string file_identity;
};

/// Finds `name` on PATH (or /usr/local/cuda/bin) when it has no slash.
Result<std::string> resolve_executable(const std::string& name);

/// Where a compiler is and which version of the file: what the prober learns
/// before running it.
struct CompilerFile {
  std::string path;  ///< absolute
  std::int64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::string identity;  ///< compiler_file_identity(path)
};

/// "PATH SIZE MTIME" lines for the compiler and the nvcc.profile beside it
/// ("PATH absent" where missing): which files the compiler is, without
/// opening them. File system calls that may block.
std::string compiler_file_identity(const std::string& path);

/// Resolves and examines `name` (file system calls that may block). `as_other`:
/// fadd answers for another user, who must not learn whether a path fadd can
/// see exists: a path they named is passed on unchecked, for their own probe
/// to fail as it would for them.
Result<CompilerFile> locate_compiler(const std::string& name, bool as_other);

/// A toolchain from the outputs of `--version` and `--list-gpu-arch`.
Result<Toolchain> toolchain_from_output(const std::string& path, const std::string& version_output,
                                        const std::string& arch_list_output);

/// Which compiler to probe, and as whom.
struct ToolchainQuery {
  std::string nvcc;                   ///< as named by the client or the config
  std::optional<Credentials> run_as;  ///< probe as this user; nullopt: as fadd
};

using ToolchainCallback = std::function<void(Result<Toolchain>)>;
/// locate_compiler, or a stand-in (tests: one that blocks like a hung mount).
using CompilerLocator = std::function<Result<CompilerFile>(const std::string& name, bool as_other)>;

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
  /// Threads looking for compilers for longer than `slow_lookup`, in all and
  /// for one user. A thread blocked on a hung mount stays blocked until the
  /// mount answers; past these, fadd refuses instead of starting more.
  static constexpr std::size_t kMaxLocating = 16;
  static constexpr std::size_t kMaxLocatingPerUser = 4;

  /// `exec_helper`: fad-exec, through which probes start (exec_helper.h).
  explicit ToolchainProber(boost::asio::io_context& io, std::chrono::milliseconds timeout = std::chrono::seconds(30),
                           std::size_t max_in_flight = 8, std::string exec_helper = {},
                           CompilerLocator locator = locate_compiler,
                           std::chrono::milliseconds slow_lookup = std::chrono::seconds(1));
  /// Kills probes still running; their callbacks never run.
  ~ToolchainProber();
  ToolchainProber(const ToolchainProber&) = delete;
  ToolchainProber& operator=(const ToolchainProber&) = delete;

  /// Calls `done` on the event loop with the toolchain or why not. May call it
  /// before returning (a cached answer, an unresolvable name).
  void get(const ToolchainQuery& query, ToolchainCallback done);
  /// Runs each probe in a cgroup of its own made here (async_capture.h).
  void set_cgroups(CgroupManager* cgroups) { cgroups_ = cgroups; }

  /// Compilers being probed now.
  std::size_t in_flight() const { return probes_.size(); }
  /// Compiler names being looked for now (threads still inside the lookup).
  std::size_t locating() const;
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
  struct Bridge;
  /// A get() whose compiler's file is being looked for.
  struct Lookup {
    ToolchainQuery query;
    ToolchainCallback done;
  };
  /// get(), once lookup `id` found the compiler's file (or not), on the event loop.
  void located(std::uint64_t id, Result<CompilerFile> file);
  void answer_soon(Result<Toolchain> result, ToolchainCallback done);
  void finish(const Key& key, Result<Toolchain> result, std::int64_t size, std::int64_t mtime_ns);

  boost::asio::io_context& io_;
  std::chrono::milliseconds timeout_;
  std::size_t max_in_flight_;
  std::map<Key, Cached> cache_;
  std::uint64_t uses_ = 0;
  std::map<Key, std::shared_ptr<Probe>> probes_;
  std::string exec_helper_;
  CgroupManager* cgroups_ = nullptr;
  CompilerLocator locator_;
  std::chrono::milliseconds slow_lookup_;
  std::map<std::uint64_t, Lookup> lookups_;  ///< waiting for their threads' answers
  std::uint64_t lookup_ids_ = 0;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> locating_work_;
  std::shared_ptr<bool> alive_;
  std::shared_ptr<Bridge> bridge_;  ///< how a locating thread reaches the loop, while this prober lives
};

}  // namespace fad
