// Launcher, shim and run entry points; see entry_modes.h.
#include "client/entry_modes.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "client/cli.h"
#include "client/exit_codes.h"
#include "client/launcher.h"
#include "client/locations.h"
#include "client/run_command.h"
#include "common/paths.h"
#include "common/suggest.h"

namespace fad::client {

namespace fs = std::filesystem;

namespace {
constexpr const char* kLaunchHelp =
    "Usage: fad launch [--socket PATH] [--config FILE] [--color WHEN] [--] COMPILER [ARGS...]\n"
    "Runs one compiler call under fadd's memory scheduling (a compiler launcher:\n"
    "CMAKE_CUDA_COMPILER_LAUNCHER='fad;launch'). 'fad-nvcc ARGS' is the same with\n"
    "the real nvcc ($FAD_REAL_NVCC, PATH, /usr/local/cuda/bin). Without fadd the\n"
    "compiler runs directly.\n";

/// The socket for --socket and --config as given (empty: not given).
std::optional<std::string> socket_path(const EntryOptions& given) {
  Command cmd;
  if (!given.socket.empty()) cmd.socket = given.socket;
  if (!given.config.empty()) cmd.config = given.config;
  auto locations = resolve_locations(cmd, process_env(), ::getuid());
  if (!locations) {
    std::cerr << "fad: " << locations.error() << "\n";
    return std::nullopt;
  }
  return locations->socket;
}
}  // namespace

std::optional<int> run_entry_mode(int argc, const char* const* argv) {
  const std::string self = fs::path(argv[0]).filename().string();
  std::vector<std::string> args(argv + 1, argv + argc);

  // The shim: this binary called as nvcc. Its arguments are nvcc's, untouched.
  if (self == "fad-nvcc" || self == "nvcc") {
    std::error_code ec;
    const auto dir = fs::absolute(argv[0], ec).parent_path().string();
    const std::string nvcc = real_nvcc(self == "nvcc" ? dir : "");
    if (nvcc.empty()) {
      std::cerr << "fad: no real nvcc found (set FAD_REAL_NVCC, or put the CUDA toolkit on PATH)\n";
      return 127;
    }
    std::vector<std::string> direct{nvcc};
    direct.insert(direct.end(), args.begin(), args.end());
    auto socket = socket_path(EntryOptions{});
    if (!socket) return exec_direct(direct);
    return run_launch(nvcc, args, *socket);
  }
  if (args.empty()) return std::nullopt;

  if (args[0] == "launch") {
    std::size_t first = 1;
    // The options every subcommand takes, before the compiler: a compiler
    // is never named --socket, --config or --color.
    EntryOptions options;
    std::string error;
    while (first < args.size() && take_entry_option(args, first, &options, &error, "launch")) {
      if (!error.empty()) {
        std::cerr << "fad: " << error << "\n";
        return kExitUsage;
      }
      ++first;
    }
    // Wherever it is among the options ("fad launch --socket S --help").
    if (first < args.size() && (args[first] == "--help" || args[first] == "-h")) {
      std::cout << kLaunchHelp;
      return kExitOk;
    }
    if (first < args.size() && args[first] == "--") {
      ++first;
    } else if (first < args.size() && !dash_lookalike(args[first]).empty()) {
      std::cerr << "fad: " << dash_lookalike(args[first]) << " (see 'fad launch --help')\n";
      return kExitUsage;
    } else if (first < args.size() && args[first].size() > 1 && args[first][0] == '-') {
      // No compiler is named "-x": a mistyped option (--sockt) would
      // otherwise be run as the compiler, and fail as one.
      std::cerr << "fad: " << unknown_entry_option(args[first], {}, "launch") << "\n";
      return kExitUsage;
    }
    if (first >= args.size()) {
      std::cerr << "fad: no compiler to launch (usage: fad launch [OPTIONS] [--] COMPILER [ARGS...])\n";
      return kExitUsage;
    }
    if (args[first].empty()) {  // an unset $CUDACXX: "cannot run : No such file" said less
      std::cerr << "fad: the compiler to launch is empty (usage: fad launch [OPTIONS] [--] COMPILER [ARGS...])\n";
      return kExitUsage;
    }
    const bool named = !options.socket.empty() || !options.config.empty();
    auto socket = socket_path(options);
    std::vector<std::string> rest(args.begin() + static_cast<std::ptrdiff_t>(first) + 1, args.end());
    if (!socket) {
      // A fad named wrongly is the user's to fix; one not set up at all
      // leaves the compile to run as it would without fad.
      if (named) return kExitUsage;
      rest.insert(rest.begin(), args[first]);
      return exec_direct(rest);
    }
    return run_launch(args[first], rest, *socket);
  }

  if (args[0] == "run") {
    RunOptions options;
    const std::string error = parse_run_args({args.begin() + 1, args.end()}, &options);
    if (error == "help") {
      std::cout << kRunHelp;
      return kExitOk;
    }
    if (!error.empty()) {
      std::cerr << "fad: " << error << "\n";
      return kExitUsage;
    }
    auto socket = socket_path(options.entry);
    if (!socket) return kExitUsage;
    options.entry.socket = *socket;
    return run_build_command(options);
  }
  return std::nullopt;
}

}  // namespace fad::client
