// The archs of the local GPUs, used by `fad submit` when no --arch is given.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/arch.h"
#include "common/result.h"

namespace fad::client {

/// Parses `nvidia-smi --query-gpu=compute_cap --format=csv,noheader` output
/// ("9.0\n9.0\n"), one arch per distinct line. Fails when no line parses as an arch.
Result<std::vector<Arch>> parse_compute_caps(std::string_view text);

/// Runs nvidia-smi (as an argv, no shell) and parses its answer. Fails when
/// nvidia-smi is missing, exits non-zero or reports no GPU.
Result<std::vector<Arch>> detect_gpu_archs();

}  // namespace fad::client
