// Tests for common/compile_cache: a real directory in /tmp. Entries read back;
// a corrupted one is removed and counted; eviction keeps the size under the
// limit, least recently used first; concurrent writers never tear an entry;
// a group-writable directory is shared.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include <catch2/catch.hpp>

#include "common/compile_cache.h"
#include "common/hash.h"

using namespace fad;
namespace fs = std::filesystem;

namespace {

class ScratchDir {
 public:
  ScratchDir() {
    path_ = fs::temp_directory_path() /
            ("fad-cache-test-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string str() const { return path_.string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::unique_ptr<CompileCache> open_cache(const std::string& dir, std::uint64_t max = 1ull << 30) {
  auto c = CompileCache::open({dir, max});
  REQUIRE(c);
  return std::move(*c);
}

std::string key(int i) { return sha256_hex("key " + std::to_string(i)); }

fs::path result_file(const std::string& dir, const std::string& k) { return fs::path(dir) / "r" / k.substr(0, 2) / k; }

// What the file takes on disk, as du counts it.
std::uint64_t on_disk(const fs::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return static_cast<std::uint64_t>(st.st_blocks) * 512;
}

void set_age(const fs::path& p, int seconds_ago) {
  fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::seconds(seconds_ago));
}

}  // namespace

TEST_CASE("results and manifests read back and a missing key is a plain miss", "[compile_cache]") {
  ScratchDir dir;
  auto cache = open_cache(dir.str());
  CompileResult r{"obj", std::string("dep"), "out", "err"};
  REQUIRE(cache->put_result(key(1), r));
  auto back = cache->result(key(1));
  REQUIRE(back);
  CHECK(*back == r);
  CHECK_FALSE(cache->result(key(2)));
  CacheManifest m{{{key(1), {{"a.cu", "h"}}}}};
  REQUIRE(cache->put_manifest(key(3), m));
  CHECK(cache->manifest(key(3)) == m);
  auto stats = cache->stats();
  REQUIRE(stats);
  CHECK(stats->results == 1);
  CHECK(stats->manifests == 1);
  CHECK(stats->stored == 1);
  CHECK(stats->corrupt == 0);
  // Counted as du counts them: a small entry takes a whole block (the limit
  // is for the disk; counting content, 10,000 small entries took 16x it).
  const auto result_path = result_file(dir.str(), key(1));
  const auto manifest_path = dir.path() / "m" / key(3).substr(0, 2) / key(3);
  CHECK(stats->size_bytes == on_disk(result_path) + on_disk(manifest_path));
  CHECK(stats->size_bytes > fs::file_size(result_path) + fs::file_size(manifest_path));
}

TEST_CASE("a corrupted entry is detected, removed and counted", "[compile_cache]") {
  ScratchDir dir;
  auto cache = open_cache(dir.str());
  REQUIRE(cache->put_result(key(1), {"the object", std::nullopt, "", ""}));
  const auto file = result_file(dir.str(), key(1));
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(20);
    f.put('#');
  }
  CHECK_FALSE(cache->result(key(1)));
  CHECK_FALSE(fs::exists(file));
  CHECK(cache->stats()->corrupt == 1);
  // A truncated one too (a crash before fsync on a filesystem without ordering).
  REQUIRE(cache->put_result(key(2), {"the object", std::nullopt, "", ""}));
  fs::resize_file(result_file(dir.str(), key(2)), 10);
  CHECK_FALSE(cache->result(key(2)));
  CHECK(cache->stats()->corrupt == 2);
}

