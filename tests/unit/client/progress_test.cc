// The progress line, ETA and failure report on canned status JSON shaped as
// the contract says: what `fad submit --wait`, `fad watch` and `fad run` print.
#include <catch2/catch.hpp>

#include "client/progress.h"
#include "common/time_text.h"

using namespace fad::client;
using fad::json;

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

json unit(const std::string& name, const std::string& state, json extra = json::object()) {
  json u = {{"name", name}, {"kind", "compile"}, {"state", state}, {"attempts", state == "queued" ? 0 : 1}};
  for (auto& [k, v] : extra.items()) u[k] = v;
  return u;
}

// Build 12: 73 units, 31 done, 3 running, 2 waiting for memory, 37 waiting for queue order.
json status_73() {
  json list = json::array();
  for (int i = 0; i < 31; ++i) list.push_back(unit("done" + std::to_string(i), "succeeded", {{"duration_s", 60}}));
  list.push_back(unit("fwd_hdim128_fp16", "running", {{"elapsed_s", 50}, {"current_bytes", 4 * kGiB}}));
  list.push_back(unit("bwd_hdim64_bf16", "running", {{"elapsed_s", 10}, {"current_bytes", 3.8 * kGiB}}));
  list.push_back(unit("fwd_hdim256_fp16", "suspended", {{"elapsed_s", 30}, {"current_bytes", 2 * kGiB}}));
  list.push_back(unit("q0", "queued", {{"wait_reason", "needs 6.2 GiB, 3.1 GiB free"}}));
  list.push_back(unit("q1", "queued", {{"wait_reason", "paused by memory pressure"}}));
  for (int i = 0; i < 36; ++i)
    list.push_back(
        unit("q" + std::to_string(i + 2), "queued", {{"wait_reason", "waiting for earlier units (queue order)"}}));
  list.push_back(
      {{"name", "link"}, {"kind", "link"}, {"state", "queued"}, {"wait_reason", "waiting for the compile units"}});
  json build = {{"id", 12},
                {"state", "running"},
                {"created_at", "2026-11-23T09:00:00Z"},
                {"units", {{"total", 73}, {"succeeded", 31}, {"failed", 0}, {"running", 3}, {"queued", 39}}},
                {"unit_list", list}};
  return {{"daemon", {{"memory", {{"used_bytes", 9.8 * kGiB}, {"budget_bytes", 12.0 * kGiB}}}}}, {"builds", {build}}};
}

const double kNow = *fad::parse_rfc3339("2026-11-23T09:12:03Z");

}  // namespace

TEST_CASE("progress line: done/total, running, memory against the budget, waiting for memory, time, ETA") {
  const json s = status_73();
  // 38 compiles of 60 s left on 3 in parallel (the running ones count what is left): about 14 min.
  const std::string piped = render_progress_line(s, 0, kNow);
  CHECK(piped == "[31/73] 3 running (1 suspended), 9.8/12.0 GiB, 2 waiting for memory, 12m 03s, ETA 14m");
}

TEST_CASE("progress line: units whose cluster jobs are pending count as running, and say so") {
  json s = status_73();
  auto& list = s["builds"][0]["unit_list"];
  list[31]["state"] = "pending";  // launched: its Slurm job waits in the queue
  list[31]["elapsed_s"] = 0;
  CHECK(render_progress_line(s, 0, kNow).rfind("[31/73] 3 running (1 suspended, 1 pending), 9.8/12.0 GiB", 0) == 0);
  list[33]["state"] = "running";
  CHECK(render_progress_line(s, 0, kNow).rfind("[31/73] 3 running (1 pending), ", 0) == 0);
}

TEST_CASE("progress line on a terminal: the running units' names as far as the width allows") {
  const json s = status_73();
  const std::string wide = render_progress_line(s, 200, kNow);
  // Longest-running first.
  CHECK(wide.rfind("[31/73] 3 running", 0) == 0);
  CHECK(wide.find(": fwd_hdim128_fp16 fwd_hdim256_fp16 bwd_hdim64_bf16") != std::string::npos);
  const std::string narrow = render_progress_line(s, 110, kNow);
  CHECK(narrow.size() <= 110);
  CHECK(narrow.find("fwd_hdim128_fp16") != std::string::npos);
  CHECK(narrow.find("bwd_hdim64_bf16") == std::string::npos);  // no half names
  const std::string tiny = render_progress_line(s, 30, kNow);
  CHECK(tiny.size() == 30);
  CHECK(tiny == render_progress_line(s, 0, kNow).substr(0, 30));
}

