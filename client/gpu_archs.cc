// GPU discovery through nvidia-smi rather than the CUDA runtime: the client
// must work (and build) on machines without CUDA.
#include "client/gpu_archs.h"

#include <sstream>

#include "common/program_output.h"

namespace fad::client {
namespace {

// nvidia-smi answers within a second; a hung driver must not hang `fad submit`.
constexpr int kNvidiaSmiTimeoutS = 20;

}  // namespace

Result<std::vector<Arch>> parse_compute_caps(std::string_view text) {
  std::vector<std::string> lines;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    line = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    lines.push_back(line);
  }
  if (lines.empty()) return make_error("nvidia-smi listed no GPU");
  return parse_arch_list(lines);
}

Result<std::vector<Arch>> detect_gpu_archs() {
  ProgramRunOptions options;
  options.with_stderr = false;
  options.search_path = true;
  const ProgramRun run =
      run_program({"nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"}, kNvidiaSmiTimeoutS, options);
  if (!run.started) return make_error("cannot run nvidia-smi");
  if (run.timed_out) return make_error("nvidia-smi did not answer within " + std::to_string(kNvidiaSmiTimeoutS) + " s");
  if (run.exit_code != 0) return make_error("nvidia-smi failed");
  return parse_compute_caps(run.output);
}

}  // namespace fad::client
