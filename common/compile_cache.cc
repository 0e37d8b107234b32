// The compile cache's directory; see compile_cache.h. Layout:
//   DIR/r/ab/ab12...   results        DIR/m/ab/ab12...   manifests
//   DIR/c/NAME         notes          DIR/stats          counters and size
//   DIR/lock           flock'ed while the counters change or files are evicted
// Readers take no lock: a file is replaced by rename, so a reader sees the old
// or the new one, and one evicted under it stays readable through its open fd.
#include "common/file_read.h"
#include "common/compile_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <vector>

#include "common/hash.h"

namespace fad {

namespace fs = std::filesystem;

namespace {

/// No entry is larger (put_result stores none that is), so a reader never
/// holds more: a file grown past it is damage, not an entry.
constexpr std::uint64_t kMaxEntryBytes = 1ull << 30;

constexpr const char* kCounterNames[] = {"size", "hits", "misses", "uncacheable", "stored", "evicted", "corrupt"};
// A temporary file this old was left by a writer that died.
constexpr auto kStaleTemporary = std::chrono::hours(1);

class FileLock {
 public:
  explicit FileLock(int fd) : fd_(fd) {
    while (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {}
  }
  ~FileLock() {
    if (fd_ >= 0) ::flock(fd_, LOCK_UN);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

std::string errno_text() { return std::strerror(errno); }

bool write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

std::map<std::string, std::uint64_t> parse_counters(const std::string& text) {
  std::map<std::string, std::uint64_t> out;
  std::istringstream in(text);
  std::string name;
  std::uint64_t value = 0;
  while (in >> name >> value) out[name] = value;
  return out;
}

std::string format_counters(const std::map<std::string, std::uint64_t>& counters) {
  std::string out;
  for (const char* name : kCounterNames) {
    auto it = counters.find(name);
    out += std::string(name) + " " + std::to_string(it == counters.end() ? 0 : it->second) + "\n";
  }
  return out;
}

std::string temporary_name(const std::string& path) {
  static std::mt19937_64 rng{std::random_device{}()};
  return path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(rng() & 0xffffffff);
}

bool is_temporary(const fs::path& p) { return p.filename().string().find(".tmp-") != std::string::npos; }

struct FileInfo {
  fs::path path;
  std::uint64_t size;
  std::int64_t mtime_ns;
};

// What a file takes on disk, as du counts it: the size limit is for the
// disk, and small entries (manifests, small objects) each take a whole block
// (a cache of 10,000 such entries once took 16x its counted size).
std::uint64_t on_disk(const struct stat& st) { return static_cast<std::uint64_t>(st.st_blocks) * 512; }

std::int64_t mtime_ns(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

/// Entry files (results, manifests) under `dir`; stale temporaries are removed on the way.
std::vector<FileInfo> entry_files(const std::string& dir) {
  std::vector<FileInfo> out;
  const auto stale_before = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                (std::chrono::system_clock::now() - kStaleTemporary).time_since_epoch())
                                .count();
  for (const char* kind : {"r", "m"}) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(fs::path(dir) / kind, ec), end; !ec && it != end; it.increment(ec)) {
      struct stat st {};
      if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      if (is_temporary(it->path())) {
        if (mtime_ns(st) < stale_before) ::unlink(it->path().c_str());
        continue;
      }
      out.push_back({it->path(), on_disk(st), mtime_ns(st)});
    }
  }
  return out;
}

/// Replaces the counters file; the caller holds the lock.
void store_counters(const std::string& dir, bool shared, const std::map<std::string, std::uint64_t>& counters) {
  const std::string path = dir + "/stats";
  const std::string tmp = temporary_name(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return;  // counters are advisory: a full disk must not fail a compile
  if (shared) ::fchmod(fd, 0664);
  const bool ok = write_all(fd, format_counters(counters));
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) ::unlink(tmp.c_str());
}

std::map<std::string, std::uint64_t> load_counters(const std::string& dir) {
  return parse_counters(read_small_file(dir + "/stats"));
}

}  // namespace

CompileCache::CompileCache(CacheSettings settings) : settings_(std::move(settings)) {}

CompileCache::~CompileCache() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Result<std::unique_ptr<CompileCache>> CompileCache::open(const CacheSettings& settings) {
  if (settings.dir.empty()) return make_error("no compile cache directory configured (cache_dir)");
  std::error_code ec;
  fs::create_directories(settings.dir, ec);
  struct stat st {};
  if (::stat(settings.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return make_error("compile cache directory " + settings.dir +
                      " cannot be created: " + (ec ? ec.message() : errno_text()));
  std::unique_ptr<CompileCache> cache(new CompileCache(settings));
  cache->shared_ = (st.st_mode & S_IWGRP) != 0;
  const std::string lock = settings.dir + "/lock";
  // Never through a link: in a shared directory it could point anywhere.
  cache->lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (cache->lock_fd_ < 0)
    return make_error("compile cache directory " + settings.dir + " is not writable: " + errno_text() +
                      " (set cache_dir to a directory of yours, or cache_size to 0 to turn the cache off)");
  if (cache->shared_) ::fchmod(cache->lock_fd_, 0664);
  return cache;
}

std::string CompileCache::path_of(char kind, const std::string& key) const {
  return settings_.dir + "/" + kind + "/" + key.substr(0, 2) + "/" + key;
}

Status CompileCache::write_file(const std::string& path, const std::string& bytes) {
  const fs::path parent = fs::path(path).parent_path();
  make_dir(parent.parent_path());
  make_dir(parent);
  const std::string tmp = temporary_name(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return make_error("cannot write to the compile cache " + parent.string() + ": " + errno_text());
  if (shared_) ::fchmod(fd, 0664);
  struct stat written {};
  const bool ok = write_all(fd, bytes) && ::fsync(fd) == 0 && ::fstat(fd, &written) == 0;
  const std::string why = errno_text();
  ::close(fd);
  if (!ok) {
    ::unlink(tmp.c_str());
    return make_error("cannot write to the compile cache " + parent.string() + ": " + why);
  }
  struct stat old {};
  const std::int64_t old_size = ::stat(path.c_str(), &old) == 0 ? static_cast<std::int64_t>(on_disk(old)) : 0;
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string rename_why = errno_text();
    ::unlink(tmp.c_str());
    return make_error("cannot write to the compile cache " + parent.string() + ": " + rename_why);
  }
  add_size(static_cast<std::int64_t>(on_disk(written)) - old_size);
  return ok_status();
}

void CompileCache::make_dir(const fs::path& dir) const {
  // Setgid and group-writable in a shared cache, whatever the umask.
  if (::mkdir(dir.c_str(), 0777) == 0 && shared_) ::chmod(dir.c_str(), 02775);
}

std::optional<std::string> CompileCache::read_file(const std::string& path) {
  const std::uint64_t cap = std::min(settings_.max_bytes, kMaxEntryBytes);
  auto bytes = read_regular_file(path, static_cast<std::size_t>(cap));
  if (!bytes) {
    // Not an entry: a FIFO (read, it would block the compile), a device or a
    // link to one (/dev/zero would exhaust its memory), a file grown past any
    // entry. Damage like a bad checksum: counted and removed, so the next
    // compile stores a good one. An entry this user may not read stays.
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && (!S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) > cap)) {
      ::unlink(path.c_str());
      count(CacheEvent::corrupt);
    }
    return std::nullopt;
  }
  // Least recently used: a use refreshes the modification time eviction sorts by.
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
  return std::move(*bytes);
}

void CompileCache::add_size(std::int64_t delta) {
  bool over = false;
  {
    FileLock lock(lock_fd_);
    auto counters = load_counters(settings_.dir);
    auto& size = counters["size"];
    size = delta < 0 && static_cast<std::uint64_t>(-delta) > size ? 0 : size + static_cast<std::uint64_t>(delta);
    over = size > settings_.max_bytes;
    store_counters(settings_.dir, shared_, counters);
  }
  if (over) evict();
}

void CompileCache::count(CacheEvent event) {
  static const std::map<CacheEvent, const char*> kNames{{CacheEvent::hit, "hits"},
                                                        {CacheEvent::miss, "misses"},
                                                        {CacheEvent::uncacheable, "uncacheable"},
                                                        {CacheEvent::stored, "stored"},
                                                        {CacheEvent::corrupt, "corrupt"}};
  FileLock lock(lock_fd_);
  auto counters = load_counters(settings_.dir);
  ++counters[kNames.at(event)];
  store_counters(settings_.dir, shared_, counters);
}

std::optional<CacheManifest> CompileCache::manifest(const std::string& call_key) {
  const std::string path = path_of('m', call_key);
  auto bytes = read_file(path);
  if (!bytes) return std::nullopt;
  auto m = decode_manifest(*bytes);
  if (!m) {
    ::unlink(path.c_str());
    count(CacheEvent::corrupt);
    return std::nullopt;
  }
  return *m;
}

Status CompileCache::put_manifest(const std::string& call_key, const CacheManifest& manifest) {
  return write_file(path_of('m', call_key), encode_manifest(manifest));
}

std::optional<CompileResult> CompileCache::result(const std::string& result_key) {
  const std::string path = path_of('r', result_key);
  auto bytes = read_file(path);
  if (!bytes) return std::nullopt;
  auto r = decode_result(*bytes);
  if (!r) {
    ::unlink(path.c_str());
    count(CacheEvent::corrupt);
    return std::nullopt;
  }
  return *r;
}

Status CompileCache::put_result(const std::string& result_key, const CompileResult& result) {
  const std::string bytes = encode_result(result);
  // Half the cache would be evicted for one entry; past kMaxEntryBytes, no reader would take it.
  if (bytes.size() > settings_.max_bytes / 2 || bytes.size() > kMaxEntryBytes) return ok_status();
  auto written = write_file(path_of('r', result_key), bytes);
  if (written) count(CacheEvent::stored);
  return written;
}

std::optional<std::string> CompileCache::note(const std::string& name) {
  auto text = read_regular_file(settings_.dir + "/c/" + name);
  if (!text || text->size() < 65 || (*text)[64] != '\n') return std::nullopt;
  std::string body = text->substr(65);
  if (sha256_hex(body) != text->substr(0, 64)) return std::nullopt;
  return body;
}

Status CompileCache::put_note(const std::string& name, const std::string& text) {
  const std::string path = settings_.dir + "/c/" + name;
  make_dir(settings_.dir + "/c");
  const std::string tmp = temporary_name(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return make_error("cannot write to the compile cache " + settings_.dir + ": " + errno_text());
  if (shared_) ::fchmod(fd, 0664);
  const bool ok = write_all(fd, sha256_hex(text) + "\n" + text);
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return make_error("cannot write to the compile cache " + settings_.dir + ": " + errno_text());
  }
  return ok_status();
}

void CompileCache::evict() {
  FileLock lock(lock_fd_);
  auto files = entry_files(settings_.dir);
  std::sort(files.begin(), files.end(), [](const FileInfo& a, const FileInfo& b) { return a.mtime_ns < b.mtime_ns; });
  std::uint64_t total = 0;
  for (const auto& f : files) total += f.size;
  const std::uint64_t target = settings_.max_bytes / 10 * 9;
  std::uint64_t evicted = 0;
  for (const auto& f : files) {
    if (total <= target) break;
    if (::unlink(f.path.c_str()) == 0 || errno == ENOENT) {
      total -= f.size;
      ++evicted;
    }
  }
  // The counted size drifts when two writers replace the same file; the walk is exact.
  auto counters = load_counters(settings_.dir);
  counters["size"] = total;
  counters["evicted"] += evicted;
  store_counters(settings_.dir, shared_, counters);
}

Result<CacheStats> CompileCache::stats() {
  CacheStats s;
  s.dir = settings_.dir;
  s.shared = shared_;
  s.max_bytes = settings_.max_bytes;
  for (const auto& f : entry_files(settings_.dir)) {
    s.size_bytes += f.size;
    (f.path.parent_path().parent_path().filename() == "r" ? s.results : s.manifests) += 1;
  }
  auto counters = load_counters(settings_.dir);
  s.hits = counters["hits"];
  s.misses = counters["misses"];
  s.uncacheable = counters["uncacheable"];
  s.stored = counters["stored"];
  s.evicted = counters["evicted"];
  s.corrupt = counters["corrupt"];
  return s;
}

namespace {

bool is_hex_key(std::string_view name, std::size_t length) {
  return name.size() == length && name.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// A name the cache gives a file of `kind` in its subdirectory: a 64-digit key
// (c/: "compiler-" and one), or a temporary of one being written.
bool cache_file_name(char kind, std::string name) {
  if (const auto tmp = name.find(".tmp-"); tmp != std::string::npos) name.resize(tmp);
  if (kind == 'c') return name.rfind("compiler-", 0) == 0 && is_hex_key(std::string_view(name).substr(9), 64);
  return is_hex_key(name, 64);
}

// Whether `text` is a counters file, as store_counters() writes it.
bool counters_text(const std::string& text) {
  std::istringstream in(text);
  std::string name, value;
  while (in >> name >> value)
    if (std::find(std::begin(kCounterNames), std::end(kCounterNames), name) == std::end(kCounterNames) ||
        value.find_first_not_of("0123456789") != std::string::npos)
      return false;
  return in.eof();
}

}  // namespace

// Only what the cache wrote goes: `--cache-dir` (or FAD_CACHE_DIR) naming
// another directory by mistake ($HOME) must not cost its r/, m/ or c/.
Status CompileCache::clear() {
  FileLock lock(lock_fd_);
  auto fail = [&](const std::string& path) {
    return make_error("cannot clear the compile cache " + settings_.dir + ": " + path + ": " + errno_text());
  };
  for (char kind : {'r', 'm', 'c'}) {
    const fs::path top = fs::path(settings_.dir) / std::string(1, kind);
    std::error_code ec;
    std::vector<fs::path> files, dirs;
    for (fs::directory_iterator it(top, ec), end; !ec && it != end; it.increment(ec)) {
      struct stat st {};
      if (::lstat(it->path().c_str(), &st) != 0) continue;
      const std::string name = it->path().filename().string();
      if (kind == 'c') {
        if (S_ISREG(st.st_mode) && cache_file_name('c', name)) files.push_back(it->path());
        continue;
      }
      if (!S_ISDIR(st.st_mode) || !is_hex_key(name, 2)) continue;
      dirs.push_back(it->path());
      std::error_code sub_ec;
      for (fs::directory_iterator f(it->path(), sub_ec), fend; !sub_ec && f != fend; f.increment(sub_ec)) {
        const std::string file = f->path().filename().string();
        // Not followed: a link or directory at an entry's name is not the cache's.
        if (cache_file_name(kind, file) && file.rfind(name, 0) == 0 && f->is_regular_file(sub_ec) &&
            !f->is_symlink(sub_ec))
          files.push_back(f->path());
      }
    }
    for (const auto& f : files)
      if (::unlink(f.c_str()) != 0 && errno != ENOENT) return fail(f.string());
    // Emptied directories go; one holding anything else stays, with it.
    for (const auto& d : dirs) ::rmdir(d.c_str());
    ::rmdir(top.c_str());
  }
  const std::string stats_path = settings_.dir + "/stats";
  if (auto text = read_whole_file(stats_path); text && counters_text(*text))
    if (::unlink(stats_path.c_str()) != 0 && errno != ENOENT) return fail(stats_path);
  return ok_status();
}

}  // namespace fad
