// Rendering of status, history and progress from JSON fixtures shaped as the contract says.
#include <catch2/catch.hpp>

#include <sstream>

#include "client/json_access.h"
#include "client/render.h"
#include "client/style.h"

using namespace fad::client;
using fad::json;

namespace {

const json kStatus = json::parse(R"({
  "daemon": {"version": "0.1.0", "pid": 4242, "uptime_s": 3725,
             "memory": {"total_bytes": 68719476736, "available_bytes": 34359738368, "swap_total_bytes": 0,
                        "swap_free_bytes": 0, "budget_bytes": 21474836480, "committed_bytes": 5476083302,
                        "psi_some_avg10": null}},
  "builds": [
    {"id": 7, "name": "nightly", "state": "running", "archs": ["9.0", "12.0"],
     "created_at": "2026-11-23T09:00:00Z", "finished_at": null,
     "units": {"total": 49, "queued": 44, "running": 2, "succeeded": 3, "failed": 0},
     "peak_bytes": 5476083302, "artifact": null,
     "unit_list": [
       {"name": "attn_fwd_hdim128", "state": "running", "archs": ["9.0"], "attempts": 1, "threads": 4,
        "estimate_bytes": 4294967296, "peak_bytes": 2254857830, "started_at": "2026-11-23T09:00:01Z",
        "finished_at": null, "wait_reason": null},
       {"name": "attn_bwd_hdim256", "state": "queued", "archs": ["9.0"], "attempts": 0, "threads": null,
        "estimate_bytes": 8589934592, "peak_bytes": null, "started_at": null, "finished_at": null,
        "wait_reason": "needs 4.0 GiB, 2.1 GiB free"}]},
    {"id": 6, "name": "", "state": "succeeded", "archs": ["8.0"], "created_at": "2026-11-22T10:00:00Z",
     "finished_at": "2026-11-22T10:05:00Z",
     "units": {"total": 2, "queued": 0, "running": 0, "succeeded": 2, "failed": 0},
     "peak_bytes": 1073741824, "artifact": "/state/builds/6/libfad_kernels.so"}]
})");

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The line that starts with `prefix` (a table row's first cell).
std::string line_starting(const std::string& text, const std::string& prefix) {
  for (const auto& line : lines(text))
    if (line.rfind(prefix, 0) == 0) return line;
  FAIL("no line starting with '" << prefix << "' in:\n" << text);
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A table row's cells: columns are separated by two or more spaces.
std::vector<std::string> cells_of(const std::string& row) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < row.size()) {
    std::size_t gap = row.find("  ", at);
    out.push_back(row.substr(at, gap == std::string::npos ? std::string::npos : gap - at));
    if (gap == std::string::npos) break;
    at = row.find_first_not_of(' ', gap);
  }
  return out;
}

}  // namespace

TEST_CASE("format_table aligns columns without trailing spaces") {
  std::string t = format_table({"ID", "NAME"}, {{"7", "nightly"}, {"12", "-"}});
  CHECK(t == "ID  NAME\n7   nightly\n12  -\n");
}

TEST_CASE("format_duration") {
  CHECK(format_duration(0) == "0s");
  CHECK(format_duration(42.4) == "42s");
  CHECK(format_duration(185) == "3m 05s");
  CHECK(format_duration(3725) == "1h 02m");
  CHECK(format_duration(-1) == "-");
}

TEST_CASE("status: daemon memory line and one row per build") {
  std::string text = render_status(kStatus);
  INFO(text);
  CHECK(has(text, "fadd 0.1.0, pid 4242, up 1h 02m"));
  CHECK(has(line_starting(text, "memory:"), "5.1 GiB committed of 20.0 GiB budget"));
  CHECK_FALSE(has(text, "pressure"));  // psi null: left out rather than shown as 0
  std::string header = line_starting(text, "ID ");
  CHECK(has(header, "STATE"));
  CHECK(has(header, "PEAK"));
  std::string row7 = line_starting(text, "7 ");
  CHECK(has(row7, "nightly"));
  CHECK(has(row7, "running"));
  CHECK(has(row7, "9.0,12.0"));
  CHECK(has(row7, "3/49"));
  CHECK(has(row7, "5.1 GiB"));
  std::string row6 = line_starting(text, "6 ");
  CHECK(has(row6, " - "));  // empty name
  CHECK(has(row6, "1.0 GiB"));
  CHECK(has(row6, "succeeded"));
  for (const auto& line : lines(text)) CHECK((line.empty() || line.back() != ' '));

  // One user's longest name does not widen everyone's table.
  json wide = kStatus;
  wide["builds"][0]["name"] = std::string(256, 'w');
  const std::string row = line_starting(render_status(wide), "7 ");
  CHECK(has(row, std::string(39, 'w') + "\xe2\x80\xa6"));
  CHECK_FALSE(has(row, std::string(41, 'w')));
}

