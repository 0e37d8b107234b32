// Protocol messages for compiles that fad did not plan itself: `fad launch`
// (a compiler launcher, nvcc shim) and `fad run` (any build command). The
// launcher asks for admission, polls until the scheduler grants it (with an
// nvcc --threads value), runs the compiler itself, and reports its pid and its
// end; the daemon measures and learns from it like any other unit.
//
//   open_build {name, command, budget_bytes?}         -> {id}
//   close_build {id, exit_code}                       -> {id, state}
//   launch {build_id?, session, cwd, argv, source, output, archs,
//           content_hash?, compiler_version?, source_bytes?, cached?}
//                                                     -> {unit_id, build_id, state?}
//   launch_poll {unit_id}                             -> {state: "queued"|"admitted", threads, estimate_bytes,
//                                                         wait_reason}
//   launch_started {unit_id, pid}                     -> {}
//   launch_finished {unit_id, exit_code, signaled}    -> {requeue: bool}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/arch.h"
#include "common/protocol.h"

namespace fad {

/// "open_build": an external build that `fad run` fills with compile calls.
struct OpenBuildRequest {
  std::string name;
  std::string command;
  std::optional<std::uint64_t> budget_bytes;  ///< this build's own memory cap
  static Result<OpenBuildRequest> from_json(const json& body);
  json to_json() const;
};

/// "close_build": the build command ended with `exit_code`.
struct CloseBuildRequest {
  std::int64_t id = 0;
  int exit_code = 0;
  /// The signal fad run got and passed on to its command (Ctrl-C), 0 for
  /// none: a command that then did not exit 0 was cancelled, not failed.
  int interrupt_signal = 0;
  static Result<CloseBuildRequest> from_json(const json& body);
  json to_json() const;
};

inline constexpr std::size_t kMaxContentHashBytes = 128;
inline constexpr std::size_t kMaxCompilerVersionBytes = 512;
/// A compile's archs, each one nvcc knows (parse_arch); at most this many.
inline constexpr std::size_t kMaxLaunchArchs = kMaxArchs;
/// A launch's cwd, source and output: a path's most (PATH_MAX), with a file
/// name of at most kMaxFileNameBytes (NAME_MAX). The name is the unit's.
inline constexpr std::size_t kMaxPathBytes = 4096;
inline constexpr std::size_t kMaxFileNameBytes = 255;
/// A launch's argv, all arguments together: far above any compile's, and
/// what fadd keeps and lists of each unit stays bounded.
inline constexpr std::size_t kMaxLaunchArgvBytes = 128 * 1024;

/// "launch": one compiler call asks to be scheduled.
struct LaunchRequest {
  std::optional<std::int64_t> build_id;  ///< from FAD_BUILD_ID (fad run); else grouped by session
  std::int64_t session = 0;              ///< the caller's session id (getsid)
  std::string cwd;
  std::vector<std::string> argv;  ///< the compiler call as given
  std::string source;             ///< absolute path of the compiled file
  std::string output;
  std::vector<std::string> archs;  ///< code targets, e.g. "sm_90"
  /// What the launcher computed with the user's own rights, so that fadd never
  /// opens the source or runs the compiler a client names: a hash of the
  /// source's content (at most kMaxContentHashBytes of [A-Za-z0-9:._+/=-]) and
  /// the compiler's `--version` line (at most kMaxCompilerVersionBytes,
  /// printable). Optional: an older launcher sends neither.
  std::optional<std::string> content_hash;
  std::optional<std::string> compiler_version;
  /// The source's size, a feature for ordering the queue (longest first).
  std::optional<std::uint64_t> source_bytes;
  /// The compile cache already held the outputs: fadd records a finished,
  /// cached unit and schedules nothing (the answer carries state "succeeded").
  bool cached = false;
  static Result<LaunchRequest> from_json(const json& body);
  json to_json() const;
};

/// "launch_poll": is the unit admitted yet?
struct UnitRequest {
  std::int64_t unit_id = 0;
  static Result<UnitRequest> from_json(const json& body);
  json to_json() const;
};

/// "launch_started": the compiler runs as process group `pid`.
struct LaunchStartedRequest {
  std::int64_t unit_id = 0;
  int pid = 0;
  static Result<LaunchStartedRequest> from_json(const json& body);
  json to_json() const;
};

/// "launch_finished": the compiler ended.
struct LaunchFinishedRequest {
  std::int64_t unit_id = 0;
  int exit_code = 0;
  bool signaled = false;
  /// The signal that reached the launcher and that it passed on to its
  /// compiler (SIGINT, SIGTERM or SIGHUP: a Ctrl-C, a CI job's timeout, a
  /// closed terminal); 0 when none did. The compile was stopped from outside.
  int interrupt_signal = 0;
  static Result<LaunchFinishedRequest> from_json(const json& body);
  json to_json() const;
};

}  // namespace fad
