// The compiler prober with real (scripted) compilers: a version line that is
// bounded, a cache that stays bounded however many paths one user names, and
// probes of one user that leave room for everyone else's.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <future>
#include <sstream>
#include <thread>

#include <boost/asio/io_context.hpp>

#include "daemon/toolchain.h"
#include "fakes.h"

namespace fad {
namespace {

using Catch::Contains;
using test::run_until;
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
  run_until(io, [&] { return answer.has_value(); });
  REQUIRE(answer);
  return *answer;
}

}  // namespace

TEST_CASE("toolchain: the version line is bounded, as a launch's is", "[toolchain]") {
  auto tc = toolchain_from_output("/x/nvcc", "nvcc\n" + std::string(100000, 'v') + "\n", "compute_90\n");
  REQUIRE(tc);
  CHECK(tc->version.size() == 512);
  CHECK(tc->archs.size() == 1);
  // A program that is not nvcc (a script that only echoes) is named as the likely cause.
  CHECK(toolchain_from_output("/x/nvcc", "v\n", "nothing\n").error() ==
        "/x/nvcc --list-gpu-arch listed no architectures: is it nvcc (or a wrapper that passes its options on)?");
}

TEST_CASE("toolchain: the cache keeps the most recently used answers, however many paths are named", "[toolchain]") {
  TempDir dir("fad-toolchain");
  const std::string nvcc = fake_nvcc(dir, "nvcc");
  boost::asio::io_context io;
  ToolchainProber prober(io);
  auto first = probe(io, prober, nvcc);
  REQUIRE(first);
  CHECK(first->version == "Build cuda_13.0.r13.0/test");
  // Which files it is, found off the loop, for the compile cache's key.
  CHECK_THAT(first->file_identity, Contains(nvcc + " ") && Contains((dir / "nvcc.profile") + " absent"));
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
  // The files are found on threads, in any order: whichever comes last is refused.
  const auto answered = [&] {
    return std::count_if(answers.begin(), answers.end(), [](const auto& a) { return a.has_value(); });
  };
  run_until(io, [&] { return answered() > 0; });
  CHECK(prober.in_flight() == ToolchainProber::kMaxInFlightPerUser);
  REQUIRE(answered() == 1);
  for (const auto& a : answers)
    if (a) CHECK_THAT(a->error(), Contains("compilers for you already"));
}

/// A locator that blocks on chosen names until released, as stat() does on a
/// network mount that stopped answering; other names are looked up for real.
struct HungMount {
  std::shared_ptr<std::promise<void>> release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  CompilerLocator locator() const {
    return [released = released](const std::string& name, bool as_other) -> Result<CompilerFile> {
      if (name.rfind("/hung/", 0) != 0) return locate_compiler(name, as_other);
      released.wait();
      return make_error("compiler '" + name + "' is not an executable file");
    };
  }
};

TEST_CASE("toolchain: a compiler path that hangs holds only its own submit, and only so many of them", "[toolchain]") {
  TempDir dir("fad-toolchain");
  HungMount mount;
  boost::asio::io_context io;
  // Every lookup counts against the limits at once (fadd: after a second).
  ToolchainProber prober(io, std::chrono::seconds(30), 8, "", mount.locator(), std::chrono::milliseconds(0));
  std::vector<std::optional<Result<Toolchain>>> hung(ToolchainProber::kMaxLocatingPerUser + 1);
  const auto ask = [&](std::size_t i) {
    prober.get(ToolchainQuery{"/hung/nvcc" + std::to_string(i), std::nullopt},
               [&hung, i](Result<Toolchain> r) { hung[i] = std::move(r); });
  };
  for (std::size_t i = 0; i + 2 < hung.size(); ++i) ask(i);
  // The loop goes on: another compiler is found and probed meanwhile...
  CHECK(probe(io, prober, fake_nvcc(dir, "nvcc")));
  CHECK(prober.locating() == ToolchainProber::kMaxLocatingPerUser - 1);
  ask(hung.size() - 2);
  ask(hung.size() - 1);
  CHECK(prober.locating() == ToolchainProber::kMaxLocatingPerUser);
  // ...and the user's one name too many is refused at once, not queued.
  io.restart();
  io.poll();
  REQUIRE(hung.back());
  CHECK_THAT(hung.back()->error(), Contains("still looking for 4 compilers you named"));
  for (std::size_t i = 0; i + 1 < hung.size(); ++i) CHECK_FALSE(hung[i]);
  // The mount answers: every waiting submit gets its answer.
  // A thread leaves the count before its answer reaches the loop: wait for the answers.
  mount.release->set_value();
  run_until(io, [&] { return std::all_of(hung.begin(), hung.end(), [](const auto& a) { return a.has_value(); }); });
  CHECK(prober.locating() == 0);
  for (std::size_t i = 0; i + 1 < hung.size(); ++i) {
    REQUIRE(hung[i]);
    CHECK_THAT(hung[i]->error(), Contains("is not an executable file"));
  }
}

