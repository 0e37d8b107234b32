// Replacing a file the user named (an exported history, an object restored
// from the compile cache) so that no reader sees half of it and no one else
// can redirect the write: the bytes go to a fresh temporary file in the same
// directory, created exclusively (never an existing file or a symlink planted
// under a predictable name, the classic /tmp attack), then renamed over the
// target.
#pragma once

#include <string>

#include "common/result.h"

namespace fad {

/// Writes `bytes` to `path` atomically (see above). The file's mode is 0666
/// less the umask, as for any file the user creates. Fails with "PATH: why",
/// also when `path` is there and is not a regular file (a link such as
/// /dev/stdout, a device): a rename would replace it.
Status write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace fad
