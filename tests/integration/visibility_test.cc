// What a user sees of a build, end to end with the real fadd and fad: live
// status (memory now, elapsed, paused), `submit --wait` in a pipe with an
// inline failure, `fad run` saying why its compiles wait and summing up, and
// `fad report` opened in a real headless browser.
#include <unistd.h>

#include <catch2/catch.hpp>

#include "harness.h"

using namespace fad::test;

namespace {

const json* unit_named(const json& build, const std::string& name) {
  for (const auto& u : build.at("unit_list"))
    if (u.at("name") == name) return &u;
  return nullptr;
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

std::size_t lines_of(const std::string& text) { return count_of(text, "\n"); }

}  // namespace

TEST_CASE("status is live: a running unit's memory and elapsed time, paused units, queue and run time",
          "[integration]") {
  Daemon d;
  // Long enough to outlast every step below on a loaded machine; it is cancelled.
  d.write_kernels({{"fwd_slow", "peak_mb=120 duration_s=60"}});
  d.start();
  const auto id = d.submit({"--arch", "9.0", "--name", "live"});
  json unit;
  const bool measured = wait_for(
      [&] {
        const json b = d.status(id);
        const json* u = unit_named(b, "fwd_slow");
        if (!u || u->at("state") != "running" || !u->at("current_bytes").is_number()) return false;
        unit = *u;
        return u->at("current_bytes").get<std::uint64_t>() > (30u << 20) && u->at("elapsed_s").get<double>() >= 1;
      },
      std::chrono::seconds(20));
  INFO(unit.dump(2) << d.daemon_log());
  REQUIRE(measured);
  CHECK(unit.at("peak_bytes").get<std::uint64_t>() >= unit.at("current_bytes").get<std::uint64_t>());
  // The link waits for the compile and carries an estimate with its source.
  const json now = d.status(id);
  const json* link = unit_named(now, "link");
  REQUIRE(link);
  CHECK(link->at("estimate_bytes").get<std::uint64_t>() > 0);
  CHECK(link->at("estimate_source").is_string());
  const auto text = d.fad({"status", std::to_string(id)});
  CHECK(text.out.find("NOW") != std::string::npos);

  REQUIRE(d.fad({"pause", std::to_string(id)}).exit_code == 0);
  const json paused = d.status(id);
  CHECK(unit_named(paused, "fwd_slow")->at("state") == "paused");
  REQUIRE(d.fad({"resume", std::to_string(id)}).exit_code == 0);
  const json resumed = d.status(id);
  CHECK(unit_named(resumed, "fwd_slow")->at("state") == "running");
  REQUIRE(d.fad({"cancel", std::to_string(id)}).exit_code == 0);
  d.wait_final(id);

  auto history = d.fad({"history", "--json"});
  REQUIRE(history.exit_code == 0);
  const json h = json::parse(history.out);
  CHECK(h.at("schema_version") == 1);
  const json& b = h.at("builds").at(0);
  CHECK(b.at("queue_s").is_number());
  CHECK(b.at("run_s").get<double>() >= 1);
}

TEST_CASE("submit --wait in a pipe prints a few lines, and a failure with its unit's last lines", "[integration]") {
  Daemon d;
  std::vector<FakeUnit> units;
  for (int i = 0; i < 8; ++i) units.push_back({"fwd_" + std::to_string(i), "duration_s=0.3"});
  units.push_back({"bwd_bad", "duration_s=0.5"});
  d.write_kernels(units);
  d.start({"--cores", "2"}, {{"FAD_FAKE_FAIL_MATCH", "bwd_bad"}});
  const auto asked = std::chrono::steady_clock::now();
  auto r = d.fad({"submit", "--arch", "9.0", "--wait"});
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find('\033') == std::string::npos);  // no terminal codes into a pipe
  const auto failed = r.out.find("failed: bwd_bad exited with code 1 (1 of 10 units failed)");
  REQUIRE(failed != std::string::npos);
  CHECK(r.out.find("bwd_bad.cu(1): error: fake failure", failed) != std::string::npos);
  CHECK(r.out.find("all of its output: fad logs ") != std::string::npos);
  // Progress: one line at the start and at most one per 5 s after.
  INFO("the build took " << took_s << " s");
  CHECK(lines_of(r.out.substr(0, failed)) <= 2 + static_cast<std::size_t>(took_s / 5));

