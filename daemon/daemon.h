// fadd as a whole: the io_context, the tick timer, signals, the socket server
// and the engine, wired together. One thread runs everything.
#pragma once

#include "common/result.h"
#include "daemon/options.h"

namespace fad {

/// Runs the daemon until SIGTERM/SIGINT or a "shutdown" request. Returns the
/// process exit code: 0 after a clean stop, 1 when it could not start.
int run_daemon(const DaemonOptions& options);

}  // namespace fad
