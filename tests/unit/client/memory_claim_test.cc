// Tests for client/memory_claim: the fallback's rule, and claims in a real
// directory: live ones count, those of dead processes do not, and a launcher
// waits until memory is released.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <random>
#include <thread>

#include <catch2/catch.hpp>

#include "client/memory_claim.h"

using namespace fad::client;
namespace fs = std::filesystem;

namespace {
constexpr std::uint64_t kGiB = 1ull << 30;

struct ClaimsDir {
  fs::path path = fs::temp_directory_path() /
                  ("fad-claims-test-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
  ClaimsDir() { fs::create_directories(path); }
  ~ClaimsDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};
}  // namespace

TEST_CASE("fallback_admits: one compile always runs, more only as memory allows", "[memory_claim]") {
  CHECK(fallback_admits({1 * kGiB, 2 * kGiB, {}}, 5 * kGiB));  // alone: runs, whatever it needs
  CHECK(fallback_admits({20 * kGiB, 2 * kGiB, {5 * kGiB}}, 5 * kGiB));
  CHECK(fallback_admits({20 * kGiB, 2 * kGiB, {5 * kGiB, 5 * kGiB}}, 8 * kGiB));  // 18 of 18
  CHECK_FALSE(fallback_admits({20 * kGiB, 2 * kGiB, {5 * kGiB, 5 * kGiB}}, 9 * kGiB));
  CHECK_FALSE(fallback_admits({1 * kGiB, 2 * kGiB, {1}}, 1));  // below the reserve: nothing more
}

TEST_CASE("live claims count, a dead process's claim does not", "[memory_claim]") {
  ClaimsDir dir;
  auto a = MemoryClaim::hold(dir.path.string(), 3 * kGiB);
  REQUIRE(a);
  // A child that claims and dies without cleaning up (kill -9).
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    auto c = MemoryClaim::hold(dir.path.string(), 7 * kGiB);
    ::_exit(c ? 0 : 1);  // _exit: no destructor, the file stays
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WEXITSTATUS(status) == 0);
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator{}) == 3);  // lock + two claims
  CHECK(MemoryClaim::live_claims(dir.path.string()) == std::vector<std::uint64_t>{3 * kGiB});
  {
    auto b = MemoryClaim::hold(dir.path.string(), 1 * kGiB);
    CHECK(MemoryClaim::live_claims(dir.path.string()).size() == 2);
  }
  CHECK(MemoryClaim::live_claims(dir.path.string()) == std::vector<std::uint64_t>{3 * kGiB});
}

TEST_CASE("admit waits while memory is claimed and goes once it is released", "[memory_claim]") {
  ClaimsDir dir;
  // 10 GiB available, 1 GiB reserve: a 5 GiB claim leaves no room for another 5 GiB.
  auto view = [] { return FallbackView{10 * kGiB, 1 * kGiB, {}}; };
  auto first = std::make_optional(*MemoryClaim::admit(dir.path.string(), 5 * kGiB, view, [](const std::string&) {}));
  std::atomic<bool> waiting{false}, admitted{false};
  std::string why;
  std::thread second([&] {
    auto c = MemoryClaim::admit(dir.path.string(), 5 * kGiB, view, [&](const std::string& w) {
      why = w;
      waiting = true;
    });
    admitted = c.has_value();
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!waiting && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(waiting);
  CHECK_FALSE(admitted);
  CHECK(why.find("1 compile(s) hold 5.0 GiB") != std::string::npos);
  first.reset();  // the first compile ends
  second.join();
  CHECK(admitted);
}
