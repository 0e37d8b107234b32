// Parsers for the kernel's memory accounting files. They only see text, so the
// daemon's memory probe stays a thin reader and every layout is fixture-tested.
#include "common/meminfo.h"

#include <cctype>
#include <charconv>
#include <vector>

namespace fad {
namespace {

// cgroup v1 reports "no limit" as the largest page-aligned int64
// (9223372036854771712); anything this large is no real machine's memory.
constexpr std::uint64_t kCgroupNoLimit = 1ull << 62;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return lines;
}

/// The whole of `s` as an unsigned number.
std::optional<std::uint64_t> to_u64(std::string_view s) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<double> to_double(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

/// "Key:   1234 kB" -> bytes, for a line starting with `key` + ':'; nullopt otherwise.
std::optional<std::uint64_t> kb_field(std::string_view line, std::string_view key) {
  if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':') return std::nullopt;
  std::string_view rest = trim(line.substr(key.size() + 1));
  std::uint64_t mult = 1;
  if (rest.size() >= 2 && rest.substr(rest.size() - 2) == "kB") {
    mult = 1024;  // the kernel's "kB" is KiB
    rest = trim(rest.substr(0, rest.size() - 2));
  }
  std::optional<std::uint64_t> v = to_u64(rest);
  if (!v) return std::nullopt;
  return *v * mult;
}

}  // namespace

Result<MemInfo> parse_meminfo(std::string_view text) {
  MemInfo info;
  bool have_total = false, have_available = false;
  for (std::string_view line : split_lines(text)) {
    if (auto v = kb_field(line, "MemTotal"))
      info.total = *v, have_total = true;
    else if (auto v = kb_field(line, "MemFree"))
      info.free = *v;
    else if (auto v = kb_field(line, "MemAvailable"))
      info.available = *v, have_available = true;
    else if (auto v = kb_field(line, "SwapTotal"))
      info.swap_total = *v;
    else if (auto v = kb_field(line, "SwapFree"))
      info.swap_free = *v;
  }
  if (!have_total) return make_error("/proc/meminfo has no MemTotal line");
  if (!have_available) return make_error("/proc/meminfo has no MemAvailable line (Linux 3.14 or newer is needed)");
  return info;
}

Result<Psi> parse_psi(std::string_view text) {
  Psi psi;
  bool have_some = false;
  for (std::string_view line : split_lines(text)) {
    line = trim(line);
    if (line.empty()) continue;
    std::size_t space = line.find(' ');
    std::string_view kind = line.substr(0, space);
    if (kind != "some" && kind != "full") return make_error("unexpected PSI line '" + std::string(line) + "'");
    bool some = kind == "some";
    double* avg10 = some ? &psi.some_avg10 : &psi.full_avg10;
    double* avg60 = some ? &psi.some_avg60 : &psi.full_avg60;
    double* avg300 = some ? &psi.some_avg300 : &psi.full_avg300;
    std::uint64_t* total = some ? &psi.some_total_us : &psi.full_total_us;
    int seen = 0;
    std::string_view rest = space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
    while (!rest.empty()) {
      std::size_t sp = rest.find(' ');
      std::string_view field = rest.substr(0, sp);
      rest = sp == std::string_view::npos ? std::string_view() : trim(rest.substr(sp + 1));
      std::size_t eq = field.find('=');
      if (eq == std::string_view::npos) continue;
      std::string_view name = field.substr(0, eq), value = field.substr(eq + 1);
      bool ok = true;
      if (name == "total") {
        auto v = to_u64(value);
        ok = v.has_value();
        if (ok) *total = *v;
      } else {
        double* avg = name == "avg10" ? avg10 : name == "avg60" ? avg60 : name == "avg300" ? avg300 : nullptr;
        if (!avg) continue;  // an unknown field from a newer kernel
        auto v = to_double(value);
        ok = v.has_value();
        if (ok) *avg = *v;
      }
      if (!ok) return make_error("bad PSI value '" + std::string(field) + "'");
      ++seen;
    }
    if (seen < 4) return make_error("incomplete PSI line '" + std::string(line) + "'");
    have_some = have_some || some;
  }
  if (!have_some) return make_error("PSI text has no 'some' line");
  return psi;
}

