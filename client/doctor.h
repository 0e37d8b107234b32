// `fad doctor`: gathers facts from this machine (programs it runs, /proc and
// /sys files, the state dir's filesystem, the daemon's socket), hands them to
// the pure checks in doctor_checks.h and prints the findings.
#pragma once

#include "client/cli.h"
#include "client/commands.h"
#include "client/locations.h"

namespace fad::client {

/// Runs every check and prints one line per finding (or JSON with --json).
/// Honours --nvcc (else the config's "nvcc", else nvcc on PATH or in
/// /usr/local/cuda/bin), --arch and the resolved state dir and socket.
/// Returns 0 when no finding failed, 1 otherwise. Never needs the daemon.
int run_doctor(const Command& cmd, const Locations& locations, Context& ctx);

}  // namespace fad::client
