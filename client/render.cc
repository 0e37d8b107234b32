// Rendering of status, history and outcomes. Field access goes through the
// tolerant helpers of json_access.h: the daemon may add fields or send null,
// and a status view must never be the thing that crashes.
#include "client/render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "common/duration.h"
#include "client/json_access.h"
#include "client/progress.h"
#include "client/style.h"
#include "common/size.h"
#include "common/time_text.h"

namespace fad::client {
namespace {

std::string size_cell(const json& j, const char* key) {
  const json* f = field(j, key);
  if (!f || !f->is_number()) return "-";
  double v = f->get<double>();
  return v < 0 ? "-" : format_size(static_cast<std::uint64_t>(v));
}

std::string duration_cell(const json& j, const char* key) {
  const json* f = field(j, key);
  return f && f->is_number() ? format_duration(f->get<double>()) : "-";
}

std::string archs_cell(const json& j) {
  const json* f = field(j, "archs");
  if (!f || !f->is_array() || f->empty()) return "-";
  std::string out;
  for (const auto& a : *f)
    out += (out.empty() ? "" : ",") + (a.is_string() ? printable(a.get<std::string>()) : a.dump());
  return out;
}

/// A cluster executor's allocation and its nodes; "" when units run locally.
std::string executor_lines(const json& daemon) {
  const json* e = field(daemon, "executor");
  if (!e || !e->is_object()) return "";
  std::string out = "executor: " + text(*e, "kind") + " (" + text(*e, "mode") + "), allocation " +
                    (field(*e, "job_id") ? "job " + text(*e, "job_id") : std::string("none")) + ", " +
                    text(*e, "state");
  if (const json* why = field(*e, "wait_reason"); why && why->is_string() && !why->get<std::string>().empty())
    out += ": " + why->get<std::string>();
  out += "\n";
  if (const json* nodes = field(*e, "nodes"); nodes && nodes->is_array())
    for (const auto& n : *nodes)
      out += "  node " + text(n, "name") + ": " + size_cell(n, "committed_bytes") + " committed of " +
             size_cell(n, "memory_bytes") + ", " + text(n, "cpus") + " cpus, " + text(n, "running_units") +
             " running\n";
  return out;
}

std::string daemon_lines(const json& status) {
  const json* d = field(status, "daemon");
  if (!d) return "";
  std::ostringstream out;
  out << "fadd " << text(*d, "version") << ", pid " << text(*d, "pid") << ", up " << duration_cell(*d, "uptime_s")
      << "\n";
  const json& mem = object_of(*d, "memory");
  out << "memory: ";
  if (field(mem, "used_bytes")) out << size_cell(mem, "used_bytes") << " in use, ";
  out << size_cell(mem, "committed_bytes") << " committed of " << size_cell(mem, "budget_bytes") << " budget; "
      << size_cell(mem, "available_bytes") << " available of " << size_cell(mem, "total_bytes") << "; swap "
      << size_cell(mem, "swap_free_bytes") << " free of " << size_cell(mem, "swap_total_bytes");
  if (const json* psi = field(mem, "psi_some_avg10"); psi && psi->is_number()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", psi->get<double>());
    out << "; pressure " << buf << "%";
  }
  out << "\n";
  if (const json* warnings = field(*d, "warnings"); warnings && warnings->is_array())
    for (const auto& w : *warnings) out << "warning: " << (w.is_string() ? w.get<std::string>() : w.dump()) << "\n";
  out << executor_lines(*d);
  return out.str();
}

// A listing's NAME column: wide enough for a useful name, never for a
// 256-byte one (its full text is in 'fad status ID' and --json).
std::string name_cell(const json& build) { return fit_columns(text(build, "name"), 40); }

std::string done_of_total(const json& build) {
  const json& u = object_of(build, "units");
  return std::to_string(count(u, "succeeded")) + "/" + std::to_string(count(u, "total"));
}

std::string state_cell(const json& j, bool color) { return color_state(text(j, "state"), color); }

// A pruned build's outputs and logs are gone; its record stays.
std::string build_state_cell(const json& b, bool color) {
  return state_cell(b, color) + (field(b, "pruned_at") ? " (pruned)" : "");
}

// Created to finished, when both are known.
std::optional<double> build_seconds(const json& build) {
  auto a = parse_rfc3339(str(build, "created_at"));
  auto b = parse_rfc3339(str(build, "finished_at"));
  if (!a || !b || *b < *a) return std::nullopt;
  return *b - *a;
}

/// Never started here: queued still, restored from the compile cache, or
/// cancelled before it ran. It has no threads, peak or time of its own.
bool never_ran(const json& unit) { return count(unit, "attempts") == 0; }

std::string estimate_cell(const json& unit) {
  const std::string size = size_cell(unit, "estimate_bytes");
  // A unit that never ran has no estimate of its own unless fadd sent one.
  if (size == "0 B" && never_ran(unit)) return "-";
  return size;  // where it came from has its own column
}

std::string unit_time_cell(const json& unit) {
  if (field(unit, "elapsed_s")) return duration_cell(unit, "elapsed_s");
  const std::string s = str(unit, "state");
  if (never_ran(unit)) return "-";
  if (s == "succeeded" || s == "failed" || s == "cancelled") return duration_cell(unit, "duration_s");
  return "-";
}

}  // namespace

std::string format_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(header.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], visible_width(row[i]));
  };
  measure(header);
  for (const auto& row : rows) measure(row);
  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - visible_width(row[i]) + 2, ' ');
    }
    out += line + "\n";
  };
  emit(header);
  for (const auto& row : rows) emit(row);
  return out;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  auto s = static_cast<long long>(seconds + 0.5);
  char buf[48];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%llds", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm %02llds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lldh %02lldm", s / 3600, (s % 3600) / 60);
  return buf;
}

