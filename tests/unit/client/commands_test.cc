// Subcommands against a scripted fadd: what they send, what they print, and
// the exit codes of the contract (0 ok, 1 failed, 2 usage, 3 unreachable).
#include <unistd.h>

#include <catch2/catch.hpp>

#include <csignal>
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
  double clock = 1000;       ///< ctx.wall(); each sleep advances it
  int interrupt_after = -1;  ///< ctx.interrupted() reports `interrupt_signal` after this many sleeps
  int interrupt_signal = SIGINT;
  /// ctx.interrupted() reports `interrupt_signal` from this fake time on (a signal mid-sleep).
  std::optional<std::chrono::steady_clock::time_point> interrupt_at;
  bool tty = false;
  bool one_stream = false;  ///< err writes to `out` as well (a terminal shows both in order)

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
                one_stream ? out : err,
                [this](std::chrono::milliseconds d) {
                  ++sleeps;
                  now += d;
                  clock += std::chrono::duration<double>(d).count();
                },
                [this]() -> fad::Result<std::vector<fad::Arch>> {
                  if (gpus.empty()) return fad::make_error("no GPU");
                  return gpus;
                }};
    ctx.now = [this] { return now; };
    ctx.out_is_tty = tty;
    ctx.width = [] { return std::size_t{60}; };
    ctx.wall = [this] { return clock; };
    ctx.interrupted = [this] {
      const bool now_on = (interrupt_after >= 0 && sleeps >= interrupt_after) || (interrupt_at && now >= *interrupt_at);
      return now_on ? interrupt_signal : 0;
    };
    return ctx;
  }
  void unreachable() {
    CallFailure failure{kExitUnreachable, "cannot reach fadd at /s: refused. Start it with 'fad daemon start'."};
    failure.cause = "cannot reach fadd at /s: refused";
    answers.push_back(failure);
  }
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
  CHECK(json::parse(j.out.str()) == json{{"id", 8}, {"schema_version", 1}});
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

TEST_CASE("submit --wait in a pipe: plain progress lines at most every few seconds, then the outcome") {
  ScriptedDaemon d;
  d.ok({{"id", 7}});
  d.ok(status_of(build("queued", 0, 0)));
  d.ok(status_of(build("running", 1, 2)));  // changed, but only 0.5 s later: held back
  d.ok(status_of(build("running", 1, 2)));
  for (int i = 0; i < 10; ++i) d.ok(status_of(build("running", 2, 2)));
  d.ok(status_of(build("succeeded", 4, 0)));
  Command c = cmd(CommandKind::submit, "fad submit");
  c.archs = {fad::Arch{90, 0}};
  c.wait = true;
  Context ctx = d.context();
  CHECK(run_submit(c, ctx) == 0);
  CHECK(d.out.str() ==
        "submitted build 7\n"
        "[0/4] 0 running, 0.0 MiB\n"
        "[2/4] 2 running, 0.0 MiB\n"
        "build 7 succeeded: 4/4 units, peak 1.0 GiB\nartifact: /st/builds/7/lib.so\n");
  CHECK(d.out.str().find('\033') == std::string::npos);  // nothing for a terminal in a pipe
  CHECK(d.sleeps == 13);
  CHECK(d.seen[1].body["id"] == 7);
}

TEST_CASE("submit --wait on a terminal redraws one line in place") {
  ScriptedDaemon d;
  d.tty = true;
  d.ok({{"id", 7}});
  json b = build("running", 1, 2);
  b["unit_list"] = {{{"name", std::string(80, 'x')}, {"state", "running"}, {"elapsed_s", 3}}};
  d.ok(status_of(b));
  d.ok(status_of(build("succeeded", 4, 0)));
  Command c = cmd(CommandKind::submit, "fad submit");
  c.archs = {fad::Arch{90, 0}};
  c.wait = true;
  Context ctx = d.context();
  CHECK(run_submit(c, ctx) == 0);
  const std::string out = d.out.str();
  // Carriage return, the line (the unit's name does not fit the 60 columns),
  // erase to the end of the line; erased again before the outcome.
  CHECK(out.find("submitted build 7\n\r[1/4] 1 running, 0.0 MiB\033[K\r\033[Kbuild 7 succeeded") == 0);
  CHECK(out.find("\033[2J") == std::string::npos);  // never a clear-screen
}

