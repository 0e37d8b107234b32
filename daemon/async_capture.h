// Running a short program (a compiler's --version) and capturing its output
// without blocking fadd's event loop: the output is read asynchronously, the
// exit is noticed through a pidfd (a timer where pidfd_open is missing), and a
// time limit kills the program's whole process group.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "common/result.h"
#include "daemon/credentials.h"
#include "daemon/unit_cgroup.h"

namespace fad {

struct CaptureOptions {
  std::chrono::milliseconds timeout{30000};
  std::size_t max_output = 64 * 1024;  ///< bytes kept; the rest is read and dropped
  std::optional<Credentials> run_as;   ///< run as this user (fadd is root)
  std::string exec_helper;             ///< start through fad-exec (exec_helper.h); empty: directly
  /// Where to make the program a cgroup of its own (nullptr: none): what it
  /// leaves running when it ends (a setsid'd child escapes its process
  /// group) is killed with it.
  CgroupManager* cgroups = nullptr;
};

class AsyncCapture {
 public:
  using Callback = std::function<void(Result<std::string>)>;

  /// Starts `argv` (no shell). `done` runs once on the loop: stdout and stderr
  /// together when it exited 0; otherwise an error naming argv[0] and why
  /// (cannot start, exit code, time limit). It may run before start() returns.
  /// Dropping the returned handle kills the program and `done` never runs.
  static std::shared_ptr<AsyncCapture> start(boost::asio::io_context& io, const std::vector<std::string>& argv,
                                             CaptureOptions options, Callback done);
  ~AsyncCapture();

  struct State;

 private:
  explicit AsyncCapture(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace fad