TEST_CASE("progress line: a paused build, failures, no budget, no unit list") {
  json s = status_73();
  s["builds"][0]["state"] = "paused";
  s["builds"][0]["units"]["failed"] = 2;
  CHECK(render_progress_line(s, 0, kNow).rfind("[33/73] paused, 3 running", 0) == 0);
  CHECK(render_progress_line(s, 0, kNow).find(", 2 failed") != std::string::npos);
  CHECK(render_progress_line(s, 0, kNow).find("ETA") == std::string::npos);  // paused: no ETA
  json bare = {{"builds", {{{"id", 3}, {"state", "queued"}, {"units", {{"total", 4}, {"running", 0}}}}}}};
  CHECK(render_progress_line(bare, 0, 0) == "[0/4] 0 running, 0.0 MiB");
  CHECK_NOTHROW(render_progress_line(json(nullptr), 80, 0));
  CHECK(render_progress_line(json(nullptr), 0, 0) == "[0/0] 0 running, 0.0 MiB");
  // Under a GiB used of a budget of GiBs: the used in MiB, not "0.1/12.0 GiB".
  json small = status_73();
  small["daemon"]["memory"]["used_bytes"] = 87.5 * 1024 * 1024;
  CHECK(render_progress_line(small, 0, kNow).find(", 87.5 MiB/12.0 GiB,") != std::string::npos);
  small["daemon"]["memory"]["used_bytes"] = 1024.0 * 1024 * 1024 - 1024;  // not "1024.0 MiB"
  CHECK(render_progress_line(small, 0, kNow).find(", 1.0/12.0 GiB,") != std::string::npos);
  small["daemon"]["memory"]["used_bytes"] = 0;
  CHECK(render_progress_line(small, 0, kNow).find(", 0.0/12.0 GiB,") != std::string::npos);
}

TEST_CASE("progress key: a pipe gets a new line when counts or state change, not for memory") {
  json a = status_73(), b = status_73();
  b["daemon"]["memory"]["used_bytes"] = 1;
  b["builds"][0]["unit_list"][31]["elapsed_s"] = 55;
  CHECK(progress_line_key(a) == progress_line_key(b));
  b["builds"][0]["units"]["succeeded"] = 32;
  CHECK(progress_line_key(a) != progress_line_key(b));
}

TEST_CASE("ETA: predicted durations when fadd sends them, else this build's own, none without either") {
  json b = status_73()["builds"][0];
  // 38 queued compiles of 60 s (this build's mean) and what is left of the running ones, on 3 in parallel.
  CHECK(estimate_eta(b) == Approx((38 * 60.0 + 10 + 30 + 50) / 3));
  // The link adds its own time after the compiles.
  for (auto& u : b["unit_list"])
    if (u["kind"] == "link") u["predicted_duration_s"] = 20;
  CHECK(estimate_eta(b) == Approx((38 * 60.0 + 10 + 30 + 50) / 3 + 20));
  // Predicted durations take precedence over the build's mean.
  for (auto& u : b["unit_list"])
    if (u["state"] == "queued" && u["kind"] == "compile") u["predicted_duration_s"] = 6;
  CHECK(estimate_eta(b) == Approx((38 * 6.0 + 10 + 30 + 50) / 3 + 20));
  for (auto& u : b["unit_list"])
    if (u["state"] == "queued" && u["kind"] == "compile") u["predicted_duration_s"] = 0.5;
  CHECK(estimate_eta(b) == Approx(50.0 + 20));  // then the longest running unit dominates
  // A duration guessed from the prior (or a running sibling's age) is no
  // basis: the build's own mean stands in, and without one there is no ETA.
  for (auto& u : b["unit_list"])
    if (u["state"] == "queued" && u["kind"] == "compile") u["estimate_source"] = "prior";
  CHECK(estimate_eta(b) == Approx((38 * 60.0 + 10 + 30 + 50) / 3 + 20));
  json guessed = {
      {"state", "running"},
      {"unit_list",
       {unit("a", "running", {{"elapsed_s", 5}, {"predicted_duration_s", 120}, {"estimate_source", "prior"}}),
        unit("b", "queued", {{"predicted_duration_s", 120}, {"estimate_source", "running_sibling"}})}}};
  CHECK_FALSE(estimate_eta(guessed));
  guessed["unit_list"][1]["estimate_source"] = "family";  // a finished sibling's measured time
  guessed["unit_list"][0]["estimate_source"] = "exact";
  CHECK(estimate_eta(guessed) == Approx(115.0 + 120.0));  // one unit at a time: both in turn
  // Nothing running yet: how many will run at once is unknown, so is the ETA
  // (it once read as every queued compile in turn), and when a queued link starts.
  json waiting = {{"state", "queued"},
                  {"unit_list",
                   {unit("a", "queued", {{"predicted_duration_s", 600}, {"estimate_source", "exact"}}),
                    unit("b", "queued", {{"predicted_duration_s", 600}, {"estimate_source", "exact"}})}}};
  CHECK_FALSE(estimate_eta(waiting));
  waiting["unit_list"][0]["state"] = "succeeded";
  waiting["unit_list"][1]["state"] = "running";
  waiting["unit_list"][1]["elapsed_s"] = 100;
  CHECK(estimate_eta(waiting) == Approx(500.0));
  json link_left = {{"state", "running"},
                    {"unit_list",
                     {unit("a", "succeeded", {{"duration_s", 30}}),
                      unit("l", "queued", {{"kind", "link"}, {"predicted_duration_s", 4}})}}};
  CHECK_FALSE(estimate_eta(link_left));  // the link may wait for cores behind another build
  link_left["unit_list"][1]["state"] = "running";
  link_left["unit_list"][1]["elapsed_s"] = 1;
  CHECK(estimate_eta(link_left) == Approx(3.0));
  // A `fad run` build between compiles: nothing queued, nothing running.
  json between = {{"state", "running"}, {"unit_list", {unit("a", "succeeded", {{"duration_s", 30}})}}};
  CHECK_FALSE(estimate_eta(between));
  // Nothing finished and nothing predicted: unknown.
  json fresh = {{"state", "running"}, {"unit_list", {unit("a", "running", {{"elapsed_s", 5}}), unit("b", "queued")}}};
  CHECK_FALSE(estimate_eta(fresh));
  fresh["state"] = "succeeded";
  CHECK_FALSE(estimate_eta(fresh));
}

