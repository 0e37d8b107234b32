// Asynchronous capture of a program's output; see async_capture.h.
#include "daemon/async_capture.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/stdio.hpp>

#include "daemon/child_environment.h"
#include "daemon/child_setup.h"
#include "daemon/exec_helper.h"

namespace fad {

namespace asio = boost::asio;
namespace bp = boost::process::v2;

namespace {
// After the program exits, its output may still be in flight; a grandchild
// that kept the pipe open is not waited for longer than this.
constexpr auto kDrainGrace = std::chrono::milliseconds(500);
// A compiler's --version or --list-gpu-arch writes lines, not files.
constexpr std::uint64_t kProbeMaxFileBytes = 64ull << 20;
}  // namespace

struct AsyncCapture::State : std::enable_shared_from_this<AsyncCapture::State> {
  State(asio::io_context& io) : out(io), timer(io) {}

  asio::posix::stream_descriptor out;
  std::unique_ptr<asio::posix::stream_descriptor> pidfd;
  asio::steady_timer timer;
  std::array<char, 4096> buf{};
  std::string program;
  bool through_helper = false;  ///< started through fad-exec, whose failure line it may print
  std::string output;
  std::size_t max_output = 0;
  pid_t pid = -1;
  int status = 0;
  bool eof = false, exited = false, timed_out = false, finished = false;
  Callback done;
  std::unique_ptr<UnitCgroup> cgroup;

  /// What the program left running (the process group is killed already).
  void kill_remaining() {
    if (cgroup) cgroup->kill_remaining();
  }

  void read() {
    out.async_read_some(asio::buffer(buf), [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
      if (self->finished) return;
      if (self->output.size() < self->max_output)
        self->output.append(self->buf.data(), std::min(n, self->max_output - self->output.size()));
      if (ec) {
        self->eof = true;
        self->maybe_finish();
        return;
      }
      self->read();
    });
  }

  void watch_exit() {
    auto next = [self = shared_from_this()](boost::system::error_code ec) {
      if (ec == asio::error::operation_aborted || self->finished) return;
      self->reap();
    };
    if (pidfd) {
      pidfd->async_wait(asio::posix::descriptor_base::wait_read, next);
    } else {
      poll_timer = std::make_unique<asio::steady_timer>(timer.get_executor());
      poll_timer->expires_after(std::chrono::milliseconds(50));
      poll_timer->async_wait(next);
    }
  }
  std::unique_ptr<asio::steady_timer> poll_timer;

  void reap() {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == 0) {
      watch_exit();  // woken early: never block the loop in waitpid
      return;
    }
    // Not reaped yet, the leader still holds its group id: what the program
    // left behind in its group dies with it, and no other group can be hit.
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, &status, 0);  // exited: returns at once
    exited = true;
    if (!eof) {
      // Give the pipe a moment to drain, then stop waiting for it.
      timer.expires_after(kDrainGrace);
      timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (ec || self->finished) return;
        boost::system::error_code ignored;
        self->out.close(ignored);
        self->eof = true;
        self->maybe_finish();
      });
    }
    maybe_finish();
  }

  void maybe_finish() {
    if (finished || !eof || !exited) return;
    finished = true;
    kill_remaining();
    boost::system::error_code ignored;
    timer.cancel();
    out.close(ignored);
    if (pidfd) pidfd->close(ignored);
    Result<std::string> result = std::move(output);
    if (timed_out) {
      result = make_error(program + " did not answer within the time limit");
    } else if (WIFSIGNALED(status)) {
      result = make_error(program + " was killed by signal " + std::to_string(WTERMSIG(status)));
    } else if (const std::string text = result ? *result : std::string();
               through_helper && WEXITSTATUS(status) == kExecFailureCode && !exec_failure_reason(text).empty()) {
      // fad-exec could not run it: said as if fadd had tried itself.
      result = make_error("cannot run " + program + ": " + exec_failure_reason(text));
    } else if (WEXITSTATUS(status) != 0) {
      result =
          make_error(program + " exited with code " + std::to_string(WEXITSTATUS(status)) + ": " + text.substr(0, 500));
    }
    auto cb = std::move(done);
    if (cb) cb(std::move(result));
  }

  /// Kills the program and forgets the callback (the handle was dropped).
  void abandon() {
    done = nullptr;
    if (finished) return;
    finished = true;
    boost::system::error_code ignored;
    timer.cancel();
    out.close(ignored);
    if (pidfd) pidfd->close(ignored);
    if (poll_timer) poll_timer->cancel();
    if (pid > 0 && !exited) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, nullptr, WNOHANG);  // a zombie at worst, until fadd exits
    }
    kill_remaining();
  }
};

