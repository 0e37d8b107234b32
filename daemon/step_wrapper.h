// fad-step: what runs on a Slurm node as the step, around the compiler. Slurm
// measures steps (sstat) only where its accounting gathers them and keeps
// their peaks (sacct) only where slurmdbd runs; the wrapper measures the step
// itself, from the memory cgroup Slurm put it in (or the compiler's process
// tree where there is none), and writes a StepReport fadd reads. It also
// checks, as fadd's probe step, that the paths fadd needs are visible on the
// node.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fad {

struct StepOptions {
  std::string report_path;        ///< where to write the StepReport (shared filesystem)
  std::int64_t launched_ms = 0;   ///< when fadd launched srun (epoch ms)
  std::vector<std::string> argv;  ///< the program and its arguments
  int sample_ms = 250;
};

/// Runs the program, reporting as it goes; returns its exit status (128 +
/// signal when killed, 127 when it could not be started). Signals the wrapper
/// receives (SIGTERM, SIGINT, SIGHUP) go to the program's process group.
int run_step(const StepOptions& options);

/// Checks each path as the node sees it: directories must be writable,
/// files readable. Returns one line per problem ("PATH: why"); empty when all
/// are fine.
std::vector<std::string> probe_paths(const std::vector<std::string>& paths);

/// The memory cgroup directory this process is in when it is a Slurm step's
/// own (its path names a step), else "" (then the process tree is measured).
std::string step_cgroup_dir(bool* v2);

/// Milliseconds since the epoch (the wall clock: fadd and the nodes compare it).
std::int64_t epoch_ms();

}  // namespace fad