TEST_CASE("eviction keeps the directory under its limit and drops the least recently used", "[compile_cache]") {
  ScratchDir dir;
  const std::string object(1000, 'x');
  // Each entry holds a little over 1000 bytes and takes a block on disk; the
  // limit holds nine of them.
  std::uint64_t entry = 0;
  {
    ScratchDir one;
    REQUIRE(open_cache(one.str())->put_result(key(0), {object, std::nullopt, "", ""}));
    entry = on_disk(result_file(one.str(), key(0)));
  }
  REQUIRE(entry > encode_result({object, std::nullopt, "", ""}).size());
  auto cache = open_cache(dir.str(), entry * 9 + entry / 2);
  for (int i = 0; i < 9; ++i) {
    REQUIRE(cache->put_result(key(i), {object, std::nullopt, "", ""}));
    set_age(result_file(dir.str(), key(i)), 1000 - i);  // key(0) oldest
  }
  REQUIRE(cache->stats()->results == 9);
  // Using key(0) makes it the most recently used.
  REQUIRE(cache->result(key(0)));
  REQUIRE(cache->put_result(key(100), {object, std::nullopt, "", ""}));  // over the limit: evict to 90%
  auto stats = cache->stats();
  REQUIRE(stats);
  CHECK(stats->size_bytes <= (entry * 9 + entry / 2) / 10 * 9);
  CHECK(stats->evicted >= 2);
  CHECK(fs::exists(result_file(dir.str(), key(0))));
  CHECK(fs::exists(result_file(dir.str(), key(100))));
  CHECK_FALSE(fs::exists(result_file(dir.str(), key(1))));  // the oldest unused go first
  CHECK_FALSE(fs::exists(result_file(dir.str(), key(2))));
  CHECK(fs::exists(result_file(dir.str(), key(8))));
  for (int i = 1; i < 9; ++i) {
    // Whatever survived is newer than whatever was evicted.
    if (!fs::exists(result_file(dir.str(), key(i)))) {
      for (int j = 1; j < i; ++j) CHECK_FALSE(fs::exists(result_file(dir.str(), key(j))));
    }
  }
}

TEST_CASE("a result larger than half the limit is not stored", "[compile_cache]") {
  ScratchDir dir;
  auto cache = open_cache(dir.str(), 1000);
  REQUIRE(cache->put_result(key(1), {std::string(600, 'x'), std::nullopt, "", ""}));
  CHECK_FALSE(cache->result(key(1)));
}

TEST_CASE("concurrent writers of one key never leave a torn entry", "[compile_cache]") {
  ScratchDir dir;
  constexpr int kWriters = 4, kRounds = 40;
  // Writers in separate processes (as launchers are), each writing its own
  // large payload under the same key again and again while this process reads.
  std::vector<pid_t> writers;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      auto c = CompileCache::open({dir.str(), 1ull << 30});
      if (!c) ::_exit(2);
      const std::string payload(256 * 1024 + w, static_cast<char>('a' + w));
      for (int i = 0; i < kRounds; ++i)
        if (!(*c)->put_result(key(7), {payload, std::nullopt, "", std::to_string(w)})) ::_exit(1);
      ::_exit(0);
    }
    writers.push_back(pid);
  }
  auto reader = open_cache(dir.str());
  int seen = 0;
  std::map<pid_t, int> exits;
  while (exits.size() < writers.size()) {
    for (pid_t pid : writers) {
      int status = 0;
      if (!exits.count(pid) && ::waitpid(pid, &status, WNOHANG) == pid) exits[pid] = status;
    }
    if (auto r = reader->result(key(7))) {
      ++seen;
      const int w = std::stoi(r->stderr_text);
      CHECK(r->object == std::string(256 * 1024 + w, static_cast<char>('a' + w)));
    }
  }
  for (const auto& [pid, status] : exits) CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  CHECK(seen > 0);
  CHECK(reader->stats()->corrupt == 0);
  // No temporary file left behind.
  for (const auto& e : fs::recursive_directory_iterator(dir.path()))
    CHECK(e.path().filename().string().find(".tmp-") == std::string::npos);
}

