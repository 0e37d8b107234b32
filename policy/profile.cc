// Profile: a compile unit's memory over time as a step function, and the few
// operations the estimator and scheduler need on it (max, sum, shifted peaks).
// Loads are built from events (time, delta) so that summing n profiles costs a
// sort, not n merges: the scheduler rebuilds its load on every decision.
#include "policy/profile.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>

namespace fad {
namespace {

/// A change of value at a time; deltas of a profile shifted by an offset.
struct Event {
  double t;
  std::int64_t delta;
};

/// Appends the value changes of `p` started `offset` seconds in, including the
/// drop to zero at its end. The first value holds from the start (see profile.h).
void add_events(std::vector<Event>& events, const Profile& p, double offset) {
  if (p.points.empty() || p.duration_s <= 0) return;
  std::int64_t previous = 0;
  for (std::size_t i = 0; i < p.points.size(); ++i) {
    double t = i == 0 ? 0.0 : p.points[i].first;
    if (t >= p.duration_s) break;
    auto value = static_cast<std::int64_t>(p.points[i].second);
    events.push_back({offset + std::max(t, 0.0), value - previous});
    previous = value;
  }
  events.push_back({offset + p.duration_s, -previous});
}

/// Folds sorted events into a profile; `duration` is where the last ends.
Profile from_events(std::vector<Event> events) {
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.t < b.t; });
  Profile out;
  if (events.empty()) return out;
  // A load over time starts at 0 with nothing in use until its first event.
  if (events.front().t > 0) out.points.emplace_back(0.0, 0);
  std::int64_t total = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    total += events[i].delta;
    if (i + 1 < events.size() && events[i + 1].t == events[i].t) continue;
    auto value = static_cast<std::uint64_t>(std::max<std::int64_t>(total, 0));
    if (!out.points.empty() && out.points.back().second == value) continue;
    out.points.emplace_back(events[i].t, value);
  }
  out.duration_s = events.back().t;
  // The final point is the drop to zero at the end; the duration already says that.
  if (!out.points.empty() && out.points.back().first >= out.duration_s) out.points.pop_back();
  return out;
}

void append_double(std::string& out, double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

}  // namespace

std::uint64_t Profile::at(double t) const {
  if (points.empty() || t < 0 || t >= duration_s) return 0;
  auto it = std::upper_bound(points.begin(), points.end(), t, [](double v, const auto& p) { return v < p.first; });
  return it == points.begin() ? points.front().second : std::prev(it)->second;
}

std::uint64_t Profile::peak_from(double from) const {
  if (points.empty() || from >= duration_s) return 0;
  std::uint64_t best = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    double start = i == 0 ? 0.0 : points[i].first;
    double end = i + 1 < points.size() ? points[i + 1].first : duration_s;
    end = std::min(end, duration_s);
    if (end > start && end > from) best = std::max(best, points[i].second);
  }
  return best;
}

double Profile::mean() const {
  if (points.empty() || duration_s <= 0) return 0;
  double integral = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    double start = i == 0 ? 0.0 : points[i].first;
    double end = std::min(i + 1 < points.size() ? points[i + 1].first : duration_s, duration_s);
    if (end > start) integral += static_cast<double>(points[i].second) * (end - start);
  }
  return integral / duration_s;
}

Profile Profile::flat(std::uint64_t bytes, double duration_s) {
  Profile p;
  p.points.emplace_back(0.0, bytes);
  p.duration_s = duration_s;
  return p;
}

Profile Profile::scaled(double memory_factor, double time_factor) const {
  Profile out;
  out.duration_s = duration_s * time_factor;
  out.points.reserve(points.size());
  for (const auto& [t, v] : points)
    out.points.emplace_back(t * time_factor,
                            static_cast<std::uint64_t>(std::llround(static_cast<double>(v) * memory_factor)));
  return out;
}

void Profile::lift_peak_to(std::uint64_t bytes) {
  if (bytes == 0) return;
  auto top =
      std::max_element(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  if (top == points.end())
    points.emplace_back(0.0, bytes);
  else if (top->second < bytes)
    top->second = bytes;
}

Profile Profile::thinned(std::size_t max_points) const {
  if (max_points == 0 || points.size() <= max_points) return *this;
  std::size_t window = (points.size() + max_points - 1) / max_points;
  Profile out;
  out.duration_s = duration_s;
  for (std::size_t i = 0; i < points.size(); i += window) {
    std::uint64_t top = 0;
    for (std::size_t j = i; j < std::min(points.size(), i + window); ++j) top = std::max(top, points[j].second);
    // Holding the window's maximum from its first time over-estimates, never under.
    out.points.emplace_back(points[i].first, top);
  }
  return out;
}

Profile Profile::widened(double window) const {
  if (points.empty() || duration_s <= 0 || !(window > 0)) return *this;
  // Each step [start, end) at value v covers [start - window, end + window):
  // a sweep over those edges, holding the covered values in a multiset.
  struct Edge {
    double t;
    bool opens;
    std::uint64_t v;
  };
  std::vector<Edge> edges;
  edges.reserve(2 * points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    double start = i == 0 ? 0.0 : points[i].first;
    double end = std::min(i + 1 < points.size() ? points[i + 1].first : duration_s, duration_s);
    if (end <= start) continue;
    edges.push_back({std::max(0.0, start - window), true, points[i].second});
    edges.push_back({std::min(duration_s, end + window), false, points[i].second});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.t < b.t; });
  std::multiset<std::uint64_t> covering;
  Profile out;
  out.duration_s = duration_s;
  for (std::size_t k = 0; k < edges.size(); ++k) {
    if (edges[k].opens)
      covering.insert(edges[k].v);
    else
      covering.erase(covering.find(edges[k].v));
    if (k + 1 < edges.size() && edges[k + 1].t == edges[k].t) continue;
    if (edges[k].t >= duration_s) break;
    std::uint64_t v = covering.empty() ? 0 : *covering.rbegin();
    if (out.points.empty() || out.points.back().second != v) out.points.emplace_back(edges[k].t, v);
  }
  return out;
}

