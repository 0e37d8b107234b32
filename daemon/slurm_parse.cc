// Parsers of Slurm's command output; see slurm_parse.h.
#include "daemon/slurm_parse.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace fad::slurm {
namespace {

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    auto line = text.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) out.push_back(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    auto at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

std::optional<long long> to_int(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  long long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

bool contains(std::string_view text, std::string_view needle) { return text.find(needle) != std::string_view::npos; }

/// Number of CPUs in a CPU_IDs list such as "0-1,4,6-7".
int count_cpu_ids(std::string_view ids) {
  int n = 0;
  for (auto part : split(ids, ',')) {
    auto dash = part.find('-');
    auto lo = to_int(part.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : to_int(part.substr(dash + 1));
    if (!lo || !hi || *hi < *lo) return 0;
    n += static_cast<int>(*hi - *lo + 1);
  }
  return n;
}

}  // namespace

std::map<std::string, std::string> parse_record(std::string_view line) {
  std::map<std::string, std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    auto end = line.find(' ', i);
    if (end == std::string_view::npos) end = line.size();
    auto token = line.substr(i, end - i);
    auto eq = token.find('=');
    if (eq != std::string_view::npos && eq > 0)
      out.emplace(std::string(token.substr(0, eq)), std::string(token.substr(eq + 1)));
    i = end;
  }
  return out;
}

std::vector<std::string> expand_hostlist(std::string_view list) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < list.size()) {
    // One entry: up to a comma outside brackets.
    std::size_t end = i;
    int depth = 0;
    while (end < list.size() && (list[end] != ',' || depth > 0)) {
      if (list[end] == '[') ++depth;
      if (list[end] == ']') --depth;
      ++end;
    }
    auto entry = list.substr(i, end - i);
    i = end + 1;
    if (entry.empty()) continue;
    auto open = entry.find('[');
    if (open == std::string_view::npos) {
      out.emplace_back(entry);
      continue;
    }
    auto close = entry.find(']', open);
    if (close == std::string_view::npos) return {};
    auto prefix = entry.substr(0, open);
    auto suffix = entry.substr(close + 1);
    for (auto range : split(entry.substr(open + 1, close - open - 1), ',')) {
      auto dash = range.find('-');
      auto lo_text = range.substr(0, dash);
      auto hi_text = dash == std::string_view::npos ? lo_text : range.substr(dash + 1);
      auto lo = to_int(lo_text), hi = to_int(hi_text);
      if (!lo || !hi || *hi < *lo || *hi - *lo > 100000) return {};
      for (long long n = *lo; n <= *hi; ++n) {
        std::string digits = std::to_string(n);
        // Zero-padded ranges ("node[01-10]") keep the width of their lower bound.
        if (digits.size() < lo_text.size()) digits.insert(0, lo_text.size() - digits.size(), '0');
        out.push_back(std::string(prefix) + digits + std::string(suffix));
      }
    }
  }
  return out;
}

std::optional<std::uint64_t> parse_memory(std::string_view text) {
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  double unit = 1024;  // KiB without a suffix
  const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
  if (last == 'K' || last == 'M' || last == 'G' || last == 'T') {
    unit = last == 'K'   ? 1024.0
           : last == 'M' ? 1024.0 * 1024
           : last == 'G' ? 1024.0 * 1024 * 1024
                         : 1024.0 * 1024 * 1024 * 1024;
    text.remove_suffix(1);
  }
  std::string number(text);
  if (number.empty() || !std::isdigit(static_cast<unsigned char>(number.front()))) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(v) || v < 0) return std::nullopt;
  return static_cast<std::uint64_t>(std::llround(v * unit));
}

std::vector<NodeInfo> parse_show_node(std::string_view text) {
  std::vector<NodeInfo> out;
  for (auto line : lines_of(text)) {
    auto r = parse_record(line);
    auto name = r.find("NodeName");
    if (name == r.end()) continue;
    NodeInfo n;
    n.name = name->second;
    if (auto cpus = to_int(r["CPUTot"])) n.cpus = static_cast<int>(*cpus);
    if (auto mb = to_int(r["RealMemory"])) n.memory = static_cast<std::uint64_t>(*mb) << 20;
    n.state = r["State"];
    out.push_back(std::move(n));
  }
  return out;
}

