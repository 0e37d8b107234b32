// The pure parts of daemon start/stop, and stop against a scripted daemon.
#include <catch2/catch.hpp>

#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "client/daemon_control.h"
#include "client/exit_codes.h"
#include "client/gpu_archs.h"

using namespace fad::client;
namespace fs = std::filesystem;

TEST_CASE("fadd argv passes the resolved locations, then the user's args") {
  Locations loc{"/run/s.sock", "/st", std::nullopt};
  CHECK(fadd_argv("/bin/fadd", loc, {"--log-level", "debug"}) ==
        std::vector<std::string>{"/bin/fadd", "--socket", "/run/s.sock", "--state-dir", "/st", "--log-level", "debug"});
  loc.config = "/c.json";
  auto argv = fadd_argv("/bin/fadd", loc, {});
  CHECK(argv.size() == 7);
  CHECK(argv[5] == "--config");
  CHECK(argv[6] == "/c.json");
}

TEST_CASE("last_lines") {
  CHECK(last_lines("a\nb\nc\n", 2) == "b\nc\n");
  CHECK(last_lines("a\nb\nc", 2) == "b\nc\n");
  CHECK(last_lines("a\nb\n", 5) == "a\nb\n");
  CHECK(last_lines("", 3) == "");
  CHECK(last_lines("only", 1) == "only\n");
}

TEST_CASE("find_fadd prefers the one beside fad, then PATH") {
  fs::path dir = fs::temp_directory_path() / ("fad-client-test-" + std::to_string(::getpid()));
  fs::create_directories(dir / "bin");
  fs::create_directories(dir / "path");
  auto make_exe = [](const fs::path& p) {
    std::ofstream(p) << "#!/bin/sh\n";
    fs::permissions(p, fs::perms::owner_all);
  };
  CHECK_FALSE(find_fadd((dir / "bin" / "fad").string(), (dir / "path").string()));
  make_exe(dir / "path" / "fadd");
  CHECK(find_fadd((dir / "bin" / "fad").string(), "/nonexistent:" + (dir / "path").string()) ==
        (dir / "path" / "fadd").string());
  make_exe(dir / "bin" / "fadd");
  CHECK(find_fadd((dir / "bin" / "fad").string(), (dir / "path").string()) == (dir / "bin" / "fadd").string());
  fs::remove_all(dir);
}

TEST_CASE("daemon stop: not running is fine, a daemon that goes away is stopped") {
  std::ostringstream out, err;
  std::deque<CallResult> answers;
  std::vector<std::string> types;
  Context ctx{[&](const fad::Request& r) -> CallResult {
                types.push_back(r.type);
                if (answers.empty()) return CallFailure{kExitUnreachable, "gone"};
                CallResult a = answers.front();
                answers.pop_front();
                return a;
              },
              "/s",
              out,
              err,
              [](std::chrono::milliseconds) {},
              nullptr};
  CHECK(run_daemon_stop(ctx) == 0);
  CHECK(out.str() == "fadd is not running (nothing answers at /s)\n");

  out.str("");
  fad::Response status{true, {{"daemon", {{"pid", 99}}}}, fad::ErrorCode::internal, ""};
  answers = {status, fad::Response{}, status};  // status, shutdown, still up once, then gone
  CHECK(run_daemon_stop(ctx) == 0);
  CHECK(out.str() == "fadd stopped (pid 99)\n");
  CHECK(types == std::vector<std::string>{"status", "status", "shutdown", "status", "status"});
}

TEST_CASE("nvidia-smi compute capabilities") {
  auto archs = parse_compute_caps("9.0\n9.0\n12.0\r\n\n");
  REQUIRE(archs.ok());
  REQUIRE(archs->size() == 2);
  CHECK((*archs)[0].display() == "9.0");
  CHECK((*archs)[1].display() == "12.0");
  CHECK_FALSE(parse_compute_caps("").ok());
  CHECK_FALSE(parse_compute_caps("No devices were found\n").ok());
}
