// A real fadd and the real client building with the fake compiler: status JSON
// per the contract, logs, cancel, pause and resume.
#include <signal.h>

#include <catch2/catch.hpp>

#include "harness.h"

using namespace fad::test;

namespace {
std::vector<FakeUnit> quick_units(int n) {
  std::vector<FakeUnit> units;
  for (int i = 0; i < n; ++i) units.push_back({"fwd_unit" + std::to_string(i), ""});
  return units;
}

bool process_alive(pid_t pid) { return ::kill(pid, 0) == 0; }
}  // namespace

TEST_CASE("a build runs to success and status JSON follows the contract", "[integration]") {
  Daemon d;
  d.write_kernels(quick_units(3));
  d.start();
  const auto id = d.submit({"--arch", "9.0", "--name", "contract"});
  const auto b = d.wait_final(id);
  REQUIRE(b.at("state") == "succeeded");

  const auto all = d.status_all();
  const auto& daemon = all.at("daemon");
  CHECK(daemon.at("version").is_string());
  CHECK(daemon.at("pid").get<int>() == d.pid());
  CHECK(daemon.at("uptime_s").is_number_integer());
  for (const char* key :
       {"total_bytes", "available_bytes", "swap_total_bytes", "swap_free_bytes", "budget_bytes", "committed_bytes"})
    CHECK(daemon.at("memory").at(key).is_number_unsigned());
  CHECK(daemon.at("memory").at("total_bytes").get<std::uint64_t>() > 0);
  CHECK(daemon.at("memory").contains("psi_some_avg10"));

  const auto& build = all.at("builds").at(0);
  CHECK(build.at("id") == id);
  CHECK(build.at("name") == "contract");
  CHECK(build.at("archs") == json::array({"9.0"}));
  CHECK(build.at("created_at").get<std::string>().size() == 20);  // RFC 3339, UTC
  CHECK(build.at("finished_at").is_string());
  CHECK(build.at("units").at("total") == 4);  // three compiles and the link
  CHECK(build.at("units").at("succeeded") == 4);
  CHECK(build.at("units").at("queued") == 0);
  CHECK(build.at("units").at("running") == 0);
  CHECK(build.at("units").at("failed") == 0);
  CHECK(build.at("peak_bytes").is_number_unsigned());
  CHECK(!build.contains("unit_list"));
  const std::string artifact = build.at("artifact");
  CHECK(artifact == d.state_dir() + "/builds/" + std::to_string(id) + "/lib/libfad_test.so");
  CHECK(fs::exists(artifact));
  CHECK(!fs::exists(artifact + ".tmp"));

  const auto one = d.status(id);
  REQUIRE(one.at("unit_list").size() == 4);
  for (const auto& u : one.at("unit_list")) {
    for (const char* key : {"name", "state", "archs", "attempts", "threads", "estimate_bytes", "peak_bytes",
                            "started_at", "finished_at", "wait_reason"})
      CHECK(u.contains(key));
    CHECK(u.at("state") == "succeeded");
    CHECK(u.at("attempts") == 1);
    CHECK(u.at("estimate_bytes").get<std::uint64_t>() > 0);
  }
  CHECK(one.at("unit_list").back().at("name") == "link");

  // History lists it with a duration.
  auto h = d.fad({"history", "--json"});
  REQUIRE(h.exit_code == 0);
  auto hist = json::parse(h.out).at("builds");
  REQUIRE(hist.size() == 1);
  CHECK(hist.at(0).at("id") == id);
  CHECK(hist.at(0).at("duration_s").is_number());

  // Every compile ran exactly once, with the arch and --threads fad chose.
  auto log = d.fake_log();
  CHECK(std::count_if(log.begin(), log.end(), [](auto& l) { return l.find("src=") != std::string::npos; }) == 3);
  CHECK(std::count_if(log.begin(), log.end(), [](auto& l) { return l.find("link out=") != std::string::npos; }) == 1);
  for (const auto& l : log)
    if (l.find("src=") != std::string::npos) CHECK(l.find("archs=sm_90") != std::string::npos);
}

