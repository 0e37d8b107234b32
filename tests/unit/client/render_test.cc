// Rendering of status, history and progress from JSON fixtures shaped as the contract says.
#include <catch2/catch.hpp>

#include <sstream>

#include "client/render.h"

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
}

TEST_CASE("status of one build: units with threads, estimate, peak, attempts, wait reason") {
  json one = kStatus;
  one["builds"].erase(1);
  std::string text = render_build_status(one);
  INFO(text);
  CHECK(has(text, "build 7 (nightly): running"));
  CHECK(has(text, "3/49 succeeded, 2 running, 44 queued, 0 failed"));
  CHECK_FALSE(has(text, "artifact"));  // null until the build succeeded
  std::string header = line_starting(text, "UNIT");
  for (const char* col : {"STATE", "THREADS", "ESTIMATE", "PEAK", "ATTEMPTS", "WAITING FOR"}) CHECK(has(header, col));
  std::string running = line_starting(text, "attn_fwd_hdim128");
  CHECK(has(running, "running"));
  CHECK(has(running, "4.0 GiB"));
  CHECK(has(running, "2.1 GiB"));
  std::string queued = line_starting(text, "attn_bwd_hdim256");
  CHECK(has(queued, "8.0 GiB"));
  CHECK(has(queued, "needs 4.0 GiB, 2.1 GiB free"));
  CHECK(has(queued, " - "));  // null threads and peak
}

TEST_CASE("status tolerates missing, null and mistyped fields") {
  CHECK(render_status(json::object()) == "no builds\n");
  json odd = {{"daemon", nullptr},
              {"builds", {{{"id", 1}, {"state", 5}, {"units", "many"}, {"archs", nullptr}, {"peak_bytes", "x"}}}}};
  std::string text = render_status(odd);
  CHECK(has(line_starting(text, "1 "), "0/0"));
  CHECK(render_build_status(json{{"builds", json::array()}}) == "no such build\n");
  CHECK_NOTHROW(render_history(json{{"builds", {json::object(), nullptr}}}));
  CHECK_NOTHROW(render_progress(json(nullptr)));
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
                     {"finished_at", "2026-11-22T10:05:00Z"}}}}};
  std::string text = render_history(history);
  std::string row = line_starting(text, "6 ");
  CHECK(has(row, "failed"));
  CHECK(has(row, "5m 05s"));
  CHECK(has(row, "1.5 GiB"));
  CHECK(has(row, "1/2"));
  CHECK(render_history(json{{"builds", json::array()}}) == "no finished builds\n");
}

TEST_CASE("progress and outcome lines") {
  const json& running = kStatus["builds"][0];
  CHECK(render_progress(running) == "build 7: 3/49 units done, 2 running, peak 5.1 GiB");
  json failed = running;
  failed["state"] = "failed";
  failed["units"]["failed"] = 2;
  CHECK(render_progress(failed) == "build 7: 5/49 units done, 2 running, 2 failed, peak 5.1 GiB");
  CHECK(render_outcome(failed) == "build 7 failed: 2 of 49 units failed; see 'fad logs 7'\n");
  CHECK(progress_key(failed) != progress_key(running));
  json peak_only = running;
  peak_only["peak_bytes"] = 1;
  CHECK(progress_key(peak_only) == progress_key(running));  // peak alone is not worth a line
  const json& done = kStatus["builds"][1];
  CHECK(render_outcome(done) ==
        "build 6 succeeded: 2/2 units, peak 1.0 GiB\nartifact: /state/builds/6/libfad_kernels.so\n");
  json cancelled = running;
  cancelled["state"] = "cancelled";
  CHECK(render_outcome(cancelled) == "build 7 cancelled\n");
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
