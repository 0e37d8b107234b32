// `fadd --check`: what a start would refuse about the places it names, found
// without making anything there, taking a lock or opening the database, so it
// can run beside the fadd it would replace (`fad daemon restart` asks it
// before it stops that one).
#pragma once

#include <string>

#include "common/result.h"
#include "daemon/options.h"

namespace fad {

/// Ok when no other user could change `state_dir` or a directory above it;
/// else the start's refusal, naming what to do.
Status state_dir_safe(const std::string& state_dir);

/// Ok when no other user could change a directory above the socket's
/// directory `dir`; else the start's refusal.
Status socket_dir_safe(const std::string& dir);

/// The first thing a start would refuse about `options`' state dir, socket
/// directory and log file, in the words the start would use; "" when none.
/// The state dir's contents (its database, its lock) are not looked at: the
/// running fadd holds them.
std::string settings_check_problem(const DaemonOptions& options);

}  // namespace fad
