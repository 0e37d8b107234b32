// fad-exec: the first program of every child fadd starts; it execs the real
// one (see daemon/exec_helper.h). Not meant to be run by hand.
//
//   fad-exec PROGRAM ARGS...
//
// Nothing but libc: it must start quickly and from a local disk.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "daemon/exec_helper.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs("fad-exec: usage: fad-exec PROGRAM ARGS... (fadd runs it; not meant to be run by hand)\n", stderr);
    return 2;
  }
  ::execv(argv[1], argv + 1);
  const int err = errno;
  std::fprintf(stderr, "%.*s%s: %s\n", static_cast<int>(fad::kExecFailure.size()), fad::kExecFailure.data(), argv[1],
               std::strerror(err));
  return fad::kExecFailureCode;
}
