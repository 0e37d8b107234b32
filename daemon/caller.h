// Who sent a request: the credentials the kernel reported for the connection
// (SO_PEERCRED), never anything the client wrote in its message. Every Engine
// request method takes one, so each decides what this caller may do.
#pragma once

#include <sys/types.h>

namespace fad {

struct Caller {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;  ///< the connecting process (0 when unknown)
  bool is_root() const { return uid == 0; }
};

}  // namespace fad
