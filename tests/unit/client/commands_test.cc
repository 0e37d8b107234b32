// Subcommands against a scripted fadd: what they send, what they print, and
// the exit codes of the contract (0 ok, 1 failed, 2 usage, 3 unreachable).
#include <catch2/catch.hpp>

#include <deque>
#include <sstream>

#include "client/commands.h"
#include "client/exit_codes.h"

using namespace fad::client;
using fad::json;

namespace {

// A fake daemon: answers requests from a script, in order, and records them.
struct ScriptedDaemon {
  std::deque<CallResult> answers;
  std::vector<fad::Request> seen;
  std::ostringstream out, err;
  int sleeps = 0;
  std::chrono::steady_clock::time_point now{};  ///< advanced by the fake sleep
  std::vector<fad::Arch> gpus;

  Context context() {
    Context ctx{[this](const fad::Request& r) -> CallResult {
                  seen.push_back(r);
                  if (answers.empty()) return CallFailure{kExitUnreachable, "cannot reach fadd at /s: gone"};
                  CallResult a = answers.front();
                  answers.pop_front();
                  return a;
                },
                "/s",
                out,
                err,
                [this](std::chrono::milliseconds d) {
                  ++sleeps;
                  now += d;
                },
                [this]() -> fad::Result<std::vector<fad::Arch>> {
                  if (gpus.empty()) return fad::make_error("no GPU");
                  return gpus;
                }};
    ctx.now = [this] { return now; };
    return ctx;
  }
  void unreachable() { answers.push_back(CallFailure{kExitUnreachable, "cannot reach fadd at /s: refused"}); }
  void ok(json result) { answers.push_back(fad::Response{true, std::move(result), fad::ErrorCode::internal, ""}); }
  void error(fad::ErrorCode code, std::string message) {
    answers.push_back(fad::Response{false, json::object(), code, std::move(message)});
  }
};

Command cmd(CommandKind kind, std::string path) {
  Command c;
  c.kind = kind;
  c.path = std::move(path);
  return c;
}

json build(const std::string& state, int succeeded, int running, int total = 4) {
  return {{"id", 7},
          {"name", ""},
          {"state", state},
          {"archs", {"9.0"}},
          {"units",
           {{"total", total},
            {"queued", total - succeeded - running},
            {"running", running},
            {"succeeded", succeeded},
            {"failed", 0}}},
          {"peak_bytes", 1073741824},
          {"artifact", state == "succeeded" ? json("/st/builds/7/lib.so") : json(nullptr)}};
}

json status_of(const json& b) { return {{"daemon", {{"pid", 1}}}, {"builds", {b}}}; }

}  // namespace

TEST_CASE("exit code mapping") {
  fad::Response r;
  r.ok = false;
  r.code = fad::ErrorCode::usage;
  CHECK(exit_code_for_error(r) == 2);
  for (auto code : {fad::ErrorCode::not_found, fad::ErrorCode::failed, fad::ErrorCode::internal}) {
    r.code = code;
    CHECK(exit_code_for_error(r) == 1);
  }
  CHECK(exit_code_for_build_state("succeeded") == 0);
  CHECK(exit_code_for_build_state("failed") == 1);
  CHECK(exit_code_for_build_state("cancelled") == 1);
  CHECK(is_final_build_state("cancelled"));
  CHECK_FALSE(is_final_build_state("paused"));
}

TEST_CASE("submit sends the archs in display form and prints the id") {
  ScriptedDaemon d;
  d.ok({{"id", 7}});
  Command c = cmd(CommandKind::submit, "fad submit");
  c.archs = {fad::Arch{90, 'a'}, fad::Arch{120, 0}};
  c.name = "n";
  Context ctx = d.context();
  CHECK(run_submit(c, ctx) == 0);
  REQUIRE(d.seen.size() == 1);
  CHECK(d.seen[0].type == "submit");
  auto body = fad::SubmitRequest::from_json(d.seen[0].body);
  REQUIRE(body.ok());
  CHECK(body->archs == std::vector<std::string>{"9.0a", "12.0"});
  CHECK(body->name == "n");
  CHECK(d.out.str() == "submitted build 7\n");

  ScriptedDaemon j;
  j.ok({{"id", 8}});
  c.json = true;
  Context jctx = j.context();
  CHECK(run_submit(c, jctx) == 0);
  CHECK(json::parse(j.out.str()) == json{{"id", 8}});
}

