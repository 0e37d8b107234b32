// The launcher's compile cache; see launch_cache.h.
#include "client/launch_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "client/launcher.h"
#include "common/compiler_identity.h"

namespace fad::client {

namespace fs = std::filesystem;

namespace {
void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}
}  // namespace

std::string compiler_program(const std::string& argv0, const std::string& cwd) {
  const char* path = std::getenv("PATH");
  std::string program = find_program(argv0, path ? path : "", cwd);
  if (program.empty()) return {};
  std::error_code ec;
  // fad's own shim stands for the real nvcc; identify that one.
  if (fs::equivalent(program, self_exe(), ec)) return real_nvcc(fs::path(program).parent_path().string());
  return program;
}

std::unique_ptr<LaunchCache> LaunchCache::open(const CacheSettings& settings, const std::vector<std::string>& argv,
                                               const std::string& cwd) {
  if (settings.max_bytes == 0 || argv.empty()) return nullptr;
  auto cache = CompileCache::open(settings);
  if (!cache) {
    std::cerr << "fad: " << cache.error() << "\n";
    return nullptr;
  }
  std::unique_ptr<LaunchCache> out(new LaunchCache());
  out->dir_ = settings.dir;
  out->cache_ = std::move(*cache);
  out->call_ =
      std::make_unique<CachedCompile>(*out->cache_, argv, cwd, process_env(), compiler_program(argv.front(), cwd));
  return out;
}

bool LaunchCache::restore() {
  auto hit = call_->restore();
  if (!hit) return false;
  write_all(1, hit->stdout_text);
  write_all(2, hit->stderr_text);
  return true;
}

void LaunchCache::store(std::chrono::system_clock::time_point started, const CompilerExit& exit) {
  if (!call_->cacheable() || exit.code != 0 || exit.signaled || !exit.complete) return;
  // A full disk fails every store: said once per ten minutes per cache, not
  // on the stderr of each of a build's hundreds of compiles.
  constexpr std::chrono::minutes kSayEvery{10};
  if (auto stored = call_->store(started, exit.stdout_text, exit.stderr_text);
      !stored && due_again((fs::path(dir_) / "said-not-stored").string(), kSayEvery))
    std::cerr << "fad: not stored in the compile cache: " << stored.error()
              << " (said once in 10 minutes; the compile itself succeeded)\n";
}

bool due_again(const std::string& mark, std::chrono::seconds every) {
  std::error_code ec;
  const auto last = fs::last_write_time(mark, ec);
  if (!ec && fs::file_time_type::clock::now() - last < every) return false;
  // O_NOFOLLOW: the mark never touches a file a link in the cache leads to.
  const int fd = ::open(mark.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd >= 0) {
    ::futimens(fd, nullptr);
    ::close(fd);
  }
  return true;
}

}  // namespace fad::client