std::string render_status(const json& status, bool color) {
  std::string out = daemon_lines(status);
  const json& builds = array_of(status, "builds");
  if (builds.empty()) return out + "no builds\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& b : builds) {
    const json& u = object_of(b, "units");
    const std::string state = build_state_cell(b, color);
    rows.push_back({text(b, "id"), text(b, "user"), name_cell(b), state, archs_cell(b), done_of_total(b),
                    std::to_string(count(u, "running")), std::to_string(count(u, "queued")),
                    std::to_string(count(u, "failed")), size_cell(b, "peak_bytes"), text(b, "created_at")});
  }
  out += "\n" + format_table({"ID", "USER", "NAME", "STATE", "ARCHS", "UNITS OK", "RUNNING", "QUEUED", "FAILED", "PEAK",
                              "CREATED"},
                             rows);
  if (const auto left_out = count(status, "builds_left_out"); left_out > 0)
    out += "... and " + std::to_string(left_out) + " newer build(s) not listed (too many to send at once)\n";
  return out;
}

std::string render_build_status(const json& status, bool color) {
  std::string out = daemon_lines(status);
  const json& builds = array_of(status, "builds");
  if (builds.empty() || !builds.front().is_object()) return out + "no such build\n";
  const json& b = builds.front();
  const json& u = object_of(b, "units");
  // An unnamed build (fad submit without --name) is just its number.
  const std::string name = str(b, "name").empty() ? "" : " (" + text(b, "name") + ")";
  out += "\nbuild " + text(b, "id") + name + ": " + state_cell(b, color) + ", archs " + archs_cell(b) + ", created " +
         text(b, "created_at") + ", peak " + size_cell(b, "peak_bytes") + "\n";
  if (field(b, "pruned_at"))
    out += "pruned " + text(b, "pruned_at") + ": its outputs and logs are deleted; its record stays\n";
  out +=
      "units: " + done_of_total(b) + " succeeded" +
      (count(b, "cache_hits") > 0 ? " (" + std::to_string(count(b, "cache_hits")) + " from the compile cache)" : "") +
      ", " + std::to_string(count(u, "running")) + " running, " + std::to_string(count(u, "queued")) + " queued, " +
      std::to_string(count(u, "failed")) + " failed";
  // Else the counts would not add up to the total.
  if (count(u, "cancelled") > 0) out += ", " + std::to_string(count(u, "cancelled")) + " cancelled";
  if (auto eta = estimate_eta(b)) out += "; ETA " + format_eta(*eta);
  out += "\n";
  if (field(b, "artifact")) out += "artifact: " + text(b, "artifact") + "\n";
  const json& list = array_of(b, "unit_list");
  if (list.empty()) return out;
  std::vector<std::vector<std::string>> rows;
  // Units on a cluster also show their node and who measured their peak.
  bool nodes = false;
  for (const auto& unit : list) nodes |= field(unit, "node") != nullptr;
  for (const auto& unit : list) {
    // A unit that never started has no threads or peak: "-", not "0".
    const bool ran = !never_ran(unit);
    const std::string state = state_cell(unit, color) + (is_true(unit, "cached") ? " (cached)" : "");
    rows.push_back({text(unit, "name"), state, ran ? text(unit, "threads") : "-", size_cell(unit, "current_bytes"),
                    ran ? size_cell(unit, "peak_bytes") : "-", estimate_cell(unit), text(unit, "estimate_source"),
                    unit_time_cell(unit), text(unit, "attempts"), text(unit, "wait_reason")});
    if (nodes) rows.back().insert(rows.back().begin() + 2, {text(unit, "node"), text(unit, "peak_source")});
  }
  std::vector<std::string> header{"UNIT",     "STATE",  "THREADS", "NOW",      "PEAK",
                                  "ESTIMATE", "SOURCE", "TIME",    "ATTEMPTS", "WAITING FOR"};
  if (nodes) header.insert(header.begin() + 2, {"NODE", "PEAK FROM"});
  out += "\n" + format_table(header, rows);
  if (const auto left_out = count(b, "units_left_out"); left_out > 0)
    out += "... and " + std::to_string(left_out) + " more unit(s) not listed (too many to send at once)\n";
  return out;
}

