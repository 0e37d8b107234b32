// Compiler probing; see toolchain.h.
#include "daemon/toolchain.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <sstream>
#include <thread>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "common/compiler_identity.h"
#include "common/launch_protocol.h"
#include "common/text.h"
#include "daemon/async_capture.h"

namespace fad {

namespace asio = boost::asio;

namespace {
Error not_on_path(const std::string& name) {
  // Clients send a name their user's PATH lacks as it is: the PATH here is fadd's.
  return Error{"compiler '" + name + "' not found on PATH (fadd's) or in /usr/local/cuda/bin; pass --nvcc PATH"};
}

/// The file and every directory above it searchable (executable) by others.
bool others_can_pass(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || (st.st_mode & S_IXOTH) == 0) return false;
  for (auto dir = path.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    if (::stat(dir.c_str(), &st) != 0 || (st.st_mode & S_IXOTH) == 0) return false;
    if (dir == dir.root_path()) break;
  }
  return true;
}

/// Whether any user may reach and run `path`, by the way it is named and,
/// through a link, where it leads.
bool others_can_run(const std::filesystem::path& path) {
  std::error_code ec;
  const auto target = std::filesystem::canonical(path, ec);
  return !ec && others_can_pass(path) && others_can_pass(target);
}

/// A bare name on fadd's PATH (then /usr/local/cuda/bin) as another user
/// finds it: the first that every user may run. Skipping the others, not
/// stopping at them, keeps a closed directory early on fadd's PATH from
/// hiding an open toolkit later on it.
Result<std::string> resolve_for_others(const std::string& name) {
  auto found = find_nvcc_here(name, others_can_run);
  if (!found.empty()) return found;
  return not_on_path(name);
}
}  // namespace

Result<std::string> resolve_executable(const std::string& name) {
  auto found = find_nvcc_here(name);
  if (!found.empty()) return found;
  if (name.find('/') != std::string::npos) return make_error("compiler '" + name + "' is not an executable file");
  return not_on_path(name);
}

Result<Toolchain> toolchain_from_output(const std::string& path, const std::string& version_output,
                                        const std::string& arch_list_output) {
  Toolchain tc;
  tc.path = path;
  std::stringstream ss(version_output);
  // Kept with every unit and sent to every user: as long as a launch's compiler_version may be.
  for (std::string line; std::getline(ss, line);)
    if (!line.empty()) tc.version = utf8_prefix(line, kMaxCompilerVersionBytes);
  tc.archs = parse_nvcc_arch_list(arch_list_output);
  if (tc.archs.empty())
    return make_error(
        path + " --list-gpu-arch listed no architectures: is it nvcc (or a wrapper that passes its options on)?");
  return tc;
}

namespace {
// Lookup threads at once, however young: a burst of submits naming a hung
// path, all within `slow_lookup`, must not start threads without end.
constexpr std::size_t kMaxLookupThreads = 64;

std::string stat_line(const std::filesystem::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return p.string() + " absent\n";
  return p.string() + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + "\n";
}
}  // namespace

std::string compiler_file_identity(const std::string& path) {
  const std::filesystem::path nvcc(path);
  return stat_line(nvcc) + stat_line(nvcc.parent_path() / "nvcc.profile");
}

Result<CompilerFile> locate_compiler(const std::string& name, bool as_other) {
  // A name found on fadd's PATH in a directory the user may not enter would
  // fail their probe with "Permission denied", telling them it is there: to
  // them it is not on that PATH.
  const bool bare = name.find('/') == std::string::npos;
  auto path = as_other && bare ? resolve_for_others(name) : resolve_executable(name);
  std::error_code ec;
  if (!path && as_other && !bare) path = std::filesystem::absolute(name, ec).string();
  if (!path) return Error{path.error()};
  struct stat st {};
  if (::stat(path->c_str(), &st) != 0 && !as_other) return make_error("compiler '" + *path + "' cannot be examined");
  return CompilerFile{*path, static_cast<std::int64_t>(st.st_size),
                      static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                      compiler_file_identity(*path)};
}

/// One compiler being probed: its two runs, one after the other, and everyone waiting.
struct ToolchainProber::Probe {
  std::vector<ToolchainCallback> waiting;
  std::shared_ptr<AsyncCapture> run;
  std::string version_output;
};