TEST_CASE("Ctrl-C while following says the build goes on and how to follow or cancel it") {
  ScriptedDaemon d;
  d.tty = true;
  d.interrupt_after = 2;
  d.ok({{"id", 7}});
  for (int i = 0; i < 5; ++i) d.ok(status_of(build("running", 1, 1)));
  Command c = cmd(CommandKind::submit, "fad submit");
  c.archs = {fad::Arch{90, 0}};
  c.wait = true;
  Context ctx = d.context();
  CHECK(run_submit(c, ctx) == 130);
  CHECK(d.err.str() ==
        "fad: stopped following; build 7 goes on in fadd ('fad watch 7' follows it again, 'fad cancel 7' cancels "
        "it)\n");
  const std::string out = d.out.str();
  REQUIRE(out.size() >= 4);
  CHECK(out.substr(out.size() - 4) == "\r\033[K");  // the progress line is gone
  for (const auto& r : d.seen) CHECK(r.type != "cancel");
}

TEST_CASE("a kill or a closed terminal while following ends the progress line and exits 128 + the signal") {
  for (int sig : {SIGTERM, SIGHUP}) {
    ScriptedDaemon d;
    d.tty = true;
    d.interrupt_after = 1;
    d.interrupt_signal = sig;
    for (int i = 0; i < 3; ++i) d.ok(status_of(build("running", 1, 1)));
    Command c = cmd(CommandKind::watch, "fad watch");
    c.id = 7;
    Context ctx = d.context();
    CHECK(run_watch(c, ctx) == 128 + sig);
    const std::string out = d.out.str();
    REQUIRE(out.size() >= 4);
    CHECK(out.substr(out.size() - 4) == "\r\033[K");  // no half-drawn line left for the shell's prompt
    CHECK(d.err.str().find("stopped following; build 7 goes on in fadd") != std::string::npos);
  }
}

TEST_CASE("a failed build prints its first failed unit with the end of its output") {
  ScriptedDaemon d;
  d.ok({{"id", 7}});
  json failed = build("failed", 2, 0);
  failed["units"]["failed"] = 1;
  failed["unit_list"] = {{{"name", "ok"}, {"state", "succeeded"}},
                         {{"name", "bwd_bad"}, {"state", "failed"}, {"exit_code", 3}}};
  d.ok(status_of(failed));
  std::string log = "$ nvcc -c bwd_bad.cu\n";
  for (int i = 1; i <= 30; ++i) log += "line " + std::to_string(i) + "\n";
  d.ok({{"data", ""}, {"offset", log.size()}, {"done", true}});  // the size, asked with an offset past the end
  d.ok({{"data", log}, {"offset", log.size()}, {"done", true}});
  Command c = cmd(CommandKind::submit, "fad submit");
  c.archs = {fad::Arch{90, 0}};
  c.wait = true;
  Context ctx = d.context();
  CHECK(run_submit(c, ctx) == 1);
  REQUIRE(d.seen.size() == 4);
  CHECK(d.seen[2].type == "logs");
  CHECK(d.seen[2].body["unit"] == "bwd_bad");
  CHECK(d.seen[3].body["offset"] == 0);  // the log is under the tail size
  const std::string out = d.out.str();
  CHECK(out.find("build 7 failed: bwd_bad exited with code 3 (1 of 4 units failed)\n") != std::string::npos);
  CHECK(out.find("line 11\n") != std::string::npos);
  CHECK(out.find("line 30\n---\n") != std::string::npos);
  CHECK(out.find("line 10\n") == std::string::npos);  // the last 20 lines only
  CHECK(out.find("all of its output: fad logs 7 bwd_bad\n") != std::string::npos);
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
    // The same document as `fad status ID --json`.
    const json doc = json::parse(d.out.str());
    CHECK(doc["schema_version"] == 1);
    CHECK(doc["builds"][0]["state"] == state);
    CHECK(doc.contains("daemon"));
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
  json expected = s;
  expected["schema_version"] = 1;
  CHECK(json::parse(j.out.str()) == expected);
}