TEST_CASE("submit without --arch uses the GPUs, and fails with usage without one") {
  ScriptedDaemon d;
  Context ctx = d.context();
  Command c = cmd(CommandKind::submit, "fad submit");
  CHECK(run_submit(c, ctx) == kExitUsage);
  CHECK(d.err.str() == "fad: no GPU found to pick an arch from; pass --arch (e.g. --arch 9.0)\n");
  CHECK(d.seen.empty());

  d.gpus = {fad::Arch{90, 0}};
  d.ok({{"id", 1}});
  CHECK(run_submit(c, ctx) == 0);
  CHECK(d.seen.at(0).body["archs"] == json{"9.0"});
}

TEST_CASE("submit rejected by the daemon for an unsupported arch is a usage error") {
  ScriptedDaemon d;
  d.error(fad::ErrorCode::usage, "arch 13.0 is not supported by this nvcc; it can build: 9.0, 12.0");
  Context ctx = d.context();
  Command c = cmd(CommandKind::submit, "fad submit");
  c.archs = {fad::Arch{130, 0}};
  CHECK(run_submit(c, ctx) == 2);
  CHECK(d.err.str() == "fad: arch 13.0 is not supported by this nvcc; it can build: 9.0, 12.0\n");
}

TEST_CASE("submit --wait prints progress when counts change and exits with the build's result") {
  ScriptedDaemon d;
  d.ok({{"id", 7}});
  d.ok(status_of(build("queued", 0, 0)));
  d.ok(status_of(build("running", 1, 2)));
  d.ok(status_of(build("running", 1, 2)));  // unchanged: no line
  d.ok(status_of(build("succeeded", 4, 0)));
  Command c = cmd(CommandKind::submit, "fad submit");
  c.archs = {fad::Arch{90, 0}};
  c.wait = true;
  Context ctx = d.context();
  CHECK(run_submit(c, ctx) == 0);
  CHECK(d.out.str() ==
        "submitted build 7\n"
        "build 7: 0/4 units done, 0 running, peak 1.0 GiB\n"
        "build 7: 1/4 units done, 2 running, peak 1.0 GiB\n"
        "build 7 succeeded: 4/4 units, peak 1.0 GiB\nartifact: /st/builds/7/lib.so\n");
  CHECK(d.sleeps == 3);
  CHECK(d.seen[1].body["id"] == 7);
}

TEST_CASE("submit --wait: failed or cancelled is 1, a vanished daemon is 3, --json prints only the end") {
  for (const char* state : {"failed", "cancelled"}) {
    ScriptedDaemon d;
    d.ok({{"id", 7}});
    d.ok(status_of(build(state, 1, 0)));
    Command c = cmd(CommandKind::submit, "fad submit");
    c.archs = {fad::Arch{90, 0}};
    c.wait = true;
    c.json = true;
    Context ctx = d.context();
    CHECK(run_submit(c, ctx) == 1);
    CHECK(json::parse(d.out.str())["state"] == state);
  }
  ScriptedDaemon gone;
  gone.ok({{"id", 7}});
  gone.ok(status_of(build("running", 1, 1)));
  Command c = cmd(CommandKind::submit, "fad submit");
  c.archs = {fad::Arch{90, 0}};
  c.wait = true;
  Context ctx = gone.context();
  CHECK(run_submit(c, ctx) == 3);
  CHECK(gone.err.str().find("stopped waiting for build 7") != std::string::npos);
}

TEST_CASE("status: unreachable is 3, not_found is 1, json passes the result through") {
  ScriptedDaemon none;
  Context ctx = none.context();
  CHECK(run_status(cmd(CommandKind::status, "fad status"), ctx) == 3);
  CHECK(none.err.str().rfind("fad: cannot reach fadd", 0) == 0);

  ScriptedDaemon d;
  d.error(fad::ErrorCode::not_found, "no build 9");
  Command c = cmd(CommandKind::status, "fad status");
  c.id = 9;
  Context dctx = d.context();
  CHECK(run_status(c, dctx) == 1);
  CHECK(d.err.str() == "fad: no build 9\n");
  CHECK(d.seen[0].body["id"] == 9);

  ScriptedDaemon j;
  json s = status_of(build("running", 1, 1));
  j.ok(s);
  c.json = true;
  Context jctx = j.context();
  CHECK(run_status(c, jctx) == 0);
  CHECK(json::parse(j.out.str()) == s);
}

