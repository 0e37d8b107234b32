// The report pictures from a canned "report" answer: the model's spans and
// stack, the HTML page (self-contained, one bar per unit, escaped names) and
// the trace-event export.
#include <catch2/catch.hpp>

#include "client/report_html.h"
#include "client/report_model.h"
#include "common/time_text.h"

using namespace fad::client;
using fad::json;

namespace {

const double kT0 = *fad::parse_rfc3339("2026-11-23T09:00:00Z");
constexpr std::uint64_t kGiB = 1ull << 30;

json attempt(int n, double start, std::optional<double> end, const std::string& outcome, json t, json bytes) {
  return {{"attempt", n},
          {"start", kT0 + start},
          {"end", end ? json(kT0 + *end) : json(nullptr)},
          {"outcome", outcome},
          {"threads", 2},
          {"estimate_bytes", 4 * kGiB},
          {"peak_bytes", 5 * kGiB},
          {"t", t},
          {"bytes", bytes}};
}

// Build 7: "fwd" ran once (suspended for a while), "bwd<1>" was OOM-killed and
// rerun, "link" never ran (the build was cancelled), "ext.o" arrived later.
json report() {
  json fwd = {{"name", "fwd"},
              {"kind", "compile"},
              {"state", "succeeded"},
              {"attempts", 1},
              {"threads", 2},
              {"estimate_bytes", 4 * kGiB},
              {"estimate_source", "family"},
              {"peak_bytes", 3 * kGiB},
              {"exit_code", 0},
              {"attempt_list", {attempt(1, 10, 70, "succeeded", {0, 30}, {1 * kGiB, 3 * kGiB})}},
              {"events",
               {{{"at", kT0 + 40}, {"kind", "suspend"}, {"detail", "memory pressure"}},
                {{"at", kT0 + 50}, {"kind", "resume"}, {"detail", ""}}}}};
  json bwd = {
      {"name", "bwd<1>"},
      {"kind", "compile"},
      {"state", "succeeded"},
      {"attempts", 2},
      {"estimate_bytes", 4 * kGiB},
      {"peak_bytes", 6 * kGiB},
      {"attempt_list",
       {attempt(1, 0, 20, "oom", {0}, {6 * kGiB}), attempt(2, 30, 90, "succeeded", {0, 10}, {2 * kGiB, 5 * kGiB})}},
      {"events", json::array()}};
  json link = {{"name", "link"},
               {"kind", "link"},
               {"state", "cancelled"},
               {"attempts", 0},
               {"attempt_list", json::array()},
               {"events", json::array()}};
  json ext = {{"name", "ext.o"},
              {"kind", "external"},
              {"state", "running"},
              {"attempts", 1},
              {"attempt_list", {attempt(1, 95, std::nullopt, "running", {0, 1}, {kGiB, kGiB})}},
              {"events", {{{"at", kT0 + 80}, {"kind", "queued"}, {"detail", ""}}}}};
  return {{"build",
           {{"id", 7},
            {"name", "nightly"},
            {"state", "cancelled"},
            {"archs", {"9.0"}},
            {"created_at", "2026-11-23T09:00:00Z"},
            {"finished_at", "2026-11-23T09:01:40Z"},
            {"peak_bytes", 8 * kGiB}}},
          {"units", {fwd, bwd, link, ext}},
          {"machine",
           {{"t", {kT0, kT0 + 50, kT0 + 100}},
            {"total_bytes", {64 * kGiB, 64 * kGiB, 64 * kGiB}},
            {"available_bytes", {50 * kGiB, 40 * kGiB, 45 * kGiB}},
            {"fad_bytes", {0, 5 * kGiB, 1 * kGiB}},
            {"committed_bytes", {0, 8 * kGiB, 1 * kGiB}},
            {"capacity_bytes", {12 * kGiB, 12 * kGiB, 12 * kGiB}}}},
          {"budget_bytes", 12 * kGiB},
          {"now", kT0 + 100}};
}

const UnitTimeline& unit(const ReportModel& m, const std::string& name) {
  for (const auto& u : m.units)
    if (u.name == name) return u;
  FAIL("no unit " << name);
  return m.units.front();
}

std::vector<std::string> kinds(const UnitTimeline& u) {
  std::vector<std::string> out;
  for (const auto& s : u.spans) out.push_back(s.kind + ":" + s.outcome);
  return out;
}

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("report model: waits, runs, suspensions and reruns on one time axis") {
  const ReportModel m = build_report_model(report(), 101);
  CHECK(m.id == 7);
  CHECK(m.duration == Approx(100));
  // Ordered by first start; never-started last.
  REQUIRE(m.units.size() == 4);
  CHECK(m.units[0].name == "bwd<1>");
  CHECK(m.units[1].name == "fwd");
  CHECK(m.units[2].name == "ext.o");
  CHECK(m.units[3].name == "link");

  const auto& fwd = unit(m, "fwd");
  CHECK(kinds(fwd) == std::vector<std::string>{"wait:queued", "run:succeeded", "suspended:memory pressure"});
  CHECK(fwd.spans[0].start == Approx(0));
  CHECK(fwd.spans[0].end == Approx(10));
  CHECK(fwd.spans[2].start == Approx(40));
  CHECK(fwd.spans[2].end == Approx(50));
  CHECK(fwd.run_s == Approx(50));  // 60 s from start to end, 10 of them suspended
  // Paused from 45 to 55 as well: the 5 s both suspended and paused count once.
  json paused = report();
  auto& events = paused["units"][0]["events"];
  events.push_back({{"at", kT0 + 45}, {"kind", "pause"}, {"detail", ""}});
  events.push_back({{"at", kT0 + 55}, {"kind", "unpause"}, {"detail", ""}});
  CHECK(unit(build_report_model(paused, 101), "fwd").run_s == Approx(45));

  const auto& bwd = unit(m, "bwd<1>");
  CHECK(kinds(bwd) == std::vector<std::string>{"run:oom", "wait:queued", "run:succeeded"});
  CHECK(bwd.spans[1].start == Approx(20));  // requeued when the OOM killer ended it
  CHECK(bwd.spans[1].end == Approx(30));

  // An external compile waits from when it arrived; a running one runs to now.
  const auto& ext = unit(m, "ext.o");
  CHECK(kinds(ext) == std::vector<std::string>{"wait:queued", "run:running"});
  CHECK(ext.spans[0].start == Approx(80));
  CHECK(ext.spans[1].end == Approx(100));

  CHECK(kinds(unit(m, "link")) == std::vector<std::string>{"wait:cancelled"});

  // The stack: bwd's first attempt at 6 GiB from 0 s, fwd at 1 GiB from 10 s, 3 GiB from 40 s.
  const auto at = [&](const std::string& name, double t) {
    for (std::size_t i = 0; i < m.units.size(); ++i)
      if (m.units[i].name == name) return m.stack[i][static_cast<std::size_t>(t)];
    return std::uint64_t{0};
  };
  CHECK(at("bwd<1>", 5) == 6 * kGiB);
  CHECK(at("bwd<1>", 25) == 0);
  CHECK(at("bwd<1>", 45) == 5 * kGiB);
  CHECK(at("fwd", 15) == 1 * kGiB);
  CHECK(at("fwd", 45) == 3 * kGiB);
  CHECK(at("fwd", 75) == 0);
  CHECK(m.available.size() == 3);
  CHECK(m.capacity.at(1).second == 12 * kGiB);
  CHECK(m.budget == std::optional<std::uint64_t>(12 * kGiB));
}

TEST_CASE("report model: a unit shorter than a grid cell still shows in the stack") {
  json r = report();
  r["units"][0]["attempt_list"] = {attempt(1, 10.2, 10.3, "succeeded", {0}, {2 * kGiB})};
  const ReportModel m = build_report_model(r, 11);  // cells of 10 s
  std::uint64_t top = 0;
  for (std::size_t i = 0; i < m.units.size(); ++i)
    if (m.units[i].name == "fwd")
      for (auto v : m.stack[i]) top = std::max(top, v);
  CHECK(top == 2 * kGiB);
}

TEST_CASE("report model: a unit recorded before attempts were kept runs from its start to its end") {
  json r = report();
  r["units"][0]["attempt_list"] = json::array();
  r["units"][0]["events"] = json::array();
  r["units"][0]["started_at"] = "2026-11-23T09:00:05Z";
  r["units"][0]["finished_at"] = "2026-11-23T09:00:35Z";
  const ReportModel m = build_report_model(r);
  CHECK(kinds(unit(m, "fwd")) == std::vector<std::string>{"wait:queued", "run:succeeded"});
  CHECK(unit(m, "fwd").spans[1].start == Approx(5));
  CHECK(unit(m, "fwd").spans[1].end == Approx(35));
  CHECK(unit(m, "fwd").run_s == Approx(30));

  // Suspended in an earlier run (not shown: only the last one was kept) and
  // for 5 s of this one: only those 5 s are out of its run time.
  r["units"][0]["events"] = {{{"at", kT0 + 1}, {"kind", "suspend"}, {"detail", "memory pressure"}},
                             {{"at", kT0 + 3}, {"kind", "resume"}, {"detail", ""}},
                             {{"at", kT0 + 20}, {"kind", "suspend"}, {"detail", "memory pressure"}},
                             {{"at", kT0 + 25}, {"kind", "resume"}, {"detail", ""}}};
  CHECK(unit(build_report_model(r), "fwd").run_s == Approx(25));
}

TEST_CASE("report model: missing and mistyped fields are skipped") {
  CHECK_NOTHROW(build_report_model(json(nullptr)));
  CHECK_NOTHROW(build_report_model(json{{"units", {{{"attempt_list", {{{"t", "x"}}}}}}}}));
  const ReportModel m = build_report_model(json{{"build", {{"id", 3}}}, {"units", json::array()}});
  CHECK(m.id == 3);
  CHECK(m.units.empty());
  CHECK(m.duration >= 1);
}

TEST_CASE("report HTML: self-contained, one bar per unit, names escaped, the pieces the issue asks for") {
  const ReportModel m = build_report_model(report());
  const std::string html = render_report_html(m, "fad 9.9");
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  // Nothing fetched from the network.
  CHECK(occurrences(html, "url(") == occurrences(html, "url(#"));  // fragment references within the page only
  for (const char* ref : {"src=", "href=", "http://", "https://", "@import"}) {
    INFO(ref);
    const bool only_svg_namespace =
        std::string(ref) == "http://" && occurrences(html, ref) == occurrences(html, "http://www.w3.org/2000/svg");
    CHECK((html.find(ref) == std::string::npos || only_svg_namespace));
  }
  CHECK(occurrences(html, "class=\"unit-row\"") == 4);
  CHECK(occurrences(html, " bar\"") == 4);              // exactly one bar per unit
  CHECK(occurrences(html, "class=\"mem-unit\"") == 3);  // the link never used memory
  CHECK(occurrences(html, "span run outcome-oom") == 1);
  CHECK(occurrences(html, "span suspended") == 1);
  CHECK(html.find("class=\"line-budget\"") != std::string::npos);
  CHECK(html.find("class=\"line-capacity\"") != std::string::npos);
  CHECK(html.find("class=\"line-available\"") != std::string::npos);
  // Scaled to fad's units; the lines above that say so instead of flattening the stack.
  CHECK(html.find("available memory up to 50.0 GiB") != std::string::npos);
  CHECK(html.find("bwd&lt;1&gt;") != std::string::npos);
  CHECK(html.find("bwd<1>") == std::string::npos);
  // What a terminal would act on, were the page written to one, shows as '?'.
  CHECK(html_escape("o\xC2\x9B"
                    "2J\xE2\x80\xAE.o\x1b") == "o?2J?.o?");
  // The table: estimate against peak, 150% for bwd (underestimated, marked).
  CHECK(html.find("<table id=\"units\">") != std::string::npos);
  CHECK(html.find("<tr data-unit=\"0\" class=\"over\"><td>bwd&lt;1&gt;</td>") != std::string::npos);
  CHECK(html.find(">150%</td>") != std::string::npos);
  CHECK(html.find("family") != std::string::npos);
  // The inline data cannot end its script element early.
  const auto data = html.find("id=\"fad-data\">");
  REQUIRE(data != std::string::npos);
  CHECK(html.substr(data, html.find("</script>", data) - data).find("</") == std::string::npos);
}

TEST_CASE("report HTML: a pruned build says why its memory chart is empty") {
  json r = report();
  CHECK(render_report_html(build_report_model(r), "fad 9.9").find("was pruned") == std::string::npos);
  r["build"]["pruned_at"] = "2026-12-23T03:00:00Z";
  for (auto& u : r["units"]) u["attempt_list"] = json::array();
  const std::string html = render_report_html(build_report_model(r), "fad 9.9");
  CHECK(html.find("This build was pruned at 2026-12-23T03:00:00Z") != std::string::npos);
}

TEST_CASE("report trace: complete events per unit span and memory counters") {
  const ReportModel m = build_report_model(report());
  const json trace = render_trace(m);
  REQUIRE(trace.at("traceEvents").is_array());
  int runs = 0, waits = 0, threads = 0, counters = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name") ++threads;
    if (e.at("ph") == "X" && e.at("cat") == "run") ++runs;
    if (e.at("ph") == "X" && e.at("cat") == "wait") ++waits;
    if (e.at("ph") == "C") ++counters;
    if (e.at("ph") == "X") {
      CHECK(e.at("ts").get<double>() >= 0);
      CHECK(e.at("dur").get<double>() >= 0);
    }
  }
  CHECK(threads == 4);
  CHECK(runs == 4);   // fwd, bwd twice, ext
  CHECK(waits == 4);  // fwd, bwd between attempts, ext, link
  CHECK(counters > 10);
  // The OOM-killed attempt: 20 s from 0, in microseconds.
  bool found = false;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == "X" && e.at("args").value("outcome", "") == "oom") {
      found = true;
      CHECK(e.at("ts") == 0);
      CHECK(e.at("dur") == 20e6);
      CHECK(e.at("name") == "bwd<1>");
    }
  CHECK(found);
}