TEST_CASE("ETA: compiles running past their predicted time stretch every prediction by their median overrun") {
  // Bug: with a compiler 40 times slower than the history's, the ETA read
  // "4s" for as long as the build ran, each running unit "nearly done".
  json b = {{"state", "running"}, {"unit_list", json::array()}};
  auto& list = b["unit_list"];
  for (double elapsed : {10.0, 12.0, 14.0})
    list.push_back(unit("r" + std::to_string(list.size()), "running",
                        {{"elapsed_s", elapsed}, {"predicted_duration_s", 1}, {"estimate_source", "exact"}}));
  for (int i = 0; i < 4; ++i)
    list.push_back(
        unit("q" + std::to_string(i), "queued", {{"predicted_duration_s", 1}, {"estimate_source", "exact"}}));
  // 12x (the median): what is left of the running ones (2 s, then 10% of
  // 12 s for the two past it) and 4 queued of 12 s, on 3 at once.
  CHECK(estimate_eta(b) == Approx((2 + 1.2 + 1.2 + 4 * 12.0) / 3));
  // One hung compile alone stretches nothing.
  list[0]["elapsed_s"] = 0.5;
  list[1]["elapsed_s"] = 0.5;
  list[2]["elapsed_s"] = 500;
  CHECK(estimate_eta(b) == Approx((0.5 + 0.5 + 0.1 + 4 * 1.0) / 3));
}

TEST_CASE("format_eta is coarse: seconds, then whole minutes rounded up") {
  CHECK(format_eta(35.2) == "36s");
  CHECK(format_eta(60) == "1m");
  CHECK(format_eta(2461) == "42m");
  CHECK(format_eta(3900) == "1h 05m");
  CHECK(format_eta(-1) == "-");
}

TEST_CASE("a failed build names its first failed unit, its exit code, its last lines and the logs command") {
  json b = {{"id", 15},
            {"state", "failed"},
            {"units", {{"total", 5}, {"failed", 2}}},
            {"unit_list",
             {unit("ok", "succeeded"),
              unit("late_fail", "failed", {{"exit_code", 1}, {"finished_at", "2026-11-23T09:05:00Z"}}),
              unit("bwd_bad", "failed", {{"exit_code", 3}, {"finished_at", "2026-11-23T09:01:00Z"}})}}};
  CHECK(first_failed_unit(b)["name"] == "bwd_bad");
  const std::string text = render_failure(b, "line 1\nerror: boom\n");
  CHECK(text ==
        "build 15 failed: bwd_bad exited with code 3 (2 of 5 units failed)\n"
        "--- last lines of bwd_bad ---\nline 1\nerror: boom\n---\n"
        "all of its output: fad logs 15 bwd_bad\n");
  // A fad run compile's output went to its build command's terminal, not to fadd.
  json external = b;
  external["kind"] = "external";
  CHECK(render_failure(external, "")
            .find("its output went to the terminal of the build command that ran it (its "
                  "command: fad logs 15 bwd_bad)\n") != std::string::npos);
  CHECK(render_failure(external, "").find("all of its output") == std::string::npos);
  // A name that is not one shell word is quoted so the command can be pasted.
  b["unit_list"][2]["name"] = "it's x.o#2";
  CHECK(render_failure(b, "").find("fad logs 15 'it'\\''s x.o#2'\n") != std::string::npos);
  // No failed unit (a fad run command failed): the build's error.
  json run = {{"id", 9}, {"state", "failed"}, {"error", "command exited with code 2"}, {"unit_list", json::array()}};
  CHECK(render_failure(run, "") == "build 9 failed: command exited with code 2\nthe build's log: fad logs 9\n");
  // 128 + N: signal N killed it (the OOM killer's SIGKILL, a SIGSEGV).
  b["unit_list"][2]["exit_code"] = 137;
  CHECK(render_failure(b, "").rfind("build 15 failed: it's x.o#2 was killed by signal 9 (SIGKILL) (2 of 5", 0) == 0);
}