  auto json_run = d.fad({"submit", "--arch", "9.0", "--kernels", "fwd_0", "--wait", "--json"});
  REQUIRE(json_run.exit_code == 0);
  const json doc = json::parse(json_run.out);  // the same shape as `fad status ID --json`
  CHECK(doc.at("schema_version") == 1);
  CHECK(doc.at("daemon").is_object());
  CHECK(doc.at("builds").at(0).at("state") == "succeeded");
  CHECK(doc.at("builds").at(0).at("unit_list").size() == 2);
}

TEST_CASE("fad run and fad launch say why their compiles wait, and fad run sums up", "[integration][launcher]") {
  Daemon d;
  std::ofstream(d.dir() / "test-config.json") << R"({"poll_interval_ms": 100, "max_parallel_units": 1})";
  // The blocker runs until both have said they wait (a launcher says so
  // after 5 s), then is cancelled: no race between its end and their start.
  d.write_kernels({{"slow_a", "peak_mb=20 duration_s=120"}});
  d.start();
  const auto blocker = d.submit({"--arch", "9.0"});
  REQUIRE(wait_for([&] { return d.status(blocker).at("units").at("running") == 1; }, std::chrono::seconds(20)));

  const auto shim = fs::path(FAD_FAD_BIN).parent_path() / "fad-nvcc";
  std::ofstream(d.dir() / "x.cu") << "// fake-nvcc: duration_s=0.2\n";
  std::ofstream(d.dir() / "y.cu") << "// fake-nvcc: duration_s=0.2\n";
  const std::map<std::string, std::string> env{{"FAD_SOCKET", d.socket()}, {"FAD_REAL_NVCC", FAD_FAKE_NVCC_BIN}};
  const pid_t run_pid =
      start_process({FAD_FAD_BIN, "run", "--name", "held", "--", shim.string(), "-c", (d.dir() / "x.cu").string(), "-o",
                     (d.dir() / "x.o").string(), "-gencode", "arch=compute_90,code=sm_90"},
                    env, d.dir() / "run.out", d.dir() / "run.err");
  const pid_t launch_pid =
      start_process({shim.string(), "-c", (d.dir() / "y.cu").string(), "-o", (d.dir() / "y.o").string()}, env,
                    d.dir() / "launch.out", d.dir() / "launch.err");
  REQUIRE(run_pid > 0);
  REQUIRE(launch_pid > 0);
  CHECK(wait_for(
      [&] {
        return slurp(d.dir() / "run.err").find("waiting") != std::string::npos &&
               slurp(d.dir() / "launch.err").find("waiting") != std::string::npos;
      },
      std::chrono::seconds(60)));
  REQUIRE(d.fad({"cancel", std::to_string(blocker)}).exit_code == 0);
  CHECK(wait_process(run_pid, 60) == 0);
  CHECK(wait_process(launch_pid, 60) == 0);
  const std::string run_err = slurp(d.dir() / "run.err");
  const std::string launch_err = slurp(d.dir() / "launch.err");
  INFO("fad run:\n" << run_err << "fad launch:\n" << launch_err << d.daemon_log());
  const json held = find_build(d.status_all(), "held");
  REQUIRE(held.is_object());
  const std::string id = std::to_string(held.at("id").get<int>());
  CHECK(count_of(run_err, "fad: waiting: max_parallel_units reached (1); fad status " + id + "\n") == 1);
  CHECK(run_err.find("fad run: build " + id + " succeeded: 1 compile in ") != std::string::npos);
  CHECK(run_err.find(", no reruns\n") != std::string::npos);
  CHECK(count_of(launch_err, "fad: y.cu: waiting: max_parallel_units reached (1); fad status ") == 1);
  // A fad run build is running with its compiles' archs while its command runs; here it is done.
  CHECK(held.at("state") == "succeeded");
  CHECK(held.at("archs") == json::array({"9.0"}));
}

