// How a compile ended, in words: a status of 128 + N is how fad (like a
// shell) records a program that signal N killed, and "exit code 137" tells a
// user nothing that "killed by signal 9 (SIGKILL)" does not say better.
#pragma once

#include <optional>
#include <string>

namespace fad {

/// N for a status of 128 + N (N from 1 to 64), the signal that killed it.
std::optional<int> killing_signal(int exit_code);

/// "SIGINT" for 2: the name a user knows; "signal N" where there is none.
std::string signal_name(int sig);

/// "killed by signal N (SIGNAME)" for a status of 128 + N (N from 1 to 64),
/// else "exit code N".
std::string exit_status_text(int exit_code);

}  // namespace fad
