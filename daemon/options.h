// fadd's command line and how it combines with the environment and the config
// file (flag, then environment, then config, then default; see the contract).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/config.h"
#include "common/paths.h"
#include "common/result.h"
#include "policy/scheduler.h"

namespace CLI {
class App;
}

namespace fad {

/// What was given on the command line, unresolved.
struct DaemonFlags {
  std::optional<std::string> config, state_dir, socket, memory_budget, reserve, nvcc, log_level, kernels_dir, log_file;
  std::optional<std::string> executor;    ///< "local" or "slurm"
  std::optional<std::string> cores_text;  ///< --cores as given; parsed into `cores`
  std::optional<int> cores;
  bool help = false;
  bool version = false;
  bool check = false;  ///< --check: check the settings as a start would, start nothing
  std::string help_text;
};

/// fadd's command line as CLI11 objects writing into `flags`: read by the
/// parser and by the man page generator, so fadd(8) lists what fadd accepts.
std::unique_ptr<CLI::App> make_daemon_cli(DaemonFlags& flags);

/// Parses fadd's arguments. Errors are one line naming the bad flag.
Result<DaemonFlags> parse_daemon_flags(int argc, const char* const* argv);

/// Everything fadd needs to start, resolved.
struct DaemonOptions {
  int cores = 0;  ///< CPU cores to plan with; 0 = all of this machine's
  std::string socket;
  std::string state_dir;
  std::string kernels_dir;
  std::string config_path;  ///< empty when running without a config file
  std::string log_file;     ///< empty: log to stderr (the journal under systemd)
  Config config;
};

/// Loads the config file (flag, FAD_CONFIG, default path) and applies flags and
/// environment over it. The system unit passes /run/fad, /var/lib/fad and
/// /etc/fad explicitly.
Result<DaemonOptions> resolve_daemon_options(const DaemonFlags& flags, const EnvLookup& env, unsigned uid);

/// What is wrong with settings that leave fad no memory at all on this
/// machine (a reserve of all of it): every build would wait forever. "" when
/// they leave some.
std::string memory_settings_problem(const Config& config, const MemorySnapshot& memory);

/// Where the bundled kernels are: flag/config, FAD_KERNELS_DIR, the installed
/// copy, else the source tree fadd was built from.
std::string default_kernels_dir(const EnvLookup& env);

}  // namespace fad