TEST_CASE("fad report writes a self-contained page and a trace, and a headless browser draws one bar per unit",
          "[integration][report]") {
  Daemon d;
  d.write_kernels({{"fwd_a", "peak_mb=120 duration_s=1.5"},
                   {"fwd_b", "peak_mb=80 duration_s=1"},
                   {"bwd_c", "peak_mb=100 duration_s=0.5"}});
  d.start();
  const auto id = d.submit({"--arch", "9.0", "--name", "report"});
  REQUIRE(d.wait_final(id).at("state") == "succeeded");

  const auto html_path = d.dir() / "report.html";
  const auto trace_path = d.dir() / "trace.json";
  auto r = d.fad({"report", std::to_string(id), "-o", html_path.string(), "--trace", trace_path.string()});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("wrote " + html_path.string()) != std::string::npos);
  const std::string html = slurp(html_path);
  CHECK(count_of(html, " bar\"") == 4);  // three compiles and the link
  const json trace = json::parse(slurp(trace_path));
  int threads = 0;
  for (const auto& e : trace.at("traceEvents")) threads += e.at("ph") == "M" && e.at("name") == "thread_name";
  CHECK(threads == 4);
  // One file for both would lose the page to the trace: refused, nothing written.
  const auto both = d.dir() / "both.html";
  auto same =
      d.fad({"report", std::to_string(id), "-o", both.string(), "--trace", (d.dir() / "." / "both.html").string()});
  CHECK(same.exit_code == 2);
  CHECK(same.err.find("give the trace a file of its own") != std::string::npos);
  CHECK_FALSE(fs::exists(both));

  // The data: each compile's attempt carries its measured memory.
  auto data = d.fad({"report", std::to_string(id), "--json"});
  REQUIRE(data.exit_code == 0);
  const json report = json::parse(data.out);
  CHECK(report.at("schema_version") == 1);
  for (const auto& u : report.at("units")) {
    if (u.at("kind") != "compile") continue;
    INFO(u.dump());
    REQUIRE(u.at("attempt_list").size() == 1);
    std::uint64_t top = 0;
    for (const auto& b : u.at("attempt_list")[0].at("bytes")) top = std::max(top, b.get<std::uint64_t>());
    CHECK(top > (30u << 20));
  }
  // With -o, the data goes to that file, not to stdout.
  const auto data_path = d.dir() / "report-data.json";
  auto to_file = d.fad({"report", std::to_string(id), "--json", "-o", data_path.string()});
  REQUIRE(to_file.exit_code == 0);
  CHECK(to_file.out.find("wrote " + data_path.string()) == 0);
  // A name with a line break in it is written as given, and said on one line.
  const auto odd_path = d.dir() / "odd\nname.json";
  auto odd = d.fad({"report", std::to_string(id), "--json", "-o", odd_path.string()});
  REQUIRE(odd.exit_code == 0);
  CHECK(fs::exists(odd_path));
  CHECK(odd.out.find("wrote " + (d.dir() / "odd?name.json").string() + " (") == 0);
  // The same build's data (its machine samples go on growing: not compared).
  const json written = json::parse(slurp(data_path));
  CHECK(written.at("build") == report.at("build"));
  CHECK(written.at("units") == report.at("units"));
  // Bug: with --json, --trace was ignored (exit 0, no trace written).
  const auto data_trace = d.dir() / "data-trace.json";
  auto with_trace = d.fad({"report", std::to_string(id), "--json", "--trace", data_trace.string()});
  REQUIRE(with_trace.exit_code == 0);
  CHECK(json::parse(with_trace.out).at("schema_version") == 1);  // stdout is the data alone
  int data_threads = 0;
  const json data_trace_json = json::parse(slurp(data_trace));
  for (const auto& e : data_trace_json.at("traceEvents"))
    data_threads += e.at("ph") == "M" && e.at("name") == "thread_name";
  CHECK(data_threads == 4);  // each unit's track, as with the page
  auto both_stdout = d.fad({"report", std::to_string(id), "--json", "--trace", "-"});
  CHECK(both_stdout.exit_code == 2);
  CHECK(both_stdout.err == "fad: the report's data and --trace both name stdout; give the trace a file of its own\n");
  CHECK(both_stdout.out.empty());
  CHECK(d.fad({"report", "999"}).exit_code == 1);
  // A path that cannot be written, or that is not a file to replace: exit 2, one line.
  auto bad = d.fad({"report", std::to_string(id), "-o", (d.dir() / "no" / "dir" / "r.html").string()});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("No such file or directory") != std::string::npos);
  CHECK(d.fad({"report", std::to_string(id), "-o", "/dev/null"}).exit_code == 2);

  const std::string chromium = find_tool({"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"});
  if (chromium.empty()) {
    WARN("SKIP: no chromium (scripts/setup.sh installs it); the report was not loaded in a browser");
    return;
  }
  // --no-sandbox: the page is our own file, and the sandbox cannot start as root or in most containers.
  auto page = run({chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                   "--user-data-dir=" + (d.dir() / "chromium-profile").string(), "--enable-logging=stderr", "--v=0",
                   "--virtual-time-budget=2000", "--dump-dom", "file://" + html_path.string()},
                  {{"HOME", d.dir().string()}}, 120);
  INFO(page.err.substr(0, 4000));
  REQUIRE(page.exit_code == 0);
  const auto body = page.out.find("<body");
  REQUIRE(body != std::string::npos);
  const std::string body_tag = page.out.substr(body, page.out.find('>', body) - body);
  CHECK(body_tag.find("data-ready=\"1\"") != std::string::npos);
  CHECK(body_tag.find("data-bars=\"4\"") != std::string::npos);
  CHECK(body_tag.find("data-error") == std::string::npos);
  CHECK(page.err.find(":CONSOLE") == std::string::npos);  // nothing logged, no uncaught error
}

