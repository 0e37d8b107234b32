// Compiler probing; see toolchain.h.
#include "daemon/toolchain.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/stdio.hpp>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <unistd.h>

namespace fad {

namespace asio = boost::asio;
namespace bp = boost::process::v2;

Result<std::string> resolve_executable(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) != 0) return make_error("compiler '" + name + "' is not an executable file");
    return std::filesystem::absolute(name).string();
  }
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  path += ":/usr/local/cuda/bin";
  std::stringstream ss(path);
  for (std::string dir; std::getline(ss, dir, ':');) {
    if (dir.empty()) continue;
    auto candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return make_error("compiler '" + name + "' not found on PATH or in /usr/local/cuda/bin; pass --nvcc PATH");
}

Result<std::string> run_capture(const std::vector<std::string>& argv, int timeout_s) {
  asio::io_context ctx;
  asio::readable_pipe out(ctx);
  boost::system::error_code ec;
  std::vector<std::string> args(argv.begin() + 1, argv.end());
  bp::process proc(ctx.get_executor(), argv[0], args, bp::process_stdio{nullptr, out, out}, ec);
  if (ec) return make_error("cannot run " + argv[0] + ": " + ec.message());
  std::string output;
  std::array<char, 4096> buf;
  std::function<void(boost::system::error_code, std::size_t)> on_read = [&](auto err, std::size_t n) {
    output.append(buf.data(), n);
    if (!err) out.async_read_some(asio::buffer(buf), on_read);
  };
  out.async_read_some(asio::buffer(buf), on_read);
  asio::steady_timer timer(ctx, std::chrono::seconds(timeout_s));
  bool timed_out = false;
  timer.async_wait([&](auto err) {
    if (!err) {
      timed_out = true;
      proc.terminate(ec);
      out.close(ec);
    }
  });
  int exit_code = -1;
  proc.async_wait([&](auto err, int code) {
    if (!err) exit_code = code;
    timer.cancel();
  });
  ctx.run();
  if (timed_out) return make_error(argv[0] + " did not answer within " + std::to_string(timeout_s) + " s");
  if (exit_code != 0)
    return make_error(argv[0] + " exited with code " + std::to_string(exit_code) + ": " + output.substr(0, 500));
  return output;
}

Result<Toolchain> probe_toolchain(const std::string& nvcc) {
  auto path = resolve_executable(nvcc);
  if (!path) return make_error(path.error());
  auto version = run_capture({*path, "--version"}, 30);
  if (!version) return make_error("cannot probe compiler: " + version.error());
  auto list = run_capture({*path, "--list-gpu-arch"}, 30);
  if (!list) return make_error("cannot list the archs of " + *path + ": " + list.error());
  Toolchain tc;
  tc.path = *path;
  std::stringstream ss(*version);
  for (std::string line; std::getline(ss, line);)
    if (!line.empty()) tc.version = line;
  tc.archs = parse_nvcc_arch_list(*list);
  if (tc.archs.empty()) return make_error(*path + " --list-gpu-arch listed no architectures");
  return tc;
}

Result<Toolchain> ToolchainCache::get(const std::string& nvcc) {
  if (auto it = cache_.find(nvcc); it != cache_.end()) return it->second;
  auto tc = probe_toolchain(nvcc);
  if (tc) cache_[nvcc] = *tc;
  return tc;
}

}  // namespace fad
