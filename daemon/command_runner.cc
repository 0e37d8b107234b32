// Commands run without blocking; see command_runner.h.
#include "daemon/command_runner.h"

#include <filesystem>

#include "daemon/memory_probe.h"

namespace fad {

LauncherCommandRunner::LauncherCommandRunner(ProcessLauncher& launcher, std::string scratch_dir)
    : launcher_(launcher), scratch_dir_(std::move(scratch_dir)) {
  std::error_code ec;
  std::filesystem::create_directories(scratch_dir_, ec);
}

void LauncherCommandRunner::run(const std::vector<std::string>& argv, std::function<void(CommandOutput)> done) {
  const std::string out = scratch_dir_ + "/cmd-" + std::to_string(++next_) + ".out";
  std::error_code ec;
  std::filesystem::remove(out, ec);
  auto started = launcher_.launch(LaunchSpec{0, argv, out}, [out, done](ExitInfo info) {
    CommandOutput result{info.exit_code, read_small_file(out)};
    std::error_code rm;
    std::filesystem::remove(out, rm);
    done(std::move(result));
  });
  if (!started) done(CommandOutput{127, started.error()});
}

}  // namespace fad