TEST_CASE(
    "a build name too long for everyone's listing, or with control characters, is refused with one line, and nothing "
    "runs",
    "[integration][launcher]") {
  Daemon d;
  d.start();
  const std::string too_long(257, 'n');
  const fs::path ran = d.dir() / "ran";
  auto r = run({FAD_FAD_BIN, "run", "--name", too_long, "--", "touch", ran.string()}, {{"FAD_SOCKET", d.socket()}});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "fad: --name: at most 256 bytes, got 257 (see 'fad run --help')\n");
  CHECK_FALSE(fs::exists(ran));
  auto s = d.fad({"submit", "--arch", "9.0", "--name", too_long});
  CHECK(s.exit_code == 2);
  CHECK(count_of(s.err, "\n") == 1);
  CHECK(s.err.find("at most 256 bytes") != std::string::npos);
  // A name with a tab or a bidi override is refused by fad itself, so even
  // with no fadd to ask the command does not run.
  for (const std::string odd : {"a\tb",
                                "a\xE2\x80\xAE"
                                "b"}) {
    auto without = run({FAD_FAD_BIN, "run", "--name", odd, "--", "touch", ran.string()},
                       {{"FAD_SOCKET", (d.dir() / "none.sock").string()}});
    CHECK(without.exit_code == 2);
    CHECK(without.err == "fad: --name: control or invisible characters are not allowed (see 'fad run --help')\n");
    CHECK_FALSE(fs::exists(ran));
    auto submitted = d.fad({"submit", "--arch", "9.0", "--name", odd});
    CHECK(submitted.exit_code == 2);
    CHECK(submitted.err.rfind("fad: --name: control or invisible characters are not allowed", 0) == 0);
  }
  CHECK(d.status_all().at("builds").empty());
}