TEST_CASE("logs show the compiler output of a unit and of the build", "[integration]") {
  Daemon d;
  d.write_kernels({{"fwd_ok", ""}, {"bwd_bad", "exit=3"}});
  d.start();
  const auto id = d.submit({"--arch", "8.0"});
  const auto b = d.wait_final(id);
  CHECK(b.at("state") == "failed");

  auto unit_log = d.fad({"logs", std::to_string(id), "bwd_bad"});
  CHECK(unit_log.exit_code == 0);
  CHECK(unit_log.out.find("fad-fake-nvcc") != std::string::npos);  // the command line fad ran
  CHECK(unit_log.out.find("-gencode arch=compute_80,code=sm_80") != std::string::npos);

  auto build_log = d.fad({"logs", std::to_string(id)});
  CHECK(build_log.exit_code == 0);
  CHECK(build_log.out.find("FAILED bwd_bad") != std::string::npos);
  CHECK(build_log.out.find("exit code 3") != std::string::npos);

  auto missing = d.fad({"logs", std::to_string(id), "nosuch"});
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("no unit 'nosuch'") != std::string::npos);

  // --wait exits with the build's result.
  auto again = d.fad({"submit", "--arch", "8.0", "--wait"});
  CHECK(again.exit_code == 1);
}

TEST_CASE("retry requeues the failed units of a failed build", "[integration]") {
  Daemon d;
  d.write_kernels({{"fwd_a", ""}, {"fwd_b", "exit=1"}});
  d.start();
  const auto id = d.submit({"--arch", "9.0"});
  REQUIRE(d.wait_final(id).at("state") == "failed");
  // Fix the unit, then retry: only the failed unit (and the link) compile again.
  const auto src = fs::path(d.kernels_dir()) / "src" / "fwd_b.cu";
  std::ofstream(src) << "__global__ void fwd_b_kernel() {}\n";
  auto r = d.fad({"retry", std::to_string(id)});
  REQUIRE(r.exit_code == 0);
  CHECK(d.wait_final(id).at("state") == "succeeded");
  auto log = d.fake_log();
  CHECK(std::count_if(log.begin(), log.end(), [](auto& l) { return l.find("fwd_a.cu") != std::string::npos; }) == 1);
  CHECK(std::count_if(log.begin(), log.end(), [](auto& l) { return l.find("fwd_b.cu") != std::string::npos; }) == 2);
  // A succeeded build cannot be retried.
  CHECK(d.fad({"retry", std::to_string(id)}).exit_code == 1);
}

TEST_CASE("cancel stops the running compilers and the build", "[integration]") {
  Daemon d;
  d.write_kernels({{"fwd_slow1", "peak_mb=20 duration_s=60"},
                   {"fwd_slow2", "peak_mb=20 duration_s=60"},
                   {"fwd_slow3", "peak_mb=20 duration_s=60"}});
  d.start();
  const auto id = d.submit({"--arch", "9.0"});
  // Running in fadd's eyes comes a moment before the compiler has logged its pid.
  REQUIRE(wait_for([&] { return !d.fake_pids().empty(); }, std::chrono::seconds(30)));
  auto pids = d.fake_pids();
  auto r = d.fad({"cancel", std::to_string(id)});
  REQUIRE(r.exit_code == 0);
  const auto b = d.wait_final(id, 30);
  CHECK(b.at("state") == "cancelled");
  CHECK(b.at("units").at("succeeded") == 0);
  for (auto pid : pids) CHECK(wait_for([&] { return !process_alive(pid); }, std::chrono::seconds(15)));
  // Cancelling twice is an error, not a crash.
  CHECK(d.fad({"cancel", std::to_string(id)}).exit_code == 1);
  CHECK(d.fad({"status"}).exit_code == 0);
}