TEST_CASE("status of one build: units with threads, memory now, peak, estimate and source, time, wait reason") {
  json one = kStatus;
  one["builds"].erase(1);
  one["builds"][0]["unit_list"][0]["current_bytes"] = 1073741824;
  one["builds"][0]["unit_list"][0]["elapsed_s"] = 75;
  one["builds"][0]["unit_list"][1]["estimate_source"] = "family";
  std::string text = render_build_status(one);
  INFO(text);
  CHECK(has(text, "build 7 (nightly): running"));
  CHECK(has(text, "3/49 succeeded, 2 running, 44 queued, 0 failed\n"));
  CHECK_FALSE(has(text, "artifact"));  // null until the build succeeded
  json cancelled = one;
  cancelled["builds"][0]["units"]["queued"] = 40;
  cancelled["builds"][0]["units"]["cancelled"] = 4;
  CHECK(has(render_build_status(cancelled), "3/49 succeeded, 2 running, 40 queued, 0 failed, 4 cancelled\n"));
  CHECK_FALSE(has(text, "pruned"));
  json unnamed = one;
  unnamed["builds"][0]["name"] = "";
  CHECK(has(render_build_status(unnamed), "\nbuild 7: running"));
  json pruned = one;
  pruned["builds"][0]["state"] = "succeeded";
  pruned["builds"][0]["pruned_at"] = "2026-11-20T10:00:00Z";
  CHECK(has(render_build_status(pruned),
            "\npruned 2026-11-20T10:00:00Z: its outputs and logs are deleted; its record stays\n"));
  std::string header = line_starting(text, "UNIT");
  for (const char* col : {"STATE", "THREADS", "NOW", "PEAK", "ESTIMATE", "TIME", "ATTEMPTS", "WAITING FOR"})
    CHECK(has(header, col));
  std::string running = line_starting(text, "attn_fwd_hdim128");
  CHECK(has(running, "running"));
  CHECK(has(running, "1.0 GiB"));  // now
  CHECK(has(running, "2.1 GiB"));  // peak so far
  CHECK(has(running, "4.0 GiB"));  // estimate
  CHECK(has(running, "1m 15s"));   // elapsed
  std::string queued = line_starting(text, "attn_bwd_hdim256");
  CHECK(has(queued, "8.0 GiB"));
  CHECK(has(queued, " family "));  // the SOURCE column, said once (it was also after the estimate)
  CHECK_FALSE(has(queued, "(family)"));
  CHECK(has(queued, "needs 4.0 GiB, 2.1 GiB free"));
  CHECK(has(queued, " - "));  // null threads and peak

  // A unit that never ran shows "-" for threads and peak even when fadd sends 0.
  one["builds"][0]["unit_list"][1]["threads"] = 0;
  one["builds"][0]["unit_list"][1]["peak_bytes"] = 0;
  const auto cells = cells_of(line_starting(render_build_status(one), "attn_bwd_hdim256"));
  REQUIRE(cells.size() >= 5);
  CHECK(cells[2] == "-");  // threads
  CHECK(cells[4] == "-");  // peak
  // A queued unit with no estimate of its own (an older fadd) shows "-", not "0 B".
  one["builds"][0]["unit_list"][1]["estimate_bytes"] = 0;
  one["builds"][0]["unit_list"][1].erase("estimate_source");
  CHECK_FALSE(has(line_starting(render_build_status(one), "attn_bwd_hdim256"), "0 B"));
  // Nor does one restored from the compile cache, or cancelled before it ran;
  // one cancelled while running shows how long it ran.
  for (const char* state : {"succeeded", "cancelled"}) {
    json never = one;
    auto& u = never["builds"][0]["unit_list"][1];
    u["state"] = state;
    u["cached"] = std::string(state) == "succeeded";
    u["duration_s"] = 0;
    u["estimate_bytes"] = 0;
    const std::string line = line_starting(render_build_status(never), "attn_bwd_hdim256");
    INFO(line);
    const auto row = cells_of(line);
    const std::size_t shift = std::string(state) == "succeeded" ? 1 : 0;  // "succeeded (cached)"
    REQUIRE(row.size() >= 5 + shift);
    CHECK(row[2 + shift] == "-");  // threads
    CHECK(row[4 + shift] == "-");  // peak
    CHECK_FALSE(has(line, "0 B"));
    CHECK_FALSE(has(line, " 0s"));
  }
  json stopped = one;
  stopped["builds"][0]["unit_list"][1]["state"] = "cancelled";
  stopped["builds"][0]["unit_list"][1]["attempts"] = 1;
  stopped["builds"][0]["unit_list"][1]["duration_s"] = 6;
  CHECK(has(line_starting(render_build_status(stopped), "attn_bwd_hdim256"), " 6s "));
  // A unit list fadd had to cut says so on its last line.
  CHECK_FALSE(has(render_build_status(one), "not listed"));
  one["builds"][0]["units_left_out"] = 4000;
  CHECK(lines(render_build_status(one)).back() == "... and 4000 more unit(s) not listed (too many to send at once)");
}

