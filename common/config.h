// The daemon's configuration file (JSON), per the contract's keys, plus the
// documented additions socket, state_dir and kernels_dir.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/slurm_config.h"

namespace fad {

/// The memory kept free for everything that is not fad: bytes or a percentage of total.
struct Reserve {
  std::uint64_t bytes = 0;
  double percent = 10.0;  ///< used when bytes == 0
  /// The reserve in bytes for a machine (or cgroup) with `total` bytes.
  std::uint64_t resolve(std::uint64_t total) const;
};

/// Parses "2G" or "10%". Errors quote the text.
Result<Reserve> parse_reserve(std::string_view text);

struct Config {
  std::optional<std::uint64_t> memory_budget;  ///< nullopt = "auto"
  Reserve reserve;
  bool swap_use = false;         ///< "swap": "use" | "ignore"
  int max_parallel_units = 0;    ///< 0 = no cap beyond memory and cores
  int max_builds_per_user = 32;  ///< queued, running or paused at once; 0 = no limit
  /// Compiles a user's launchers may record per hour, in bursts of as many; 0 = no limit.
  int max_launches_per_user_per_hour = 10000;
  /// Finished builds per user that keep their outputs and logs; 0 = no limit.
  int keep_builds_per_user = 100;
  /// Finished builds per user whose records (fad history) are kept; older
  /// ones are deleted once pruned. 0 = no limit.
  int keep_records_per_user = 10000;
  /// Builds a user may open per hour, in bursts of as many; 0 = no limit.
  int max_builds_per_user_per_hour = 600;
  int nvcc_threads = 0;                          ///< 0 = "auto"
  std::string nvcc;                              ///< empty = nvcc from PATH
  std::uint64_t unit_memory_prior = 5ull << 30;  ///< per nvcc thread, never-seen unit
  int poll_interval_ms = 500;
  std::string log_level = "info";
  /// Finished builds' outputs and logs older than this are deleted (fad prune);
  /// nullopt = "never".
  std::optional<std::int64_t> retention_s = 30 * 86400;
  std::uint64_t log_max_size = 10ull << 20;  ///< --log-file: rotate past this size
  int log_max_files = 3;                     ///< --log-file: rotated files kept
  /// The largest file a unit may write (RLIMIT_FSIZE), its log included: a
  /// compiler printing without end must not fill the disk fadd's database is
  /// on. Far above any object file. 0 = "unlimited".
  std::uint64_t unit_max_file_size = 16ull << 30;
  /// The most a unit's compiler output may grow its log to before fadd ends
  /// it: the limit above is sized for objects, and a unit's log is on the
  /// state disk, where each user's flooding compilers would otherwise add
  /// 16 GiB each. Far above any real compiler's output. 0 = "unlimited".
  std::uint64_t unit_max_log_size = 64ull << 20;
  /// The longest a unit may compile (frozen spells left out); 0 = no limit.
  std::int64_t unit_time_limit_s = 0;
  /// A file of this size fadd keeps in its state dir and deletes when the
  /// disk fills, so the ends of finished compiles can still be recorded
  /// (daemon/disk_reserve.h). 0 = none.
  std::uint64_t state_disk_reserve = 4ull << 20;
  std::optional<std::string> socket;
  /// Who may connect to the socket besides fadd's user: the socket's group
  /// and mode ("0660" lets the group in). Everyone who can connect is known
  /// to fadd by uid and acts only on their own builds.
  std::optional<std::string> socket_group;
  unsigned socket_mode = 0600;
  std::optional<std::string> state_dir;
  std::optional<std::string> kernels_dir;
  std::optional<std::string> cache_dir;         ///< the compile cache; nullopt = the default (see cache_settings.h)
  std::uint64_t cache_size = 10ull << 30;       ///< the compile cache's size limit; 0 = no cache
  ExecutorKind executor = ExecutorKind::local;  ///< where units run: this machine or Slurm
  SlurmConfig slurm;                            ///< the `slurm` object (used with executor "slurm")
};

/// Parses config text. Every problem is collected; the error holds one line per
/// problem, each "FILE:LINE: key 'k': what is wrong" (unknown keys included).
Result<Config> parse_config(std::string_view text, std::string_view filename);

/// Reads and parses a config file; a missing or unreadable file is an error naming it.
Result<Config> load_config(const std::string& path);

/// Parses a socket mode: 3 or 4 octal digits, read and write bits only, the
/// owner's included ("0600", "0660", "0666").
Result<unsigned> parse_socket_mode(std::string_view text);

/// Valid log levels: trace debug info warn error.
bool is_log_level(std::string_view level);

}  // namespace fad
