// Exit statuses in words; see exit_status.h.
#include "common/exit_status.h"

#include <string.h>

namespace fad {

std::optional<int> killing_signal(int exit_code) {
  const int sig = exit_code - 128;
  if (sig < 1 || sig > 64) return std::nullopt;
  return sig;
}

std::string signal_name(int sig) {
  const char* abbrev = sig >= 1 && sig <= 64 ? ::sigabbrev_np(sig) : nullptr;
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string exit_status_text(int exit_code) {
  const auto sig = killing_signal(exit_code);
  if (!sig) return "exit code " + std::to_string(exit_code);
  const char* abbrev = ::sigabbrev_np(*sig);
  return "killed by signal " + std::to_string(*sig) + (abbrev ? " (" + signal_name(*sig) + ")" : std::string());
}

}  // namespace fad
