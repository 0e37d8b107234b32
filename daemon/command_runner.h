// Running short commands (scontrol, squeue, sstat, scancel, salloc) without
// blocking the daemon's loop: each runs as a child whose output is collected
// and handed to a callback on the loop. Behind an interface so the Slurm
// executor is tested against scripted answers.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "daemon/process_launcher.h"

namespace fad {

struct CommandOutput {
  int exit_code = 0;   ///< 127 when it could not be started
  std::string output;  ///< stdout and stderr together, in order
};

/// `name` searched on PATH when it holds no '/' (the launcher runs a path,
/// not a shell); `name` unchanged when not found.
std::string find_program(const std::string& name);

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  /// Runs argv (no shell); `done` runs on the daemon's loop when it ended.
  virtual void run(const std::vector<std::string>& argv, std::function<void(CommandOutput)> done) = 0;
};

/// Runs commands through a ProcessLauncher, their output in files under `scratch_dir`.
class LauncherCommandRunner final : public CommandRunner {
 public:
  LauncherCommandRunner(ProcessLauncher& launcher, std::string scratch_dir);
  void run(const std::vector<std::string>& argv, std::function<void(CommandOutput)> done) override;

 private:
  ProcessLauncher& launcher_;
  std::string scratch_dir_;
  long next_ = 0;
};

}  // namespace fad