TEST_CASE("logs --follow polls with the returned offset until done") {
  ScriptedDaemon d;
  d.ok({{"data", "a\n"}, {"offset", 2}, {"done", false}});
  d.ok({{"data", ""}, {"offset", 2}, {"done", false}});
  d.ok({{"data", "b\n"}, {"offset", 4}, {"done", true}});
  Command c = cmd(CommandKind::logs, "fad logs");
  c.id = 7;
  c.unit = "u1";
  c.follow = true;
  Context ctx = d.context();
  CHECK(run_logs(c, ctx) == 0);
  CHECK(d.out.str() == "a\nb\n");
  REQUIRE(d.seen.size() == 3);
  CHECK(d.seen[0].body["offset"] == 0);
  CHECK(d.seen[0].body["unit"] == "u1");
  CHECK(d.seen[2].body["offset"] == 2);
  CHECK(d.sleeps == 1);
}

TEST_CASE("logs without --follow stops once nothing more is there") {
  ScriptedDaemon d;
  d.ok({{"data", "a\n"}, {"offset", 2}, {"done", false}});
  d.ok({{"data", ""}, {"offset", 2}, {"done", false}});
  Command c = cmd(CommandKind::logs, "fad logs");
  c.id = 7;
  Context ctx = d.context();
  CHECK(run_logs(c, ctx) == 0);
  CHECK(d.out.str() == "a\n");
  CHECK(d.sleeps == 0);
}

TEST_CASE("control commands send their type and report the new state") {
  ScriptedDaemon d;
  d.ok({{"id", 7}, {"state", "queued"}, {"requeued", 3}});
  d.error(fad::ErrorCode::failed, "build 7 already finished");
  Command retry = cmd(CommandKind::retry, "fad retry");
  retry.id = 7;
  Context ctx = d.context();
  CHECK(run_control(retry, ctx) == 0);
  CHECK(d.seen[0].type == "retry");
  CHECK(d.out.str() == "build 7: queued, 3 failed unit(s) requeued\n");
  Command cancel = cmd(CommandKind::cancel, "fad cancel");
  cancel.id = 7;
  CHECK(run_control(cancel, ctx) == 1);
  CHECK(d.seen[1].type == "cancel");
}

TEST_CASE("history sends the limit") {
  ScriptedDaemon d;
  d.ok({{"builds", json::array()}});
  Command c = cmd(CommandKind::history, "fad history");
  c.limit = 3;
  Context ctx = d.context();
  CHECK(run_history(c, ctx) == 0);
  CHECK(d.seen[0].body["limit"] == 3);
  CHECK(d.out.str() == "no finished builds\n");
}

TEST_CASE("submit --wait rides out a daemon restart: says so once, then follows the build to its end") {
  ScriptedDaemon d;
  d.ok({{"id", 7}});
  d.ok(status_of(build("running", 1, 2)));
  for (int i = 0; i < 4; ++i) d.unreachable();  // fadd restarting
  d.ok(status_of(build("running", 2, 1)));
  d.ok(status_of(build("succeeded", 4, 0)));
  Command c = cmd(CommandKind::submit, "fad submit");
  c.archs = {fad::Arch{90, 0}};
  c.wait = true;
  Context ctx = d.context();
  CHECK(run_submit(c, ctx) == 0);
  CHECK(d.err.str() ==
        "fad: lost contact with fadd (cannot reach fadd at /s: refused); retrying for up to 60 s\n"
        "fad: fadd answers again\n");
  CHECK(d.out.str().find("build 7 succeeded") != std::string::npos);
  // Backoff: 250 ms, then doubling.
  CHECK(d.now - std::chrono::steady_clock::time_point{} >= std::chrono::milliseconds(250 + 500 + 1000 + 2000));
}

