// The environment of a program fadd runs (a compile unit, a compiler probe).
// As itself, fadd passes its own. For another user (fadd is root) it passes
// only what a compile needs of its own (PATH, locale, time zone, CUDA_HOME,
// the variables that change what nvcc does, which the compile cache keys on,
// and fad's own FAD_* settings) and that user's HOME, USER and LOGNAME: never
// root's HOME or whatever secrets its service environment holds.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "daemon/credentials.h"

namespace fad {

class ChildEnvironment {
 public:
  /// From `environ`, for a child running as `run_as` (none: as fadd), with
  /// TMPDIR set to `temp_dir` unless that is "".
  explicit ChildEnvironment(const Credentials* run_as, const std::string& temp_dir = "");
  /// For execve: null-terminated, valid while this object lives; fadd's own
  /// `environ` when the child runs as fadd with nothing changed.
  const char* const* envp() const;
  /// The variables, for tests.
  const std::vector<std::string>& variables() const { return vars_; }

  /// Whether fadd's variable `name` goes to another user's child.
  static bool passed_on(const std::string& name);

 private:
  bool own_ = true;
  std::vector<std::string> vars_;
  std::vector<const char*> ptrs_;
};

}  // namespace fad