/// Shared with the locating threads, which may outlive the prober: they post
/// to the loop only while it lives (the loop outlives the prober). `inside`:
/// the lookups whose threads are still inside the file system calls, each
/// with its user and start; a finished one leaves at once, even before the
/// loop has taken its answer.
struct ToolchainProber::Bridge {
  std::mutex mutex;
  bool alive = true;
  std::map<std::uint64_t, std::pair<uid_t, std::chrono::steady_clock::time_point>> inside;

  /// Lookups inside for longer than `slow`: all, and `uid`'s.
  std::pair<std::size_t, std::size_t> slow_ones(uid_t uid, std::chrono::steady_clock::duration slow) const {
    const auto now = std::chrono::steady_clock::now();
    std::size_t all = 0, mine = 0;
    for (const auto& [id, who] : inside)
      if (now - who.second >= slow) {
        ++all;
        mine += who.first == uid;
      }
    return {all, mine};
  }
};

ToolchainProber::ToolchainProber(asio::io_context& io, std::chrono::milliseconds timeout, std::size_t max_in_flight,
                                 std::string exec_helper, CompilerLocator locator,
                                 std::chrono::milliseconds slow_lookup)
    : io_(io),
      timeout_(timeout),
      max_in_flight_(max_in_flight),
      exec_helper_(std::move(exec_helper)),
      locator_(std::move(locator)),
      slow_lookup_(slow_lookup),
      alive_(std::make_shared<bool>(true)),
      bridge_(std::make_shared<Bridge>()) {}

ToolchainProber::~ToolchainProber() {
  {
    std::lock_guard lock(bridge_->mutex);
    bridge_->alive = false;
  }
  locating_work_.reset();
  lookups_.clear();  // on the loop's thread: their callbacks never run
  *alive_ = false;
  probes_.clear();  // drops the captures: their programs are killed, no callback runs
}

std::size_t ToolchainProber::locating() const {
  std::lock_guard lock(bridge_->mutex);
  return bridge_->inside.size();
}

void ToolchainProber::answer_soon(Result<Toolchain> result, ToolchainCallback done) {
  asio::post(io_, [alive = std::weak_ptr<bool>(alive_), done = std::move(done), result = std::move(result)] {
    if (alive.lock()) done(result);
  });
}

void ToolchainProber::get(const ToolchainQuery& query, ToolchainCallback done) {
  const uid_t uid = query.run_as ? query.run_as->uid : ::geteuid();
  // Only lookups that take long count against the limits: a burst of
  // submits whose compilers answer at once is never refused.
  const std::uint64_t id = ++lookup_ids_;
  {
    std::lock_guard lock(bridge_->mutex);
    const auto [all, mine] = bridge_->slow_ones(uid, slow_lookup_);
    if (bridge_->inside.size() >= kMaxLookupThreads)
      return answer_soon(make_error("fadd is looking for " + std::to_string(bridge_->inside.size()) +
                                    " compilers at once, the most it does; submit again in a moment"),
                         std::move(done));
    if (all >= kMaxLocating)
      return answer_soon(make_error("fadd is still looking for " + std::to_string(all) +
                                    " compilers (a filesystem that does not answer?); submit again later"),
                         std::move(done));
    if (mine >= kMaxLocatingPerUser)
      return answer_soon(make_error("fadd is still looking for " + std::to_string(mine) +
                                    " compilers you named (a filesystem that does not answer?); submit again later"),
                         std::move(done));
    bridge_->inside.emplace(id, std::pair{uid, std::chrono::steady_clock::now()});
  }
  // fadd looks at a path as itself (root): a user who cannot reach it must
  // not learn from the answer whether it exists. Their probe, run as them,
  // then fails as it would for them ("Permission denied").
  const bool as_other = query.run_as && query.run_as->uid != ::geteuid();
  // The thread carries only an id: the callback stays here, and is run or
  // destroyed on the loop's thread whatever the lookup does.
  lookups_.emplace(id, Lookup{query, std::move(done)});
  try {
    std::thread([this, bridge = bridge_, locator = locator_, name = query.nvcc, as_other, id] {
      Result<CompilerFile> file = make_error("compiler '" + name + "' could not be looked up");
      try {
        file = locator(name, as_other);
      } catch (const std::exception& e) {
        file = make_error("compiler '" + name + "' could not be looked up: " + e.what());
      }
      std::lock_guard lock(bridge->mutex);
      bridge->inside.erase(id);
      if (!bridge->alive) return;
      asio::post(io_, [this, bridge, id, file = std::move(file)]() mutable {
        if (!bridge->alive) return;  // only the loop's thread clears it: no lock needed here
        located(id, std::move(file));
      });
    }).detach();
  } catch (const std::system_error& e) {
    {
      std::lock_guard lock(bridge_->mutex);
      bridge_->inside.erase(id);
    }
    auto waiting = std::move(lookups_.at(id).done);
    lookups_.erase(id);
    return answer_soon(make_error(std::string("fadd cannot start a thread to look for the compiler: ") + e.what() +
                                  "; submit again later"),
                       std::move(waiting));
  }
  if (lookups_.size() == 1) locating_work_.emplace(io_.get_executor());  // io.run() waits for the answer
}

