// Pure parsers for the kernel's memory files: /proc/meminfo, /proc/pressure/memory,
// cgroup v1 and v2 memory files, /proc/PID/status and /proc/PID/stat.
// They take the file's text so that every layout is tested on fixtures.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace fad {

/// The lines of /proc/meminfo that fad uses, in bytes.
struct MemInfo {
  std::uint64_t total = 0;
  std::uint64_t free = 0;
  std::uint64_t available = 0;
  std::uint64_t swap_total = 0;
  std::uint64_t swap_free = 0;
};

/// Parses /proc/meminfo. Fails if MemTotal or MemAvailable is missing.
Result<MemInfo> parse_meminfo(std::string_view text);

/// Pressure stall information for memory (/proc/pressure/memory or a cgroup's
/// memory.pressure). Averages are percentages; totals are microseconds.
struct Psi {
  double some_avg10 = 0, some_avg60 = 0, some_avg300 = 0;
  std::uint64_t some_total_us = 0;
  double full_avg10 = 0, full_avg60 = 0, full_avg300 = 0;
  std::uint64_t full_total_us = 0;
};

/// Parses PSI text; the "full" line is optional (older kernels omit it).
Result<Psi> parse_psi(std::string_view text);

/// Parses a cgroup memory limit: v2 `memory.max` ("max" means none) or v1
/// `memory.limit_in_bytes` (a value near 2^63 means none). nullopt = no limit.
Result<std::optional<std::uint64_t>> parse_cgroup_limit(std::string_view text);

/// Parses a single-number cgroup file (memory.current, memory.usage_in_bytes,
/// memory.peak, memory.max_usage_in_bytes).
Result<std::uint64_t> parse_cgroup_value(std::string_view text);

/// The kernel OOM killer's kills in a cgroup: the `oom_kill N` line of v1
/// `memory.oom_control` or v2 `memory.events`. nullopt when the line is absent
/// (kernels before 4.13).
std::optional<std::uint64_t> parse_oom_kills(std::string_view text);

/// The value of `key` in a file of "key value" lines (a cgroup's memory.stat,
/// memory.events); nullopt when the key is absent or its value is no number.
std::optional<std::uint64_t> parse_stat_field(std::string_view text, std::string_view key);

/// Finds this process's memory cgroup path in /proc/self/cgroup text: the v1
/// line whose controllers include "memory", else the v2 line "0::/path".
/// nullopt when neither is present.
std::optional<std::string> parse_proc_cgroup_memory_path(std::string_view text, bool* is_v2);

/// VmRSS from /proc/PID/status, in bytes; nullopt if absent (kernel threads, zombies).
std::optional<std::uint64_t> parse_status_rss(std::string_view text);

/// Parent pid from /proc/PID/stat (field 4; the comm field may hold spaces and parens).
std::optional<int> parse_stat_ppid(std::string_view text);

/// Session id from /proc/PID/stat (field 6).
std::optional<int> parse_stat_session(std::string_view text);

/// When the process started, in clock ticks after boot, from /proc/PID/stat (field 22).
std::optional<std::uint64_t> parse_stat_start_ticks(std::string_view text);

/// The state letter from /proc/PID/stat (field 3: 'R', 'S', 'T' stopped, 'Z' zombie, ...).
std::optional<char> parse_stat_state(std::string_view text);

}  // namespace fad
