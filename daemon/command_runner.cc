// Commands run without blocking; see command_runner.h.
#include "daemon/command_runner.h"

#include <cstdlib>
#include <filesystem>

#include "common/compiler_identity.h"
#include "daemon/memory_probe.h"

namespace fad {

std::string find_program(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  auto found = find_program(name, without_empty_entries(path ? path : "/usr/local/bin:/usr/bin:/bin"), "/");
  return found.empty() ? name : found;
}

LauncherCommandRunner::LauncherCommandRunner(ProcessLauncher& launcher, std::string scratch_dir)
    : launcher_(launcher), scratch_dir_(std::move(scratch_dir)) {
  std::error_code ec;
  std::filesystem::create_directories(scratch_dir_, ec);
}

void LauncherCommandRunner::run(const std::vector<std::string>& argv, std::function<void(CommandOutput)> done) {
  const std::string out = scratch_dir_ + "/cmd-" + std::to_string(++next_) + ".out";
  std::error_code ec;
  std::filesystem::remove(out, ec);
  auto resolved = argv;
  if (!resolved.empty()) resolved[0] = find_program(resolved[0]);
  Result<int> started = make_error("");
  try {
    started = launcher_.launch(LaunchSpec{0, resolved, out}, [out, done](ExitInfo info) {
      CommandOutput result{info.exit_code, read_small_file(out)};
      std::error_code rm;
      std::filesystem::remove(out, rm);
      done(std::move(result));
    });
  } catch (const std::exception& e) {
    // Boost.Process may throw where a program is missing.
    started = make_error("cannot run " + resolved[0] + ": " + e.what());
  }
  if (!started) done(CommandOutput{127, started.error()});
}

}  // namespace fad