TEST_CASE("status --watch in a pipe: no clear-screen codes, a changed view at most every few seconds") {
  ScriptedDaemon d;
  for (int i = 0; i < 6; ++i) d.ok(status_of(build("running", 1, 1)));
  d.ok(status_of(build("running", 2, 1)));
  d.ok(status_of(build("running", 3, 1)));
  d.interrupt_after = 7;  // one view a second: 8 views
  Command c = cmd(CommandKind::status, "fad status");
  c.watch = true;
  Context ctx = d.context();
  CHECK(run_status(c, ctx) == 130);
  const std::string out = d.out.str();
  CHECK(out.find('\033') == std::string::npos);
  // A view prints when it changed and 5 s passed since the last one printed.
  CHECK(out.find("1/4") != std::string::npos);
  CHECK(out.find("2/4") != std::string::npos);
  CHECK(out.find("3/4") == std::string::npos);  // only 1 s after the 2/4 view

  ScriptedDaemon t;
  t.tty = true;
  t.ok(status_of(build("running", 1, 1)));
  t.interrupt_after = 0;
  Context tctx = t.context();
  CHECK(run_status(c, tctx) == 130);                  // stopped by Ctrl-C, as `fad watch` reports it
  CHECK(t.out.str().rfind("\033[H\033[2J", 0) == 0);  // a terminal redraws in place

  // --json in a pipe: one document per line, each a whole object (it was a
  // stream of indented objects that no JSON reader took in one go).
  ScriptedDaemon j;
  for (int i = 0; i < 6; ++i) j.ok(status_of(build("running", 1, 1)));
  j.ok(status_of(build("running", 2, 1)));
  j.interrupt_after = 6;
  c.json = true;
  Context jctx = j.context();
  CHECK(run_status(c, jctx) == 130);
  std::istringstream lines(j.out.str());
  std::vector<json> docs;
  for (std::string line; std::getline(lines, line);) docs.push_back(json::parse(line));
  REQUIRE(docs.size() == 2);
  CHECK(docs[0].at("schema_version") == 1);
  CHECK(docs[0].at("builds").at(0).at("units").at("succeeded") == 1);
  CHECK(docs[1].at("builds").at(0).at("units").at("succeeded") == 2);
}

