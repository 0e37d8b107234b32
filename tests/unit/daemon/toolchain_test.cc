// The compiler prober with real (scripted) compilers: a version line that is
// bounded, a cache that stays bounded however many paths one user names, and
// probes of one user that leave room for everyone else's.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <sstream>

#include <boost/asio/io_context.hpp>

#include "daemon/toolchain.h"
#include "fakes.h"

namespace fad {
namespace {

using Catch::Contains;
using test::TempDir;
using test::write_file;

/// A script that answers as nvcc does, after `delay` seconds.
std::string fake_nvcc(const TempDir& dir, const std::string& name, const std::string& delay = "0") {
  const std::string path = dir / name;
  write_file(path,
             "#!/bin/sh\necho \"$0\" >> " + (dir / "runs.log") + "\nsleep " + delay +
                 "\ncase \"$1\" in\n"
                 "  --version) echo 'nvcc: NVIDIA (R) Cuda compiler driver'; echo 'Build cuda_13.0.r13.0/test';;\n"
                 "  --list-gpu-arch) echo compute_90; echo compute_120;;\n"
                 "esac\n");
  ::chmod(path.c_str(), 0755);
  return path;
}

/// Asks for `nvcc` and runs the loop until the answer came (or 20 s passed).
Result<Toolchain> probe(boost::asio::io_context& io, ToolchainProber& prober, const std::string& nvcc,
                        std::optional<Credentials> run_as = std::nullopt) {
  std::optional<Result<Toolchain>> answer;
  prober.get(ToolchainQuery{nvcc, std::move(run_as)}, [&answer](Result<Toolchain> r) { answer = std::move(r); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!answer && std::chrono::steady_clock::now() < deadline) {
    io.restart();
    io.run_for(std::chrono::milliseconds(50));
  }
  REQUIRE(answer);
  return *answer;
}

}  // namespace

TEST_CASE("toolchain: the version line is bounded, as a launch's is", "[toolchain]") {
  auto tc = toolchain_from_output("/x/nvcc", "nvcc\n" + std::string(100000, 'v') + "\n", "compute_90\n");
  REQUIRE(tc);
  CHECK(tc->version.size() == 512);
  CHECK(tc->archs.size() == 1);
  CHECK_FALSE(toolchain_from_output("/x/nvcc", "v\n", "nothing\n"));
}

TEST_CASE("toolchain: the cache keeps the most recently used answers, however many paths are named", "[toolchain]") {
  TempDir dir("fad-toolchain");
  const std::string nvcc = fake_nvcc(dir, "nvcc");
  boost::asio::io_context io;
  ToolchainProber prober(io);
  auto first = probe(io, prober, nvcc);
  REQUIRE(first);
  CHECK(first->version == "Build cuda_13.0.r13.0/test");
  // The same compiler under ever new spellings (dir/./nvcc, dir/././nvcc, ...).
  std::string spelled = nvcc;
  for (std::size_t i = 0; i < ToolchainProber::kMaxCached + 6; ++i) {
    spelled = (dir.path() / ".").string() + spelled.substr(dir.str().size());
    REQUIRE(probe(io, prober, spelled));
    CHECK(prober.cached() <= ToolchainProber::kMaxCached);
    if (i % 8 == 0) REQUIRE(probe(io, prober, nvcc));  // kept in use: never the one evicted
  }
  CHECK(prober.cached() == ToolchainProber::kMaxCached);
  // The one kept in use is still cached: answered without running it again.
  const auto runs_of = [&] {
    std::istringstream log(test::slurp(dir.path() / "runs.log"));
    int n = 0;
    for (std::string line; std::getline(log, line);) n += line == nvcc;
    return n;
  };
  const int runs = runs_of();
  CHECK(runs == 2);  // --version and --list-gpu-arch, once
  CHECK(probe(io, prober, nvcc));
  CHECK(runs_of() == runs);
}

TEST_CASE("toolchain: one user's slow probes leave room for other users' submits", "[toolchain]") {
  TempDir dir("fad-toolchain");
  boost::asio::io_context io;
  ToolchainProber prober(io, std::chrono::seconds(30), 8);
  std::vector<std::optional<Result<Toolchain>>> answers(ToolchainProber::kMaxInFlightPerUser + 1);
  for (std::size_t i = 0; i < answers.size(); ++i)
    prober.get(ToolchainQuery{fake_nvcc(dir, "slow" + std::to_string(i), "30"), std::nullopt},
               [&answers, i](Result<Toolchain> r) { answers[i] = std::move(r); });
  io.restart();
  io.run_for(std::chrono::milliseconds(200));
  CHECK(prober.in_flight() == ToolchainProber::kMaxInFlightPerUser);
  REQUIRE(answers.back());
  CHECK_THAT(answers.back()->error(), Contains("compilers for you already"));
  for (std::size_t i = 0; i + 1 < answers.size(); ++i) CHECK_FALSE(answers[i]);  // still probing
}

TEST_CASE("toolchain: a user learns nothing of a path they cannot reach", "[toolchain]") {
  if (::geteuid() != 0) {
    WARN("SKIP: needs root to probe as another user");
    return;
  }
  TempDir dir("fad-toolchain");
  const std::string hidden = dir / "private";
  ::mkdir(hidden.c_str(), 0700);
  const std::string there = fake_nvcc(dir, "private/nvcc");
  const std::string absent = hidden + "/absent";
  boost::asio::io_context io;
  ToolchainProber prober(io, std::chrono::seconds(30), 8);
  const Credentials nobody{65534, 65534, {65534}};
  auto a = probe(io, prober, there, nobody);
  auto b = probe(io, prober, absent, nobody);
  REQUIRE_FALSE(a);
  REQUIRE_FALSE(b);
  // The same answer but for the path: whether a file is there stays hidden.
  auto without = [](std::string text, const std::string& path) {
    return text.replace(text.find(path), path.size(), "P");
  };
  CHECK(without(a.error(), there) == without(b.error(), absent));
  CHECK_THAT(a.error(), Contains("Permission denied"));
  // fadd's own user is still told plainly.
  CHECK_THAT(probe(io, prober, absent).error(), Contains("is not an executable file"));
  CHECK(probe(io, prober, there));
}

}  // namespace fad
