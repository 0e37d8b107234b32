// fad-step: runs one compile as a Slurm step on behalf of fadd and reports its
// memory (see daemon/step_wrapper.h). Not meant to be run by hand.
//
//   fad-step --report FILE [--launched-ms MS] -- PROGRAM ARGS...
//   fad-step --probe PATH...      (exit 0 when every path is usable here)
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "daemon/step_wrapper.h"

namespace {
constexpr const char* kUsage =
    "usage: fad-step --report FILE [--launched-ms MS] -- PROGRAM ARGS... | fad-step --probe PATH...";
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // 1. The probe step: are fadd's paths visible and usable on this node?
  if (!args.empty() && args[0] == "--probe") {
    auto problems = fad::probe_paths({args.begin() + 1, args.end()});
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    for (const auto& p : problems) std::cout << "fad-step on " << host << ": " << p << "\n";
    return problems.empty() ? 0 : 1;
  }
  // 2. A compile: options up to "--", then the program.
  fad::StepOptions options;
  std::size_t i = 0;
  for (; i < args.size() && args[i] != "--"; ++i) {
    if (args[i] == "--report" && i + 1 < args.size()) {
      options.report_path = args[++i];
    } else if (args[i] == "--launched-ms" && i + 1 < args.size()) {
      options.launched_ms = std::atoll(args[++i].c_str());
    } else {
      std::cerr << "fad-step: unknown argument '" << args[i] << "' (" << kUsage << ")\n";
      return 2;
    }
  }
  if (options.report_path.empty() || i + 1 >= args.size()) {
    std::cerr << "fad-step: " << kUsage << "\n";
    return 2;
  }
  options.argv.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
  // 3. Run it; the exit status is the program's.
  return fad::run_step(options);
}
