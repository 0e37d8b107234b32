// The HTML report; see report_html.h. Coordinates are written with one
// decimal: a report of hundreds of units stays a few hundred kilobytes.
#include "client/report_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>

#include "client/render.h"
#include "client/report_assets.h"
#include "common/size.h"
#include "common/text.h"

namespace fad::client {

namespace {

constexpr double kWidth = 1100;
constexpr double kMemHeight = 320;
constexpr double kLeft = 230;  // room for unit names in the Gantt chart; the memory chart aligns with it
constexpr double kRight = 1080;
constexpr double kRow = 16;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s;
}

double x_of(const ReportModel& m, double t) { return kLeft + (kRight - kLeft) * std::clamp(t / m.duration, 0.0, 1.0); }

// Round steps for an axis: 1, 2 or 5 times a power of ten (or of time units).
double nice_time_step(double span) {
  static const double kSteps[] = {1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400};
  for (double s : kSteps)
    if (span / s <= 10) return s;
  return 86400 * std::ceil(span / 86400 / 10);
}

double nice_bytes_step(double top) {
  const double gib = 1024.0 * 1024 * 1024;
  const double unit = top >= gib ? gib : 1024.0 * 1024;
  const double raw = top / unit / 5;
  const double mag = std::pow(10, std::floor(std::log10(std::max(raw, 1e-9))));
  for (double f : {1.0, 2.0, 5.0, 10.0})
    if (raw <= f * mag) return f * mag * unit;
  return 10 * mag * unit;
}

std::string time_label(double s) {
  if (s < 60) return num(s) + "s";
  if (s < 3600)
    return std::to_string(static_cast<long>(s) / 60) + "m" +
           (static_cast<long>(s) % 60 ? " " + std::to_string(static_cast<long>(s) % 60) + "s" : "");
  return std::to_string(static_cast<long>(s) / 3600) + "h" +
         (static_cast<long>(s) % 3600 ? " " + std::to_string(static_cast<long>(s) % 3600 / 60) + "m" : "");
}

std::string unit_color(std::size_t i) {
  return "hsl(" + std::to_string(static_cast<int>(std::fmod(i * 137.508, 360))) + ",55%,62%)";
}

void time_axis(std::ostringstream& out, const ReportModel& m, double top, double bottom, double label_y) {
  const double step = nice_time_step(m.duration);
  out << "<g class=\"axis\">";
  for (double t = 0; t <= m.duration + 1e-9; t += step) {
    const double x = x_of(m, t);
    out << "<line x1=\"" << num(x) << "\" x2=\"" << num(x) << "\" y1=\"" << num(top) << "\" y2=\"" << num(bottom)
        << "\"/><text x=\"" << num(x) << "\" y=\"" << num(label_y) << "\" text-anchor=\"middle\">" << time_label(t)
        << "</text>";
  }
  out << "</g>";
}

std::string polyline(const ReportModel& m, const std::vector<std::pair<double, std::uint64_t>>& series,
                     const std::function<double(double)>& y_of) {
  std::string points;
  for (const auto& [t, v] : series) points += num(x_of(m, t)) + "," + num(y_of(static_cast<double>(v))) + " ";
  if (!points.empty()) points.pop_back();
  return points;
}

void memory_chart(std::ostringstream& out, const ReportModel& m) {
  const double top = 20, bottom = kMemHeight - 30;
  std::vector<std::uint64_t> sum(m.grid.size(), 0);
  for (const auto& row : m.stack)
    for (std::size_t k = 0; k < row.size(); ++k) sum[k] += row[k];
  // The scale is that of fad's units. The budget, capacity and available
  // memory are drawn clipped to it: they come into view exactly when memory
  // gets short for the units, and a roomy machine does not flatten the stack.
  double y_max = 1 << 20;
  for (auto v : sum) y_max = std::max(y_max, static_cast<double>(v));
  y_max *= 1.25;
  auto highest = [](const std::vector<std::pair<double, std::uint64_t>>& series) {
    double high = 0;
    for (const auto& p : series) high = std::max(high, static_cast<double>(p.second));
    return high;
  };
  std::vector<std::string> above;  // the lines that leave the chart at its top
  if (m.budget && static_cast<double>(*m.budget) > y_max) above.push_back("memory_budget " + format_size(*m.budget));
  if (highest(m.capacity) > y_max)
    above.push_back("capacity up to " + format_size(static_cast<std::uint64_t>(highest(m.capacity))));
  if (highest(m.available) > y_max)
    above.push_back("available memory up to " + format_size(static_cast<std::uint64_t>(highest(m.available))));
  auto y_of = [&](double v) { return bottom - (bottom - top) * v / y_max; };

  out << "<svg id=\"memory\" viewBox=\"0 0 " << num(kWidth) << " " << num(kMemHeight)
      << "\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" aria-label=\"memory over time\">"
      << "<defs><clipPath id=\"plot\"><rect x=\"" << num(kLeft) << "\" y=\"" << num(top) << "\" width=\""
      << num(kRight - kLeft) << "\" height=\"" << num(bottom - top) << "\"/></clipPath></defs>";
  const double step = nice_bytes_step(y_max);
  out << "<g class=\"axis\">";
  for (double v = 0; v <= y_max; v += step)
    out << "<line x1=\"" << num(kLeft) << "\" x2=\"" << num(kRight) << "\" y1=\"" << num(y_of(v)) << "\" y2=\""
        << num(y_of(v)) << "\"/><text x=\"" << num(kLeft - 6) << "\" y=\"" << num(y_of(v) + 4)
        << "\" text-anchor=\"end\">" << format_size(static_cast<std::uint64_t>(v)) << "</text>";
  out << "</g>";
  time_axis(out, m, bottom, bottom + 4, bottom + 18);

  // fad's units, stacked in the order they first started.
  std::vector<std::uint64_t> base(m.grid.size(), 0);
  for (std::size_t i = 0; i < m.stack.size(); ++i) {
    const auto& row = m.stack[i];
    auto first = std::find_if(row.begin(), row.end(), [](auto v) { return v > 0; });
    if (first == row.end()) continue;
    const std::size_t from = first - row.begin();
    std::size_t to = row.size() - 1;
    while (to > from && row[to] == 0) --to;
    std::string upper, lower;
    for (std::size_t k = from; k <= to; ++k) {
      const double x0 = x_of(m, m.grid[k]), x1 = x_of(m, k + 1 < m.grid.size() ? m.grid[k + 1] : m.grid[k]);
      upper += num(x0) + "," + num(y_of(static_cast<double>(base[k] + row[k]))) + " " + num(x1) + "," +
               num(y_of(static_cast<double>(base[k] + row[k]))) + " ";
      lower = num(x1) + "," + num(y_of(static_cast<double>(base[k]))) + " " + num(x0) + "," +
              num(y_of(static_cast<double>(base[k]))) + " " + lower;
    }
    out << "<polygon class=\"mem-unit\" data-unit=\"" << i << "\" fill=\"" << unit_color(i) << "\" points=\"" << upper
        << lower << "\"><title>" << html_escape(m.units[i].name) << ": peak "
        << format_size(*std::max_element(row.begin(), row.end())) << "</title></polygon>";
    for (std::size_t k = from; k <= to; ++k) base[k] += row[k];
  }
  if (m.budget)
    out << "<line class=\"line-budget\" clip-path=\"url(#plot)\" x1=\"" << num(kLeft) << "\" x2=\"" << num(kRight)
        << "\" y1=\"" << num(y_of(static_cast<double>(*m.budget))) << "\" y2=\""
        << num(y_of(static_cast<double>(*m.budget))) << "\"><title>memory_budget " << format_size(*m.budget)
        << "</title></line>";
  if (!m.capacity.empty())
    out << "<polyline class=\"line-capacity\" clip-path=\"url(#plot)\" points=\"" << polyline(m, m.capacity, y_of)
        << "\"><title>capacity: what fad's units could hold</title></polyline>";
  if (!m.available.empty())
    out << "<polyline class=\"line-available\" clip-path=\"url(#plot)\" points=\"" << polyline(m, m.available, y_of)
        << "\"><title>the machine's available memory</title></polyline>";
  if (!above.empty()) {
    std::string note;
    for (const auto& a : above) note += (note.empty() ? "" : "; ") + a;
    out << "<text class=\"above\" x=\"" << num(kRight) << "\" y=\"" << num(top - 6) << "\" text-anchor=\"end\">"
        << html_escape(note) << " (above the chart while above it)</text>";
  }
  out << "<line id=\"cursor\" x1=\"0\" x2=\"0\" y1=\"" << num(top) << "\" y2=\"" << num(bottom)
      << "\" stroke=\"#333\" stroke-width=\"0.6\" style=\"display:none\"/>";
  out << "</svg>\n";
}

std::string span_title(const UnitTimeline& u, const Span& s) {
  std::string t = u.name + ": ";
  if (s.kind == "run") {
    t += "attempt " + std::to_string(s.attempt) + ", " + s.outcome + ", " + format_duration(s.end - s.start) + ", " +
         std::to_string(s.threads) + " thread(s), estimate " + format_size(s.estimate_bytes) + ", peak " +
         format_size(s.peak_bytes);
  } else {
    t += s.kind + " " + format_duration(s.end - s.start);
    if (!s.outcome.empty() && s.outcome != "queued") t += " (" + s.outcome + ")";
  }
  return t;
}

void gantt_chart(std::ostringstream& out, const ReportModel& m) {
  const double top = 24, height = top + kRow * static_cast<double>(m.units.size()) + 24;
  out << "<svg id=\"gantt\" viewBox=\"0 0 " << num(kWidth) << " " << num(height)
      << "\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" aria-label=\"units over time\">";
  time_axis(out, m, top - 4, height - 20, 14);
  for (std::size_t i = 0; i < m.units.size(); ++i) {
    const UnitTimeline& u = m.units[i];
    const double y = top + kRow * static_cast<double>(i);
    std::string label = u.name.size() > 36 ? u.name.substr(0, 35) + "~" : u.name;
    out << "<g class=\"unit-row\" data-unit=\"" << i << "\"><text x=\"" << num(kLeft - 6) << "\" y=\""
        << num(y + kRow - 4) << "\" text-anchor=\"end\">" << html_escape(label) << "</text>";
    // The unit's bar: its last run, or its wait when it never ran.
    std::size_t bar = u.spans.size();
    for (std::size_t k = 0; k < u.spans.size(); ++k)
      if (u.spans[k].kind == "run" || (bar == u.spans.size() && u.spans[k].kind == "wait")) bar = k;
    for (std::size_t k = 0; k < u.spans.size(); ++k) {
      const Span& s = u.spans[k];
      const double x0 = x_of(m, s.start), x1 = std::max(x_of(m, s.end), x0 + 1.5);
      const bool overlay = s.kind == "suspended" || s.kind == "paused";
      std::string cls = "span " + s.kind;
      if (s.kind == "run") cls += " outcome-" + s.outcome;
      if (k == bar) cls += " bar";
      out << "<rect class=\"" << cls << "\" x=\"" << num(x0) << "\" y=\"" << num(y + (overlay ? 5 : 2)) << "\" width=\""
          << num(x1 - x0) << "\" height=\"" << num(overlay ? kRow - 10 : kRow - 4) << "\"><title>"
          << html_escape(span_title(u, s)) << "</title></rect>";
    }
    out << "</g>";
  }
  out << "</svg>\n";
}

std::string ratio_cell(const UnitTimeline& u) {
  if (u.estimate_bytes == 0 || u.peak_bytes == 0) return "<td class=\"ratio\" data-v=\"0\">-</td>";
  const double r = static_cast<double>(u.peak_bytes) / static_cast<double>(u.estimate_bytes);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", r * 100);
  return "<td class=\"ratio\" data-v=\"" + num(r) + "\">" + buf + "</td>";
}

void unit_table(std::ostringstream& out, const ReportModel& m) {
  out << "<table id=\"units\"><thead><tr><th>unit</th><th class=\"l\">kind</th><th class=\"l\">state</th>"
         "<th>attempts</th><th>threads</th><th>estimate</th><th class=\"l\">source</th><th>peak</th>"
         "<th>peak / estimate</th><th>run time</th><th>exit</th></tr></thead><tbody>\n";
  for (std::size_t i = 0; i < m.units.size(); ++i) {
    const UnitTimeline& u = m.units[i];
    // Marked when the peak beat the estimate by more than sampling noise.
    const bool over = u.estimate_bytes > 0 && u.peak_bytes > u.estimate_bytes + u.estimate_bytes / 20;
    out << "<tr data-unit=\"" << i << "\"" << (over ? " class=\"over\"" : "") << "><td>" << html_escape(u.name)
        << "</td><td class=\"l\">" << html_escape(u.kind) << "</td><td class=\"l\">" << html_escape(u.state)
        << "</td><td>" << u.attempts << "</td><td>" << u.threads << "</td><td data-v=\"" << u.estimate_bytes << "\">"
        << (u.estimate_bytes ? format_size(u.estimate_bytes) : "-") << "</td><td class=\"l\">"
        << html_escape(u.estimate_source.empty() ? "-" : u.estimate_source) << "</td><td data-v=\"" << u.peak_bytes
        << "\">" << (u.peak_bytes ? format_size(u.peak_bytes) : "-") << "</td>" << ratio_cell(u) << "<td data-v=\""
        << num(u.run_s) << "\">" << (u.run_s > 0 ? format_duration(u.run_s) : "-") << "</td><td>"
        << (u.exit_code ? std::to_string(*u.exit_code) : "-") << "</td></tr>\n";
  }
  out << "</tbody></table>\n";
}

// Inline data for the script; "</" must not close the script element early.
std::string script_data(const ReportModel& m) {
  std::vector<std::uint64_t> sum(m.grid.size(), 0);
  for (const auto& row : m.stack)
    for (std::size_t k = 0; k < row.size(); ++k) sum[k] += row[k];
  auto pairs = [](const std::vector<std::pair<double, std::uint64_t>>& s) {
    json a = json::array();
    for (const auto& [t, v] : s) a.push_back({std::round(t * 10) / 10, v});
    return a;
  };
  json grid = json::array();
  for (double t : m.grid) grid.push_back(std::round(t * 10) / 10);
  json d = {{"width", kWidth},
            {"left", kLeft},
            {"right", kRight},
            {"duration", m.duration},
            {"grid", grid},
            {"fad", sum},
            {"available", pairs(m.available)},
            {"capacity", pairs(m.capacity)},
            {"budget", m.budget ? json(*m.budget) : json(nullptr)}};
  std::string text = d.dump(-1, ' ', false, json::error_handler_t::replace);
  for (std::size_t at = text.find("</"); at != std::string::npos; at = text.find("</", at + 3))
    text.replace(at, 2, "<\\/");
  return text;
}

}  // namespace

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  // Names come from other users: what a terminal would act on (`-o -`) is
  // shown as '?', as fad status shows it.
  for (char c : printable(text)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string render_report_html(const ReportModel& m, const std::string& generated_by) {
  std::ostringstream out;
  const std::string title = "fad build " + std::to_string(m.id) + (m.name.empty() ? "" : " (" + m.name + ")");
  std::string archs;
  for (const auto& a : m.archs) archs += (archs.empty() ? "" : ", ") + a;
  int retried = 0;
  for (const auto& u : m.units) retried += u.attempts > 1;

  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      << "<title>" << html_escape(title) << "</title><style>" << kReportCss << "</style></head>\n<body>\n";
  out << "<h1>" << html_escape(title) << "</h1>\n<div class=\"summary\">" << html_escape(m.state) << ", "
      << m.units.size() << " units"
      << (m.units_left_out > 0 ? " (and " + std::to_string(m.units_left_out) + " more, too many for one report)" : "")
      << (archs.empty() ? "" : ", archs " + html_escape(archs)) << ", created " << html_escape(m.created_at) << ", "
      << format_duration(m.duration) << (m.finished_at.empty() ? " so far" : "") << ", peak "
      << format_size(m.peak_bytes) << (retried ? ", " + std::to_string(retried) + " unit(s) rerun" : "") << "</div>\n";

  out << "<h2>Memory over time</h2>\n<div class=\"legend\"><span style=\"--c:hsl(200,55%,62%)\">fad's units, "
         "stacked one colour per unit</span><span style=\"--c:#c62828\">memory_budget</span><span "
         "style=\"--c:#ef6c00\">capacity (what fad's units could hold)</span><span style=\"--c:#1565c0\">available "
         "memory of the machine</span></div>\n";
  // Else an empty chart looks like a fault of the report.
  if (!m.pruned_at.empty())
    out << "<p class=\"note\">This build was pruned at " << html_escape(m.pruned_at)
        << " (retention, or fad prune): its units' memory curves and events were deleted with its outputs and logs. "
           "Their times, estimates and peaks remain below.</p>\n";
  memory_chart(out, m);
  out << "<div id=\"readout\"></div>\n";

  out << "<h2>Units</h2>\n<div class=\"legend\"><span style=\"--c:#e6e6e6\">waiting</span><span "
         "style=\"--c:#43a047\">succeeded</span><span style=\"--c:#e53935\">failed</span><span "
         "style=\"--c:#fb8c00\">stopped under memory pressure, rerun</span><span style=\"--c:#8e0000\">OOM-killed, "
         "rerun</span><span style=\"--c:#fdd835\">suspended</span><span style=\"--c:#8e24aa\">paused</span><span "
         "style=\"--c:#1e88e5\">running</span><span style=\"--c:#9e9e9e\">cancelled</span></div>\n";
  gantt_chart(out, m);

  out << "<h2>Estimate and peak per unit</h2>\n";
  unit_table(out, m);
  out << "<p class=\"note\">Made by " << html_escape(generated_by)
      << " from fadd's records. Each unit's memory is its whole process tree, sampled while it ran and thinned "
         "keeping peaks; a unit shorter than one sample is drawn at its peak. Machine lines are fadd's samples "
         "(every few seconds).</p>\n";
  out << "<script type=\"application/json\" id=\"fad-data\">" << script_data(m) << "</script>\n<script>"
      << kReportScript << "</script>\n</body></html>\n";
  return out.str();
}

}  // namespace fad::client