void ToolchainProber::located(std::uint64_t id, Result<CompilerFile> file) {
  auto it = lookups_.find(id);
  if (it == lookups_.end()) return;
  const ToolchainQuery query = std::move(it->second.query);
  ToolchainCallback done = std::move(it->second.done);
  lookups_.erase(it);
  if (lookups_.empty()) locating_work_.reset();
  const uid_t uid = query.run_as ? query.run_as->uid : ::geteuid();
  if (!file) return done(Error{file.error()});
  // Every answer carries the files as just found, cached or not.
  done = [done = std::move(done), identity = file->identity](Result<Toolchain> result) {
    if (result) result->file_identity = identity;
    done(std::move(result));
  };
  const std::int64_t size = file->size;
  const std::int64_t mtime_ns = file->mtime_ns;
  const Key key{file->path, uid};
  if (auto it = cache_.find(key); it != cache_.end()) {
    // A compiler replaced in place (an upgrade) is probed again.
    if (it->second.size == size && it->second.mtime_ns == mtime_ns) {
      it->second.used = ++uses_;
      return done(it->second.toolchain);
    }
    cache_.erase(it);
  }
  if (auto it = probes_.find(key); it != probes_.end()) {
    it->second->waiting.push_back(std::move(done));
    return;
  }
  if (probes_.size() >= max_in_flight_)
    return done(make_error("fadd is probing " + std::to_string(probes_.size()) +
                           " compilers already; submit again once they answered"));
  std::size_t mine = 0;
  for (const auto& [k, p] : probes_) mine += k.uid == key.uid;
  if (mine >= kMaxInFlightPerUser)
    return done(make_error("fadd is probing " + std::to_string(mine) +
                           " compilers for you already; submit again once they answered"));
  auto probe = std::make_shared<Probe>();
  probe->waiting.push_back(std::move(done));
  probes_.emplace(key, probe);
  const std::string exe = file->path;
  const CaptureOptions options{timeout_, 64 * 1024, query.run_as, exec_helper_, cgroups_};
  // Two runs in turn; each callback finds the probe through the map, so a
  // prober being destroyed simply never continues.
  probe->run = AsyncCapture::start(
      io_, {exe, "--version"}, options,
      [this, key, exe, options, size, mtime_ns, alive = std::weak_ptr<bool>(alive_)](Result<std::string> version) {
        if (!alive.lock()) return;
        auto it = probes_.find(key);
        if (it == probes_.end()) return;
        if (!version)
          return finish(key, make_error("cannot probe compiler: " + one_line(version.error())), size, mtime_ns);
        it->second->version_output = *version;
        it->second->run = AsyncCapture::start(
            io_, {exe, "--list-gpu-arch"}, options, [this, key, exe, size, mtime_ns, alive](Result<std::string> list) {
              if (!alive.lock()) return;
              auto again = probes_.find(key);
              if (again == probes_.end()) return;
              if (!list)
                return finish(key, make_error("cannot list the archs of " + exe + ": " + one_line(list.error())), size,
                              mtime_ns);
              finish(key, toolchain_from_output(exe, again->second->version_output, *list), size, mtime_ns);
            });
      });
}

void ToolchainProber::finish(const Key& key, Result<Toolchain> result, std::int64_t size, std::int64_t mtime_ns) {
  auto it = probes_.find(key);
  if (it == probes_.end()) return;
  auto probe = it->second;  // keeps the capture alive until this handler returns
  probes_.erase(it);
  if (result) {
    if (cache_.size() >= kMaxCached && !cache_.count(key)) {
      auto oldest = std::min_element(cache_.begin(), cache_.end(),
                                     [](const auto& a, const auto& b) { return a.second.used < b.second.used; });
      cache_.erase(oldest);
    }
    cache_[key] = Cached{*result, size, mtime_ns, ++uses_};
  } else
    spdlog::warn("{}", printable("probing " + key.path + ": " + result.error()));
  for (auto& done : probe->waiting) done(result);
}

}  // namespace fad
