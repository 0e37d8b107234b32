// Tests for client/memory_claim: the fallback's rule, and claims in a real
// directory: live ones count, those of dead processes do not, and a launcher
// waits until memory is released.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
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
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator{}) == 2);  // two claims
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

namespace {
/// A process that holds an exclusive flock on `path` until killed (as any
/// user who can read the file can); returns once it holds it.
pid_t hold_flock(const std::string& path, uid_t owner = ::getuid()) {
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CREAT, 0644);
    if (fd >= 0 && owner != ::getuid()) [[maybe_unused]]
      auto r = ::fchown(fd, owner, owner);
    const char said = fd >= 0 && ::flock(fd, LOCK_EX) == 0 ? 'y' : 'n';
    [[maybe_unused]] auto w = ::write(ready[1], &said, 1);
    ::pause();
    ::_exit(0);
  }
  char said = 0;
  REQUIRE(::read(ready[0], &said, 1) == 1);
  ::close(ready[0]);
  ::close(ready[1]);
  REQUIRE(said == 'y');
  return pid;
}

void stop(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}
}  // namespace

TEST_CASE("a directory lock held for ever delays a launcher by seconds, and an admitted claim not at all",
          "[memory_claim]") {
  ClaimsDir dir;
  const pid_t holder = hold_flock((dir.path / "lock").string());
  auto start = std::chrono::steady_clock::now();
  auto held = MemoryClaim::hold(dir.path.string(), 1 * kGiB);
  CHECK(held);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  held.reset();
  auto view = [] { return FallbackView{10 * kGiB, 1 * kGiB, {}}; };
  start = std::chrono::steady_clock::now();
  auto admitted = MemoryClaim::admit(dir.path.string(), 1 * kGiB, view, [](const std::string&) {});
  CHECK(admitted);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  stop(holder);
}

TEST_CASE("other users' claims alone hold a launcher back for its patience, its own user's for as long as they live",
          "[memory_claim]") {
  if (::getuid() != 0) {
    WARN("SKIP: needs root to make a claim owned by another user");
    return;
  }
  ClaimsDir dir;
  ::chmod(dir.path.c_str(), 01777);
  // Another user's claim of a made-up size, held for ever.
  const std::string bogus = (dir.path / "claim-1-1").string();
  { std::ofstream(bogus) << "1000000000000000000\n"; }
  const pid_t holder = hold_flock(bogus, 65534);
  auto view = [] { return FallbackView{10 * kGiB, 1 * kGiB, {}}; };
  std::vector<std::string> said;
  auto admitted = MemoryClaim::admit(
      dir.path.string(), 1 * kGiB, view, [&](const std::string& w) { said.push_back(w); },
      std::chrono::milliseconds(600));
  REQUIRE(admitted);
  REQUIRE(said.size() == 2);
  CHECK(said[1].find("for other users' compiles alone; starting this one") != std::string::npos);
  // Now this user holds a claim: a second compile of theirs waits past the
  // patience, until their own ends.
  std::atomic<bool> second{false};
  std::thread waiter([&] {
    auto c = MemoryClaim::admit(
        dir.path.string(), 9 * kGiB, view, [](const std::string&) {}, std::chrono::milliseconds(600));
    second = c.has_value();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // well past the patience
  CHECK_FALSE(second);
  admitted.reset();
  waiter.join();
  CHECK(second);
  stop(holder);
}

TEST_CASE("a claim being made is never taken for a dead one and one abandoned for a minute is removed",
          "[memory_claim]") {
  ClaimsDir dir;
  const auto fresh = dir.path / ".making-claim-1-1";
  const auto abandoned = dir.path / ".making-claim-2-2";
  std::ofstream(fresh) << "5\n";
  std::ofstream(abandoned) << "5\n";
  const auto old = std::chrono::system_clock::now() - std::chrono::minutes(5);
  const timespec times[2] = {{std::chrono::system_clock::to_time_t(old), 0},
                             {std::chrono::system_clock::to_time_t(old), 0}};
  REQUIRE(::utimensat(AT_FDCWD, abandoned.c_str(), times, 0) == 0);
  CHECK(MemoryClaim::live_claims(dir.path.string()).empty());  // neither counts yet
  CHECK(fs::exists(fresh));                                    // its maker may be between creating and locking it
  CHECK_FALSE(fs::exists(abandoned));
}

TEST_CASE("a FIFO or a device under a name launchers open stops nothing", "[memory_claim]") {
  ClaimsDir dir;
  // Opening a FIFO for reading blocks until a writer comes: anyone can make one.
  REQUIRE(::mkfifo((dir.path / "lock").c_str(), 0666) == 0);
  REQUIRE(::mkfifo((dir.path / "claim-1-1").c_str(), 0666) == 0);
  auto view = [] { return FallbackView{10 * kGiB, 1 * kGiB, {}}; };
  auto admitted = MemoryClaim::admit(dir.path.string(), 1 * kGiB, view, [](const std::string&) {});
  CHECK(admitted);
  CHECK(MemoryClaim::live_claims(dir.path.string()) == std::vector<std::uint64_t>{1 * kGiB});
}

TEST_CASE("a claims directory is used only if no other user can have planted it", "[memory_claim]") {
  ClaimsDir d;
  const std::string real = (d.path / "real").string(), link = (d.path / "link").string();
  fs::create_directories(real);
  fs::create_directory_symlink(real, link);
  ::chmod(real.c_str(), 01777);
  const uid_t me = ::getuid();
  CHECK(usable_claims_dir(real, me));
  // A link (to a directory root alone may write, say): never followed.
  CHECK_FALSE(usable_claims_dir(link, me));
  CHECK_FALSE(usable_claims_dir((d.path / "missing").string(), me));
  if (me != 0) {
    WARN("SKIP: the ownership cases need root (chown); they did not run");
    return;
  }
  // Root's, sticky: shared by every user (chown clears the sticky bit).
  REQUIRE(::chown(real.c_str(), 0, 0) == 0);
  ::chmod(real.c_str(), 01777);
  CHECK(usable_claims_dir(real, 1234));
  CHECK(usable_claims_dir(real, 0));
  ::chmod(real.c_str(), 0777);
  CHECK_FALSE(usable_claims_dir(real, 1234));
  // Another user's, sticky or not: its owner could remove anyone's claims in
  // it, so only that user uses it, and never root.
  REQUIRE(::chown(real.c_str(), 4321, 4321) == 0);
  ::chmod(real.c_str(), 01777);
  CHECK_FALSE(usable_claims_dir(real, 1234));
  CHECK_FALSE(usable_claims_dir(real, 0));
  CHECK(usable_claims_dir(real, 4321));
}
