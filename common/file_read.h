// Reading files whose path may come from outside (a client, a config file, a
// build log a compiler wrote) without letting the file hurt the reader: only
// regular files are read, never more than a cap, and opening never blocks (a
// FIFO named as a source would otherwise freeze the daemon, /dev/zero would
// exhaust its memory). Every whole-file read in fad goes through here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace fad {

/// Default cap for small text files (/proc, cgroup files, configs, pid files).
inline constexpr std::size_t kSmallFileCap = 1u << 20;

/// The whole content of the regular file at `path`. Fails when it cannot be
/// opened, is not a regular file (FIFO, device, directory, socket) or holds
/// more than `max_bytes`, with "cannot read WHAT PATH: why" (`what` names the
/// file's role, e.g. "config file"). Opens with O_NONBLOCK, so it never waits
/// on a FIFO or a terminal; follows symlinks (the target must be regular).
Result<std::string> read_regular_file(const std::string& path, std::size_t max_bytes = kSmallFileCap,
                                      std::string_view what = "");

/// Everything left on the open descriptor `fd` (standard input, a pipe), up
/// to `max_bytes`; blocks while the writer writes. Fails on a read error or
/// with more than `max_bytes`, "cannot read LABEL: why".
Result<std::string> read_descriptor(int fd, std::size_t max_bytes, const std::string& label);

/// At most `max_bytes` of the regular file at `path`, from `offset`; `size`
/// (may be null) receives the file's size. Same refusals as read_regular_file,
/// except that a longer file is not an error: the slice is what fits.
Result<std::string> read_file_slice(const std::string& path, std::uint64_t offset, std::size_t max_bytes,
                                    std::uint64_t* size = nullptr);

/// The whole file at `path`, however large, or nullopt when it cannot be
/// opened or read. Blocking and uncapped: only for files the caller itself
/// trusts by path (the compile cache's own entries, the compile it runs).
std::optional<std::string> read_whole_file(const std::string& path);

/// read_regular_file, or "" for any failure: for files that may legitimately
/// be absent (PSI on WSL, cgroup files, a process that just exited).
std::string read_small_file(const std::string& path, std::size_t max_bytes = kSmallFileCap);

/// `path` opened read-only (with `extra` flags, e.g. O_CREAT, mode 0644) when
/// it is a regular file reached without a link; -1 for anything else. For
/// names in directories others may write: never blocks on a FIFO someone put
/// there, never follows their link.
int open_regular_unlinked(const std::string& path, int extra = 0);

}  // namespace fad
