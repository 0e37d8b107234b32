// fad-exec between fadd and every program it starts: the launcher returns
// before the real program's exec, whose failure the program's own exit then
// reports, and arguments and exit status pass through unchanged.
#include <sstream>

#include <catch2/catch.hpp>

#include <chrono>
#include <optional>

#include <boost/asio/io_context.hpp>

#include "daemon/async_capture.h"
#include "daemon/boost_launcher.h"
#include "daemon/exec_helper.h"
#include "fakes.h"

namespace fad {
namespace {

using Catch::Contains;
using test::run_until;
using test::TempDir;

}  // namespace

TEST_CASE("exec helper: fad-exec's failure line gives the reason, whatever the path holds", "[exec]") {
  CHECK(exec_failure_reason("fad-exec: cannot run /a: b/nvcc: No such file or directory\n") ==
        "No such file or directory");
  CHECK(exec_failure_reason("fad-exec: cannot run /x: Permission denied") == "Permission denied");
  CHECK(exec_failure_reason("nvcc: cannot run /x: Permission denied\n").empty());
  CHECK(exec_failure_reason("").empty());
  CHECK(through_exec_helper("", {"a", "b"}) == std::vector<std::string>{"a", "b"});
  CHECK(through_exec_helper("/h", {"a", "b"}) == std::vector<std::string>{"/h", "a", "b"});
}

TEST_CASE("exec helper: a unit whose compiler cannot be run starts, then fails saying why", "[exec]") {
  TempDir dir("fad-exec");
  boost::asio::io_context io;
  const LaunchSpec spec{1, {"/nonexistent/bin/nvcc", "-c", "x.cu"}, (dir / "unit.log")};
  // Directly, the launcher itself waited for the exec to learn that it failed...
  BoostLauncher direct(io, nullptr);
  auto refused = direct.launch(spec, [](ExitInfo) {});
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error(), Contains("/nonexistent/bin/nvcc"));
  // ...through fad-exec it returns once fad-exec runs; the unit's exit says the rest.
  BoostLauncher launcher(io, nullptr, FAD_EXEC_BIN);
  std::optional<ExitInfo> exit;
  auto pid = launcher.launch(spec, [&exit](ExitInfo info) { exit = info; });
  REQUIRE(pid);
  CHECK(*pid > 1);
  run_until(io, [&] { return exit.has_value(); });
  REQUIRE(exit);
  CHECK(exit->exit_code == kExecFailureCode);
  CHECK_FALSE(exit->signaled);
  CHECK(test::slurp(dir / "unit.log") == "fad-exec: cannot run /nonexistent/bin/nvcc: No such file or directory\n");
}

TEST_CASE("exec helper: arguments, environment and exit status pass through fad-exec unchanged", "[exec]") {
  TempDir dir("fad-exec");
  boost::asio::io_context io;
  BoostLauncher launcher(io, nullptr, FAD_EXEC_BIN);
  ::setenv("FAD_EXEC_TEST", "kept", 1);
  std::optional<ExitInfo> exit;
  const LaunchSpec spec{2,
                        {"/bin/sh", "-c", R"(printf '%s|' "$0" "$@" "$FAD_EXEC_TEST"; exit 3)", "a b", "", "-- c"},
                        (dir / "unit.log")};
  REQUIRE(launcher.launch(spec, [&exit](ExitInfo info) { exit = info; }));
  run_until(io, [&] { return exit.has_value(); });
  ::unsetenv("FAD_EXEC_TEST");
  REQUIRE(exit);
  CHECK(exit->exit_code == 3);
  CHECK(test::slurp(dir / "unit.log") == "a b||-- c|kept|");
}

TEST_CASE("exec helper: a probe whose program cannot be run says so as before", "[exec]") {
  boost::asio::io_context io;
  std::optional<Result<std::string>> answer;
  CaptureOptions options;
  options.exec_helper = FAD_EXEC_BIN;
  auto run = AsyncCapture::start(io, {"/nonexistent/nvcc", "--version"}, options,
                                 [&answer](Result<std::string> r) { answer = std::move(r); });
  run_until(io, [&] { return answer.has_value(); });
  REQUIRE(answer);
  REQUIRE_FALSE(*answer);
  CHECK(answer->error() == "cannot run /nonexistent/nvcc: No such file or directory");
  // A program that runs is captured as ever.
  answer.reset();
  auto ok = AsyncCapture::start(io, {"/bin/echo", "hi"}, options,
                                [&answer](Result<std::string> r) { answer = std::move(r); });
  run_until(io, [&] { return answer.has_value(); });
  REQUIRE(answer);
  REQUIRE(*answer);
  CHECK(**answer == "hi\n");
}

TEST_CASE("a probe gets no more than a compile: the OOM killer's first choice and a bounded file size", "[exec]") {
  boost::asio::io_context io;
  std::optional<Result<std::string>> answer;
  auto run = AsyncCapture::start(io, {"/bin/sh", "-c", "cat /proc/self/oom_score_adj; ulimit -f"}, CaptureOptions{},
                                 [&answer](Result<std::string> r) { answer = std::move(r); });
  run_until(io, [&] { return answer.has_value(); });
  REQUIRE(answer);
  REQUIRE(*answer);
  std::istringstream out(**answer);
  int adj = 0;
  std::string fsize;
  out >> adj >> fsize;
  CHECK(adj >= 500);
  CHECK(fsize == std::to_string((64 << 20) / 512));  // ulimit -f counts 512-byte blocks
}

}  // namespace fad