TEST_CASE("pause freezes a build and resume lets it finish", "[integration]") {
  Daemon d;
  d.write_kernels({{"fwd_p1", "peak_mb=10 duration_s=1.5"},
                   {"fwd_p2", "peak_mb=10 duration_s=1.5"},
                   {"fwd_p3", "peak_mb=10 duration_s=1.5"},
                   {"fwd_p4", "peak_mb=10 duration_s=1.5"}});
  d.start();
  const auto id = d.submit({"--arch", "9.0"});
  REQUIRE(wait_for([&] { return d.status(id).at("units").at("running").get<int>() >= 1; }, std::chrono::seconds(30)));
  REQUIRE(d.fad({"pause", std::to_string(id)}).exit_code == 0);
  CHECK(d.status(id).at("state") == "paused");
  // Frozen compilers are in state T (stopped). Which ones: those running at
  // the pause, which may have logged their pid only just now (the units
  // logged before may have ended first), so the log is read again each time.
  CHECK(wait_for(
      [&] {
        for (const pid_t pid : d.fake_pids())
          if (process_state(pid) == 'T') return true;
        return false;
      },
      std::chrono::seconds(10)));
  // Nothing new starts while paused: the invocation count stays put past a unit's length.
  const auto before = d.fake_log().size();
  CHECK_FALSE(wait_for([&] { return d.fake_log().size() > before; }, std::chrono::seconds(3)));
  CHECK(d.fad({"pause", std::to_string(id)}).exit_code == 1);  // already paused
  REQUIRE(d.fad({"resume", std::to_string(id)}).exit_code == 0);
  const auto b = d.wait_final(id, 60);
  CHECK(b.at("state") == "succeeded");
  CHECK(b.at("units").at("succeeded") == 5);
}

TEST_CASE("a unit's end is seen when it happens, whatever else runs", "[integration]") {
  // Regression: Boost.Process 1.81's async_wait could block the event loop in
  // wait4() on a just-started unit until it ended, so short units were seen to
  // end seconds late and clients got no answer meanwhile.
  Daemon d;
  std::vector<FakeUnit> units;
  for (int i = 0; i < 4; ++i) {
    units.push_back({"fwd_long" + std::to_string(i), "peak_mb=5 duration_s=6"});
    units.push_back({"fwd_short" + std::to_string(i), "peak_mb=5 duration_s=0.2"});
  }
  d.write_kernels(units);
  d.start({"--cores", "16"});
  const auto id = d.submit({"--arch", "9.0"});
  REQUIRE(d.wait_final(id, 120).at("state") == "succeeded");
  const auto list = d.status(id).at("unit_list");
  REQUIRE(list.size() == 9);
  for (const auto& u : list) {
    const std::string name = u.at("name");
    INFO(name << " took " << u.at("duration_s").get<double>() << " s");
    if (name.find("short") != std::string::npos) CHECK(u.at("duration_s").get<double>() < 3.0);
  }
}

TEST_CASE("a bare --nvcc name is the one on the submitting user's PATH, not on fadd's", "[integration]") {
  Daemon d;
  d.write_kernels({{"fwd_x", ""}});
  d.start();
  // Only the client's PATH holds "my-nvcc".
  const auto bin = d.dir() / "user-bin";
  fs::create_directories(bin);
  fs::create_symlink(FAD_FAKE_NVCC_BIN, bin / "my-nvcc");
  const std::string path = bin.string() + ":/usr/bin:/bin";
  auto submitted = run({FAD_FAD_BIN, "submit", "--json", "--arch", "9.0", "--nvcc", "my-nvcc"},
                       {{"FAD_SOCKET", d.socket()}, {"PATH", path}});
  INFO(submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const json b = d.wait_final(json::parse(submitted.out).at("id").get<std::int64_t>());
  CHECK(b.at("state") == "succeeded");
  CHECK(b.at("nvcc") == (bin / "my-nvcc").string());
  // A name on neither PATH is fadd's to look up, and its answer says whose PATH it searched.
  auto missing = run({FAD_FAD_BIN, "submit", "--arch", "9.0", "--nvcc", "no-such-nvcc"},
                     {{"FAD_SOCKET", d.socket()}, {"PATH", path}});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("compiler 'no-such-nvcc' not found on PATH (fadd's)") != std::string::npos);
}