TEST_CASE("colour: states are coloured only when asked, and tables still align") {
  std::string plain = render_status(kStatus, false);
  CHECK_FALSE(has(plain, "\033["));
  std::string colored = render_status(kStatus, true);
  CHECK(has(colored, "\033[36mrunning\033[0m"));
  CHECK(has(colored, "\033[32msucceeded\033[0m"));
  // The column after STATE starts at the same visible offset in both rows.
  auto column_of = [&](const std::string& text, const std::string& row, const std::string& cell) {
    std::string line = line_starting(text, row);
    return visible_width(line.substr(0, line.find(cell)));
  };
  CHECK(column_of(colored, "7 ", "9.0,12.0") == column_of(colored, "6 ", "8.0"));
  CHECK(column_of(colored, "7 ", "9.0,12.0") == column_of(plain, "7 ", "9.0,12.0"));
}

TEST_CASE("status tolerates missing, null and mistyped fields") {
  CHECK(render_status(json::object()) == "no builds\n");
  json odd = {{"daemon", nullptr},
              {"builds", {{{"id", 1}, {"state", 5}, {"units", "many"}, {"archs", nullptr}, {"peak_bytes", "x"}}}}};
  std::string text = render_status(odd);
  CHECK(has(line_starting(text, "1 "), "0/0"));
  CHECK(render_build_status(json{{"builds", json::array()}}) == "no such build\n");
  CHECK_NOTHROW(render_history(json{{"builds", {json::object(), nullptr}}}));
  CHECK_NOTHROW(render_outcome(json(nullptr)));
}

TEST_CASE("names from other users cannot write escape sequences to the terminal") {
  json hostile = kStatus;
  // An OSC 52 clipboard write, a screen clear and a forged row; a C1 CSI (U+009B) as UTF-8.
  hostile["builds"][0]["name"] = "\x1b]52;c;aGk=\x07\x1b[2J\n6 forged";
  hostile["builds"][0]["unit_list"][0]["name"] =
      "u\xC2\x9B"
      "31m";
  hostile["builds"][0]["archs"] = {"9.0\x1b[8m"};
  for (const std::string& text : {render_status(hostile), render_build_status(json{{"builds", {hostile["builds"][0]}}}),
                                  render_history(hostile)}) {
    INFO(text);
    CHECK(text.find('\x1b') == std::string::npos);
    CHECK(text.find('\x07') == std::string::npos);
    CHECK(text.find("\xC2\x9B") == std::string::npos);
    CHECK(text.find("\n6 forged") == std::string::npos);
  }
  // A listing fadd had to cut says so on its last line.
  json cut = kStatus;
  cut["builds_left_out"] = 1234;
  CHECK(lines(render_status(cut)).back() == "... and 1234 newer build(s) not listed (too many to send at once)");
  CHECK(lines(render_history(json{{"builds", {kStatus["builds"][1]}}, {"builds_left_out", 7}})).back() ==
        "... and 7 older build(s) not listed (too many to send at once; lower --limit)");
  CHECK(render_status(kStatus).find("not listed") == std::string::npos);
}

