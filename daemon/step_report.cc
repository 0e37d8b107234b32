// The step report file; see step_report.h.
#include "daemon/step_report.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <map>

namespace fad {
namespace {
constexpr std::string_view kMagic = "fad-step 1";

std::optional<std::int64_t> to_int(const std::string& s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  std::int64_t v = 0;
  std::size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return std::nullopt;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  return s[0] == '-' ? -v : v;
}
}  // namespace

std::string StepReport::serialize() const {
  std::string out(kMagic);
  auto add = [&out](const char* key, const std::string& value) { out += "\n" + std::string(key) + "=" + value; };
  add("node", node);
  add("step", step);
  add("source", source);
  add("launched_ms", std::to_string(launched_ms));
  add("started_ms", std::to_string(started_ms));
  add("usage", std::to_string(usage));
  add("peak", std::to_string(peak));
  add("oom_kills", std::to_string(oom_kills));
  add("limit", std::to_string(limit));
  add("done", done ? "1" : "0");
  add("exit_code", std::to_string(exit_code));
  add("signal", std::to_string(signal));
  add("terminated", terminated ? "1" : "0");
  std::string one_line = error;
  for (auto& c : one_line)
    if (c == '\n') c = ' ';
  add("error", one_line);
  return out + "\n";
}

std::optional<StepReport> StepReport::parse(std::string_view text) {
  if (text.substr(0, text.find('\n')) != kMagic) return std::nullopt;
  std::map<std::string, std::string> kv;
  std::size_t pos = text.find('\n');
  while (pos != std::string_view::npos && pos + 1 < text.size()) {
    auto next = text.find('\n', pos + 1);
    auto line = text.substr(pos + 1, next == std::string_view::npos ? std::string_view::npos : next - pos - 1);
    auto eq = line.find('=');
    if (eq != std::string_view::npos) kv.emplace(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
    pos = next;
  }
  StepReport r;
  r.node = kv["node"];
  r.step = kv["step"];
  r.terminated = kv["terminated"] == "1";
  r.source = kv["source"];
  r.error = kv["error"];
  auto num = [&kv](const char* key) { return to_int(kv[key]).value_or(0); };
  r.launched_ms = num("launched_ms");
  r.started_ms = num("started_ms");
  r.usage = static_cast<std::uint64_t>(std::max<std::int64_t>(0, num("usage")));
  r.peak = static_cast<std::uint64_t>(std::max<std::int64_t>(0, num("peak")));
  r.oom_kills = static_cast<std::uint64_t>(std::max<std::int64_t>(0, num("oom_kills")));
  r.limit = static_cast<std::uint64_t>(std::max<std::int64_t>(0, num("limit")));
  r.done = kv["done"] == "1";
  r.exit_code = static_cast<int>(num("exit_code"));
  r.signal = static_cast<int>(num("signal"));
  return r;
}

bool write_step_report(const std::string& path, const StepReport& report) {
  const std::string tmp = path + ".tmp";
  const std::string text = report.serialize();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = ::close(fd) == 0 && ok;
  return ok && std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace fad
