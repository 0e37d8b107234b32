// What fad's step wrapper (fad-step) tells fadd about a compile it runs on a
// Slurm node: the memory its cgroup (or process tree) uses and used at most,
// whether the OOM killer hit it, when it started, and how it ended. The file
// lives on the filesystem fadd and the nodes share and is rewritten whole
// (write, then rename) every sample, so a reader never sees half of one.
// Format: "fad-step 1" then one "key=value" per line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fad {

struct StepReport {
  std::string node;              ///< the host it ran on (SLURMD_NODENAME, else hostname)
  std::string step;              ///< Slurm's "JOB.STEP" (SLURM_JOB_ID, SLURM_STEP_ID); "" outside Slurm
  std::string source;            ///< "cgroup" (the step's memory cgroup) or "rss" (process tree)
  std::int64_t launched_ms = 0;  ///< when fadd started srun (epoch ms, passed in)
  std::int64_t started_ms = 0;   ///< when the wrapper started the program (epoch ms)
  std::uint64_t usage = 0;       ///< bytes in use at the last sample
  std::uint64_t peak = 0;        ///< highest bytes seen (cgroup max usage where there is one)
  std::uint64_t oom_kills = 0;   ///< processes the OOM killer ended in its cgroup
  std::uint64_t limit = 0;       ///< the cgroup's memory limit (Slurm's --mem), 0 = none seen
  bool done = false;             ///< the program ended; exit_code/signal hold
  int exit_code = 0;
  int signal = 0;  ///< the signal that ended it, 0 when it exited
  /// The wrapper was told to stop (SIGTERM/SIGINT/SIGHUP): by fadd, by a
  /// time limit or by a cancel. Slurm's kills carry no other mark.
  bool terminated = false;
  std::string error;  ///< the wrapper could not run the program

  std::string serialize() const;
  /// nullopt when the text is not a step report (or is from a newer format).
  static std::optional<StepReport> parse(std::string_view text);
};

/// Writes `report` to `path` atomically (a temp file beside it, renamed).
bool write_step_report(const std::string& path, const StepReport& report);

}  // namespace fad