TEST_CASE("a group-writable directory is shared: new files and directories stay group-writable", "[compile_cache]") {
  ScratchDir dir;
  ::chmod(dir.str().c_str(), 02775);
  const mode_t old_umask = ::umask(022);
  auto cache = open_cache(dir.str());
  REQUIRE(cache->put_result(key(1), {"o", std::nullopt, "", ""}));
  ::umask(old_umask);
  CHECK(cache->stats()->shared);
  struct stat st {};
  REQUIRE(::stat(result_file(dir.str(), key(1)).c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0664);
  REQUIRE(::stat(result_file(dir.str(), key(1)).parent_path().c_str(), &st) == 0);
  CHECK((st.st_mode & 02777) == 02775);
  // A private directory is left to the umask.
  ScratchDir mine;
  ::chmod(mine.str().c_str(), 0700);
  auto private_cache = open_cache(mine.str());
  CHECK_FALSE(private_cache->stats()->shared);
}

TEST_CASE("notes are checked and clear empties the cache and its counters", "[compile_cache]") {
  ScratchDir dir;
  auto cache = open_cache(dir.str());
  REQUIRE(cache->put_note("compiler-x", "nvcc 13.0\n"));
  CHECK(cache->note("compiler-x") == std::string("nvcc 13.0\n"));
  {
    std::fstream f(dir.path() / "c" / "compiler-x", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(70);
    f.put('X');
  }
  CHECK_FALSE(cache->note("compiler-x"));
  REQUIRE(cache->put_result(key(1), {"o", std::nullopt, "", ""}));
  cache->count(CacheEvent::hit);
  REQUIRE(cache->clear());
  auto stats = cache->stats();
  CHECK(stats->results == 0);
  CHECK(stats->hits == 0);
  CHECK(stats->size_bytes == 0);
  CHECK_FALSE(cache->result(key(1)));
}

TEST_CASE("clear removes what the cache wrote and nothing else in its directory", "[compile_cache]") {
  // `fad cache clear --cache-dir ~` by mistake: the home's own c/, r/, m/
  // and stats are not the cache's.
  ScratchDir dir;
  auto write = [&](const fs::path& rel, const std::string& text) {
    fs::create_directories((dir.path() / rel).parent_path());
    std::ofstream(dir.path() / rel) << text;
  };
  write("c/sub/code.c", "int main() {}\n");
  write("c/notes.txt", "mine\n");
  write("r/report.pdf", "mine\n");
  write("m/ab/shopping-list", "mine\n");
  write("stats", "my numbers 1 2 3\n");
  auto cache = open_cache(dir.str());
  REQUIRE(cache->clear());
  for (const char* kept : {"c/sub/code.c", "c/notes.txt", "r/report.pdf", "m/ab/shopping-list", "stats"})
    CHECK(fs::exists(dir.path() / kept));
  // Entries written beside them (the cache's counters replace that stats).
  const std::string note = "compiler-" + key(7);
  REQUIRE(cache->put_note(note, "nvcc 13.0\n"));
  REQUIRE(cache->put_result(key(1), {"o", std::nullopt, "", ""}));
  REQUIRE(cache->put_manifest(key(2), CacheManifest{}));
  REQUIRE(cache->clear());
  CHECK_FALSE(cache->result(key(1)));
  CHECK_FALSE(cache->note(note));
  CHECK_FALSE(fs::exists(result_file(dir.str(), key(1))));
  CHECK_FALSE(fs::exists(result_file(dir.str(), key(1)).parent_path()));
  CHECK_FALSE(fs::exists(dir.path() / "m" / key(2).substr(0, 2)));
  for (const char* kept : {"c/sub/code.c", "c/notes.txt", "r/report.pdf", "m/ab/shopping-list"})
    CHECK(fs::exists(dir.path() / kept));

  // Its own counters go.
  ScratchDir own;
  auto counted = open_cache(own.str());
  REQUIRE(counted->put_result(key(1), {"o", std::nullopt, "", ""}));
  counted->count(CacheEvent::hit);
  REQUIRE(fs::exists(own.path() / "stats"));
  REQUIRE(counted->clear());
  CHECK_FALSE(fs::exists(own.path() / "stats"));
  CHECK_FALSE(fs::exists(own.path() / "r"));
}

TEST_CASE("a directory that cannot be made is an error naming it", "[compile_cache]") {
  ScratchDir dir;
  std::ofstream(dir.path() / "file") << "x";
  auto c = CompileCache::open({(dir.path() / "file" / "cache").string(), 1000});
  REQUIRE_FALSE(c);
  CHECK(c.error().find((dir.path() / "file" / "cache").string()) != std::string::npos);
}