TEST_CASE("a retried unit's failure shows its last attempt's lines, not the earlier attempts'") {
  CHECK(last_attempt("$ nvcc -c a.cu\nerror: first\n$ nvcc -c a.cu\nerror: second\n") ==
        "$ nvcc -c a.cu\nerror: second\n");
  CHECK(last_attempt("$ nvcc -c a.cu\nerror: only\n") == "$ nvcc -c a.cu\nerror: only\n");
  // A tail that begins inside an attempt, and one with no attempt line at all.
  CHECK(last_attempt("rror: first\n$ nvcc\nok\n") == "$ nvcc\nok\n");
  CHECK(last_attempt("no header\nerror\n") == "no header\nerror\n");
  // "$ " inside a line is output, not a new attempt.
  CHECK(last_attempt("$ nvcc\nprice $ 5\n") == "$ nvcc\nprice $ 5\n");
}

TEST_CASE("wait notes say what a compile waits for and where to look") {
  CHECK(wait_note("needs 6.2 GiB, 3.1 GiB free", 12) ==
        "waiting for memory: needs 6.2 GiB, 3.1 GiB free; fad status 12");
  CHECK(wait_note("waiting for earlier units (queue order)", 3) ==
        "waiting for earlier units (queue order); fad status 3");
  CHECK(wait_note("all 16 cores busy", 3) == "waiting: all 16 cores busy; fad status 3");
  CHECK(wait_note("", 3) == "waiting for fadd to admit it; fad status 3");
  CHECK(waits_for_memory("build budget 12.0 GiB reached (10.0 GiB in use, needs 4.0 GiB)"));
  CHECK_FALSE(waits_for_memory("max_parallel_units reached (1)"));
}

TEST_CASE("stall note: only when compiles wait and none runs") {
  json b = {{"id", 4},
            {"unit_list",
             {unit("x.o", "succeeded"), unit("y.o", "queued", {{"wait_reason", "needs 6.2 GiB, 3.1 GiB free"}}),
              unit("z.o", "queued", {{"wait_reason", "waiting for earlier units (queue order)"}})}}};
  CHECK(stall_note(b) == std::optional<std::string>("waiting for memory: needs 6.2 GiB, 3.1 GiB free; fad status 4"));
  b["unit_list"].push_back(unit("w.o", "running"));
  CHECK_FALSE(stall_note(b));
  CHECK_FALSE(stall_note(json{{"id", 4}, {"unit_list", {unit("x.o", "succeeded")}}}));
}

TEST_CASE("fad run's summary: compiles, time, peak, reruns") {
  json b = {{"id", 12},
            {"state", "succeeded"},
            {"created_at", "2026-11-23T09:00:00Z"},
            {"finished_at", "2026-11-23T09:03:05Z"},
            {"peak_bytes", 9.8 * kGiB},
            {"units", {{"total", 24}, {"failed", 0}}},
            {"unit_list", {unit("a", "succeeded", {{"attempts", 3}}), unit("b", "succeeded")}}};
  CHECK(render_run_summary(b) == "fad run: build 12 succeeded: 24 compiles in 3m 05s, peak 9.8 GiB, 2 reruns\n");
  b["unit_list"][0]["attempts"] = 1;
  CHECK(render_run_summary(b) == "fad run: build 12 succeeded: 24 compiles in 3m 05s, peak 9.8 GiB, no reruns\n");
  // Stopped before they ran: said, so that the count does not read as work done.
  json stopped = b;
  stopped["state"] = "failed";
  stopped["units"] = {{"total", 2}, {"cancelled", 2}};
  CHECK(render_run_summary(stopped) ==
        "fad run: build 12 failed: 2 compiles in 3m 05s, peak 9.8 GiB, 2 cancelled, no reruns\n");
  b["units"]["total"] = 0;
  CHECK(render_run_summary(b).find("no compile went through fad (does the command call nvcc?") != std::string::npos);
  // A command that could not run (exit 127) is not told to look for nvcc.
  b["state"] = "failed";
  b["error"] = "command exited with code 127";
  CHECK(render_run_summary(b) ==
        "fad run: build 12 failed: command exited with code 127, before any compile went through fad\n");
}
