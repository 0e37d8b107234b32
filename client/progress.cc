// Progress line, ETA and failure report; see progress.h.
#include "client/progress.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <string_view>
#include <vector>

#include "client/json_access.h"
#include "client/render.h"
#include "common/exit_status.h"
#include "common/shell_words.h"
#include "common/size.h"
#include "common/text.h"
#include "common/time_text.h"

namespace fad::client {

namespace {

bool is_running_state(const std::string& state) {
  return state == "running" || state == "paused" || state == "suspended" || state == "pending";
}

// "9.8/12.0 GiB": both in the unit of the larger, so they compare at a glance;
// but "87.5 MiB/20.1 GiB" where less than a GiB is used of one of GiBs, which
// in GiB would read "0.0/20.1" while units compile.
std::string pair_size(double used, double budget) {
  constexpr double kGiB = 1024.0 * 1024 * 1024, kMiB = 1024.0 * 1024;
  const double top = std::max(used, budget);
  const char* unit = "GiB";
  double scale = kGiB;
  if (top < scale) {
    unit = "MiB";
    scale = kMiB;
  }
  char buf[64];
  // (Under 1023.95 MiB: one more would print as "1024.0 MiB".)
  if (used > 0 && used < kGiB - kMiB / 20 && budget >= kGiB)
    std::snprintf(buf, sizeof buf, "%.1f MiB/%.1f GiB", used / kMiB, budget / kGiB);
  else if (budget > 0)
    std::snprintf(buf, sizeof buf, "%.1f/%.1f %s", used / scale, budget / scale, unit);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", used / scale, unit);
  return buf;
}

const json& first_build(const json& status) {
  static const json kNone = json::object();
  const json& builds = array_of(status, "builds");
  return builds.empty() || !builds.front().is_object() ? kNone : builds.front();
}

}  // namespace

bool waits_for_memory(const std::string& reason) {
  return reason.rfind("needs ", 0) == 0 || reason.find("memory") != std::string::npos ||
         reason.find("budget") != std::string::npos;
}

std::string format_eta(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  if (seconds < 60) return std::to_string(static_cast<long long>(std::ceil(seconds))) + "s";
  const auto minutes = static_cast<long long>(std::ceil(seconds / 60));
  if (minutes < 60) return std::to_string(minutes) + "m";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lldh %02lldm", minutes / 60, minutes % 60);
  return buf;
}

std::optional<double> estimate_eta(const json& build) {
  const std::string state = str(build, "state");
  if (state != "running" && state != "queued") return std::nullopt;
  const json& list = array_of(build, "unit_list");
  if (list.empty()) return std::nullopt;

  // What a unit of each kind took in this build so far.
  std::map<std::string, std::pair<double, int>> taken;  // kind -> (sum, count)
  for (const auto& u : list) {
    if (str(u, "state") != "succeeded" || number(u, "duration_s") <= 0) continue;
    auto& [sum, n] = taken[str(u, "kind")];
    sum += number(u, "duration_s");
    ++n;
  }
  // A duration from the flat prior (or a running sibling's age, as long as
  // nothing finished) is a guess that can be off tenfold: an ETA from it
  // would mislead, so such a unit counts at this build's own mean, if any.
  // fadd sends no duration for such a unit; earlier releases sent the guess.
  auto predicted = [](const json& u) {
    const std::string source = str(u, "estimate_source");
    const bool guess = source == "prior" || source == "running_sibling";
    const double d = number(u, "predicted_duration_s");
    return d > 0 && !guess ? d : 0.0;
  };
  // Compiles running past their predicted time say this build runs slower
  // than they did before (a loaded machine, a slower compiler): every
  // prediction is stretched by the running compiles' median overrun. The
  // median, so that one hung compile does not stretch them all.
  std::vector<double> overruns;
  for (const auto& u : list)
    if (is_running_state(str(u, "state")) && str(u, "kind") != "link" && predicted(u) > 0)
      overruns.push_back(std::max(1.0, number(u, "elapsed_s") / predicted(u)));
  double slowdown = 1;
  if (!overruns.empty()) {
    std::sort(overruns.begin(), overruns.end());
    const std::size_t mid = overruns.size() / 2;
    slowdown = overruns.size() % 2 ? overruns[mid] : (overruns[mid - 1] + overruns[mid]) / 2;
  }
  auto expected = [&](const json& u) -> std::optional<double> {
    if (const double d = predicted(u); d > 0) return d * slowdown;
    auto it = taken.find(str(u, "kind"));
    if (it == taken.end()) return std::nullopt;
    return it->second.first / it->second.second;
  };

  double work = 0, longest = 0, link = 0;
  int parallel = 0;
  bool linking = false;
  for (const auto& u : list) {
    const std::string s = str(u, "state");
    const bool running = is_running_state(s);
    if (!running && s != "queued") continue;
    const auto d = expected(u);
    if (str(u, "kind") == "link") {
      // Small next to the compiles, and it only starts after them: it adds, never blocks.
      link = d ? std::max(0.1 * *d, *d - (running ? number(u, "elapsed_s") : 0)) : 0;
      linking = running;
      continue;
    }
    if (!d) return std::nullopt;
    if (running) {
      // One that overran its expectation is taken to be nearly done, not done.
      const double left = std::max(0.1 * *d, *d - number(u, "elapsed_s"));
      longest = std::max(longest, left);
      work += left;
      ++parallel;
    } else {
      work += *d;
    }
  }
  // While nothing of the build runs, when it will is unknown: the serial sum
  // of its queued compiles read as hours for a build that runs dozens at a
  // time, and a queued link behind another build's compiles as "1s" for
  // minutes. (A `fad run` between compiles has nothing queued either.)
  if (parallel == 0 && !linking) return std::nullopt;
  return std::max(longest, work / std::max(1, parallel)) + link;
}

std::string render_progress_line(const json& status, std::size_t width, double now) {
  const json& b = first_build(status);
  const json& counts = object_of(b, "units");
  const json& list = array_of(b, "unit_list");
  const std::string state = str(b, "state");

  std::vector<std::pair<double, std::string>> running;  // (elapsed, name)
  int waiting_memory = 0, suspended = 0, pending = 0;
  double build_bytes = 0;
  for (const auto& u : list) {
    const std::string s = str(u, "state");
    if (is_running_state(s)) {
      running.emplace_back(number(u, "elapsed_s"), printable(str(u, "name")));
      build_bytes += number(u, "current_bytes");
      suspended += s == "suspended";
      pending += s == "pending";
    } else if (s == "queued" && waits_for_memory(str(u, "wait_reason"))) {
      ++waiting_memory;
    }
  }
  const std::int64_t running_count =
      list.empty() ? count(counts, "running") : static_cast<std::int64_t>(running.size());

  std::string line = "[" + std::to_string(count(counts, "succeeded") + count(counts, "failed")) + "/" +
                     std::to_string(count(counts, "total")) + "]";
  if (state == "paused") line += " paused,";
  line += " " + std::to_string(running_count) + " running";
  std::vector<std::string> held;
  if (suspended) held.push_back(std::to_string(suspended) + " suspended");
  if (pending) held.push_back(std::to_string(pending) + " pending");
  if (!held.empty()) line += " (" + join(held, ", ") + ")";
  const json& memory = object_of(object_of(status, "daemon"), "memory");
  const double used = field(memory, "used_bytes") ? number(memory, "used_bytes") : build_bytes;
  line += ", " + pair_size(used, number(memory, "budget_bytes"));
  if (waiting_memory) line += ", " + std::to_string(waiting_memory) + " waiting for memory";
  if (count(counts, "failed")) line += ", " + std::to_string(count(counts, "failed")) + " failed";
  if (auto created = parse_rfc3339(str(b, "created_at")); created && now >= *created)
    line += ", " + format_duration(now - *created);
  if (auto eta = estimate_eta(b)) line += ", ETA " + format_eta(*eta);

  if (width == 0) return line;
  // The longest-running first: the ones a user wonders about.
  std::stable_sort(running.begin(), running.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = 0; i < running.size(); ++i) {
    const std::string add = (i == 0 ? ": " : " ") + running[i].second;
    if (line.size() + add.size() > width) break;
    line += add;
  }
  if (line.size() > width) line.resize(width);
  return line;
}

std::string progress_line_key(const json& status) {
  const json& b = first_build(status);
  const json& counts = object_of(b, "units");
  return str(b, "state") + " " + std::to_string(count(counts, "succeeded")) + " " +
         std::to_string(count(counts, "failed")) + " " + std::to_string(count(counts, "running"));
}

json first_failed_unit(const json& build) {
  const json* first = nullptr;
  for (const auto& u : array_of(build, "unit_list")) {
    if (str(u, "state") != "failed") continue;
    // RFC 3339 UTC strings order as their times; a missing time sorts last.
    const std::string at = str(u, "finished_at");
    if (!first || (!at.empty() && (str(*first, "finished_at").empty() || at < str(*first, "finished_at")))) first = &u;
  }
  return first ? *first : json(nullptr);
}

std::string_view last_attempt(std::string_view log) {
  const auto at = log.rfind("\n$ ");
  return at == std::string_view::npos ? log : log.substr(at + 1);
}

std::string render_failure(const json& build, const std::string& log_tail) {
  const std::string id = text(build, "id");
  const json& counts = object_of(build, "units");
  const json unit = first_failed_unit(build);
  if (unit.is_null()) {
    return "build " + id + " failed: " + (field(build, "error") ? text(build, "error") : "no unit failed") +
           "\nthe build's log: fad logs " + id + "\n";
  }
  const std::string name = printable(str(unit, "name"));
  std::string out = "build " + id + " failed: " + name;
  if (const json* code = field(unit, "exit_code"); code && code->is_number_integer()) {
    const int status = code->get<int>();
    out += killing_signal(status) ? " was " + exit_status_text(status) : " exited with code " + std::to_string(status);
  } else {
    out += " failed";
  }
  out += " (" + std::to_string(count(counts, "failed")) + " of " + std::to_string(count(counts, "total")) +
         " units failed)\n";
  if (!log_tail.empty()) {
    out += "--- last lines of " + name + " ---\n" + log_tail;
    if (log_tail.back() != '\n') out += "\n";
    out += "---\n";
  }
  // A fad run or fad launch compile wrote to the terminal of the command that
  // ran it: fadd has only its command line.
  if (str(build, "kind") == "external")
    out += "its output went to the terminal of the build command that ran it (its command: fad logs " + id + " " +
           shell_word(name) + ")\n";
  else
    out += "all of its output: fad logs " + id + " " + shell_word(name) + "\n";
  return out;
}

std::string wait_note(const std::string& reason, std::int64_t build_id) {
  std::string note;
  if (reason.empty())
    note = "waiting for fadd to admit it";
  else if (reason.rfind("waiting", 0) == 0)
    note = reason;
  else if (waits_for_memory(reason))
    note = "waiting for memory: " + reason;
  else
    note = "waiting: " + reason;
  return note + "; fad status " + std::to_string(build_id);
}

std::optional<std::string> stall_note(const json& build) {
  const json* oldest = nullptr;
  for (const auto& u : array_of(build, "unit_list")) {
    const std::string s = str(u, "state");
    if (is_running_state(s)) return std::nullopt;
    if (s == "queued" && !oldest) oldest = &u;
  }
  if (!oldest) return std::nullopt;
  return wait_note(printable(str(*oldest, "wait_reason")), count(build, "id"));
}

std::string render_run_summary(const json& build) {
  const std::string id = text(build, "id");
  const json& counts = object_of(build, "units");
  const std::int64_t total = count(counts, "total");
  std::string line = "fad run: build " + id + " " + str(build, "state");
  if (total == 0) {
    // A command that failed before compiling (not found, a typo) says so: the
    // hint about nvcc would send its user the wrong way.
    if (str(build, "state") != "succeeded" && field(build, "error"))
      return line + ": " + printable(str(build, "error")) + ", before any compile went through fad\n";
    return line + ": no compile went through fad (does the command call nvcc? see 'fad run --help')\n";
  }
  int reruns = 0;
  for (const auto& u : array_of(build, "unit_list"))
    reruns += std::max<int>(0, static_cast<int>(count(u, "attempts")) - 1);
  line += ": " + std::to_string(total) + (total == 1 ? " compile" : " compiles");
  auto created = parse_rfc3339(str(build, "created_at"));
  auto finished = parse_rfc3339(str(build, "finished_at"));
  if (created && finished && *finished >= *created) line += " in " + format_duration(*finished - *created);
  line += ", peak " + format_size(static_cast<std::uint64_t>(std::max(0.0, number(build, "peak_bytes"))));
  if (count(counts, "failed")) line += ", " + std::to_string(count(counts, "failed")) + " failed";
  // Compiles the build was stopped before: counted in the total, never run.
  if (count(counts, "cancelled")) line += ", " + std::to_string(count(counts, "cancelled")) + " cancelled";
  line += reruns == 0 ? ", no reruns" : ", " + std::to_string(reruns) + (reruns == 1 ? " rerun" : " reruns");
  return line + "\n";
}

}  // namespace fad::client
