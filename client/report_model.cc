// Report model; see report_model.h.
#include "client/report_model.h"

#include <algorithm>
#include <cmath>

#include "client/json_access.h"
#include "common/time_text.h"

namespace fad::client {

namespace {

std::uint64_t bytes_of(const json& j) { return j.is_number() && j.get<double>() > 0 ? j.get<std::uint64_t>() : 0; }

// Pairs "on" and "off" events into spans; one still open ends at its attempt's end (or `until`).
void add_event_spans(const json& events, const char* on, const char* off, const char* kind, double created,
                     double until, UnitTimeline& unit) {
  std::optional<double> open;
  std::string why;
  for (const auto& e : events) {
    const std::string k = str(e, "kind");
    const double at = number(e, "at") - created;
    if (k == on && !open) {
      open = at;
      why = str(e, "detail");
    } else if ((k == off || k == "end") && open) {
      unit.spans.push_back({*open, std::max(*open, at), kind, why});
      open.reset();
    }
  }
  if (open) unit.spans.push_back({*open, std::max(*open, until), kind, why});
}

/// The run time covered by a unit's suspended and paused spans, overlaps
/// once. Clipped to its runs: a unit recorded before attempts were kept shows
/// its last run only, and may have been suspended in an earlier one.
double frozen_seconds(const std::vector<Span>& spans) {
  std::vector<std::pair<double, double>> frozen;
  for (const auto& s : spans)
    if (s.kind == "suspended" || s.kind == "paused") frozen.emplace_back(s.start, s.end);
  std::sort(frozen.begin(), frozen.end());
  std::vector<std::pair<double, double>> merged;
  for (const auto& [start, end] : frozen)
    if (!merged.empty() && start <= merged.back().second)
      merged.back().second = std::max(merged.back().second, end);
    else
      merged.emplace_back(start, end);
  double total = 0;
  for (const auto& run : spans)
    if (run.kind == "run")
      for (const auto& [start, end] : merged)
        total += std::max(0.0, std::min(run.end, end) - std::max(run.start, start));
  return total;
}

}  // namespace

std::uint64_t Samples::at(double t) const {
  if (points.empty() || t < points.front().first || t >= end) return 0;
  auto it = std::upper_bound(points.begin(), points.end(), t,
                             [](double v, const std::pair<double, std::uint64_t>& p) { return v < p.first; });
  return std::prev(it)->second;
}

ReportModel build_report_model(const json& report, std::size_t grid_points) {
  ReportModel m;
  const json& b = object_of(report, "build");
  m.id = count(b, "id");
  m.name = str(b, "name");
  m.state = str(b, "state");
  m.created_at = str(b, "created_at");
  m.finished_at = str(b, "finished_at");
  m.pruned_at = str(b, "pruned_at");
  for (const auto& a : array_of(b, "archs"))
    if (a.is_string()) m.archs.push_back(a.get<std::string>());
  m.peak_bytes = static_cast<std::uint64_t>(std::max(0.0, number(b, "peak_bytes")));
  m.created = parse_rfc3339(m.created_at).value_or(number(report, "now"));
  const double end_abs = parse_rfc3339(m.finished_at).value_or(number(report, "now", m.created));
  double horizon = std::max(0.0, end_abs - m.created);
  if (const json* budget = field(report, "budget_bytes"); budget && budget->is_number()) m.budget = bytes_of(*budget);

  m.units_left_out = count(report, "units_left_out");
  for (const auto& u : array_of(report, "units")) {
    UnitTimeline t;
    t.name = str(u, "name");
    t.kind = str(u, "kind");
    t.state = str(u, "state");
    t.attempts = static_cast<int>(count(u, "attempts"));
    t.threads = static_cast<int>(count(u, "threads"));
    t.estimate_bytes = static_cast<std::uint64_t>(std::max(0.0, number(u, "estimate_bytes")));
    t.estimate_source = str(u, "estimate_source");
    t.peak_bytes = static_cast<std::uint64_t>(std::max(0.0, number(u, "peak_bytes")));
    if (const json* e = field(u, "exit_code"); e && e->is_number_integer()) t.exit_code = e->get<int>();

    // Queued since the build was created; an external compile since it arrived.
    double queued_at = 0;
    const json& events = array_of(u, "events");
    for (const auto& e : events)
      if (str(e, "kind") == "queued") {
        queued_at = number(e, "at") - m.created;
        break;
      }
    for (const auto& a : array_of(u, "attempt_list")) {
      const double start = number(a, "start") - m.created;
      const json* end_field = field(a, "end");
      const double end = end_field && end_field->is_number() ? end_field->get<double>() - m.created : horizon;
      horizon = std::max(horizon, end);
      if (start > queued_at) t.spans.push_back({queued_at, start, "wait", "queued"});
      Span run{start, std::max(start, end), "run", str(a, "outcome")};
      run.attempt = static_cast<int>(count(a, "attempt"));
      run.threads = static_cast<int>(count(a, "threads"));
      run.estimate_bytes = static_cast<std::uint64_t>(std::max(0.0, number(a, "estimate_bytes")));
      run.peak_bytes = static_cast<std::uint64_t>(std::max(0.0, number(a, "peak_bytes")));
      t.spans.push_back(run);
      t.run_s += run.end - run.start;
      if (t.first_start < 0) t.first_start = start;
      queued_at = run.end;

      Samples s;
      s.end = run.end;
      const json& ts = array_of(a, "t");
      const json& bs = array_of(a, "bytes");
      for (std::size_t i = 0; i < ts.size() && i < bs.size(); ++i)
        if (ts[i].is_number()) s.points.emplace_back(start + ts[i].get<double>(), bytes_of(bs[i]));
      std::sort(s.points.begin(), s.points.end());
      if (!s.points.empty()) t.samples.push_back(std::move(s));
    }
    // A unit of a build older than fadd's attempt records: its last run from the unit's own times.
    if (array_of(u, "attempt_list").empty()) {
      auto started = parse_rfc3339(str(u, "started_at"));
      auto finished = parse_rfc3339(str(u, "finished_at"));
      if (started && finished && *finished >= *started) {
        if (*started - m.created > queued_at) t.spans.push_back({queued_at, *started - m.created, "wait", "queued"});
        Span run{*started - m.created, *finished - m.created, "run", t.state};
        run.attempt = t.attempts;
        run.peak_bytes = t.peak_bytes;
        t.spans.push_back(run);
        t.run_s = run.end - run.start;
        t.first_start = run.start;
        queued_at = run.end;
      }
    }
    // Still queued, or cancelled before it ever ran.
    if (t.state == "queued" ||
        (t.state == "cancelled" && queued_at < horizon && (t.spans.empty() || t.spans.back().kind != "run")))
      t.spans.push_back(
          {queued_at, std::max(queued_at, horizon), "wait", t.state == "queued" ? "queued" : "cancelled"});
    m.units.push_back(std::move(t));
  }
  m.duration = std::max(horizon, 1.0);

  // Suspended and paused stretches close at their attempt's end at the latest.
  for (std::size_t i = 0; i < m.units.size(); ++i) {
    const json& u = array_of(report, "units")[i];
    json events = array_of(u, "events");
    for (const auto& a : array_of(u, "attempt_list"))
      if (const json* end = field(a, "end"); end && end->is_number())
        events.push_back({{"at", end->get<double>()}, {"kind", "end"}});
    std::stable_sort(events.begin(), events.end(),
                     [](const json& x, const json& y) { return number(x, "at") < number(y, "at"); });
    add_event_spans(events, "suspend", "resume", "suspended", m.created, m.duration, m.units[i]);
    add_event_spans(events, "pause", "unpause", "paused", m.created, m.duration, m.units[i]);
    // Run time is compile time, as fad status counts it: frozen stretches
    // (suspended, paused, or both at once) are not part of it.
    m.units[i].run_s = std::max(0.0, m.units[i].run_s - frozen_seconds(m.units[i].spans));
  }
  std::stable_sort(m.units.begin(), m.units.end(), [](const UnitTimeline& x, const UnitTimeline& y) {
    if ((x.first_start < 0) != (y.first_start < 0)) return y.first_start < 0;
    return x.first_start < y.first_start;
  });

  const json& machine = object_of(report, "machine");
  const json& mt = array_of(machine, "t");
  auto series = [&](const char* key, std::vector<std::pair<double, std::uint64_t>>& out) {
    const json& values = array_of(machine, key);
    for (std::size_t i = 0; i < mt.size() && i < values.size(); ++i) {
      if (!mt[i].is_number()) continue;
      const double t = mt[i].get<double>() - m.created;
      const std::uint64_t v = bytes_of(values[i]);
      if (v > 0 && t >= -1 && t <= m.duration + 1) out.emplace_back(std::clamp(t, 0.0, m.duration), v);
    }
  };
  series("available_bytes", m.available);
  series("capacity_bytes", m.capacity);
  series("total_bytes", m.total);

  grid_points = std::max<std::size_t>(grid_points, 2);
  for (std::size_t k = 0; k < grid_points; ++k) m.grid.push_back(m.duration * k / (grid_points - 1));
  // Each grid point carries the highest value of the cell it starts, so a unit
  // shorter than a cell still shows (at the price of a slight overstatement
  // where units end and start within one cell).
  const double step = m.duration / (grid_points - 1);
  for (const auto& unit : m.units) {
    std::vector<std::uint64_t> row(m.grid.size(), 0);
    for (const auto& s : unit.samples)
      for (std::size_t i = 0; i < s.points.size(); ++i) {
        const double from = s.points[i].first, to = i + 1 < s.points.size() ? s.points[i + 1].first : s.end;
        if (to <= from && i + 1 < s.points.size()) continue;
        const auto first = static_cast<std::size_t>(std::clamp(std::floor(from / step), 0.0, double(grid_points - 1)));
        const auto last = static_cast<std::size_t>(
            std::clamp(std::ceil(std::max(to, from + 1e-9) / step) - 1, double(first), double(grid_points - 1)));
        for (std::size_t k = first; k <= last; ++k) row[k] = std::max(row[k], s.points[i].second);
      }
    m.stack.push_back(std::move(row));
  }
  return m;
}

}  // namespace fad::client
