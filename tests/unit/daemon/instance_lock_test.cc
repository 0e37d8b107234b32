// The state-dir lock against a live fadd, and against the copy a dying fadd's
// child holds for the instant between fork and exec.
#include "daemon/instance_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <string>
#include <thread>

#include "common/lock_file.h"
#include "tests/temp_dir.h"

namespace fs = std::filesystem;
using fad::InstanceLock;
using fad::test::TempDir;

namespace {

/// A "fadd" (a child process) that takes the lock, forks a grandchild that
/// keeps a copy of the lock's fd without exec'ing, and dies. The grandchild
/// lets go when release() closes the pipe it waits on.
class DeadHolder {
 public:
  explicit DeadHolder(const std::string& dir) {
    REQUIRE(::pipe(pipe_) == 0);
    fadd_ = ::fork();
    REQUIRE(fadd_ >= 0);
    if (fadd_ == 0) {
      ::close(pipe_[1]);
      auto lock = InstanceLock::acquire(dir, 0);
      if (!lock) ::_exit(2);
      if (::fork() == 0) {
        char c;
        while (::read(pipe_[0], &c, 1) > 0) {}
        ::_exit(0);
      }
      ::_exit(0);  // the grandchild still holds the lock
    }
    ::close(pipe_[0]);
    int status = 0;
    REQUIRE(::waitpid(fadd_, &status, 0) == fadd_);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
  }
  ~DeadHolder() { release(); }
  void release() {
    if (pipe_[1] >= 0) ::close(pipe_[1]);
    pipe_[1] = -1;
  }
  pid_t fadd() const { return fadd_; }

 private:
  int pipe_[2] = {-1, -1};
  pid_t fadd_ = -1;
};

}  // namespace

TEST_CASE("instance lock: a live holder is refused at once, naming its pid", "[instance_lock]") {
  TempDir dir{"fad-lock"};
  auto first = InstanceLock::acquire(dir.path().string());
  REQUIRE(first);
  const auto t0 = std::chrono::steady_clock::now();
  auto second = InstanceLock::acquire(dir.path().string(), 60);
  REQUIRE_FALSE(second);
  // Refused without waiting out the 60 s meant for a dead holder.
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30));
  CHECK_THAT(second.error(), Catch::Contains("another fadd is already running (pid " + std::to_string(::getpid())));
}

TEST_CASE("instance lock: deleting the lock file does not let a second fadd in", "[instance_lock]") {
  // Bug: a cleaner deleting STATE/fadd.lock let a second fadd start on the
  // state dir, and it killed the first one's compilers as left behind.
  TempDir dir{"fad-lock"};
  {
    auto first = InstanceLock::acquire(dir.path().string());
    REQUIRE(first);
    std::filesystem::remove(dir.path() / "fadd.lock");
    auto second = InstanceLock::acquire(dir.path().string(), 0.2);
    REQUIRE_FALSE(second);
    CHECK_THAT(second.error(), Catch::Contains("another fadd is already running on the state dir"));
    CHECK_THAT(second.error(), Catch::Contains("fadd.lock was deleted"));
    // The file it made is not left empty, for a start to read no pid in.
    CHECK_FALSE(fs::exists(dir.path() / "fadd.lock"));
  }
  CHECK(InstanceLock::acquire(dir.path().string(), 0));  // gone with its holder
}