TEST_CASE("watch follows the newest active build, or says there is none") {
  ScriptedDaemon d;
  json all = {
      {"builds",
       {{{"id", 3}, {"state", "running"}}, {{"id", 5}, {"state", "queued"}}, {{"id", 6}, {"state", "failed"}}}}};
  d.ok(all);
  d.ok(status_of(build("succeeded", 4, 0)));
  Command c = cmd(CommandKind::watch, "fad watch");
  Context ctx = d.context();
  CHECK(run_watch(c, ctx) == 0);
  CHECK(d.seen[1].body["id"] == 5);

  ScriptedDaemon none;
  none.ok({{"builds", {{{"id", 6}, {"state", "failed"}}}}});
  Context nctx = none.context();
  CHECK(run_watch(c, nctx) == 1);
  CHECK(none.err.str() ==
        "fad: no build of yours is queued or running ('fad status' lists everyone's; finished ones: 'fad history')\n");

  // On a shared fadd: your own newest, not another user's newer one.
  ScriptedDaemon shared;
  const auto me = static_cast<std::int64_t>(::geteuid());
  shared.ok({{"builds",
              {{{"id", 3}, {"state", "running"}, {"uid", me}}, {{"id", 5}, {"state", "queued"}, {"uid", me + 1}}}}});
  shared.ok(status_of(build("succeeded", 4, 0)));
  Context sctx = shared.context();
  CHECK(run_watch(c, sctx) == 0);
  CHECK(shared.seen[1].body["id"] == 3);
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

TEST_CASE("logs --follow stops on Ctrl-C, a kill or a closed terminal with the signal's exit code") {
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    ScriptedDaemon d;
    d.ok({{"data", "a\n"}, {"offset", 2}, {"done", false}});
    d.ok({{"data", ""}, {"offset", 2}, {"done", false}});
    d.ok({{"data", "never asked for\n"}, {"offset", 18}, {"done", false}});
    d.interrupt_after = 1;  // during the first wait for more
    d.interrupt_signal = sig;
    Command c = cmd(CommandKind::logs, "fad logs");
    c.id = 7;
    c.follow = true;
    Context ctx = d.context();
    CHECK(run_logs(c, ctx) == 128 + sig);
    CHECK(d.out.str() == "a\n");
    CHECK(d.err.str().empty());  // nothing added to the log's text
    CHECK(d.seen.size() == 2);
  }
  // The signal comes while its next request waits, and cuts it short (as the
  // real sender does): 130, and no error line added to the log's text.
  ScriptedDaemon d;
  d.ok({{"data", ""}, {"offset", 0}, {"done", false}});
  d.answers.push_back(CallFailure{kExitUnreachable, "interrupted while waiting for fadd's answer", false});
  Command c = cmd(CommandKind::logs, "fad logs");
  c.id = 7;
  c.follow = true;
  Context ctx = d.context();
  const auto send = ctx.send;
  ctx.send = [&](const fad::Request& r) {
    if (d.seen.size() == 1) d.interrupt_after = 0;
    return send(r);
  };
  CHECK(run_logs(c, ctx) == 130);
  CHECK(d.err.str().empty());
  CHECK(d.seen.size() == 2);
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

TEST_CASE("logs on a terminal shows escape sequences as '?' and keeps tabs, and in a pipe writes the log as it is") {
  // A log is compiler output, and its owner may edit the file: root reading
  // another user's log must not have its terminal retitled or cleared.
  const std::string log = "a.cu(3):\twarning\n\x1b]0;owned\x07\x1b[2Jroot# \n";
  for (const bool tty : {true, false}) {
    ScriptedDaemon d;
    d.tty = tty;
    d.ok({{"data", log}, {"offset", log.size()}, {"done", true}});
    Command c = cmd(CommandKind::logs, "fad logs");
    c.id = 7;
    Context ctx = d.context();
    CHECK(run_logs(c, ctx) == 0);
    CHECK(d.out.str() == (tty ? "a.cu(3):\twarning\n?]0;owned??[2Jroot# \n" : log));
  }
}

TEST_CASE("control commands send their type and report the new state") {
  ScriptedDaemon d;
  d.ok({{"id", 7}, {"state", "queued"}, {"requeued", 3}, {"requeued_failed", 1}, {"requeued_cancelled", 2}});
  d.error(fad::ErrorCode::failed, "build 7 already finished");
  Command retry = cmd(CommandKind::retry, "fad retry");
  retry.id = 7;
  Context ctx = d.context();
  CHECK(run_control(retry, ctx) == 0);
  CHECK(d.seen[0].type == "retry");
  CHECK(d.out.str() == "build 7: queued, requeued 1 failed and 2 cancelled unit(s)\n");
  Command cancel = cmd(CommandKind::cancel, "fad cancel");
  cancel.id = 7;
  CHECK(run_control(cancel, ctx) == 1);
  CHECK(d.seen[1].type == "cancel");
}

TEST_CASE("a pause or resume fadd could not record yet says what its compilers do") {
  ScriptedDaemon d;
  d.ok({{"id", 7}, {"state", "paused"}, {"recorded", false}});
  d.ok({{"id", 7}, {"state", "queued"}, {"recorded", false}});
  Command pause = cmd(CommandKind::pause, "fad pause");
  pause.id = 7;
  Command resume = cmd(CommandKind::resume, "fad resume");
  resume.id = 7;
  Context ctx = d.context();
  CHECK(run_control(pause, ctx) == 0);
  CHECK(run_control(resume, ctx) == 0);
  CHECK(d.out.str() ==
        "build 7: paused (its compilers are frozen; fadd records it once it can write its database again)\n"
        "build 7: queued (its compilers go on; fadd records it once it can write its database again)\n");
}

TEST_CASE("a cancel fadd could not record yet says its compilers are stopped") {
  ScriptedDaemon d;
  d.ok({{"id", 7}, {"state", "cancelled"}, {"recorded", false}});
  d.ok({{"id", 8}, {"state", "cancelled"}});
  Command cancel = cmd(CommandKind::cancel, "fad cancel");
  cancel.id = 7;
  Context ctx = d.context();
  CHECK(run_control(cancel, ctx) == 0);
  cancel.id = 8;
  CHECK(run_control(cancel, ctx) == 0);
  CHECK(d.out.str() ==
        "build 7: cancelled (its compilers are stopped; fadd records it once it can write its database again)\n"
        "build 8: cancelled\n");
}

TEST_CASE("control commands with --json print the answer with recorded always there, errors on stderr") {
  ScriptedDaemon d;
  d.ok({{"id", 7}, {"state", "cancelled"}, {"recorded", false}});
  d.ok({{"id", 8}, {"state", "paused"}});
  d.ok({{"id", 9}, {"state", "queued"}, {"requeued", 3}, {"requeued_failed", 1}, {"requeued_cancelled", 2}});
  d.error(fad::ErrorCode::failed, "build 10 has succeeded, not paused");
  Context ctx = d.context();
  const std::pair<CommandKind, std::int64_t> calls[] = {
      {CommandKind::cancel, 7}, {CommandKind::pause, 8}, {CommandKind::retry, 9}};
  for (const auto& [kind, id] : calls) {
    Command c = cmd(kind, "fad");
    c.id = id;
    c.json = true;
    CHECK(run_control(c, ctx) == 0);
  }
  Command resume = cmd(CommandKind::resume, "fad resume");
  resume.id = 10;
  resume.json = true;
  CHECK(run_control(resume, ctx) == 1);
  CHECK(d.err.str() == "fad: build 10 has succeeded, not paused\n");
  // Three documents, one after the other, each a whole JSON object.
  std::istringstream docs(d.out.str());
  std::vector<json> got;
  for (json doc; docs >> std::ws && docs.peek() != EOF;) {
    docs >> doc;
    got.push_back(doc);
  }
  REQUIRE(got.size() == 3);
  CHECK(got[0] == json{{"id", 7}, {"state", "cancelled"}, {"recorded", false}, {"schema_version", 1}});
  CHECK(got[1] == json{{"id", 8}, {"state", "paused"}, {"recorded", true}, {"schema_version", 1}});
  CHECK(got[2]["requeued_failed"] == 1);
  CHECK(got[2]["requeued_cancelled"] == 2);
  CHECK(got[2]["recorded"] == true);
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
        "fad: lost contact with fadd: cannot reach fadd at /s: refused; retrying for up to 60 s\n"
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
  CHECK(d.seen.size() < 30);  // backoff: a request every few seconds, not a busy loop
}

TEST_CASE("watch ID with no fadd to reach fails at once with exit 3, as status does") {
  // Bug: it said it had lost contact (it never had any) and waited 60 s.
  ScriptedDaemon d;
  d.unreachable();
  d.unreachable();
  Command c = cmd(CommandKind::watch, "fad watch");
  c.id = 7;
  Context ctx = d.context();
  CHECK(run_watch(c, ctx) == 3);
  CHECK(d.err.str() == "fad: cannot reach fadd at /s: refused. Start it with 'fad daemon start'.\n");
  CHECK(d.seen.size() == 1);
  CHECK(d.now == std::chrono::steady_clock::time_point{});  // no wait
}

TEST_CASE("a kill while a follower waits for fadd to come back ends it at once with 128 + the signal") {
  for (bool status_watch : {false, true}) {
    ScriptedDaemon d;
    d.ok(status_of(build("running", 1, 2)));  // then fadd is gone
    d.interrupt_after = 3;                    // a few retries in
    d.interrupt_signal = SIGTERM;
    Command c = status_watch ? cmd(CommandKind::status, "fad status") : cmd(CommandKind::watch, "fad watch");
    c.id = 7;
    c.watch = status_watch;
    Context ctx = d.context();
    CHECK((status_watch ? run_status(c, ctx) : run_watch(c, ctx)) == 128 + SIGTERM);
    CHECK(d.now - std::chrono::steady_clock::time_point{} < std::chrono::seconds(10));  // not the 60 s window
  }
  SECTION("within a quarter second, even deep in the backoff, and with the progress line erased first") {
    ScriptedDaemon d;
    d.tty = true;
    d.one_stream = true;                      // the terminal: out and err interleave
    d.ok(status_of(build("running", 1, 2)));  // drawn; then fadd is gone
    d.interrupt_at = std::chrono::steady_clock::time_point{} + std::chrono::milliseconds(5100);  // mid-backoff
    d.interrupt_signal = SIGTERM;
    Command c = cmd(CommandKind::watch, "fad watch");
    c.id = 7;
    Context ctx = d.context();
    CHECK(run_watch(c, ctx) == 128 + SIGTERM);
    CHECK(d.now >= *d.interrupt_at);
    CHECK(d.now - *d.interrupt_at <= std::chrono::milliseconds(250));
    const std::string all = d.out.str();
    const auto lost = all.find("fad: lost contact");
    REQUIRE(lost != std::string::npos);
    REQUIRE(lost >= 4);
    CHECK(all.substr(lost - 4, 4) == "\r\033[K");  // said on a line of its own
  }
}

TEST_CASE("status --watch cut short on its first request by a signal exits 128 + the signal, saying why") {
  ScriptedDaemon d;
  d.answers.push_back(CallFailure{kExitUnreachable, "interrupted while waiting for fadd's answer", false});
  d.interrupt_after = 0;  // the signal came while the first request waited
  d.interrupt_signal = SIGINT;
  Command c = cmd(CommandKind::status, "fad status");
  c.watch = true;
  Context ctx = d.context();
  CHECK(run_status(c, ctx) == 128 + SIGINT);
  CHECK(d.err.str() == "fad: interrupted while waiting for fadd's answer\n");
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

  ScriptedDaemon as_json;  // every --json document carries its schema version
  as_json.ok({{"dry_run", false}, {"older_than_s", 86400}, {"bytes", 0}, {"builds", json::array()}});
  Command json_prune = cmd(CommandKind::prune, "fad prune");
  json_prune.json = true;
  Context jctx = as_json.context();
  CHECK(run_prune(json_prune, jctx) == 0);
  const json printed = json::parse(as_json.out.str());
  CHECK(printed.at("schema_version") == 1);
  CHECK(printed.at("bytes") == 0);

  ScriptedDaemon never;
  never.error(fad::ErrorCode::usage, "no age to prune by");
  Context vctx = never.context();
  CHECK(run_prune(all, vctx) == 2);
}
