// fad: the command-line client of fadd. Parses the command line, finds the
// daemon's socket, runs one subcommand. All work happens in fad_client_core.
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <exception>
#include <iostream>
#include <thread>

#include "client/cli.h"
#include "client/commands.h"
#include "client/connection.h"
#include "client/entry_modes.h"
#include "client/exit_codes.h"
#include "client/gpu_archs.h"
#include "client/locations.h"
#include "client/style.h"
#include "common/file_read.h"

namespace {
// The signal that asked a follower to stop (0 while none): its exit code is 128 + it.
volatile std::sig_atomic_t g_interrupted = 0;
void on_interrupt(int sig) { g_interrupted = sig; }

std::size_t terminal_width() {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

int main(int argc, char** argv) {
  using namespace fad::client;
  try {
    // 0. Launcher, shim and `fad run`: what follows is another program's command line.
    if (auto code = run_entry_mode(argc, argv)) return *code;

    // 1. Parse the command line; help, --version and usage errors end here.
    ParseOutcome parsed = parse_command(argc, argv);
    if (const auto* early = std::get_if<EarlyExit>(&parsed)) {
      (early->to_stderr ? std::cerr : std::cout) << early->text;
      return early->exit_code;
    }
    const Command& cmd = std::get<Command>(parsed);

    // 2. Resolve socket, state dir and config: flag, environment, config file, default.
    auto locations = resolve_locations(cmd, fad::process_env(), ::getuid());
    if (!locations) {
      std::cerr << "fad: " << locations.error() << "\n";
      return kExitUsage;
    }

    auto timeout = request_timeout(fad::process_env()("FAD_TIMEOUT"));
    if (!timeout) {
      std::cerr << "fad: " << timeout.error() << "\n";
      return kExitUsage;
    }

    // 3. Wire the real world in: the socket, the terminal, the clock, nvidia-smi.
    // A follower's Ctrl-C ends even a wait for a stopped fadd's answer, of a
    // request that only reads: a submit fadd may be carrying out is waited
    // for, so that the build's id is printed.
    Sender cut_short = socket_sender(locations->socket, *timeout, [] { return g_interrupted != 0; });
    Sender whole = socket_sender(locations->socket, *timeout);
    Context ctx{[cut_short, whole](const fad::Request& r) {
                  return r.type == "status" || r.type == "logs" ? cut_short(r) : whole(r);
                },
                locations->socket,
                std::cout,
                std::cerr,
                [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); },
                detect_gpu_archs};
    ctx.out_is_tty = ::isatty(STDOUT_FILENO) == 1;
    ctx.read_stdin = [](std::size_t max) {
      // A terminal would wait for ever, silently, for a file that is not coming.
      if (::isatty(STDIN_FILENO) == 1) std::cerr << "fad: reading from the terminal; end with Ctrl-D\n";
      return fad::read_descriptor(STDIN_FILENO, max, "standard input");
    };
    ctx.width = terminal_width;
    ctx.wall = wall_seconds;
    ctx.interrupted = [] { return static_cast<int>(g_interrupted); };
    ctx.color = use_color(cmd.color, ctx.out_is_tty, fad::process_env());
    // Following a build: Ctrl-C (or a kill, or a closed terminal) stops
    // following, not the build, says so and leaves no half-drawn line behind.
    // Installed even where the signal came ignored (a follower started with
    // '&' from a script): such a follower could not be stopped by SIGINT.
    if ((cmd.kind == CommandKind::submit && cmd.wait) || cmd.kind == CommandKind::watch ||
        (cmd.kind == CommandKind::status && cmd.watch) || (cmd.kind == CommandKind::logs && cmd.follow)) {
      struct sigaction sa {};
      sa.sa_handler = on_interrupt;
      for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
    }

    // 4. Run the subcommand; its return value is the contract's exit code.
    return run_command(cmd, *locations, ctx);
  } catch (const std::exception& e) {
    // Only unexpected failures get here (e.g. a daemon answer of the wrong shape).
    std::cerr << "fad: " << e.what() << "\n";
    return kExitFailed;
  }
}
