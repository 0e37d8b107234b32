// The walk that deletes pruned builds' trees: what it counts, that it never
// follows a link out of the tree, that no nesting depth defeats it, and the
// worker thread answering on the event loop.
#include "daemon/tree_remover.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "fakes.h"

namespace fad {
namespace {

using test::TempDir;
using test::write_file;
namespace fs = std::filesystem;

const std::atomic<bool> kGo{false};

/// A build-like tree: two files, a nested directory, and links out of it.
fs::path build_tree(const TempDir& tmp, const fs::path& outside) {
  const fs::path t = tmp.path() / "tree";
  write_file(t / "build.log", std::string(1000, 'x'));
  write_file(t / "obj" / "deep" / "a.o", std::string(234, 'y'));
  fs::create_directory_symlink(outside, t / "obj" / "to-outside");
  fs::create_symlink(outside / "keep.txt", t / "keep-link");
  return t;
}

/// 300 nested directories `d` under `t`, each with an 8-byte file `f` (a
/// user can nest thousands); built relative to dodge PATH_MAX.
void deep_chain(const fs::path& t, int files = 1) {
  fs::create_directory(t);
  const int keep = ::open(".", O_RDONLY);
  REQUIRE(::chdir(t.c_str()) == 0);
  for (int i = 0; i < 300; ++i) {
    REQUIRE(::mkdir("d", 0755) == 0);
    // The other files made after the directory beside them, "f" before it:
    // both orders of creation are there, whichever one readdir follows.
    for (int f = 1; f < files; ++f) std::ofstream("f" + std::to_string(f)) << "12345678";
    REQUIRE(::chdir("d") == 0);
    std::ofstream("f") << "12345678";
  }
  REQUIRE(::fchdir(keep) == 0);
  ::close(keep);
}

TEST_CASE("a tree is counted and deleted, its links removed and never followed", "[tree_remover]") {
  TempDir tmp;
  const fs::path outside = tmp.path() / "outside";
  write_file(outside / "keep.txt", std::string(5000, 'k'));
  const fs::path t = build_tree(tmp, outside);
  fs::create_directory(tmp.path() / "spill");

  auto counted = remove_tree(t.string(), true, "", kGo, std::chrono::hours(1));
  CHECK(counted.error.empty());
  CHECK(counted.bytes == 1234);  // the 5000 bytes behind the links are not the build's
  CHECK(fs::exists(t / "obj" / "deep" / "a.o"));

  auto removed = remove_tree(t.string(), false, (tmp.path() / "spill").string(), kGo, std::chrono::hours(1));
  CHECK(removed.error.empty());
  CHECK(removed.bytes == 1234);
  CHECK_FALSE(fs::exists(fs::symlink_status(t)));
  CHECK(fs::file_size(outside / "keep.txt") == 5000);
}

TEST_CASE("a tree nested far deeper than the walk holds descriptors for is deleted all the same", "[tree_remover]") {
  TempDir tmp;
  fs::create_directory(tmp.path() / "spill");
  const fs::path t = tmp.path() / "tree";
  deep_chain(t);

  auto counted = remove_tree(t.string(), true, "", kGo, std::chrono::hours(1));
  CHECK(counted.bytes == 8 * (kMaxTreeDepth - 1));  // counting stops at the depth limit
  auto removed = remove_tree(t.string(), false, (tmp.path() / "spill").string(), kGo, std::chrono::hours(1));
  INFO(removed.error);
  CHECK(removed.error.empty());
  CHECK(removed.bytes == 8 * 300);
  CHECK_FALSE(fs::exists(t));
  CHECK(fs::is_empty(tmp.path() / "spill"));
}

TEST_CASE("a deep tree's walk halted after moving parts up names them, and they are deleted with the rest later",
          "[tree_remover]") {
  TempDir tmp;
  const fs::path spill = tmp.path() / "spill";
  fs::create_directory(spill);
  const fs::path t = tmp.path() / "tree";
  // Files beside each level's directory: whatever order readdir gives them,
  // the levels still hold some when the walk halts below them.
  deep_chain(t, 3);

  // Halted as soon as a part is in the spill dir, as a time slice running out
  // there would: the part is the walk's to name, not an orphan in the trash.
  const std::function<bool()> spilled_once = [&] { return !fs::is_empty(spill); };
  auto first = remove_tree_until(t.string(), false, spill.string(), spilled_once);
  INFO(first.error);
  CHECK(first.unfinished);
  CHECK(first.error.empty());
  REQUIRE(first.moved.size() == 1);
  CHECK(fs::path(first.moved[0]).parent_path() == spill);
  CHECK(fs::is_directory(first.moved[0]));
  CHECK(fs::exists(t));

  // The next slice takes the tree and the moved part; the tree spills again
  // into the same dir without touching the part still there.
  std::uint64_t bytes = first.bytes;
  std::vector<std::string> next{t.string()};
  next.insert(next.end(), first.moved.begin(), first.moved.end());
  for (const auto& d : next) {
    auto r = remove_tree(d, false, spill.string(), kGo, std::chrono::hours(1));
    INFO(r.error);
    CHECK(r.error.empty());
    CHECK(r.moved.empty());
    bytes += r.bytes;
  }
  CHECK(bytes == 3 * 8 * 300);
  CHECK_FALSE(fs::exists(t));
  CHECK(fs::is_empty(spill));
}

TEST_CASE("a missing tree is nothing to do, a stopped walk says what is left", "[tree_remover]") {
  TempDir tmp;
  fs::create_directory(tmp.path() / "spill");
  auto missing =
      remove_tree((tmp.path() / "none").string(), false, (tmp.path() / "spill").string(), kGo, std::chrono::hours(1));
  CHECK(missing.error.empty());
  CHECK(missing.bytes == 0);

  const fs::path t = build_tree(tmp, tmp.path());
  const std::atomic<bool> stop{true};
  auto stopped = remove_tree(t.string(), false, (tmp.path() / "spill").string(), stop, std::chrono::hours(1));
  CHECK_THAT(stopped.error, Catch::Contains("stopped before the end"));
  CHECK(fs::exists(t));
}

TEST_CASE("the worker deletes on its own thread and answers on the event loop", "[tree_remover]") {
  TempDir tmp;
  fs::create_directory(tmp.path() / "spill");
  const fs::path t = build_tree(tmp, tmp.path() / "elsewhere");
  boost::asio::io_context io;
  auto busy = boost::asio::make_work_guard(io);  // run_one waits for the worker's answer
  TreeWorker worker(io);
  std::vector<TreeResult> got;
  std::thread::id answered_on;
  worker.remover()({t.string(), (tmp.path() / "gone").string()}, false, (tmp.path() / "spill").string(), 0,
                   [&](std::vector<TreeResult> r) {
                     got = std::move(r);
                     answered_on = std::this_thread::get_id();
                   });
  // run_one blocks until the worker posts its answer: no sleep, no timeout guess.
  io.run_one();
  REQUIRE(got.size() == 2);
  CHECK(answered_on == std::this_thread::get_id());
  CHECK(got[0].bytes == 1234);
  CHECK(got[1].bytes == 0);
  CHECK_FALSE(fs::exists(t));
}

TEST_CASE("a walk that runs out of its time slice says so and leaves the rest for later", "[tree_remover]") {
  // As when the build's user keeps writing into the tree: the worker gives
  // the tree one slice, then lets the other deletions waiting go first.
  test::TempDir tmp;
  fs::create_directory(tmp.path() / "spill");
  const fs::path t = tmp.path() / "tree";
  for (int i = 0; i < 600; ++i) test::write_file(t / ("f" + std::to_string(i)), "x");
  const std::atomic<bool> go{false};
  auto first = remove_tree(t.string(), false, (tmp.path() / "spill").string(), go, std::chrono::seconds(0));
  CHECK(first.unfinished);
  CHECK_THAT(first.error, Catch::Contains("not deleted within its time slice"));
  CHECK(fs::exists(t));
  auto rest = remove_tree(t.string(), false, (tmp.path() / "spill").string(), go, std::chrono::hours(1));
  CHECK_FALSE(rest.unfinished);
  CHECK(rest.error.empty());
  CHECK(first.bytes + rest.bytes == 600);
  CHECK_FALSE(fs::exists(t));
}

TEST_CASE("the worker gives an unfinished tree further slices, up to its limit, then leaves it for the next start",
          "[tree_remover]") {
  // A slice of 0 s halts each walk at its first look at the clock (256
  // names), as a tree a process keeps writing into runs out of every slice.
  test::TempDir tmp;
  const fs::path spill = tmp.path() / "spill";
  fs::create_directory(spill);
  const fs::path t = tmp.path() / "tree";
  const fs::path small = tmp.path() / "small";
  boost::asio::io_context io;
  auto busy = boost::asio::make_work_guard(io);
  std::vector<TreeResult> got;
  const auto take = [&](std::vector<TreeResult> r) { got = std::move(r); };

  SECTION("within the limit the tree goes in three slices, the first one answering") {
    for (int i = 0; i < 600; ++i) test::write_file(t / ("f" + std::to_string(i)), "x");
    TreeWorker worker(io, std::chrono::seconds(0), 3);
    worker.remover()({t.string()}, false, spill.string(), 1000, take);
    io.run_one();  // the answer, after the first slice
    REQUIRE(got.size() == 1);
    // Whether the tree is still there now is a race: the worker goes on to
    // the next slice once it has posted the answer. What the first slice did
    // is in its result.
    CHECK(got[0].unfinished);
    CHECK(got[0].bytes > 0);
    CHECK(got[0].bytes < 600);
    io.run_one();  // the second slice's (logged) results
    io.run_one();  // the third's
    CHECK_FALSE(fs::exists(t));
  }
  SECTION("past the limit the tree stays in the trash and the worker takes other work") {
    for (int i = 0; i < 900; ++i) test::write_file(t / ("f" + std::to_string(i)), "x");
    test::write_file(small / "a", "y");
    TreeWorker worker(io, std::chrono::seconds(0), 2);
    worker.remover()({t.string()}, false, spill.string(), 1000, take);
    io.run_one();
    io.run_one();  // the second and last slice
    // A third slice would be queued ahead of this job and run before it.
    worker.remover()({small.string()}, false, spill.string(), 1000, take);
    io.run_one();
    REQUIRE(got.size() == 1);
    CHECK(got[0].path == small.string());
    CHECK_FALSE(fs::exists(small));
    REQUIRE(fs::exists(t));
    CHECK_FALSE(fs::is_empty(t));
  }
}

TEST_CASE("a job's trees share its slice: a user pruning many trees holds the worker one slice, not one per tree",
          "[tree_remover]") {
  // A clock one second later at each look (every 256 names): the job's 3 s
  // run out in the first tree, and the second is not started on.
  test::TempDir tmp;
  const fs::path spill = tmp.path() / "spill";
  fs::create_directory(spill);
  const fs::path a = tmp.path() / "a", b = tmp.path() / "b";
  for (int i = 0; i < 2000; ++i) test::write_file(a / ("f" + std::to_string(i)), "x");
  for (int i = 0; i < 600; ++i) test::write_file(b / ("f" + std::to_string(i)), "x");
  std::atomic<int> looks{0};
  const auto clock = [&] { return std::chrono::steady_clock::time_point{} + std::chrono::seconds(looks++); };
  boost::asio::io_context io;
  auto busy = boost::asio::make_work_guard(io);
  std::vector<TreeResult> got;
  TreeWorker worker(io, std::chrono::seconds(3), 1, clock);
  worker.remover()({a.string(), b.string()}, false, spill.string(), 1000,
                   [&](std::vector<TreeResult> r) { got = std::move(r); });
  io.run_one();
  REQUIRE(got.size() == 2);
  CHECK(got[0].unfinished);
  CHECK(got[0].bytes > 0);
  CHECK(got[0].bytes < 2000);
  CHECK(got[1].unfinished);
  CHECK(got[1].bytes == 0);
  CHECK_THAT(got[1].error, Catch::Contains("not deleted within its time slice"));
  const auto left = std::distance(fs::directory_iterator(b), fs::directory_iterator{});
  CHECK(left == 600);
  CHECK(looks == 5);  // the deadline's, then four in the first tree
}

TEST_CASE("what a user swaps in for a directory the walk moved, a file or a link, is removed from the trash too",
          "[tree_remover]") {
  test::TempDir tmp;
  const fs::path spill = tmp.path() / "spill";
  fs::create_directory(spill);
  const fs::path outside = tmp.path() / "outside";
  test::write_file(outside / "keep.txt", "kept");

  SECTION("a moved part swapped for a file or a link between the check and the move") {
    const fs::path t = tmp.path() / "tree";
    fs::path deep = t;
    for (int i = 0; i < kMaxTreeDepth + 3; ++i) deep /= "d";
    fs::create_directories(deep);
    // As the user's renameat2(RENAME_EXCHANGE) loop does: the moment a part
    // lands in the trash, it is a file there (the directory elsewhere).
    int swaps = 0;
    const std::function<bool()> swap_first = [&] {
      for (const auto& e : fs::directory_iterator(spill)) {
        if (swaps > 0 || !e.is_directory()) continue;
        fs::rename(e.path(), tmp.path() / "stolen");
        test::write_file(e.path(), std::string(10, 'z'));
        ++swaps;
      }
      return false;
    };
    auto r = remove_tree_until(t.string(), false, spill.string(), swap_first);
    REQUIRE(swaps == 1);
    INFO(r.error);
    CHECK(r.error.empty());
    CHECK_FALSE(fs::exists(t));
    CHECK(fs::is_empty(spill));
  }
  SECTION("a file or a link left at the top of the trash") {
    test::write_file(spill / "deep-1-1", std::string(10, 'z'));
    fs::create_directory_symlink(outside, spill / "deep-1-2");
    auto file = remove_tree((spill / "deep-1-1").string(), false, spill.string(), kGo, std::chrono::hours(1));
    CHECK(file.error.empty());
    CHECK(file.bytes == 10);
    auto link = remove_tree((spill / "deep-1-2").string(), false, spill.string(), kGo, std::chrono::hours(1));
    CHECK(link.error.empty());
    CHECK(link.bytes == 0);
    CHECK(fs::is_empty(spill));
    CHECK(test::slurp(outside / "keep.txt") == "kept");
  }
}

TEST_CASE("the tree worker takes root's jobs first, then the user it served least recently", "[tree_remover]") {
  std::map<std::uint32_t, std::uint64_t> served;
  // Nothing served yet: queue order, except that root goes first.
  CHECK(next_tree_job({1000}, served) == 0);
  CHECK(next_tree_job({1000, 1001, 0, 0}, served) == 2);
  // 1000 was served last (a slice of a tree that needs many): the others go
  // first, even those queued after its next slice.
  served = {{1000, 2}, {1001, 1}};
  CHECK(next_tree_job({1000, 1001, 1002}, served) == 2);
  CHECK(next_tree_job({1000, 1001}, served) == 1);
  CHECK(next_tree_job({1000, 1000}, served) == 0);
  // Root comes first however recently it was served.
  served[0] = 3;
  CHECK(next_tree_job({1000, 1001, 0}, served) == 2);
  // But only with a job's first slice: the further slices of a tree that
  // keeps needing more take turns with the users.
  CHECK(tree_turn(0, 1) == 0);
  CHECK(tree_turn(0, 2) == kRootLeftovers);
  CHECK(tree_turn(1000, 2) == 1000);
  served[kRootLeftovers] = 4;
  CHECK(next_tree_job({tree_turn(0, 3), 1001}, served) == 1);
}

}  // namespace
}  // namespace fad