std::optional<JobInfo> parse_show_job(std::string_view text) {
  for (auto line : lines_of(text)) {
    auto r = parse_record(line);
    auto id = to_int(r["JobId"]);
    if (!id) continue;
    JobInfo job;
    job.id = *id;
    job.state = r["JobState"];
    job.reason = r["Reason"];
    job.end_time = r["EndTime"];
    // The per-node detail (-d) repeats "Nodes=LIST CPU_IDs=IDS Mem=MB" groups,
    // which a key map would fold together: walk the tokens in order.
    std::vector<std::string> group;
    int cpus = 0;
    for (auto token : split(line, ' ')) {
      if (token.rfind("Nodes=", 0) == 0) {
        group = expand_hostlist(token.substr(6));
        cpus = 0;
      } else if (token.rfind("CPU_IDs=", 0) == 0) {
        cpus = count_cpu_ids(token.substr(8));
      } else if (token.rfind("Mem=", 0) == 0 && !group.empty()) {
        auto mb = to_int(token.substr(4));
        for (const auto& name : group)
          job.nodes.push_back(JobNode{name, cpus, mb ? static_cast<std::uint64_t>(*mb) << 20 : 0});
        group.clear();
      }
    }
    if (job.nodes.empty()) {
      // Without -d (or while pending): the node names only.
      for (const auto& name : expand_hostlist(r["NodeList"] == "(null)" ? "" : r["NodeList"]))
        job.nodes.push_back(JobNode{name, 0, 0});
    }
    return job;
  }
  return std::nullopt;
}

bool job_state_running(std::string_view state) { return state == "RUNNING"; }

std::optional<std::int64_t> parse_salloc_job_id(std::string_view text) {
  for (auto line : lines_of(text)) {
    for (std::string_view marker : {"Granted job allocation ", "Pending job allocation "}) {
      auto at = line.find(marker);
      if (at == std::string_view::npos) continue;
      auto rest = line.substr(at + marker.size());
      std::size_t n = 0;
      while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) ++n;
      if (auto id = to_int(rest.substr(0, n))) return *id;
    }
  }
  return std::nullopt;
}

bool salloc_granted(std::string_view text) { return contains(text, "Granted job allocation "); }

std::vector<StepEntry> parse_squeue_steps(std::string_view text) {
  std::vector<StepEntry> out;
  for (auto line : lines_of(text)) {
    auto fields = split(line, '|');
    if (fields.size() != 3 || fields[0].find('.') == std::string_view::npos) continue;
    out.push_back(StepEntry{std::string(fields[0]), std::string(fields[1]), std::string(fields[2])});
  }
  return out;
}

std::map<std::string, std::uint64_t> parse_sstat_max_rss(std::string_view text) {
  std::map<std::string, std::uint64_t> out;
  for (auto line : lines_of(text)) {
    auto fields = split(line, '|');
    if (fields.size() < 2 || fields[0].find('.') == std::string_view::npos) continue;
    if (auto rss = parse_memory(fields[1])) out[std::string(fields[0])] = *rss;
  }
  return out;
}

bool controller_unreachable(std::string_view text) {
  return contains(text, "Unable to contact slurm controller") || contains(text, "Unable to confirm allocation") ||
         contains(text, "Socket timed out on send/recv") || contains(text, "Zero Bytes were transmitted or received") ||
         contains(text, "Communication connection failure");
}

StepEnd classify_srun(std::string_view text) {
  // Order matters: a node failure also cancels the step.
  if (contains(text, "Out Of Memory") || contains(text, "oom-kill event")) return StepEnd::out_of_memory;
  if (contains(text, "Node failure on") || contains(text, "DUE TO NODE FAILURE")) return StepEnd::node_failure;
  // srun also says "Expired or invalid job" when it merely could not ask.
  if (controller_unreachable(text)) return StepEnd::controller_unreachable;
  if (contains(text, "DUE TO TIME LIMIT") || contains(text, "has expired") ||
      contains(text, "Invalid job id specified") || contains(text, "Job allocation") ||
      contains(text, "Expired or invalid job") || contains(text, "already completing or completed") ||
      // The job ended between the step's creation and its task's launch.
      contains(text, "Job credential revoked") || (contains(text, "*** STEP ") && contains(text, " CANCELLED AT ")))
    return StepEnd::allocation_gone;
  if (contains(text, "Unable to create step") || contains(text, "Requested node configuration is not available") ||
      contains(text, "Memory required by task is not available"))
    return StepEnd::step_refused;
  return StepEnd::normal;
}

bool allocation_ending(std::string_view text) {
  return contains(text, "already completing or completed") || contains(text, "DUE TO TIME LIMIT") ||
         contains(text, "has expired");
}

const char* to_string(StepEnd end) {
  switch (end) {
    case StepEnd::normal: return "normal";
    case StepEnd::out_of_memory: return "out of memory";
    case StepEnd::node_failure: return "node failure";
    case StepEnd::allocation_gone: return "allocation ended";
    case StepEnd::controller_unreachable: return "slurmctld unreachable";
    case StepEnd::step_refused: return "step refused";
  }
  return "?";
}

}  // namespace fad::slurm