std::string render_history(const json& history, bool color) {
  const json& builds = array_of(history, "builds");
  if (builds.empty()) return "no finished builds\n";
  std::vector<std::vector<std::string>> rows;
  // fadd sends the newest first (the ones --limit keeps); the table lists
  // them by ID, as sacct and pueue do, the newest last, next to the prompt.
  for (auto it = builds.rbegin(); it != builds.rend(); ++it) {
    const json& b = *it;
    // Older daemons send only duration_s: it was all "run" to them.
    const std::string run = field(b, "run_s") ? duration_cell(b, "run_s") : duration_cell(b, "duration_s");
    const std::string state = build_state_cell(b, color);
    rows.push_back({text(b, "id"), text(b, "user"), name_cell(b), state, archs_cell(b), done_of_total(b),
                    std::to_string(count(b, "cache_hits")), duration_cell(b, "queue_s"), run,
                    size_cell(b, "peak_bytes"), text(b, "finished_at")});
  }
  std::string out = format_table(
      {"ID", "USER", "NAME", "STATE", "ARCHS", "UNITS OK", "CACHED", "QUEUED", "RAN", "PEAK", "FINISHED"}, rows);
  if (const auto left_out = count(history, "builds_left_out"); left_out > 0)
    out += "... and " + std::to_string(left_out) +
           " older build(s) not listed (too many to send at once; lower --limit)\n";
  return out;
}
std::string render_prune(const json& prune) {
  const json* builds = field(prune, "builds");
  const bool dry = field(prune, "dry_run") && (*field(prune, "dry_run")) == true;
  const json* age = field(prune, "older_than_s");
  const std::string older = age && age->is_number_integer() ? format_age(age->get<std::int64_t>()) : "-";
  std::ostringstream out;
  std::size_t n = 0;
  if (builds && builds->is_array()) {
    for (const auto& b : *builds) {
      out << (dry ? "would prune build " : "pruned build ") << text(b, "id");
      if (text(b, "name") != "-") out << " (" << text(b, "name") << ")";
      out << ", finished " << text(b, "finished_at") << ", " << size_cell(b, "bytes") << "\n";
      ++n;
    }
  }
  if (n == 0) {
    out << "nothing to prune: no finished build older than " << older << " still has outputs\n";
  } else {
    out << (dry ? "would free " : "freed ") << size_cell(prune, "bytes") << " from " << n << " build(s) older than "
        << older << (dry ? " (dry run: nothing deleted)" : "; their records stay in 'fad history'") << "\n";
  }
  return out.str();
}

std::string render_outcome(const json& build, bool color) {
  const std::string id = text(build, "id");
  const std::string state = text(build, "state");
  const json& u = object_of(build, "units");
  std::string line = "build " + id + " " + color_state(state, color);
  if (state == "succeeded" || state == "failed") {
    line += ": " + done_of_total(build) + " units";
    if (auto s = build_seconds(build)) line += " in " + format_duration(*s);
    line += ", peak " + size_cell(build, "peak_bytes");
    if (count(u, "failed")) line += ", " + std::to_string(count(u, "failed")) + " failed";
  }
  line += "\n";
  if (state == "succeeded" && field(build, "artifact")) line += "artifact: " + text(build, "artifact") + "\n";
  return line;
}

}  // namespace fad::client
