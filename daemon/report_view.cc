// Shapes a build's report data; see report_view.h. Times are epoch seconds,
// sample times relative to their attempt's start, rounded to 0.1 s: a report
// is a picture, and every digit costs protocol bytes.
#include "daemon/report_view.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/time_text.h"
#include "policy/profile.h"

namespace fad {

using nlohmann::json;

namespace {

double tenth(double s) { return std::round(s * 10) / 10; }

// How many of an item's `n` entries a report keeps when each keeps `share` of
// its own: two at least (a curve's two ends, a unit's latest two events).
std::size_t kept(std::size_t n, double share) {
  return std::min(n, std::max<std::size_t>(2, static_cast<std::size_t>(std::floor(static_cast<double>(n) * share))));
}

json attempt_json(const UnitAttempt& a, std::size_t max_points) {
  json t = json::array(), bytes = json::array();
  if (auto p = Profile::parse(a.points)) {
    Profile thin = p->points.size() > max_points ? p->thinned(max_points) : *p;
    for (const auto& [at, b] : thin.points) {
      t.push_back(tenth(at));
      bytes.push_back(b);
    }
  }
  const bool running = a.outcome == "running" || a.outcome == "paused" || a.outcome == "suspended";
  return {{"attempt", a.attempt},
          {"start", tenth(a.started_at)},
          {"end", running ? json(nullptr) : json(tenth(a.ended_at))},
          {"outcome", a.outcome},
          {"threads", a.threads},
          {"estimate_bytes", a.estimate_bytes},
          {"peak_bytes", a.peak_bytes},
          {"t", std::move(t)},
          {"bytes", std::move(bytes)}};
}

json machine_json(const std::vector<MemorySample>& samples, std::size_t max_samples) {
  json t = json::array(), total = json::array(), available = json::array(), fad = json::array(),
       committed = json::array(), capacity = json::array();
  const std::size_t stride =
      std::max<std::size_t>(1, (samples.size() + max_samples - 1) / std::max<std::size_t>(1, max_samples));
  for (std::size_t i = 0; i < samples.size(); i += stride) {
    const auto& s = samples[i];
    auto at = parse_rfc3339(s.at);
    if (!at) continue;
    t.push_back(*at);
    total.push_back(s.total);
    available.push_back(s.available);
    fad.push_back(s.fad_bytes);
    committed.push_back(s.committed);
    capacity.push_back(s.capacity);
  }
  return {{"t", t},           {"total_bytes", total},         {"available_bytes", available},
          {"fad_bytes", fad}, {"committed_bytes", committed}, {"capacity_bytes", capacity}};
}

}  // namespace

json report_json(const ReportInput& in, std::size_t max_points, std::size_t max_samples, std::size_t max_unit_bytes) {
  json build = build_json(in.build, in.units, in.live);  // the counts are over every unit
  build["started_at"] = in.build_started_at ? json(*in.build_started_at) : json(nullptr);

  UnitRows rows = bounded_unit_rows(in.units, in.live, in.queued, max_unit_bytes, in.build.pruned_at.has_value());
  json& units = rows.rows;
  std::map<std::int64_t, std::size_t> index;  // unit id -> position in `units`
  for (std::size_t i = 0; i < units.size(); ++i) {
    units[i]["attempt_list"] = json::array();
    units[i]["events"] = json::array();
    index[in.units[i].id] = i;
  }

  // Every attempt keeps at least two points; the rest of the budget is shared
  // in proportion to how many each attempt has.
  std::size_t total_points = 0;
  for (const auto& a : in.attempts)
    if (index.count(a.unit_id)) total_points += std::count(a.points.begin(), a.points.end(), ',') + 1;
  const double share = total_points > max_points ? static_cast<double>(max_points) / total_points : 1.0;

  for (const auto& a : in.attempts) {
    auto it = index.find(a.unit_id);
    if (it == index.end()) continue;
    const std::size_t points = std::count(a.points.begin(), a.points.end(), ',') + 1;
    units[it->second]["attempt_list"].push_back(attempt_json(a, kept(points, share)));
  }
  // Events likewise (a build paused and resumed in a loop has thousands):
  // each unit keeps its latest, two when there is room for two each, and
  // the rest in proportion to how many it has; never more than kReportEvents
  // in all, however many units have events.
  std::map<std::int64_t, std::size_t> events_of;
  std::size_t total_events = 0;
  for (const auto& e : in.events)
    if (index.count(e.unit_id)) ++events_of[e.unit_id], ++total_events;
  std::map<std::int64_t, std::size_t> skip;  // unit id -> its oldest events left out
  if (total_events > kReportEvents) {
    const std::size_t floor_each = std::min<std::size_t>(2, kReportEvents / events_of.size());
    std::size_t excess = 0;
    for (const auto& [id, n] : events_of) excess += n - std::min(n, floor_each);
    const std::size_t room = kReportEvents - floor_each * events_of.size();
    const double share = static_cast<double>(room) / static_cast<double>(excess);  // excess > room
    std::map<std::int64_t, std::size_t> keep;
    std::size_t spent = 0;
    for (const auto& [id, n] : events_of) {
      const std::size_t base = std::min(n, floor_each);
      keep[id] = base + static_cast<std::size_t>(std::floor(static_cast<double>(n - base) * share));
      spent += keep[id];
    }
    // What flooring left unspent goes one each, in unit order.
    for (auto& [id, k] : keep)
      if (spent < kReportEvents && k < events_of[id]) ++k, ++spent;
    for (const auto& [id, n] : events_of) {
      if (keep[id] == n) continue;
      skip[id] = n - keep[id];
      units[index[id]]["events_left_out"] = n - keep[id];
    }
  }
  for (const auto& e : in.events) {
    auto it = index.find(e.unit_id);
    if (it == index.end()) continue;
    if (auto s = skip.find(e.unit_id); s != skip.end() && s->second > 0) {
      --s->second;
      continue;
    }
    units[it->second]["events"].push_back({{"at", tenth(e.at)}, {"kind", e.kind}, {"detail", e.detail}});
  }
  json report = {{"build", std::move(build)},
                 {"units", std::move(units)},
                 {"machine", machine_json(in.machine, max_samples)},
                 {"budget_bytes", in.budget_bytes ? json(*in.budget_bytes) : json(nullptr)},
                 {"now", tenth(in.now)}};
  if (rows.left_out) report["units_left_out"] = rows.left_out;
  return report;
}

}  // namespace fad
