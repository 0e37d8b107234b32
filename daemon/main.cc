// fadd: the fad build daemon. main() reads as the table of contents.
#include <unistd.h>

#include <iostream>

#include <spdlog/spdlog.h>

#include "daemon/daemon.h"
#include "daemon/options.h"

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

  // 3. Logging to stderr (the journal under systemd, fadd.log under 'fad daemon start').
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_level(spdlog::level::from_str(options->config.log_level));

  // 4. Run until stopped.
  return fad::run_daemon(*options);
}