Result<std::optional<std::uint64_t>> parse_cgroup_limit(std::string_view text) {
  std::string_view s = trim(text);
  if (s == "max") return std::optional<std::uint64_t>();
  std::optional<std::uint64_t> v = to_u64(s);
  if (!v) return make_error("bad cgroup memory limit '" + std::string(s) + "'");
  if (*v >= kCgroupNoLimit) return std::optional<std::uint64_t>();
  return v;
}

Result<std::uint64_t> parse_cgroup_value(std::string_view text) {
  std::string_view s = trim(text);
  std::optional<std::uint64_t> v = to_u64(s);
  if (!v) return make_error("bad cgroup value '" + std::string(s) + "'");
  return *v;
}

std::optional<std::uint64_t> parse_oom_kills(std::string_view text) {
  while (!text.empty()) {
    const auto eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    constexpr std::string_view key = "oom_kill ";
    if (line.substr(0, key.size()) == key) return to_u64(trim(line.substr(key.size())));
  }
  return std::nullopt;
}

std::optional<std::uint64_t> parse_stat_field(std::string_view text, std::string_view key) {
  while (!text.empty()) {
    const auto eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ' ')
      return to_u64(trim(line.substr(key.size() + 1)));
  }
  return std::nullopt;
}

std::optional<std::string> parse_proc_cgroup_memory_path(std::string_view text, bool* is_v2) {
  std::optional<std::string> v2_path;
  for (std::string_view line : split_lines(text)) {
    line = trim(line);
    // "ID:CONTROLLERS:PATH"; PATH may itself hold ':'.
    std::size_t c1 = line.find(':');
    if (c1 == std::string_view::npos) continue;
    std::size_t c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    std::string_view id = line.substr(0, c1);
    std::string_view controllers = line.substr(c1 + 1, c2 - c1 - 1);
    std::string_view path = line.substr(c2 + 1);
    if (id == "0" && controllers.empty()) {
      v2_path = std::string(path);
      continue;
    }
    while (!controllers.empty()) {
      std::size_t comma = controllers.find(',');
      if (controllers.substr(0, comma) == "memory") {
        if (is_v2) *is_v2 = false;
        return std::string(path);
      }
      if (comma == std::string_view::npos) break;
      controllers.remove_prefix(comma + 1);
    }
  }
  if (v2_path && is_v2) *is_v2 = true;
  return v2_path;
}

std::optional<std::uint64_t> parse_status_rss(std::string_view text) {
  for (std::string_view line : split_lines(text)) {
    if (auto v = kb_field(line, "VmRSS")) return v;
  }
  return std::nullopt;
}

std::optional<char> parse_stat_state(std::string_view text) {
  // The comm field is "(name)" and the name may hold spaces and ')'.
  const std::size_t close = text.rfind(')');
  if (close == std::string_view::npos || close + 2 >= text.size() || text[close + 1] != ' ') return std::nullopt;
  return text[close + 2];
}

namespace {

/// Field `n` (1-based, 3 or later) of /proc/PID/stat: counted after the comm
/// field, "(name)", whose name may hold spaces and ')'.
std::optional<std::string_view> stat_field(std::string_view text, int n) {
  const std::size_t close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = trim(text.substr(close + 1));  // field 3 on
  for (int i = 3; i < n; ++i) {
    const std::size_t sp = rest.find(' ');
    if (sp == std::string_view::npos) return std::nullopt;
    rest = trim(rest.substr(sp + 1));
  }
  std::string_view field = rest.substr(0, rest.find(' '));
  if (field.empty()) return std::nullopt;
  return field;
}

template <typename T>
std::optional<T> stat_number(std::string_view text, int n) {
  const auto field = stat_field(text, n);
  if (!field) return std::nullopt;
  T value{};
  auto [end, ec] = std::from_chars(field->data(), field->data() + field->size(), value);
  if (ec != std::errc() || end != field->data() + field->size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<int> parse_stat_ppid(std::string_view text) { return stat_number<int>(text, 4); }

std::optional<int> parse_stat_session(std::string_view text) { return stat_number<int>(text, 6); }

std::optional<std::uint64_t> parse_stat_start_ticks(std::string_view text) {
  return stat_number<std::uint64_t>(text, 22);
}

}  // namespace fad
