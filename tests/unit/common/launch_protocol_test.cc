// The launch messages: round trips and the errors that name bad fields.
#include <catch2/catch.hpp>

#include "common/json_fields.h"
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
  CHECK(close->interrupt_signal == 0);
  CHECK_FALSE(CloseBuildRequest{3, 2}.to_json().contains("interrupt_signal"));  // as fad runs before it sent
  auto interrupted_close = CloseBuildRequest::from_json(CloseBuildRequest{3, 130, 2}.to_json());
  REQUIRE(interrupted_close);
  CHECK(interrupted_close->interrupt_signal == 2);
  auto started = LaunchStartedRequest::from_json(LaunchStartedRequest{5, 4242}.to_json());
  REQUIRE(started);
  CHECK(started->pid == 4242);
  auto finished = LaunchFinishedRequest::from_json(LaunchFinishedRequest{5, 143, true}.to_json());
  REQUIRE(finished);
  CHECK(finished->signaled);
  CHECK(finished->exit_code == 143);
  CHECK(finished->interrupt_signal == 0);
  LaunchFinishedRequest interrupted{5, 130, true};
  interrupted.interrupt_signal = 2;
  auto finished_back = LaunchFinishedRequest::from_json(interrupted.to_json());
  REQUIRE(finished_back);
  CHECK(finished_back->interrupt_signal == 2);
}

TEST_CASE("launch protocol: bad fields are named", "[protocol][launch]") {
  auto no_argv = LaunchRequest::from_json({{"session", 1}, {"cwd", "/"}, {"source", "/a.cu"}});
  REQUIRE_FALSE(no_argv);
  CHECK(no_argv.error() == "field \"argv\" must be a non-empty array of strings");
  auto bad_session =
      LaunchRequest::from_json({{"session", "x"}, {"cwd", "/"}, {"source", "/a.cu"}, {"argv", {"nvcc"}}});
  REQUIRE_FALSE(bad_session);
  CHECK(bad_session.error().find("\"session\"") != std::string::npos);
  // Archs reach every user's listing: only ones nvcc knows, and not too many.
  const json launch{{"session", 1}, {"cwd", "/"}, {"source", "/a.cu"}, {"argv", {"nvcc"}}};
  auto with_archs = [&](json archs) {
    json body = launch;
    body["archs"] = std::move(archs);
    return LaunchRequest::from_json(body);
  };
  CHECK(with_archs({"9.0", "12.0a", "sm_100f"}));
  // Written as fad writes them, once each.
  CHECK(with_archs({"9.0", "sm_90", "sm_100f", "12.0a"})->archs == std::vector<std::string>{"9.0", "10.0f", "12.0a"});
  CHECK(with_archs({std::string(600000, 'x')}).error() ==
        "field \"archs\" must be archs such as \"9.0\" or \"sm_90a\"");
  CHECK(with_archs({"9.0\x1b[2J"}).error().find("\"archs\"") != std::string::npos);
  CHECK(with_archs(json(std::vector<std::string>(65, "9.0"))).error() == "field \"archs\" must be at most 64 archs");
  // What fadd keeps and lists of each unit is bounded: paths, file names, argv.
  auto with = [&](const char* field, json value) {
    json body = launch;
    body[field] = std::move(value);
    return LaunchRequest::from_json(body);
  };
  const std::string name255(255, 'n');
  CHECK(with("output", "/w/" + name255));
  CHECK(with("output", "/w/" + name255 + "n").error() ==
        "field \"output\" must be a path whose file name is at most 255 bytes");
  CHECK(with("source", "/" + name255 + "n").error().find("\"source\"") != std::string::npos);
  CHECK(with("cwd", "/" + std::string(4096, 'd')).error() == "field \"cwd\" must be a path of at most 4096 bytes");
  CHECK(with("source", std::string("/a\0b.cu", 7)).error() == "field \"source\" must be a path without NUL bytes");
  // Paths are the launcher's absolute ones; source and output name files.
  CHECK(with("source", "a.cu").error() == "field \"source\" must be an absolute path");
  CHECK(with("cwd", "w").error() == "field \"cwd\" must be an absolute path");
  CHECK(with("output", "/").error() == "field \"output\" must be the path of a file, not of a directory");
  CHECK(with("source", "/w/").error() == "field \"source\" must be the path of a file, not of a directory");
  CHECK(with("output", ""));  // no -o: nvcc's default
  CHECK(with("argv", {""}).error() == "field \"argv\" must be an array whose first string names the compiler");
  CHECK(with("argv", {"nvcc", std::string(100 * 1024, 'a')}));
  CHECK(with("argv", {"nvcc", std::string(128 * 1024, 'a')}).error() ==
        "field \"argv\" must be at most 128 KiB of arguments");
  auto pid1 = LaunchStartedRequest::from_json({{"unit_id", 1}, {"pid", 1}});
  REQUIRE_FALSE(pid1);  // pid 1 would make fadd signal init's group
  CHECK(pid1.error().find("\"pid\"") != std::string::npos);
  CHECK_FALSE(UnitRequest::from_json(json::array()));
  CHECK_FALSE(CloseBuildRequest::from_json({{"id", 1}, {"exit_code", 300}}));
  CHECK(CloseBuildRequest::from_json({{"id", 1}, {"exit_code", 1}, {"interrupt_signal", 65}}).error() ==
        "field \"interrupt_signal\" must be a signal number (0..64)");
  CHECK_FALSE(CloseBuildRequest::from_json({{"id", 1}, {"exit_code", 1}, {"interrupt_signal", "INT"}}));
  CHECK_FALSE(OpenBuildRequest::from_json({{"budget_bytes", -5}}));
  // Below 1 MiB no compile fits: a client that sends 12 meant 12G.
  const auto tiny = OpenBuildRequest::from_json({{"budget_bytes", 12}});
  REQUIRE_FALSE(tiny);
  CHECK(tiny.error().find("budget_bytes") != std::string::npos);
  CHECK(OpenBuildRequest::from_json({{"budget_bytes", 1 << 20}}));
  const std::string longest(kMaxBuildNameBytes, 'n');
  CHECK(OpenBuildRequest::from_json({{"name", longest}})->name == longest);
  auto long_name = OpenBuildRequest::from_json({{"name", longest + "n"}, {"command", "ninja"}});
  REQUIRE_FALSE(long_name);
  CHECK(long_name.error() == "field \"name\" must be at most 256 bytes");
  CHECK_FALSE(LaunchFinishedRequest::from_json({{"unit_id", 1}, {"exit_code", 0}, {"signaled", "yes"}}));
  auto bad_signal = LaunchFinishedRequest::from_json({{"unit_id", 1}, {"exit_code", 0}, {"interrupt_signal", 65}});
  REQUIRE_FALSE(bad_signal);
  CHECK(bad_signal.error().find("interrupt_signal") != std::string::npos);
  CHECK_FALSE(LaunchFinishedRequest::from_json({{"unit_id", 1}, {"exit_code", 0}, {"interrupt_signal", "INT"}}));
}