TEST_CASE("toolchain: a burst of submits naming a hung path starts at most 64 lookup threads", "[toolchain]") {
  HungMount mount;
  boost::asio::io_context io;
  // None is slow yet (an hour): only the cap on threads applies.
  ToolchainProber prober(io, std::chrono::seconds(30), 8, "", mount.locator(), std::chrono::hours(1));
  std::vector<std::optional<Result<Toolchain>>> answers(65);
  for (std::size_t i = 0; i < answers.size(); ++i)
    prober.get(ToolchainQuery{"/hung/nvcc" + std::to_string(i), std::nullopt},
               [&answers, i](Result<Toolchain> r) { answers[i] = std::move(r); });
  io.restart();
  io.poll();
  CHECK(prober.locating() == 64);
  REQUIRE(answers.back());
  CHECK_THAT(answers.back()->error(), Contains("looking for 64 compilers at once"));
  mount.release->set_value();
  run_until(io, [&] { return prober.locating() == 0; });
  CHECK(prober.locating() == 0);
}

TEST_CASE("toolchain: a burst of submits whose compiler answers at once is never refused", "[toolchain]") {
  TempDir dir("fad-toolchain");
  const std::string nvcc = fake_nvcc(dir, "nvcc");
  boost::asio::io_context io;
  ToolchainProber prober(io);
  std::vector<std::optional<Result<Toolchain>>> answers(3 * ToolchainProber::kMaxLocatingPerUser);
  for (std::size_t i = 0; i < answers.size(); ++i)
    prober.get(ToolchainQuery{nvcc, std::nullopt}, [&answers, i](Result<Toolchain> r) { answers[i] = std::move(r); });
  run_until(io,
            [&] { return std::all_of(answers.begin(), answers.end(), [](const auto& a) { return a.has_value(); }); });
  for (const auto& a : answers) {
    REQUIRE(a);
    CHECK(a->ok());
  }
}

TEST_CASE("toolchain: a prober destroyed while a path hangs is never called back", "[toolchain]") {
  HungMount mount;
  // Held by the locator, so by the thread's copy of it: gone once the thread ended.
  auto token = std::make_shared<int>(0);
  const std::weak_ptr<int> thread_alive = token;
  bool called = false;
  boost::asio::io_context io;
  {
    CompilerLocator locator = [token = std::move(token), inner = mount.locator()](const std::string& name, bool other) {
      return inner(name, other);
    };
    ToolchainProber prober(io, std::chrono::seconds(30), 8, "", std::move(locator));
    prober.get(ToolchainQuery{"/hung/nvcc", std::nullopt}, [&called](Result<Toolchain>) { called = true; });
    CHECK(prober.locating() == 1);
  }
  mount.release->set_value();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!thread_alive.expired() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  CHECK(thread_alive.expired());
  io.restart();
  io.poll();  // nothing was posted for the dead prober
  CHECK_FALSE(called);
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

TEST_CASE("locate_compiler: a bare name is found for another user only where they could run it", "[toolchain]") {
  // fadd's PATH may lead into directories its users cannot enter (root's
  // ~/.cargo/bin): what is there must read as absent to them, not as
  // "Permission denied", which tells them it exists.
  TempDir tmp("fad-locate");
  ::chmod(tmp.str().c_str(), 0755);
  const std::string open_dir = tmp / "open", closed_dir = tmp / "closed";
  ::mkdir(open_dir.c_str(), 0755);
  ::mkdir(closed_dir.c_str(), 0700);
  const std::string linked_dir = tmp / "linked";
  ::mkdir(linked_dir.c_str(), 0755);
  fake_nvcc(tmp, "open/fad-open-cc");
  fake_nvcc(tmp, "closed/fad-closed-cc");
  // The same name closed early on the PATH and open later: the open one.
  fake_nvcc(tmp, "closed/fad-both-cc");
  fake_nvcc(tmp, "open/fad-both-cc");
  for (const std::string& f : {open_dir + "/fad-open-cc", closed_dir + "/fad-closed-cc", closed_dir + "/fad-both-cc",
                               open_dir + "/fad-both-cc"})
    ::chmod(f.c_str(), 0755);
  // An open directory's link into the closed one tells as much as the file.
  REQUIRE(::symlink((closed_dir + "/fad-closed-cc").c_str(), (linked_dir + "/fad-linked-cc").c_str()) == 0);
  const char* before = std::getenv("PATH");
  const std::string saved = before ? before : "";
  ::setenv("PATH", (closed_dir + ":" + linked_dir + ":" + open_dir + ":" + saved).c_str(), 1);
  const auto closed_other = locate_compiler("fad-closed-cc", true);
  const auto closed_own = locate_compiler("fad-closed-cc", false);
  const auto open_other = locate_compiler("fad-open-cc", true);
  const auto absent = locate_compiler("fad-no-such-cc", true);
  const auto both_other = locate_compiler("fad-both-cc", true);
  const auto both_own = locate_compiler("fad-both-cc", false);
  const auto linked_other = locate_compiler("fad-linked-cc", true);
  ::setenv("PATH", saved.c_str(), 1);
  REQUIRE(both_other);
  CHECK(both_other->path == open_dir + "/fad-both-cc");
  REQUIRE(both_own);
  CHECK(both_own->path == closed_dir + "/fad-both-cc");
  REQUIRE_FALSE(linked_other);
  CHECK_THAT(linked_other.error(), Contains("not found on PATH"));
  REQUIRE_FALSE(closed_other);
  REQUIRE_FALSE(absent);
  CHECK(closed_other.error() ==
        "compiler 'fad-closed-cc' not found on PATH (fadd's) or in /usr/local/cuda/bin; pass "
        "--nvcc PATH");
  REQUIRE(closed_own);
  CHECK(closed_own->path == closed_dir + "/fad-closed-cc");
  REQUIRE(open_other);
  CHECK(open_other->path == open_dir + "/fad-open-cc");
}

}  // namespace fad