TEST_CASE("instance lock: a link at the lock file's place is refused, and what it names is left alone",
          "[instance_lock]") {
  TempDir dir{"fad-lock"};
  const fs::path target = dir.path() / "elsewhere";
  { std::ofstream(target) << "kept\n"; }
  fs::create_symlink(target, dir.path() / "fadd.lock");
  auto lock = InstanceLock::acquire(dir.path().string(), 0);
  REQUIRE_FALSE(lock);
  CHECK(lock.error() == (dir.path() / "fadd.lock").string() +
                            " is a symbolic link, not fadd's lock file; remove it and start fadd again");
  std::ifstream in(target);
  std::string text;
  std::getline(in, text);
  CHECK(text == "kept");
  // Nor anything else but a file: a FIFO there would be written into.
  fs::remove(dir.path() / "fadd.lock");
  REQUIRE(::mkfifo((dir.path() / "fadd.lock").c_str(), 0600) == 0);
  auto on_fifo = InstanceLock::acquire(dir.path().string(), 0);
  REQUIRE_FALSE(on_fifo);
  CHECK_THAT(on_fifo.error(), Catch::EndsWith("fadd.lock is not a regular file, so not fadd's lock file; remove it and "
                                              "start fadd again"));
}

TEST_CASE("instance lock: a dead fadd's lingering child delays a restart, it does not refuse it", "[instance_lock]") {
  TempDir dir{"fad-lock"};
  DeadHolder holder(dir.path().string());
  // Taken now, a restart would be refused: this is the window a kill -9 leaves.
  REQUIRE_FALSE(InstanceLock::acquire(dir.path().string(), 0));
  // The child lets go a moment after the restart began, as a real one does on
  // exec or exit; acquire must wait for it rather than refuse.
  auto releaser = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    holder.release();
  });
  auto lock = InstanceLock::acquire(dir.path().string(), 60);
  releaser.get();
  INFO((lock ? std::string() : lock.error()));
  CHECK(lock);
}

TEST_CASE("instance lock: a child that never lets go gets a clear error after the wait", "[instance_lock]") {
  TempDir dir{"fad-lock"};
  DeadHolder holder(dir.path().string());
  auto lock = InstanceLock::acquire(dir.path().string(), 0.2);
  REQUIRE_FALSE(lock);
  CHECK_THAT(lock.error(), Catch::Contains("still locked by a child of fadd " + std::to_string(holder.fadd())));
  CHECK_THAT(lock.error(), Catch::Contains("fuser"));
}

TEST_CASE("instance lock: a stopping fadd says so on the lock file's second line, its pid kept on the first") {
  TempDir dir{"fad-lock"};
  auto lock = InstanceLock::acquire(dir.path().string());
  REQUIRE(lock);
  auto lines = [&] {
    std::ifstream in(dir.path() / "fadd.lock");
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  };
  const std::string pid = std::to_string(::getpid());
  CHECK(lines() == std::vector<std::string>{pid});
  // Once it listens, its socket (absolute) follows; the mark stays second.
  lock->note_listening("rel.sock");
  const std::string socket = (fs::current_path() / "rel.sock").string();
  CHECK(lines() == std::vector<std::string>{pid, "socket " + socket});
  lock->note_stopping();
  CHECK(lines() == std::vector<std::string>{pid, "stopping", "socket " + socket});
  CHECK(fad::read_lock_text((dir.path() / "fadd.lock").string()).socket == socket);
  lock->note_listening("/with\nnewline.sock");  // would read back as another socket
  CHECK(lines() == std::vector<std::string>{pid, "stopping", "socket " + socket});
  // A second fadd meanwhile is told so, in one line (it printed both lines of
  // the file, its pid and the mark, as the pid).
  auto second = InstanceLock::acquire(dir.path().string());
  REQUIRE_FALSE(second);
  CHECK(second.error() == "another fadd (pid " + pid + ") is stopping on the state dir " + dir.path().string() +
                              "; start again once it has exited ('fad daemon start' waits for it)");
}

