// fadd's log files: the one it writes and the rotations beside it. They name
// every user's builds, source paths and commands, so only fadd's own user
// reads them; fadd creates them 0600, and closes at start what an earlier
// fadd (created under a looser umask) left readable.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace fad {

/// The log and its rotations as spdlog's rotating sink names them
/// (fadd.log, fadd.1.log, ... fadd.MAX.log).
std::vector<std::string> log_file_names(const std::string& log_file, std::size_t max_files);

/// Makes each of those that is a regular file owned by `owner` and readable
/// or writable by anyone else 0600. Returns each one changed, with its mode
/// before. A link or another user's file is left alone (fadd opens the log
/// by path only where no one else can change it).
std::vector<std::pair<std::string, unsigned>> close_log_files(const std::string& log_file, std::size_t max_files,
                                                              uid_t owner);

}  // namespace fad
