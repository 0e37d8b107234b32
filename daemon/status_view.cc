// Status JSON per the contract ("fad status --json"); fields may be added, never
// renamed or removed.
#include "daemon/status_view.h"

#include <algorithm>

namespace fad {

using nlohmann::json;

namespace {
json opt(const std::optional<std::string>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace

json unit_json(const UnitRecord& u, const LiveUnit* live, bool pruned) {
  const bool running = live && live->running && u.state == UnitState::running;
  json j = {
      {"name", u.name},
      {"kind", to_string(u.kind)},
      {"state", running && live->state ? *live->state : std::string(to_string(u.state))},
      {"archs", u.archs},
      {"attempts", u.attempts},
      {"threads", u.threads},
      {"estimate_bytes", u.estimate_bytes},
      // A running unit's is this attempt's: one retried or requeued would
      // otherwise show the last attempt's peak beside this one's memory now.
      {"peak_bytes", running ? live->peak_bytes : u.peak_bytes},
      {"current_bytes", running ? json(live->current_bytes) : json(nullptr)},
      {"elapsed_s", running ? json(live->elapsed_s) : json(nullptr)},
      {"started_at", opt(u.started_at)},
      {"finished_at", opt(u.finished_at)},
      {"duration_s", u.duration_s},
      {"exit_code", u.exit_code ? json(*u.exit_code) : json(nullptr)},
      {"wait_reason", u.state == UnitState::queued ? json(u.wait_reason) : json(nullptr)},
      {"log", pruned ? json(nullptr) : json(u.log_path)},
      {"estimate_source",
       u.estimate_source.empty() || u.state == UnitState::queued ? json(nullptr) : json(u.estimate_source)},
      {"predicted_duration_s", live && live->predicted_duration_s ? json(*live->predicted_duration_s) : json(nullptr)},
      {"cached", u.cached},
      // Where it ran and who measured its peak (a cluster executor); null here.
      {"node", u.node.empty() ? json(nullptr) : json(u.node)},
      {"peak_source", u.peak_source.empty() ? json(nullptr) : json(u.peak_source)}};
  if (u.state == UnitState::queued && live) {
    if (live->estimate_bytes) j["estimate_bytes"] = *live->estimate_bytes;
    if (live->estimate_source) j["estimate_source"] = *live->estimate_source;
    if (live->wait_reason) j["wait_reason"] = *live->wait_reason;
  }
  return j;
}

UnitSummary summarize_units(const std::vector<UnitRecord>& units, const LiveUnits& live) {
  UnitSummary s;
  for (const auto& u : units) {
    s.count(u.state);
    s.cache_hits += u.cached;
    s.add_archs(u.archs);
    if (auto it = live.find(u.id); it != live.end() && it->second.running) s.current_bytes += it->second.current_bytes;
  }
  return s;
}

json build_json(const BuildRecord& b, const std::vector<UnitRecord>& units, const LiveUnits& live) {
  return build_json(b, summarize_units(units, live));
}

json build_json(const BuildRecord& b, const UnitSummary& s) {
  json counts = {{"total", s.total}};
  for (auto state :
       {UnitState::queued, UnitState::running, UnitState::succeeded, UnitState::failed, UnitState::cancelled})
    counts[std::string(to_string(state))] = s.by_state[static_cast<int>(state)];
  // An external build (fad run, fad launch) names no archs up front: its archs
  // are those its compiles were called with.
  const bool archs_from_units = b.archs.empty() && b.kind == "external";
  json j = {{"id", b.id},
            {"name", b.name},
            {"state", to_string(b.state)},
            {"archs", archs_from_units ? s.archs : b.archs},
            {"kernels", b.kernels_glob},
            {"nvcc", b.nvcc},
            {"created_at", b.created_at},
            {"finished_at", opt(b.finished_at)},
            {"units", counts},
            {"peak_bytes", b.peak_bytes},
            {"current_bytes", s.current_bytes},
            // A pruned build's library is gone with its outputs.
            {"artifact", b.pruned_at ? json(nullptr) : opt(b.artifact)},
            {"error", b.error.empty() ? json(nullptr) : json(b.error)},
            {"kind", b.kind},
            {"budget_bytes", b.budget_bytes ? json(*b.budget_bytes) : json(nullptr)},
            {"pruned_at", opt(b.pruned_at)},
            {"cache_hits", s.cache_hits}};
  return j;
}

UnitRows bounded_unit_rows(const std::vector<UnitRecord>& units, const LiveUnits& live, const QueuedLive& queued,
                           std::size_t max_bytes, bool pruned) {
  UnitRows out;
  std::size_t used = 0;
  for (const auto& u : units) {
    if (out.left_out == 0) {
      std::optional<LiveUnit> estimate;
      const LiveUnit* l = nullptr;
      if (auto it = live.find(u.id); it != live.end())
        l = &it->second;
      else if (queued && u.state == UnitState::queued && (estimate = queued(u)))
        l = &*estimate;
      json row = unit_json(u, l, pruned);
      used += row.dump(-1, ' ', false, json::error_handler_t::replace).size() + 1;
      if (used <= max_bytes) {
        out.rows.push_back(std::move(row));
        continue;
      }
    }
    ++out.left_out;
  }
  return out;
}

json memory_json(const MemorySnapshot& s, std::uint64_t budget, std::uint64_t committed, std::uint64_t used) {
  return {{"total_bytes", s.total},
          {"available_bytes", s.available},
          {"swap_total_bytes", s.swap_total},
          {"swap_free_bytes", s.swap_free},
          {"budget_bytes", budget},
          {"committed_bytes", committed},
          {"used_bytes", used},
          {"cgroup_limit_bytes", s.cgroup_limit ? json(*s.cgroup_limit) : json(nullptr)},
          {"psi_some_avg10", s.psi_some_avg10 ? json(*s.psi_some_avg10) : json(nullptr)}};
}

}  // namespace fad