namespace {
std::string text_of(const fs::path& file) {
  std::ifstream in(file);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
}  // namespace

TEST_CASE("instance lock: a deleted or replaced lock file is made again, with the stopping mark when stopping",
          "[instance_lock]") {
  // Bug: with STATE/fadd.lock deleted, a start right after a stop found fadd
  // answering and no stopping mark to read, said "already running", exit 0,
  // and left no fadd.
  TempDir dir{"fad-lock"};
  const fs::path file = dir.path() / "fadd.lock";
  const std::string pid = std::to_string(::getpid());
  auto lock = InstanceLock::acquire(dir.path().string(), 0);
  REQUIRE(lock);
  auto kept = lock->keep_file();
  REQUIRE(kept);
  CHECK_FALSE(*kept);  // still its own: nothing done
  CHECK(text_of(file) == pid + "\n");

  // Deleted; then replaced by another file, taken over since no other fadd holds it.
  for (const bool replaced : {false, true}) {
    fs::remove(file);
    if (replaced) std::ofstream(file) << "99999999\nleft by someone, longer than a pid\n";
    kept = lock->keep_file();
    REQUIRE(kept);
    CHECK(*kept);
    CHECK(text_of(file) == pid + "\n");
    CHECK(fad::lock_held(file.string()));
  }

  // Deleted, then asked to stop: the mark goes into a file a start can read.
  fs::remove(file);
  lock->note_stopping();
  CHECK(text_of(file) == pid + "\nstopping\n");
  CHECK(fad::lock_held(file.string()));
  kept = lock->keep_file();
  REQUIRE(kept);
  CHECK_FALSE(*kept);
}

TEST_CASE("instance lock: what cannot be taken at the lock file's place is said, and the loop goes on",
          "[instance_lock]") {
  TempDir dir{"fad-lock"};
  const fs::path file = dir.path() / "fadd.lock";
  auto lock = InstanceLock::acquire(dir.path().string(), 0);
  REQUIRE(lock);
  fs::remove(file);
  REQUIRE(::mkfifo(file.c_str(), 0600) == 0);  // opened without O_NONBLOCK, this would hang
  auto kept = lock->keep_file();
  REQUIRE_FALSE(kept);
  CHECK_THAT(kept.error(),
             Catch::EndsWith("fadd.lock, fadd's lock file, was replaced by something that is not a regular file: fadd "
                             "leaves it alone; remove it, and fadd makes the file again"));
  fs::remove(file);
  // A file another process holds (a second fadd after the directory's lock
  // was lost on a file system without one) is left to it.
  const int other = ::open(file.c_str(), O_RDWR | O_CREAT, 0600);
  REQUIRE(other >= 0);
  REQUIRE(::flock(other, LOCK_EX | LOCK_NB) == 0);
  // flock locks belong to the open file description: this fd's lock blocks
  // the lock's own new open as it would another process's.
  kept = lock->keep_file();
  REQUIRE_FALSE(kept);
  CHECK_THAT(kept.error(), Catch::Contains("was replaced by a file another process holds locked ('fuser "));
  ::close(other);
  kept = lock->keep_file();
  REQUIRE(kept);
  CHECK(*kept);
}

TEST_CASE("instance lock: a hard link at the lock file's place is never written into", "[instance_lock]") {
  // Bug: a root fadd wrote its pid into another user's file linked there,
  // truncating it, at start and when making its lock file again.
  TempDir dir{"fad-lock"};
  const fs::path file = dir.path() / "fadd.lock";
  const fs::path victim = dir.path() / "theirs";
  { std::ofstream(victim) << "kept\n"; }
  fs::create_hard_link(victim, file);
  auto refused = InstanceLock::acquire(dir.path().string(), 0);
  REQUIRE_FALSE(refused);
  CHECK(refused.error() == file.string() +
                               " has another name (a hard link), so not fadd's lock file; remove it and start fadd "
                               "again");
  CHECK(text_of(victim) == "kept\n");

  fs::remove(file);
  auto lock = InstanceLock::acquire(dir.path().string(), 0);
  REQUIRE(lock);
  fs::remove(file);
  fs::create_hard_link(victim, file);
  auto kept = lock->keep_file();
  REQUIRE_FALSE(kept);
  CHECK_THAT(kept.error(), Catch::Contains("was replaced by something that has another name (a hard link)"));
  lock->note_stopping();  // not written there either
  CHECK(text_of(victim) == "kept\n");
}
