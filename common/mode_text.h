// A file mode as messages print it ("0700"): what `ls -l` users compare with
// what `chmod` takes.
#pragma once

#include <sys/types.h>

#include <string>

namespace fad {

/// The permission bits of `mode` (setuid, setgid and sticky included) as four octal digits.
std::string mode_text(mode_t mode);

}  // namespace fad
