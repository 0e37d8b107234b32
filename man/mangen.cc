// fad-mangen OUTDIR: writes fad.1 and fadd.8 from the programs' own CLI11
// definitions (client/cli_app.h, daemon/options.h) and the prose below. Run by
// the build, so the installed manual always lists what the binaries accept.
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "client/cli_app.h"
#include "client/man_page.h"
#include "common/paths.h"
#include "daemon/options.h"

namespace {

using fad::client::ManPage;

const std::vector<std::string> kExitStatus = {
    "0\tsuccess",
    "1\tthe build or the operation failed (the message says which unit or why)",
    "2\tusage error: a bad flag, arch, size, path or config value",
    "3\tfadd cannot be reached (not running, no permission on its socket, busy, or no answer within "
    "FAD_TIMEOUT); the message says which, and what to do",
    "130\tCtrl-C while following a build (submit --wait, watch, status --watch, logs --follow): the build goes on in "
    "fadd",
    "143, 129\tthe same after SIGTERM or SIGHUP (a closed terminal): 128 + the signal, as a shell reports",
    "fad launch, fad-nvcc and fad run return the exit code of the compiler or command they ran."};

ManPage fad_page() {
  ManPage p;
  p.name = "fad";
  p.section = 1;
  p.version = std::string("fad ") + FAD_VERSION;
  p.summary = "submit and follow CUDA kernel builds scheduled by memory (client of fadd)";
  p.synopsis = "fad COMMAND [OPTIONS] [ARGS]";
  p.description = {
      "fad talks to fadd, a daemon that runs nvcc compile units by a memory budget instead of a job count: it "
      "learns what each unit needs, starts as many units (with as many nvcc threads) as fit, and reacts before "
      "the machine runs out of memory. fad queues builds of the bundled kernels (submit), runs any build command "
      "with its nvcc calls scheduled by fadd (run, launch, fad-nvcc), and shows what builds do (watch, status, "
      "logs, report, history).",
      "On a terminal, submit --wait and watch redraw one progress line in place; in a pipe they print a plain "
      "line at most every few seconds. States are coloured on a terminal; --color=never or NO_COLOR turns that "
      "off. Every --json document carries a top-level schema_version."};
  p.sections = {
      {"EXIT STATUS", kExitStatus},
      {"ENVIRONMENT",
       {"FAD_SOCKET\tfadd's socket, when --socket is not given",
        "FAD_CONFIG\tthe config file, when --config is not given",
        "FAD_STATE_DIR\tfadd's state directory (daemon start, doctor)",
        "NO_COLOR\twhen set and not empty, no colour (unless --color=always)",
        "FAD_REAL_NVCC\tthe nvcc that fad-nvcc and the nvcc shim of fad run stand for",
        "FAD_BUILD_ID\tset by fad run for the command it runs: its compiles join that build",
        "FAD_TIMEOUT\tseconds a request waits for fadd's answer (1-86400, default 60); past it fad exits 3",
        "FAD_CACHE_DIR, FAD_CACHE_SIZE\tthe compile cache's directory and size limit (0 turns it off)",
        "FAD_CLAIMS_DIR\twhere launchers compiling without fadd share their memory claims",
        "FAD_INTERCEPT_LIB\tthe exec interceptor fad run preloads (default: beside fad, or in its library "
        "directory)"}},
      {"FILES",
       {"$XDG_RUNTIME_DIR/fad/fad.sock\tfadd's socket for a user (else /tmp/fad-UID/fad.sock); /run/fad/fad.sock "
        "for the system unit",
        "~/.config/fad/fad.json\tthe config file when present, else " + fad::system_config_path() + " when present",
        "$XDG_STATE_HOME/fad\tfadd's state for a user (else ~/.local/state/fad): fad.db, fadd.log and "
        "builds/ID/ with each build's logs and outputs"}},
      {"EXAMPLES",
       {"fad submit --arch 9.0 --wait\tbuild the bundled kernels for sm_90 and follow the build",
        "fad run -- pip install flash-attn --no-build-isolation\tany build, its nvcc calls scheduled by fadd",
        "fad report 7 -o build7.html\tthe memory timeline and unit chart of build 7",
        "eval \"$(fad completions bash)\"\tcompletion for this bash session"}}};
  p.see_also = {"fadd(8)", "nvcc(1)", "the contract: docs/contract.md in fad's source"};
  return p;
}

ManPage fadd_page() {
  ManPage p;
  p.name = "fadd";
  p.section = 8;
  p.version = std::string("fad ") + FAD_VERSION;
  p.summary = "the fad build daemon: schedules CUDA compile units by memory, not job count";
  p.synopsis = "fadd [OPTIONS]";
  p.description = {
      "fadd runs in the foreground (as systemd expects; fad daemon start runs it in the background). It watches "
      "RAM, swap, memory pressure (PSI) and its cgroup's limit, predicts each compile unit's memory from what it "
      "measured before, and starts units while their predicted peaks fit the budget. Under pressure it suspends "
      "the newest units and, if pressure lasts, stops and requeues them. Every state change is one SQLite "
      "transaction: a crash or kill -9 loses no finished unit and no queued build.",
      "Flags override environment variables, which override the config file."};
  p.sections = {
      {"SIGNALS",
       {"SIGTERM, SIGINT\tadmit nothing more, stop the running compilers, mark them queued and exit 0; the next "
        "start resumes them",
        "SIGHUP, SIGUSR1, SIGUSR2, SIGALRM\tchange nothing: fadd logs that it ignored them"}},
      {"CONFIGURATION",
       {"The config file is JSON; an unknown key or bad value is an error naming the key, file and line.",
        "memory_budget\t\"auto\" or a size: the most fad's units may hold together (default auto)",
        "reserve\ta size or \"N%\" of memory kept free for everything else (default 10%)",
        "swap\t\"ignore\" or \"use\" (count free swap as available; default ignore)",
        "max_parallel_units\tunits running at once at most; 0 = no cap beyond memory and cores",
        "nvcc_threads\t\"auto\" (chosen per unit) or a fixed --threads", "nvcc\tthe default compiler (default nvcc)",
        "unit_memory_prior\tsize per nvcc thread assumed for a unit nothing is known about (default 5G)",
        "poll_interval_ms\thow often fadd samples memory and decides (default 500)",
        "log_level\ttrace, debug, info, warn or error", "socket, state_dir, kernels_dir\tpaths, as the flags",
        "The other keys (per-user limits, retention, log rotation, unit file and log limits, the socket's mode "
        "and group, the compile cache, the state disk's reserve, the Slurm executor) are in " +
            fad::system_config_path() + " at their defaults and in docs/contract.md, \"Config file\"."}},
      {"ENVIRONMENT",
       {"FAD_SOCKET, FAD_STATE_DIR, FAD_CONFIG, FAD_KERNELS_DIR\tthe locations, when no flag names them"}},
      {"FILES",
       {"STATE/fad.db\tthe database (SQLite, WAL): builds, units, memory samples, what the estimator learnt",
        "STATE/builds/ID/\ta build's logs/, obj/, build.log and, once linked, lib/",
        fad::system_config_path() + "\tthe machine-wide config, every key at its default; ~/.config/fad/fad.json for "
                                    "a user who has one"}},
      {"EXIT STATUS",
       {"0\tstopped on SIGTERM or SIGINT", "1\tanother fadd holds the state dir or socket, or startup failed",
        "2\ta bad flag or config value"}}};
  p.see_also = {"fad(1)", "systemd.exec(5)"};
  return p;
}

bool write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) std::cerr << "fad-mangen: cannot write " << path << "\n";
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fad-mangen OUTDIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  fad::client::RawArgs raw;
  auto fad_cli = fad::client::make_cli_app(raw);
  fad::DaemonFlags flags;
  auto fadd_cli = fad::make_daemon_cli(flags);
  const bool ok = write(dir + "/fad.1", fad::client::render_man_page(*fad_cli, fad_page())) &&
                  write(dir + "/fadd.8", fad::client::render_man_page(*fadd_cli, fadd_page()));
  return ok ? 0 : 1;
}