TEST_CASE("launch protocol: content_hash and compiler_version are optional, bounded and checked",
          "[protocol][launch]") {
  using Catch::Contains;
  LaunchRequest l;
  l.session = 1;
  l.cwd = "/w";
  l.argv = {"nvcc", "-c", "a.cu"};
  l.source = "/w/a.cu";
  auto plain = LaunchRequest::from_json(l.to_json());
  REQUIRE(plain);
  CHECK_FALSE(plain->content_hash);
  CHECK_FALSE(plain->compiler_version);
  CHECK_FALSE(l.to_json().contains("content_hash"));

  l.content_hash = "0123456789abcdef";
  l.compiler_version = "Build cuda_13.0.r13.0/compiler.36424714_0";
  auto back = LaunchRequest::from_json(l.to_json());
  REQUIRE(back);
  CHECK(back->content_hash == l.content_hash);
  CHECK(back->compiler_version == l.compiler_version);
  l.content_hash = "sha256:" + std::string(64, 'a');
  CHECK(LaunchRequest::from_json(l.to_json()));

  auto with = [&](const char* field, json value) {
    json j = l.to_json();
    j[field] = std::move(value);
    auto r = LaunchRequest::from_json(j);
    REQUIRE_FALSE(r);
    return r.error();
  };
  CHECK_THAT(with("content_hash", std::string(129, 'a')), Contains("at most 128 bytes"));
  CHECK_THAT(with("content_hash", "../../etc/passwd; rm"), Contains("content_hash"));
  CHECK_THAT(with("content_hash", 7), Contains("content_hash"));
  CHECK_THAT(with("content_hash", ""), Contains("non-empty"));
  CHECK_THAT(with("compiler_version", std::string(513, 'v')), Contains("at most 512 bytes"));
  CHECK_THAT(with("compiler_version", "two\nlines"), Contains("printable"));

  // A cache hit travels as "cached"; it is optional and must be a boolean.
  l.cached = true;
  auto hit = LaunchRequest::from_json(l.to_json());
  REQUIRE(hit);
  CHECK(hit->cached);
  CHECK_FALSE(LaunchRequest{}.to_json().contains("cached"));
  CHECK_THAT(with("cached", "yes"), Contains("\"cached\" must be a boolean"));
}