Profile Profile::max_of(const Profile& a, const Profile& b) {
  if (a.points.empty()) return b;
  if (b.points.empty()) return a;
  std::vector<double> times = a.breakpoints();
  auto tb = b.breakpoints();
  times.insert(times.end(), tb.begin(), tb.end());
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  Profile out;
  out.duration_s = std::max(a.duration_s, b.duration_s);
  for (double t : times) {
    if (t >= out.duration_s) break;
    std::uint64_t v = std::max(a.at(t), b.at(t));
    if (out.points.empty() || out.points.back().second != v) out.points.emplace_back(t, v);
  }
  return out;
}

Profile Profile::sum(const std::vector<Profile>& parts) {
  std::vector<Event> events;
  for (const auto& p : parts) add_events(events, p, 0);
  return from_events(std::move(events));
}

Profile Profile::plus(const Profile& other, double offset) const {
  std::vector<Event> events;
  add_events(events, *this, 0);
  add_events(events, other, std::max(offset, 0.0));
  return from_events(std::move(events));
}

std::uint64_t Profile::peak_with(const Profile& other, double offset) const {
  if (other.points.empty() || other.duration_s <= 0) return 0;
  // A merge walk over both step functions: this is on the scheduler's hot path.
  const double end = offset + other.duration_s;
  std::size_t i = static_cast<std::size_t>(
      std::upper_bound(points.begin(), points.end(), offset, [](double v, const auto& p) { return v < p.first; }) -
      points.begin());
  std::uint64_t a = at(offset);
  std::size_t j = 0;
  std::uint64_t b = other.points[0].second;
  while (j + 1 < other.points.size() && other.points[j + 1].first <= 0) b = other.points[++j].second;
  ++j;
  std::uint64_t best = a + b;
  constexpr double kNever = 1e300;
  while (true) {
    double ta = i < points.size() && points[i].first < duration_s ? points[i].first : kNever;
    if (a != 0 && duration_s > offset && duration_s < ta) ta = duration_s;  // this ends: drops to 0
    double tb = j < other.points.size() ? offset + other.points[j].first : kNever;
    double t = std::min(ta, tb);
    if (t >= end) break;
    if (t >= duration_s) {
      a = 0;
      i = points.size();
    }
    while (i < points.size() && points[i].first <= t && points[i].first < duration_s) a = points[i++].second;
    while (j < other.points.size() && offset + other.points[j].first <= t) b = other.points[j++].second;
    best = std::max(best, a + b);
  }
  return best;
}

std::vector<double> Profile::breakpoints() const {
  std::vector<double> out;
  if (points.empty()) return out;
  out.push_back(0.0);
  for (const auto& p : points)
    if (p.first > 0 && p.first < duration_s) out.push_back(p.first);
  out.push_back(duration_s);
  return out;
}

std::string Profile::serialize() const {
  std::string out;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (i) out += ',';
    append_double(out, points[i].first);
    out += ':';
    out += std::to_string(points[i].second);
  }
  out += ';';
  append_double(out, duration_s);
  return out;
}

Result<Profile> Profile::parse(std::string_view text) {
  auto bad = [&](std::string_view what) {
    return make_error("invalid profile '" + std::string(text.substr(0, 60)) + "': " + std::string(what));
  };
  auto parse_double = [](std::string_view s, double& v) {
    auto res = std::from_chars(s.data(), s.data() + s.size(), v);
    return res.ec == std::errc() && res.ptr == s.data() + s.size() && std::isfinite(v);
  };
  auto semi = text.rfind(';');
  if (semi == std::string_view::npos) return bad("missing ';duration'");
  Profile p;
  if (!parse_double(text.substr(semi + 1), p.duration_s) || p.duration_s < 0) return bad("bad duration");
  std::string_view list = text.substr(0, semi);
  while (!list.empty()) {
    auto comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    auto colon = item.find(':');
    if (colon == std::string_view::npos) return bad("point without ':'");
    double t = 0;
    std::uint64_t v = 0;
    std::string_view vs = item.substr(colon + 1);
    auto res = std::from_chars(vs.data(), vs.data() + vs.size(), v);
    if (!parse_double(item.substr(0, colon), t) || res.ec != std::errc() || res.ptr != vs.data() + vs.size())
      return bad("bad point '" + std::string(item) + "'");
    if (!p.points.empty() && t < p.points.back().first) return bad("times not sorted");
    p.points.emplace_back(t, v);
  }
  return p;
}

}  // namespace fad
