// The trace-event export of a report (Chrome's about:tracing and Perfetto
// read it): one thread per unit carrying its spans as complete events, and
// counters for memory. Times are microseconds since the build was created.
#include "client/report_html.h"

#include <cmath>

namespace fad::client {

namespace {
double us(double seconds) { return std::round(seconds * 1e6); }
}  // namespace

json render_trace(const ReportModel& m) {
  json events = json::array();
  const std::string process = "fad build " + std::to_string(m.id) + (m.name.empty() ? "" : " (" + m.name + ")");
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 0}, {"args", {{"name", process}}}});
  for (std::size_t i = 0; i < m.units.size(); ++i) {
    const UnitTimeline& u = m.units[i];
    const int tid = static_cast<int>(i) + 1;
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", tid}, {"args", {{"name", u.name}}}});
    events.push_back(
        {{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 1}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
    for (const Span& s : u.spans) {
      json args = {{"kind", s.kind}};
      if (!s.outcome.empty()) args["outcome"] = s.outcome;
      if (s.kind == "run") {
        args["attempt"] = s.attempt;
        args["threads"] = s.threads;
        args["estimate_bytes"] = s.estimate_bytes;
        args["peak_bytes"] = s.peak_bytes;
      }
      events.push_back({{"name", s.kind == "run" ? u.name : s.kind},
                        {"cat", s.kind},
                        {"ph", "X"},
                        {"ts", us(s.start)},
                        {"dur", us(s.end - s.start)},
                        {"pid", 1},
                        {"tid", tid},
                        {"args", args}});
    }
    // The unit's memory as its own counter track, back to 0 when each attempt ends.
    for (const Samples& s : u.samples) {
      for (const auto& [t, bytes] : s.points)
        events.push_back(
            {{"name", "memory " + u.name}, {"ph", "C"}, {"ts", us(t)}, {"pid", 1}, {"args", {{"bytes", bytes}}}});
      events.push_back(
          {{"name", "memory " + u.name}, {"ph", "C"}, {"ts", us(s.end)}, {"pid", 1}, {"args", {{"bytes", 0}}}});
    }
  }
  // fad's units together, and the machine.
  std::vector<std::uint64_t> sum(m.grid.size(), 0);
  for (const auto& row : m.stack)
    for (std::size_t k = 0; k < row.size(); ++k) sum[k] += row[k];
  for (std::size_t k = 0; k < m.grid.size(); ++k)
    events.push_back(
        {{"name", "fad units"}, {"ph", "C"}, {"ts", us(m.grid[k])}, {"pid", 1}, {"args", {{"bytes", sum[k]}}}});
  auto counter = [&](const char* name, const std::vector<std::pair<double, std::uint64_t>>& series) {
    for (const auto& [t, v] : series)
      events.push_back({{"name", name}, {"ph", "C"}, {"ts", us(t)}, {"pid", 1}, {"args", {{"bytes", v}}}});
  };
  counter("available memory", m.available);
  counter("capacity", m.capacity);
  if (m.budget) {
    events.push_back({{"name", "memory_budget"}, {"ph", "C"}, {"ts", 0}, {"pid", 1}, {"args", {{"bytes", *m.budget}}}});
    events.push_back(
        {{"name", "memory_budget"}, {"ph", "C"}, {"ts", us(m.duration)}, {"pid", 1}, {"args", {{"bytes", *m.budget}}}});
  }
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ms"},
          {"otherData", {{"build", m.id}, {"created_at", m.created_at}, {"state", m.state}}}};
}

}  // namespace fad::client
