// fadd: the fad build daemon. main() reads as the table of contents.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "daemon/daemon.h"
#include "daemon/log_files.h"
#include "daemon/memory_probe.h"
#include "daemon/options.h"
#include "daemon/root_only_path.h"
#include "daemon/settings_check.h"

int main(int argc, char** argv) {
  // 1. Command line: usage errors exit 2 with one line.
  auto flags = fad::parse_daemon_flags(argc, argv);
  if (!flags) {
    std::cerr << "fadd: " << flags.error() << "\n";
    return 2;
  }
  if (flags->help) {
    std::cout << flags->help_text;
    return 0;
  }
  if (flags->version) {
    std::cout << "fadd " << FAD_VERSION << "\n";
    return 0;
  }

  // 2. Flags over environment over config file over defaults.
  auto options = fad::resolve_daemon_options(*flags, fad::process_env(), ::getuid());
  if (!options) {
    std::cerr << "fadd: " << options.error() << "\n";
    return 2;
  }
  // A reserve of all the memory there is would queue every build forever.
  if (auto problem = fad::memory_settings_problem(options->config, fad::ProcMemoryProbe().sample()); !problem.empty()) {
    std::cerr << "fadd: " << problem << "\n";
    return 2;
  }

  // 3. Logging: to stderr (the journal under systemd), or with --log-file (as
  //    'fad daemon start' runs it) to a file rotated by size, so an unattended
  //    daemon's log never grows without bound.
  // Before the log file's own check: STATE/fadd.log was refused for the
  // state dir's sake, and named as "--log-file" though no one gave one.
  if (auto ok = fad::state_dir_safe(options->state_dir); !ok) {
    std::cerr << "fadd: " << ok.error() << "\n";
    return 1;
  }
  if (!options->log_file.empty()) {
    // Opened by path, and at each rotation renamed and created again by path
    // (as root, for a system fadd): where another user could change its
    // directory, a link planted there would have fadd append to, or
    // truncate, a file of their choosing.
    const std::string dir = std::filesystem::path(options->log_file).parent_path().string();
    for (const auto& path : {dir, options->log_file}) {
      if (auto ok = fad::only_owner_can_replace(path, ::geteuid()); !ok) {
        std::cerr << "fadd: refusing --log-file " << options->log_file << ": " << ok.error()
                  << "; keep fadd's log where only " << fad::who_may_change_fadds_files() << " can change it\n";
        return 1;
      }
    }
  }
  // `fad daemon restart` asks this before it stops the running fadd: a typo in
  // the new arguments must not leave the machine with no daemon at all.
  if (flags->check) {
    if (auto problem = fad::settings_check_problem(*options); !problem.empty()) {
      std::cerr << "fadd: " << problem << "\n";
      return 1;
    }
    std::cout << "fadd: the settings are usable (socket " << options->socket << ", state dir " << options->state_dir
              << ")\n";
    return 0;
  }
  if (!options->log_file.empty()) {
    // fadd's log names every user's builds, sources and commands: fadd's
    // alone to read. Made before run_daemon's umask, it was 0644 under a
    // shell's 022 while its rotations were 0600.
    ::umask(077);
    try {
      spdlog::set_default_logger(spdlog::rotating_logger_mt("fadd", options->log_file, options->config.log_max_size,
                                                            static_cast<std::size_t>(options->config.log_max_files)));
    } catch (const spdlog::spdlog_ex& e) {
      std::cerr << "fadd: cannot log to " << options->log_file << ": " << e.what() << "\n";
      return 1;
    }
    // Every line reaches the file at once, as it would on stderr: a kill -9
    // must not take the last lines with it.
    spdlog::flush_on(spdlog::level::trace);
  } else {
    // spdlog's own default is stdout: a script reading fadd's 2> for why it
    // would not start found nothing there.
    spdlog::set_default_logger(spdlog::stderr_color_mt("fadd"));
  }
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_level(spdlog::level::from_str(options->config.log_level));
  // One left readable by an earlier fadd is closed now, rotations included.
  if (!options->log_file.empty())
    for (const auto& [path, mode] :
         fad::close_log_files(options->log_file, static_cast<std::size_t>(options->config.log_max_files), ::geteuid()))
      spdlog::warn("{} was readable by other users (mode {:o}): made 0600", path, mode);

  // 4. Run until stopped.
  return fad::run_daemon(*options);
}