TEST_CASE("history rows carry duration and peak") {
  json history = {{"builds",
                   {{{"id", 6},
                     {"name", "x"},
                     {"state", "failed"},
                     {"archs", {"8.0"}},
                     {"units", {{"total", 2}, {"succeeded", 1}, {"failed", 1}}},
                     {"peak_bytes", 1536 * 1024 * 1024ull},
                     {"duration_s", 305},
                     {"queue_s", 287},
                     {"run_s", 18},
                     {"finished_at", "2026-11-22T10:05:00Z"}}}}};
  std::string text = render_history(history);
  CHECK(has(line_starting(text, "ID"), "QUEUED"));
  CHECK(has(line_starting(text, "ID"), "RAN"));
  std::string row = line_starting(text, "6 ");
  CHECK(has(row, "failed"));
  CHECK(has(row, "4m 47s"));  // waited
  CHECK(has(row, "18s"));     // compiled
  CHECK_FALSE(has(row, "5m 05s"));
  CHECK(has(row, "1.5 GiB"));
  CHECK(has(row, "1/2"));
  CHECK(render_history(json{{"builds", json::array()}}) == "no finished builds\n");
  // An older fadd sends only duration_s: shown as run time, queue time unknown.
  history["builds"][0].erase("queue_s");
  history["builds"][0].erase("run_s");
  CHECK(has(line_starting(render_history(history), "6 "), "5m 05s"));
  // Sent newest first; listed by ID, as the contract says.
  history["builds"].push_back(history["builds"][0]);
  history["builds"][1]["id"] = 5;
  text = render_history(history);
  CHECK(text.find("\n5 ") < text.find("\n6 "));
}

TEST_CASE("outcome lines: units, time, peak and the artifact") {
  json done = kStatus["builds"][1];
  CHECK(render_outcome(done) ==
        "build 6 succeeded: 2/2 units in 5m 00s, peak 1.0 GiB\nartifact: /state/builds/6/libfad_kernels.so\n");
  json cancelled = kStatus["builds"][0];
  cancelled["state"] = "cancelled";
  CHECK(render_outcome(cancelled) == "build 7 cancelled\n");
  CHECK(render_outcome(cancelled, true) == "build 7 \033[35mcancelled\033[0m\n");
  done.erase("artifact");  // a fad run build has none
  CHECK(render_outcome(done) == "build 6 succeeded: 2/2 units in 5m 00s, peak 1.0 GiB\n");
}

TEST_CASE("cached units and cache hits are shown in a build's status and in history") {
  json one = {{"builds",
               {{{"id", 9},
                 {"name", "fa"},
                 {"state", "succeeded"},
                 {"units", {{"total", 2}, {"succeeded", 2}}},
                 {"cache_hits", 1},
                 {"unit_list",
                  {{{"name", "k1.o"}, {"state", "succeeded"}, {"cached", true}},
                   {{"name", "k2.o"}, {"state", "succeeded"}, {"cached", false}}}}}}}};
  std::string text = render_build_status(one);
  INFO(text);
  CHECK(has(text, "2/2 succeeded (1 from the compile cache)"));
  CHECK(has(line_starting(text, "k1.o"), "succeeded (cached)"));
  CHECK_FALSE(has(line_starting(text, "k2.o"), "cached"));
  one["builds"][0].erase("unit_list");
  std::string history = render_history(one);
  CHECK(has(line_starting(history, "ID"), "CACHED"));
  CHECK(has(line_starting(history, "9 "), " 1 "));
}

TEST_CASE("status on a Slurm cluster: the allocation, its nodes, and each unit's node") {
  json one = kStatus;
  one["builds"].erase(1);
  one["daemon"]["executor"] = json::parse(R"({"kind": "slurm", "mode": "allocation", "state": "active",
    "job_id": 812, "wait_reason": "", "nodes": [
      {"name": "gpu07", "cpus": 32, "memory_bytes": 68719476736, "committed_bytes": 21474836480, "running_units": 3},
      {"name": "gpu08", "cpus": 32, "memory_bytes": 68719476736, "committed_bytes": 0, "running_units": 0}]})");
  one["builds"][0]["unit_list"][0]["node"] = "gpu07";
  one["builds"][0]["unit_list"][0]["peak_source"] = "cgroup";
  std::string text = render_build_status(one);
  INFO(text);
  CHECK(has(text, "executor: slurm (allocation), allocation job 812, active"));
  CHECK(has(line_starting(text, "  node gpu07"), "20.0 GiB committed of 64.0 GiB, 32 cpus, 3 running"));
  CHECK(has(line_starting(text, "UNIT"), "NODE"));
  std::string running = line_starting(text, "attn_fwd_hdim128");
  CHECK(has(running, "gpu07"));
  CHECK(has(running, "cgroup"));
  // Without an executor (this machine), no executor line and no NODE column.
  CHECK_FALSE(has(render_build_status(kStatus), "executor:"));
  CHECK_FALSE(has(line_starting(render_build_status(kStatus), "UNIT"), "NODE"));
}
