// Rendering of status, history and progress. Field access goes through small
// tolerant helpers: the daemon may add fields or send null, and a status view
// must never be the thing that crashes.
#include "client/render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "common/size.h"

namespace fad::client {
namespace {

const json* field(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string text(const json& j, const char* key) {
  const json* f = field(j, key);
  if (!f) return "-";
  if (f->is_string()) return f->get<std::string>().empty() ? "-" : f->get<std::string>();
  return f->dump();
}

std::int64_t count(const json& j, const char* key) {
  const json* f = field(j, key);
  return f && f->is_number() ? f->get<std::int64_t>() : 0;
}

std::string size_cell(const json& j, const char* key) {
  const json* f = field(j, key);
  if (!f || !f->is_number()) return "-";
  double v = f->get<double>();
  return v < 0 ? "-" : format_size(static_cast<std::uint64_t>(v));
}

std::string archs_cell(const json& j) {
  const json* f = field(j, "archs");
  if (!f || !f->is_array() || f->empty()) return "-";
  std::string out;
  for (const auto& a : *f) out += (out.empty() ? "" : ",") + (a.is_string() ? a.get<std::string>() : a.dump());
  return out;
}

const json& units_of(const json& build) {
  static const json kEmpty = json::object();
  const json* u = field(build, "units");
  return u && u->is_object() ? *u : kEmpty;
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
  const json* up = field(*d, "uptime_s");
  out << "fadd " << text(*d, "version") << ", pid " << text(*d, "pid") << ", up "
      << (up && up->is_number() ? format_duration(up->get<double>()) : "-") << "\n";
  static const json kNone = json::object();
  const json* mem_field = field(*d, "memory");
  const json& mem = mem_field ? *mem_field : kNone;
  out << "memory: " << size_cell(mem, "committed_bytes") << " committed of " << size_cell(mem, "budget_bytes")
      << " budget; " << size_cell(mem, "available_bytes") << " available of " << size_cell(mem, "total_bytes")
      << "; swap " << size_cell(mem, "swap_free_bytes") << " free of " << size_cell(mem, "swap_total_bytes");
  if (const json* psi = field(mem, "psi_some_avg10"); psi && psi->is_number()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", psi->get<double>());
    out << "; pressure " << buf << "%";
  }
  out << "\n";
  out << executor_lines(*d);
  return out.str();
}

const json& builds_of(const json& doc) {
  static const json kEmpty = json::array();
  const json* b = field(doc, "builds");
  return b && b->is_array() ? *b : kEmpty;
}

std::string done_of_total(const json& build) {
  const json& u = units_of(build);
  return std::to_string(count(u, "succeeded")) + "/" + std::to_string(count(u, "total"));
}

}  // namespace

std::string format_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(header.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  };
  measure(header);
  for (const auto& row : rows) measure(row);
  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
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

std::string render_status(const json& status) {
  std::string out = daemon_lines(status);
  const json& builds = builds_of(status);
  if (builds.empty()) return out + "no builds\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& b : builds) {
    const json& u = units_of(b);
    rows.push_back({text(b, "id"), text(b, "name"), text(b, "state"), archs_cell(b), done_of_total(b),
                    std::to_string(count(u, "running")), std::to_string(count(u, "queued")),
                    std::to_string(count(u, "failed")), size_cell(b, "peak_bytes"), text(b, "created_at")});
  }
  return out + "\n" +
         format_table({"ID", "NAME", "STATE", "ARCHS", "UNITS OK", "RUNNING", "QUEUED", "FAILED", "PEAK", "CREATED"},
                      rows);
}

std::string render_build_status(const json& status) {
  std::string out = daemon_lines(status);
  const json& builds = builds_of(status);
  if (builds.empty()) return out + "no such build\n";
  const json& b = builds.front();
  const json& u = units_of(b);
  out += "\nbuild " + text(b, "id") + " (" + text(b, "name") + "): " + text(b, "state") + ", archs " + archs_cell(b) +
         ", created " + text(b, "created_at") + ", peak " + size_cell(b, "peak_bytes") + "\n";
  out += "units: " + done_of_total(b) + " succeeded, " + std::to_string(count(u, "running")) + " running, " +
         std::to_string(count(u, "queued")) + " queued, " + std::to_string(count(u, "failed")) + " failed\n";
  if (field(b, "artifact")) out += "artifact: " + text(b, "artifact") + "\n";
  const json* list = field(b, "unit_list");
  if (!list || !list->is_array() || list->empty()) return out;
  std::vector<std::vector<std::string>> rows;
  // Units on a cluster also show their node and who measured their peak.
  bool nodes = false;
  for (const auto& unit : *list) nodes |= field(unit, "node") != nullptr;
  for (const auto& unit : *list) {
    rows.push_back({text(unit, "name"), text(unit, "state"), text(unit, "threads"), size_cell(unit, "estimate_bytes"),
                    size_cell(unit, "peak_bytes"), text(unit, "attempts"), text(unit, "wait_reason")});
    if (nodes) rows.back().insert(rows.back().begin() + 2, {text(unit, "node"), text(unit, "peak_source")});
  }
  if (nodes)
    return out + "\n" +
           format_table(
               {"UNIT", "STATE", "NODE", "PEAK FROM", "THREADS", "ESTIMATE", "PEAK", "ATTEMPTS", "WAITING FOR"}, rows);
  return out + "\n" + format_table({"UNIT", "STATE", "THREADS", "ESTIMATE", "PEAK", "ATTEMPTS", "WAITING FOR"}, rows);
}

std::string render_history(const json& history) {
  const json& builds = builds_of(history);
  if (builds.empty()) return "no finished builds\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& b : builds) {
    const json* d = field(b, "duration_s");
    rows.push_back({text(b, "id"), text(b, "name"), text(b, "state"), archs_cell(b), done_of_total(b),
                    d && d->is_number() ? format_duration(d->get<double>()) : "-", size_cell(b, "peak_bytes"),
                    text(b, "finished_at")});
  }
  return format_table({"ID", "NAME", "STATE", "ARCHS", "UNITS OK", "DURATION", "PEAK", "FINISHED"}, rows);
}

std::string render_progress(const json& build) {
  const json& u = units_of(build);
  std::string line = "build " + text(build, "id") + ": " + std::to_string(count(u, "succeeded") + count(u, "failed")) +
                     "/" + std::to_string(count(u, "total")) + " units done, " + std::to_string(count(u, "running")) +
                     " running";
  if (count(u, "failed") > 0) line += ", " + std::to_string(count(u, "failed")) + " failed";
  line += ", peak " + size_cell(build, "peak_bytes");
  if (text(build, "state") == "paused") line += " (paused)";
  return line;
}

std::string progress_key(const json& build) { return text(build, "state") + units_of(build).dump(); }

std::string render_outcome(const json& build) {
  const std::string id = text(build, "id");
  const std::string state = text(build, "state");
  const json& u = units_of(build);
  if (state == "succeeded")
    return "build " + id + " succeeded: " + done_of_total(build) + " units, peak " + size_cell(build, "peak_bytes") +
           "\nartifact: " + text(build, "artifact") + "\n";
  if (state == "failed")
    return "build " + id + " failed: " + std::to_string(count(u, "failed")) + " of " +
           std::to_string(count(u, "total")) + " units failed; see 'fad logs " + id + "'\n";
  return "build " + id + " " + state + "\n";
}

}  // namespace fad::client
