// The configuration file: a JSON object of known keys. Every problem is
// collected and reported at once, each with its file and line, so a user fixes
// a config in one pass instead of one error per daemon start.
#include "common/config.h"

#include "common/json_fields.h"

#include <grp.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/duration.h"
#include "common/file_read.h"
#include "common/paths.h"
#include "common/size.h"
#include "common/suggest.h"
#include "common/text.h"

namespace fad {
namespace {

using json = nlohmann::json;

constexpr const char* kKnownKeys =
    "memory_budget, reserve, swap, max_parallel_units, max_builds_per_user, max_launches_per_user_per_hour, "
    "keep_builds_per_user, keep_records_per_user, max_builds_per_user_per_hour, "
    "nvcc_threads, nvcc, unit_memory_prior, poll_interval_ms, log_level, socket, socket_group, socket_mode, state_dir, "
    "kernels_dir, cache_dir, cache_size, "
    "retention, log_max_size, log_max_files, unit_max_file_size, unit_max_log_size, unit_time_limit, "
    "state_disk_reserve, executor, "
    "slurm";

struct Problem {
  std::size_t offset;  ///< where in the text, for file order
  std::string message;
};

/// 1-based line of byte `offset` in `text`.
std::size_t line_of(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1 +
         static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

/// Offset of `"key"` followed by optional whitespace and ':' in the raw text;
/// with `skip`, of the one after `skip` such places.
std::size_t key_offset(std::string_view text, const std::string& key, int skip = 0) {
  std::string quoted = "\"" + key + "\"";
  for (std::size_t pos = text.find(quoted); pos != std::string_view::npos; pos = text.find(quoted, pos + 1)) {
    std::size_t after = pos + quoted.size();
    while (after < text.size() && std::isspace(static_cast<unsigned char>(text[after]))) ++after;
    if (after < text.size() && text[after] == ':' && skip-- == 0) return pos;
  }
  return 0;  // e.g. a key written with escapes: report line 1 rather than nothing
}

/// A size value as the user wrote it: "4G" for "4G", "12" for 12.
std::string written_size(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

/// A size written as a string ("4G") or a non-negative integer of bytes.
Result<std::uint64_t> size_value(const json& v) {
  if (v.is_string()) return parse_size(v.get<std::string>());
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(v.get<std::int64_t>());
  return make_error("expected a size such as \"4G\" or a number of bytes, got " + printable(v.dump()));
}

/// A positive age such as `example` ("30d"), or the word `off` that turns the
/// limit off (nullopt).
Result<std::optional<std::int64_t>> age_or_off(const json& v, const std::string& off, const std::string& example) {
  if (v == off) return std::optional<std::int64_t>();
  const std::string alternative = " (or \"" + off + "\")";
  if (!v.is_string())
    return make_error("expected an age such as \"" + example + "\" or \"" + off + "\", got " + printable(v.dump()));
  Result<std::int64_t> age = parse_age(v.get<std::string>());
  if (!age) return make_error(age.error() + alternative);
  if (*age == 0) return make_error("must be more than 0" + alternative);
  return std::optional<std::int64_t>(*age);
}

/// A count where 0 means no limit (max_parallel_units, the per-user limits):
/// into `out`, or why not.
std::string set_limit(const json& v, int& out) {
  auto n = integer_in(v, 0, std::numeric_limits<int>::max());
  if (!n) return "expected an integer >= 0 (0 = no limit), got " + printable(v.dump());
  out = static_cast<int>(*n);
  return "";
}

/// Applies one key's value to `config`; returns what is wrong, or "" when fine.
std::string apply_key(Config& config, const std::string& key, const json& v) {
  if (key == "memory_budget") {
    if (v.is_string() && v.get<std::string>() == "auto") {
      config.memory_budget.reset();
      return "";
    }
    Result<std::uint64_t> size = size_value(v);
    if (!size) return size.error() + " (or \"auto\")";
    if (auto problem = memory_size_problem(*size, written_size(v), "budget"); !problem.empty())
      return problem + " (or \"auto\")";
    config.memory_budget = *size;
  } else if (key == "reserve") {
    if (v.is_number_integer()) {
      Result<std::uint64_t> size = size_value(v);
      if (!size) return size.error();
      config.reserve = Reserve{*size, 0.0};
    } else if (v.is_string()) {
      Result<Reserve> reserve = parse_reserve(v.get<std::string>());
      if (!reserve) return reserve.error();
      config.reserve = *reserve;
    } else {
      return "expected a size such as \"2G\" or a percentage such as \"10%\", got " + printable(v.dump());
    }
  } else if (key == "swap") {
    if (v == "use")
      config.swap_use = true;
    else if (v == "ignore")
      config.swap_use = false;
    else
      return "expected \"ignore\" or \"use\", got " + printable(v.dump());
  } else if (key == "max_parallel_units") {
    return set_limit(v, config.max_parallel_units);
  } else if (key == "max_builds_per_user") {
    return set_limit(v, config.max_builds_per_user);
  } else if (key == "max_launches_per_user_per_hour") {
    return set_limit(v, config.max_launches_per_user_per_hour);
  } else if (key == "max_builds_per_user_per_hour") {
    return set_limit(v, config.max_builds_per_user_per_hour);
  } else if (key == "keep_builds_per_user") {
    return set_limit(v, config.keep_builds_per_user);
  } else if (key == "keep_records_per_user") {
    return set_limit(v, config.keep_records_per_user);
  } else if (key == "nvcc_threads") {
    if (v == "auto") {
      config.nvcc_threads = 0;
      return "";
    }
    auto n = integer_in(v, 1, 64);
    if (!n) return "expected \"auto\" or an integer from 1 to 64, got " + printable(v.dump());
    config.nvcc_threads = static_cast<int>(*n);
  } else if (key == "nvcc") {
    if (!v.is_string() || v.get<std::string>().empty())
      return "expected a non-empty string (the nvcc program), got " + printable(v.dump());
    if (auto problem = program_path_problem(v.get<std::string>()); !problem.empty()) return problem;
    config.nvcc = v.get<std::string>();
  } else if (key == "unit_memory_prior") {
    Result<std::uint64_t> size = size_value(v);
    if (!size) return size.error();
    if (auto problem = memory_size_problem(*size, written_size(v), "estimate"); !problem.empty()) return problem;
    config.unit_memory_prior = *size;
  } else if (key == "poll_interval_ms") {
    auto n = integer_in(v, 50, 60000);
    if (!n) return "expected an integer from 50 to 60000, got " + printable(v.dump());
    config.poll_interval_ms = static_cast<int>(*n);
  } else if (key == "log_level") {
    if (!v.is_string() || !is_log_level(v.get<std::string>())) {
      return "expected one of trace, debug, info, warn, error, got " + printable(v.dump());
    }
    config.log_level = v.get<std::string>();
  } else if (key == "socket_mode") {
    if (!v.is_string()) return "expected an octal mode string such as \"0660\", got " + printable(v.dump());
    auto mode = parse_socket_mode(v.get<std::string>());
    if (!mode) return mode.error();
    config.socket_mode = *mode;
  } else if (key == "socket_group") {
    if (!v.is_string() || v.get<std::string>().empty()) return "expected a group name, got " + printable(v.dump());
    const std::string name = v.get<std::string>();
    group g{};
    group* found = nullptr;
    std::vector<char> buf(16384);
    if (::getgrnam_r(name.c_str(), &g, buf.data(), buf.size(), &found) != 0 || !found)
      return "no group named '" + name + "' on this machine";
    config.socket_group = name;
  } else if (key == "retention") {
    Result<std::optional<std::int64_t>> age = age_or_off(v, "never", "30d");
    if (!age) return age.error();
    config.retention_s = *age;
  } else if (key == "log_max_size") {
    Result<std::uint64_t> size = size_value(v);
    if (!size) return size.error();
    if (*size < 4096) return "must be at least 4K";
    config.log_max_size = *size;
  } else if (key == "log_max_files") {
    auto n = integer_in(v, 1, 100);
    if (!n) return "expected an integer from 1 to 100, got " + printable(v.dump());
    config.log_max_files = static_cast<int>(*n);
  } else if (key == "unit_max_file_size" || key == "unit_max_log_size") {
    std::uint64_t& limit = key == "unit_max_file_size" ? config.unit_max_file_size : config.unit_max_log_size;
    if (v == "unlimited") {
      limit = 0;
      return "";
    }
    Result<std::uint64_t> size = size_value(v);
    if (!size) return size.error() + " (or \"unlimited\")";
    if (*size < (1ull << 20)) return "must be at least 1M (or \"unlimited\")";
    limit = *size;
  } else if (key == "unit_time_limit") {
    Result<std::optional<std::int64_t>> age = age_or_off(v, "unlimited", "6h");
    if (!age) return age.error();
    config.unit_time_limit_s = age->value_or(0);
  } else if (key == "state_disk_reserve") {
    Result<std::uint64_t> size = size_value(v);
    if (!size) return size.error() + " (0 keeps no reserve)";
    if (*size > (1ull << 30)) return "must be at most 1G (0 keeps no reserve)";
    config.state_disk_reserve = *size;
  } else if (key == "cache_size") {
    Result<std::uint64_t> size = size_value(v);
    if (!size) return size.error() + " (0 turns the compile cache off)";
    config.cache_size = *size;
  } else if (key == "socket" || key == "state_dir" || key == "kernels_dir" || key == "cache_dir") {
    if (!v.is_string() || v.get<std::string>().empty())
      return "expected a non-empty path string, got " + printable(v.dump());
    if (v.get<std::string>().find('\0') != std::string::npos) return "a path with a NUL byte";
    // fadd (in / under systemd) and every client (in the user's directory)
    // would each resolve a relative path against its own working directory:
    // two places, and fad would never find fadd's socket.
    if (v.get<std::string>()[0] == '~')
      return "must be an absolute path (no shell reads this file, so '~' is not your home directory), got " +
             printable(v.dump());
    if (v.get<std::string>()[0] != '/')
      return "must be an absolute path (a relative one names another place from each program's working "
             "directory), got " +
             printable(v.dump());
    std::optional<std::string>& field = key == "socket"        ? config.socket
                                        : key == "state_dir"   ? config.state_dir
                                        : key == "kernels_dir" ? config.kernels_dir
                                                               : config.cache_dir;
    field = v.get<std::string>();
  } else if (key == "executor") {
    return parse_executor(v, config.executor);
  } else if (key == "slurm") {
    return parse_slurm_config(v, config.slurm);
  } else {
    return unknown_key(key, kKnownKeys);
  }
  return "";
}

}  // namespace

std::uint64_t Reserve::resolve(std::uint64_t total) const {
  if (bytes > 0) return bytes;
  return static_cast<std::uint64_t>(static_cast<long double>(total) * percent / 100.0L);
}

Result<Reserve> parse_reserve(std::string_view text) {
  std::string s(text);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  if (!s.empty() && s.back() == '%') {
    std::string number = s.substr(0, s.size() - 1);
    char* end = nullptr;
    errno = 0;
    double pct = std::strtod(number.c_str(), &end);
    bool is_number = !number.empty() && end == number.c_str() + number.size() && errno == 0 &&
                     (std::isdigit(static_cast<unsigned char>(number.front())) || number.front() == '.');
    if (!is_number || !std::isfinite(pct) || pct <= 0 || pct >= 100) {
      return make_error("invalid reserve '" + printable(text) +
                        "': a percentage must be more than 0% and less than 100%");
    }
    return Reserve{0, pct};
  }
  Result<std::uint64_t> size = parse_size(text);
  if (!size) return make_error(size.error() + " or a percentage such as 10%");
  return Reserve{*size, 0.0};
}

Result<unsigned> parse_socket_mode(std::string_view text) {
  const std::string quoted = "'" + printable(text) + "'";
  if (text.size() < 3 || text.size() > 4)
    return make_error("expected 3 or 4 octal digits such as \"0660\", got " + quoted);
  unsigned mode = 0;
  for (char c : text) {
    if (c < '0' || c > '7') return make_error("expected octal digits such as \"0660\", got " + quoted);
    mode = mode * 8 + static_cast<unsigned>(c - '0');
  }
  if (mode & ~0666u) return make_error("a socket mode has read and write bits only (at most 0666), got " + quoted);
  if ((mode & 0600) != 0600) return make_error("the owner must keep read and write (0600 at least), got " + quoted);
  return mode;
}

bool is_log_level(std::string_view level) {
  return level == "trace" || level == "debug" || level == "info" || level == "warn" || level == "error";
}

Result<Config> parse_config(std::string_view text, std::string_view filename) {
  const std::string file(filename);
  json root;
  std::vector<RepeatedKey> repeated;
  try {
    root = parse_noting_repeats(text, repeated);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] " tag; the rest is for humans.
    if (std::size_t tag = what.find("] "); what.rfind("[json.exception", 0) == 0 && tag != std::string::npos) {
      what = what.substr(tag + 2);
    }
    std::size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    return make_error(file + ":" + std::to_string(line_of(text, offset)) + ": invalid JSON: " + what);
  }
  if (!root.is_object()) {
    std::size_t first = text.find_first_not_of(" \t\r\n");
    return make_error(file + ":" + std::to_string(line_of(text, first == std::string_view::npos ? 0 : first)) +
                      ": the config must be a JSON object ({...}), got " + root.type_name());
  }

  Config config;
  std::vector<Problem> problems;
  for (const auto& [key, occurrence] : repeated) {
    std::size_t offset = key_offset(text, key, occurrence);
    problems.push_back({offset, file + ":" + std::to_string(line_of(text, offset)) + ": key '" + printable(key) +
                                    "' is set twice (only the last would count): keep one"});
  }
  for (const auto& [key, value] : root.items()) {
    std::string wrong;
    try {
      wrong = apply_key(config, key, value);
    } catch (const json::exception& e) {  // defensive: a get<> on an unexpected type
      wrong = e.what();
    }
    if (wrong.empty()) continue;
    std::size_t offset = key_offset(text, key);
    problems.push_back({offset, file + ":" + std::to_string(line_of(text, offset)) + ": key '" + key + "': " + wrong});
  }
  if (problems.empty()) return config;
  std::stable_sort(problems.begin(), problems.end(),
                   [](const Problem& a, const Problem& b) { return a.offset < b.offset; });
  std::string message;
  for (const Problem& p : problems) {
    if (!message.empty()) message += '\n';
    message += p.message;
  }
  return make_error(message);
}

Result<Config> load_config(const std::string& path) {
  // A config is a few hundred bytes; the cap only keeps a wrong path (a device,
  // a huge file) from hanging or exhausting whoever reads it.
  auto text = read_regular_file(path, kSmallFileCap, "config file");
  if (!text) return Error{text.error()};
  return parse_config(*text, path);
}

}  // namespace fad
