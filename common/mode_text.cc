// See mode_text.h.
#include "common/mode_text.h"

#include <cstdio>

namespace fad {

std::string mode_text(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

}  // namespace fad
