// Status JSON per the contract ("fad status --json"); fields may be added, never
// renamed or removed.
#include "daemon/status_view.h"

namespace fad {

using nlohmann::json;

namespace {
json opt(const std::optional<std::string>& v) { return v ? json(*v) : json(nullptr); }
}  // namespace

json build_json(const BuildRecord& b, const std::vector<UnitRecord>& units, bool with_units) {
  json counts = {{"total", 0}, {"queued", 0}, {"running", 0}, {"succeeded", 0}, {"failed", 0}, {"cancelled", 0}};
  for (const auto& u : units) {
    counts["total"] = counts["total"].get<int>() + 1;
    const std::string state(to_string(u.state));
    counts[state] = counts[state].get<int>() + 1;
  }
  json j = {{"id", b.id},
            {"name", b.name},
            {"state", to_string(b.state)},
            {"archs", b.archs},
            {"kernels", b.kernels_glob},
            {"nvcc", b.nvcc},
            {"created_at", b.created_at},
            {"finished_at", opt(b.finished_at)},
            {"units", counts},
            {"peak_bytes", b.peak_bytes},
            {"artifact", opt(b.artifact)},
            {"error", b.error.empty() ? json(nullptr) : json(b.error)},
            {"kind", b.kind},
            {"budget_bytes", b.budget_bytes ? json(*b.budget_bytes) : json(nullptr)}};
  if (with_units) {
    json list = json::array();
    for (const auto& u : units) {
      list.push_back({{"name", u.name},
                      {"kind", to_string(u.kind)},
                      {"state", to_string(u.state)},
                      {"archs", u.archs},
                      {"attempts", u.attempts},
                      {"threads", u.threads},
                      {"estimate_bytes", u.estimate_bytes},
                      {"peak_bytes", u.peak_bytes},
                      {"started_at", opt(u.started_at)},
                      {"finished_at", opt(u.finished_at)},
                      {"duration_s", u.duration_s},
                      {"exit_code", u.exit_code ? json(*u.exit_code) : json(nullptr)},
                      {"wait_reason", u.state == UnitState::queued ? json(u.wait_reason) : json(nullptr)},
                      {"log", u.log_path}});
      // Where it ran and who measured its peak (a cluster executor); null here.
      list.back()["node"] = u.node.empty() ? json(nullptr) : json(u.node);
      list.back()["peak_source"] = u.peak_source.empty() ? json(nullptr) : json(u.peak_source);
    }
    j["unit_list"] = std::move(list);
  }
  return j;
}

json memory_json(const MemorySnapshot& s, std::uint64_t budget, std::uint64_t committed) {
  return {{"total_bytes", s.total},
          {"available_bytes", s.available},
          {"swap_total_bytes", s.swap_total},
          {"swap_free_bytes", s.swap_free},
          {"budget_bytes", budget},
          {"committed_bytes", committed},
          {"cgroup_limit_bytes", s.cgroup_limit ? json(*s.cgroup_limit) : json(nullptr)},
          {"psi_some_avg10", s.psi_some_avg10 ? json(*s.psi_some_avg10) : json(nullptr)}};
}

}  // namespace fad
