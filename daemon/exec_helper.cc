// Finding and using fad-exec; see exec_helper.h.
#include "daemon/exec_helper.h"

#include <unistd.h>

#include <filesystem>

namespace fad {

namespace fs = std::filesystem;

std::string find_exec_helper() {
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  for (const auto& candidate : {self.parent_path() / "fad-exec", self.parent_path() / FAD_EXEC_FROM_BINDIR}) {
    const auto path = candidate.lexically_normal().string();
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return {};
}

std::vector<std::string> through_exec_helper(const std::string& helper, const std::vector<std::string>& argv) {
  if (helper.empty()) return argv;
  std::vector<std::string> out;
  out.reserve(argv.size() + 1);
  out.push_back(helper);
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::string exec_failure_reason(std::string_view output) {
  if (output.substr(0, kExecFailure.size()) != kExecFailure) return {};
  std::string_view line = output.substr(0, output.find('\n'));
  // "fad-exec: cannot run PATH: REASON": the path may hold ": ", the reason does not.
  const auto colon = line.rfind(": ");
  if (colon == std::string_view::npos || colon < kExecFailure.size()) return {};
  return std::string(line.substr(colon + 2, 256));
}

}  // namespace fad
