// The launch messages: round trips and the errors that name bad fields.
#include <catch2/catch.hpp>

#include "common/launch_protocol.h"

using namespace fad;

TEST_CASE("launch protocol: every message round-trips", "[protocol][launch]") {
  LaunchRequest l;
  l.build_id = 7;
  l.session = 1234;
  l.cwd = "/work";
  l.argv = {"/usr/local/cuda/bin/nvcc", "-c", "a.cu"};
  l.source = "/work/a.cu";
  l.output = "/work/a.o";
  l.archs = {"9.0"};
  auto back = LaunchRequest::from_json(l.to_json());
  REQUIRE(back);
  CHECK(back->build_id == 7);
  CHECK(back->session == 1234);
  CHECK(back->argv == l.argv);
  CHECK(back->archs == l.archs);
  CHECK(back->output == "/work/a.o");

  auto open = OpenBuildRequest::from_json(OpenBuildRequest{"n", "ninja -j16", 8ull << 30}.to_json());
  REQUIRE(open);
  CHECK(open->budget_bytes == (8ull << 30));
  CHECK(open->command == "ninja -j16");
  auto close = CloseBuildRequest::from_json(CloseBuildRequest{3, 2}.to_json());
  REQUIRE(close);
  CHECK(close->exit_code == 2);
  auto started = LaunchStartedRequest::from_json(LaunchStartedRequest{5, 4242}.to_json());
  REQUIRE(started);
  CHECK(started->pid == 4242);
  auto finished = LaunchFinishedRequest::from_json(LaunchFinishedRequest{5, 143, true}.to_json());
  REQUIRE(finished);
  CHECK(finished->signaled);
  CHECK(finished->exit_code == 143);
}

TEST_CASE("launch protocol: bad fields are named", "[protocol][launch]") {
  auto no_argv = LaunchRequest::from_json({{"session", 1}, {"cwd", "/"}, {"source", "/a.cu"}});
  REQUIRE_FALSE(no_argv);
  CHECK(no_argv.error() == "field \"argv\" must be a non-empty array of strings");
  auto bad_session =
      LaunchRequest::from_json({{"session", "x"}, {"cwd", "/"}, {"source", "/a.cu"}, {"argv", {"nvcc"}}});
  REQUIRE_FALSE(bad_session);
  CHECK(bad_session.error().find("\"session\"") != std::string::npos);
  auto pid1 = LaunchStartedRequest::from_json({{"unit_id", 1}, {"pid", 1}});
  REQUIRE_FALSE(pid1);  // pid 1 would make fadd signal init's group
  CHECK(pid1.error().find("\"pid\"") != std::string::npos);
  CHECK_FALSE(UnitRequest::from_json(json::array()));
  CHECK_FALSE(CloseBuildRequest::from_json({{"id", 1}, {"exit_code", 300}}));
  CHECK_FALSE(OpenBuildRequest::from_json({{"budget_bytes", -5}}));
  CHECK_FALSE(LaunchFinishedRequest::from_json({{"unit_id", 1}, {"exit_code", 0}, {"signaled", "yes"}}));
}

TEST_CASE("launch protocol: the launcher's own figures and a cache hit travel, and are optional",
          "[protocol][launch]") {
  LaunchRequest l;
  l.session = 1;
  l.cwd = "/w";
  l.argv = {"nvcc", "-c", "a.cu"};
  l.source = "/w/a.cu";
  l.content_hash = "0011223344556677";
  l.compiler_version = "Build cuda_13.0.r13.0/compiler.1";
  l.cached = true;
  auto back = LaunchRequest::from_json(l.to_json());
  REQUIRE(back);
  CHECK(back->content_hash == l.content_hash);
  CHECK(back->compiler_version == l.compiler_version);
  CHECK(back->cached);
  // An older launcher sends none of them.
  auto old = LaunchRequest::from_json({{"session", 1}, {"cwd", "/"}, {"source", "/a.cu"}, {"argv", {"nvcc"}}});
  REQUIRE(old);
  CHECK(old->content_hash.empty());
  CHECK_FALSE(old->cached);
  CHECK(l.to_json().contains("content_hash"));
  CHECK_FALSE(LaunchRequest{}.to_json().contains("cached"));
  auto bad = LaunchRequest::from_json(
      {{"session", 1}, {"cwd", "/"}, {"source", "/a.cu"}, {"argv", {"nvcc"}}, {"cached", "yes"}});
  REQUIRE_FALSE(bad);
  CHECK(bad.error() == "field \"cached\" must be a boolean");
}
