// The launcher's compile cache; see launch_cache.h.
#include "client/launch_cache.h"

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
  if (auto stored = call_->store(started, exit.stdout_text, exit.stderr_text); !stored)
    std::cerr << "fad: not stored in the compile cache: " << stored.error() << "\n";
}

}  // namespace fad::client