TEST_CASE("submit --wait gives up with exit 3 when fadd stays away past the window") {
  ScriptedDaemon d;
  d.ok({{"id", 7}});
  d.ok(status_of(build("running", 1, 2)));
  Command c = cmd(CommandKind::submit, "fad submit");
  c.archs = {fad::Arch{90, 0}};
  c.wait = true;
  Context ctx = d.context();
  CHECK(run_submit(c, ctx) == 3);
  const std::string err = d.err.str();
  CHECK(err.find("retrying for up to 60 s") != std::string::npos);
  CHECK(err.find("fad: stopped waiting for build 7: fadd did not come back within 60 s") != std::string::npos);
  CHECK(d.now - std::chrono::steady_clock::time_point{} >= kReconnectWindow);
  CHECK(d.now - std::chrono::steady_clock::time_point{} < kReconnectWindow + std::chrono::seconds(6));
  CHECK(d.sleeps < 30);  // backoff, not a busy loop
}

TEST_CASE("a permission error is not retried and says so") {
  ScriptedDaemon d;
  d.ok({{"id", 7}});
  d.answers.push_back(CallFailure{kExitUnreachable, "permission denied on /s", false});
  Command c = cmd(CommandKind::submit, "fad submit");
  c.archs = {fad::Arch{90, 0}};
  c.wait = true;
  Context ctx = d.context();
  CHECK(run_submit(c, ctx) == 3);
  CHECK(d.err.str() == "fad: stopped waiting for build 7: permission denied on /s\n");
  CHECK(d.sleeps == 0);
}

TEST_CASE("status --watch and logs --follow ride out a restart, but a first request fails at once") {
  ScriptedDaemon first;
  Command watch = cmd(CommandKind::status, "fad status");
  watch.watch = true;
  Context fctx = first.context();
  CHECK(run_status(watch, fctx) == 3);
  CHECK(first.sleeps == 0);

  ScriptedDaemon d;
  d.ok({{"data", "a\n"}, {"offset", 2}, {"done", false}});
  d.ok({{"data", ""}, {"offset", 2}, {"done", false}});
  d.unreachable();
  d.ok({{"data", "b\n"}, {"offset", 4}, {"done", true}});
  Command c = cmd(CommandKind::logs, "fad logs");
  c.id = 7;
  c.follow = true;
  Context ctx = d.context();
  CHECK(run_logs(c, ctx) == 0);
  CHECK(d.out.str() == "a\nb\n");
  CHECK(d.seen.back().body["offset"] == 2);  // resumed where it was
  CHECK(d.err.str().find("fadd answers again") != std::string::npos);
}

TEST_CASE("prune sends its age and dry run and prints what went") {
  ScriptedDaemon d;
  d.ok({{"dry_run", true},
        {"older_than_s", 2592000},
        {"bytes", 3 * 1048576},
        {"builds", {{{"id", 3}, {"name", "old"}, {"finished_at", "2026-01-01T00:00:00Z"}, {"bytes", 3 * 1048576}}}}});
  Command c = cmd(CommandKind::prune, "fad prune");
  c.older_than_s = 2592000;
  c.dry_run = true;
  Context ctx = d.context();
  CHECK(run_prune(c, ctx) == 0);
  CHECK(d.seen[0].type == "prune");
  CHECK(d.seen[0].body == json{{"older_than_s", 2592000}, {"dry_run", true}});
  CHECK(d.out.str() ==
        "would prune build 3 (old), finished 2026-01-01T00:00:00Z, 3.0 MiB\n"
        "would free 3.0 MiB from 1 build(s) older than 30d (dry run: nothing deleted)\n");

  ScriptedDaemon none;
  none.ok({{"dry_run", false}, {"older_than_s", 86400}, {"bytes", 0}, {"builds", json::array()}});
  Command all = cmd(CommandKind::prune, "fad prune");
  Context nctx = none.context();
  CHECK(run_prune(all, nctx) == 0);
  CHECK(none.seen[0].body == json{{"dry_run", false}});  // the daemon's retention
  CHECK(none.out.str() == "nothing to prune: no finished build older than 1d still has outputs\n");

  ScriptedDaemon never;
  never.error(fad::ErrorCode::usage, "no age to prune by");
  Context vctx = never.context();
  CHECK(run_prune(all, vctx) == 2);
}
