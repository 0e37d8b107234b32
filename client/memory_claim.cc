// Machine-wide memory claims; see memory_claim.h.
#include "client/memory_claim.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "common/file_read.h"
#include "common/meminfo.h"
#include "common/size.h"

namespace fad::client {

namespace fs = std::filesystem;

namespace {

constexpr auto kRecheck = std::chrono::milliseconds(250);
// The directory lock only keeps two waiting launchers from admitting into the
// same free memory at once. Anyone who can read the lock file can hold it, so
// a launcher waits this long for it at most, then decides without it.
constexpr auto kLockPatience = std::chrono::seconds(2);
// A claim file that is being made: locked and written first, then renamed to
// claim-*, so no scan ever sees a claim before it is locked.
constexpr std::string_view kMakingPrefix = ".making-";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A value of a memory.stat file ("total_inactive_file 123" lines).
std::uint64_t stat_value(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string name;
  std::uint64_t value = 0;
  while (in >> name >> value)
    if (name == key) return value;
  return 0;
}

class DirLock {
 public:
  explicit DirLock(const std::string& dir) {
    const std::string path = dir + "/lock";
    fd_ = open_regular_unlinked(path, O_CREAT);
    if (fd_ < 0) return;
    const auto give_up = std::chrono::steady_clock::now() + kLockPatience;
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0 && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ~DirLock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_ = -1;
};

std::string claim_name() {
  static std::mt19937_64 rng{std::random_device{}()};
  return "claim-" + std::to_string(::getpid()) + "-" + std::to_string(rng() & 0xffffffff);
}

}  // namespace

bool fallback_admits(const FallbackView& view, std::uint64_t need) {
  if (view.claims.empty()) return true;
  std::uint64_t claimed = need;
  for (auto c : view.claims) claimed += c;
  return view.available > view.reserve && claimed <= view.available - view.reserve;
}

FallbackView read_fallback_memory(const Reserve& reserve) {
  FallbackView view;
  std::uint64_t total = 0;
  if (auto mem = parse_meminfo(read_text("/proc/meminfo"))) {
    view.available = mem->available;
    total = mem->total;
  }
  // In a memory cgroup (a container, a CI job, a test) its limit binds first.
  bool v2 = false;
  if (auto rel = parse_proc_cgroup_memory_path(read_text("/proc/self/cgroup"), &v2)) {
    const std::string dir = std::string(v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory") + (*rel == "/" ? "" : *rel);
    auto limit = parse_cgroup_limit(read_text(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes")));
    auto usage = parse_cgroup_value(read_text(dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes")));
    if (limit && *limit && **limit < total && usage) {
      // Page cache the kernel can drop is not in the way: the working set is.
      const std::uint64_t inactive =
          stat_value(read_text(dir + "/memory.stat"), v2 ? "inactive_file" : "total_inactive_file");
      const std::uint64_t working = *usage > inactive ? *usage - inactive : 0;
      const std::uint64_t left = **limit > working ? **limit - working : 0;
      view.available = std::min(view.available, left);
      total = **limit;
    }
  }
  view.reserve = reserve.resolve(total);
  return view;
}

bool usable_claims_dir(const std::string& dir, uid_t uid) {
  // Not through a link another user planted (the directory is in /tmp), and,
  // for root, one only root owns: root creates and removes files in it.
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  if (uid == 0 && st.st_uid != 0) return false;
  // Shared: sticky, so each removes only its own, and owned by root, since
  // a sticky directory's owner may still remove anyone's claims in it.
  if (st.st_uid != uid && (st.st_uid != 0 || !(st.st_mode & S_ISVTX))) return false;
  return ::access(dir.c_str(), W_OK | X_OK) == 0;
}

std::string claims_dir() {
  if (const char* dir = std::getenv("FAD_CLAIMS_DIR"); dir && *dir) return dir;
  const std::string shared = "/tmp/fad-claims";
  const uid_t uid = ::getuid();
  if (::mkdir(shared.c_str(), 0777) == 0) ::chmod(shared.c_str(), 01777);  // sticky: each removes only its own
  if (usable_claims_dir(shared, uid)) return shared;
  const std::string own = shared + "-" + std::to_string(uid);
  ::mkdir(own.c_str(), 0700);
  if (usable_claims_dir(own, uid)) return own;
  // Both taken by someone else: a directory of this user's own, at home.
  const char* home = std::getenv("HOME");
  const std::string at_home = std::string(home && *home ? home : "/nonexistent") + "/.fad-claims";
  ::mkdir(at_home.c_str(), 0700);
  return at_home;
}

std::vector<std::uint64_t> MemoryClaim::live_claims(const std::string& dir, std::size_t* own) {
  std::vector<std::uint64_t> out;
  if (own) *own = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool making = name.rfind(kMakingPrefix, 0) == 0;
    if (name.rfind("claim-", 0) != 0 && !making) continue;
    const int fd = open_regular_unlinked(it->path().string());
    if (fd < 0) continue;
    if (making) {
      // Its maker locks it a moment after creating it and renames it a moment
      // later: only one left unlocked for a minute was abandoned.
      struct stat st {};
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::fstat(fd, &st) == 0 && ::time(nullptr) - st.st_mtime > 60)
        ::unlink(it->path().c_str());
      ::close(fd);
      continue;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      // Its owner is gone: not a claim any more.
      ::unlink(it->path().c_str());
      ::close(fd);
      continue;
    }
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    struct stat st {};
    if (own && ::fstat(fd, &st) == 0 && st.st_uid == ::getuid()) ++*own;
    ::close(fd);
    out.push_back(n > 0 ? std::strtoull(buf, nullptr, 10) : 0);
  }
  return out;
}

std::optional<MemoryClaim> MemoryClaim::create_locked(const std::string& dir, std::uint64_t bytes) {
  MemoryClaim claim;
  const std::string name = claim_name();
  const std::string making = dir + "/" + std::string(kMakingPrefix) + name;
  claim.fd_ = ::open(making.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (claim.fd_ < 0) return std::nullopt;
  claim.path_ = making;  // removed by the destructor if anything below fails
  ::flock(claim.fd_, LOCK_EX);
  const std::string text = std::to_string(bytes) + "\n";
  if (::write(claim.fd_, text.data(), text.size()) != static_cast<ssize_t>(text.size())) return std::nullopt;
  const std::string path = dir + "/" + name;
  if (::rename(making.c_str(), path.c_str()) != 0) return std::nullopt;
  claim.path_ = path;
  return claim;
}

std::optional<MemoryClaim> MemoryClaim::hold(const std::string& dir, std::uint64_t bytes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  // No directory lock: the claim appears already locked (create_locked), and
  // fadd, not the fallback, admitted this compile.
  return create_locked(dir, bytes);
}

std::optional<MemoryClaim> MemoryClaim::admit(const std::string& dir, std::uint64_t bytes,
                                              const std::function<FallbackView()>& view,
                                              const std::function<void(const std::string&)>& on_wait,
                                              std::chrono::milliseconds patience) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  bool told = false;
  auto others_since = std::chrono::steady_clock::time_point::max();  // waiting on other users' claims alone
  for (;;) {
    {
      const DirLock lock(dir);  // advisory: decided without it when it cannot be had
      FallbackView v = view();
      std::size_t own = 0;
      v.claims = live_claims(dir, &own);
      if (fallback_admits(v, bytes)) return create_locked(dir, bytes);
      const auto now = std::chrono::steady_clock::now();
      others_since = own > 0 ? std::chrono::steady_clock::time_point::max() : std::min(others_since, now);
      if (others_since != std::chrono::steady_clock::time_point::max() && now - others_since >= patience) {
        on_wait("waited " +
                std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - others_since).count()) +
                " s for other users' compiles alone; starting this one");
        return create_locked(dir, bytes);
      }
      if (!told) {
        std::uint64_t claimed = 0;
        for (auto c : v.claims) claimed += c;
        on_wait(std::to_string(v.claims.size()) + " compile(s) hold " + format_size(claimed) + ", " +
                format_size(v.available) + " available, this one needs " + format_size(bytes));
        told = true;
      }
    }
    std::this_thread::sleep_for(kRecheck);
  }
}

MemoryClaim::MemoryClaim(MemoryClaim&& o) noexcept : path_(std::move(o.path_)), fd_(std::exchange(o.fd_, -1)) {}

MemoryClaim::~MemoryClaim() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());
  ::close(fd_);
}

}  // namespace fad::client