std::shared_ptr<AsyncCapture> AsyncCapture::start(asio::io_context& io, const std::vector<std::string>& argv,
                                                  CaptureOptions options, Callback done) {
  auto state = std::make_shared<State>(io);
  auto handle = std::shared_ptr<AsyncCapture>(new AsyncCapture(state));
  state->program = argv.empty() ? std::string("?") : argv[0];
  state->through_helper = !options.exec_helper.empty();
  state->max_output = options.max_output;
  auto fail = [&](const std::string& why) {
    state->finished = true;
    state->done = std::move(done);
    // Asynchronously, like every other answer, so callers need not expect
    // reentrancy; not at all once the handle was dropped.
    asio::post(io, [weak = std::weak_ptr<State>(state), why] {
      auto self = weak.lock();
      if (!self || !self->done) return;
      auto cb = std::move(self->done);
      cb(make_error(why));
    });
    return handle;
  };
  if (argv.empty()) return fail("empty command");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return fail("cannot run " + argv[0] + ": " + std::strerror(errno));
  ChildSetup setup;
  setup.parent = ::getpid();
  setup.run_as = options.run_as ? &*options.run_as : nullptr;
  // A program a user chose (a --nvcc probe) gets no more than their compiles:
  // the OOM killer's first choice, and a bounded file size.
  setup.raise_oom_score = true;
  setup.max_file_bytes = kProbeMaxFileBytes;
  if (options.cgroups) {
    static unsigned serial = 0;
    if (auto cg = options.cgroups->create("probe-" + std::to_string(++serial))) state->cgroup = std::move(*cg);
    // else: its process group is all that is killed, as without cgroups
  }
  setup.cgroup_procs_fd = state->cgroup ? state->cgroup->procs_fd() : -1;
  boost::system::error_code ec;
  // Through fad-exec: Boost waits until its child has exec'd, and a program
  // on a hung filesystem must not hold fadd there (exec_helper.h).
  const auto started = through_exec_helper(options.exec_helper, argv);
  std::vector<std::string> args(started.begin() + 1, started.end());
  // The launcher's error_code overload: basic_process's constructor would throw.
  // stdin from our own /dev/null, close-on-exec (Boost's nullptr binding opens one without).
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const ChildEnvironment env(setup.run_as);
  bp::default_process_launcher launcher;
  launcher.env = env.envp();
  bp::process proc = launcher(io.get_executor(), ec, bp::filesystem::path(started[0]), args,
                              bp::process_stdio{null_fd, fds[1], fds[1]}, setup);
  if (null_fd >= 0) ::close(null_fd);
  ::close(fds[1]);
  if (state->cgroup) state->cgroup->close_procs_fd();
  if (ec) {
    ::close(fds[0]);
    return fail("cannot run " + argv[0] +
                (options.exec_helper.empty() ? "" : " (through " + options.exec_helper + ")") + ": " + ec.message());
  }
  state->pid = proc.id();
  ::setpgid(state->pid, state->pid);
  // Reaped here (see BoostLauncher): Boost.Process 1.81's async_wait can block.
  proc.detach();
  state->out.assign(fds[0]);
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, state->pid, 0));
  if (pidfd >= 0) state->pidfd = std::make_unique<asio::posix::stream_descriptor>(io, pidfd);
  state->done = std::move(done);
  state->timer.expires_after(options.timeout);
  state->timer.async_wait([weak = std::weak_ptr<State>(state)](boost::system::error_code tec) {
    auto self = weak.lock();
    if (tec || !self || self->finished || self->exited) return;
    self->timed_out = true;
    ::kill(-self->pid, SIGKILL);
  });
  state->read();
  state->watch_exit();
  return handle;
}

AsyncCapture::~AsyncCapture() { state_->abandon(); }

}  // namespace fad
