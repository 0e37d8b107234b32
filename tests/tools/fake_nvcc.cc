// fad-fake-nvcc: a stand-in for nvcc that tests and benchmarks run in its place.
// It really allocates and touches memory along a profile, so the daemon's memory
// accounting (RSS, cgroup usage, PSI) sees what a real compile would make it see,
// and it logs every invocation so tests can count compiles.
//
// Invocation (like nvcc):
//   fad-fake-nvcc -c SRC -o OBJ [any flags] -gencode arch=compute_XX,code=sm_XX ... [--threads N | -t N | --threads=N]
//   fad-fake-nvcc -shared -o OUT OBJ...      link: OUT is the concatenation of the inputs
//   fad-fake-nvcc --version | --list-gpu-arch
// With -MD / --generate-dependencies-with-compile it writes a dependency file as
// nvcc does ("OUT : SRC \ HEADER \ ..." to -MF/--dependency-output, default OUT
// with .d for its extension; -MT names another target), following the source's
// #include lines through its own directory and -I directories. The object holds
// a hash of the source and every header it includes, and the flags, so a test
// can tell which inputs an object was built from.
//
// Environment:
//   FAD_FAKE_VERSION=v         --version reports "release v" (default 13.0).
//   FAD_FAKE_LOG=path          append one line per invocation, when it starts (flock'ed):
//                              "pid=<pid> src=<SRC> out=<OBJ> threads=<N> archs=<sm_90,sm_120> uid=<U> groups=<G,...>
//                              fds=<0,1,2>" (archs: the code= value of each -gencode, or of -arch; uid: the real uid it
//                              runs as; fds: the descriptors it was started with); link mode appends "link out=<OUT>".
//   FAD_FAKE_PROFILE=file.tsv  replay a memory trace ("seconds<TAB>MiB" lines, '#' comments),
//                              interpolating linearly between samples from 0 MiB at time 0.
//   FAD_FAKE_PEAK_MB=N         synthetic profile instead: ramp to N MiB over the first 20% of
//   FAD_FAKE_DURATION_S=x      x seconds (default 1), then hold 40% of N until the end.
//   FAD_FAKE_TIME_SCALE=f      multiply all times (0.05 = 20x faster); default 1.
//   FAD_FAKE_MEM_SCALE=f       multiply all memory; default 1.
//                              Memory is also multiplied by min(threads, number of -gencode),
//                              as real nvcc compiles archs in parallel (--threads 0 = all).
//                              A trace whose header names how it was recorded ("# targets:
//                              sm_80, sm_90, nvcc --threads 2") is instead scaled from that
//                              recording (e archs at once against its e_ref): memory by
//                              0.3 + 0.7 * e / e_ref, time by (e_ref / e)^0.85, and with e <
//                              e_ref the archs compile in turns, the scaled trace once per turn.
//   FAD_FAKE_CPU=1             burn CPU as the real compiler would: e threads spin while it
//                              runs, and the profile advances with the CPU time they get (per
//                              thread), not the wall clock: an oversubscribed machine slows
//                              every unit alike, and SIGSTOP stops it.
//   FAD_FAKE_EXIT=code         exit with this code once the profile has run.
//   FAD_FAKE_FAIL_MATCH=s      if the SRC path contains s: print "SRC(1): error: fake failure"
//                              on stderr and exit 1 once the profile has run.
//   FAD_FAKE_CHILDREN=n        start n child processes (like cicc and ptxas) that follow the same
//                              profile in the same process group, without a parent-death signal:
//                              killed with their parent's group, orphaned if only the parent dies.
// A source file may override all of these for itself with a line
//   // fake-nvcc: peak_mb=N duration_s=X exit=C profile=PATH children=N print_mb=N stop_self=1 driver=1
// (any subset)
// print_mb=N prints N MiB of warnings to stdout first (a compiler that floods its log).
// driver=1 (with children=N): only the children follow the profile, as cicc and ptxas hold
// nvcc's memory; one killed by a signal makes it exit 128 + that signal, as nvcc does.
// stop_self=1 (with children=N): once its children run, it SIGSTOPs itself alone while they
// compile on (a compiler that looks stopped to anyone reading its state only).
// profile=PATH replays that trace (as FAD_FAKE_PROFILE does; a relative PATH is taken from
// the source file's directory), so units of one build can replay different traces; peak_mb
// or duration_s in the same line win over it, and it wins over the environment's profiles.
// The output file is written (OBJ.tmp, then renamed) only on exit code 0.
// Signals keep their default dispositions: SIGTERM ends it at once, SIGSTOP/SIGCONT pause it.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <ctime>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/size.h"

namespace {

constexpr const char* kArchList[] = {"compute_75",  "compute_80",  "compute_86",  "compute_87",
                                     "compute_88",  "compute_89",  "compute_90",  "compute_100",
                                     "compute_110", "compute_103", "compute_120", "compute_121"};
constexpr std::size_t kChunkBytes = 4u << 20;
constexpr std::size_t kPageBytes = 4096;
constexpr std::size_t kMiB = 1u << 20;

/// One point of a memory profile.
struct Sample {
  double seconds;
  double mib;
};

/// What the command line asked for.
struct Args {
  bool link = false;
  std::string src;
  std::string out;
  std::vector<std::string> inputs;  ///< link mode
  std::vector<std::string> archs;
  int threads = 1;
  std::vector<std::string> include_dirs;
  bool depfile = false;            ///< -MD
  std::string depfile_path;        ///< -MF
  std::string depfile_target;      ///< -MT
  std::vector<std::string> flags;  ///< everything but the file names and --threads, for the object
};

/// Per-source overrides from a "// fake-nvcc:" line.
struct Overrides {
  std::optional<double> peak_mb;
  std::optional<double> duration_s;
  std::optional<int> exit_code;
  std::optional<std::string> profile;  ///< trace path, resolved against the source's directory
  std::optional<int> children;
  std::optional<double> print_mb;
  bool stop_self = false;
  bool driver = false;
};

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

double env_double(const char* name, double fallback) {
  std::optional<std::string> v = env(name);
  if (!v) return fallback;
  char* end = nullptr;
  double d = std::strtod(v->c_str(), &end);
  if (end == v->c_str() || *end != '\0' || d < 0) {
    std::fprintf(stderr, "fake-nvcc: ignoring bad %s=%s\n", name, v->c_str());
    return fallback;
  }
  return d;
}

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "fake-nvcc fatal: %s\n", message.c_str());
  std::exit(1);
}

/// Flags whose value is the next argument; the value is not a source file.
bool takes_value(const std::string& a) {
  static const char* kFlags[] = {"-I",
                                 "-D",
                                 "-U",
                                 "-L",
                                 "-l",
                                 "-x",
                                 "-Xcompiler",
                                 "-Xptxas",
                                 "-Xlinker",
                                 "-Xnvlink",
                                 "-ccbin",
                                 "-code",
                                 "-isystem",
                                 "-include",
                                 "-maxrregcount",
                                 "-std",
                                 "--compiler-bindir",
                                 "--std",
                                 "--include-path",
                                 "--define-macro",
                                 "-MQ"};
  return std::find_if(std::begin(kFlags), std::end(kFlags), [&](const char* f) { return a == f; }) != std::end(kFlags);
}

/// "arch=compute_90a,code=sm_90a" -> "sm_90a"; also handles "code=[sm_80,compute_80]".
std::string gencode_target(const std::string& value) {
  std::size_t code = value.find("code=");
  if (code == std::string::npos) return value;
  std::string target = value.substr(code + 5);
  target.erase(std::remove_if(target.begin(), target.end(), [](char c) { return c == '[' || c == ']'; }), target.end());
  return target.substr(0, target.find(','));
}

int parse_threads(const std::string& value) {
  char* end = nullptr;
  long n = std::strtol(value.c_str(), &end, 10);
  if (end == value.c_str() || *end != '\0' || n < 0 || n > 1024) die("bad --threads value '" + value + "'");
  return static_cast<int>(n);
}

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) die("option " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--version") {
      const std::string v = env("FAD_FAKE_VERSION").value_or("13.0");
      std::printf(
          "fake-nvcc: stand-in for the NVIDIA (R) Cuda compiler driver\n"
          "Copyright (c) 2005-2025 NVIDIA Corporation\n"
          "Built on Fake_Build\n"
          "Cuda compilation tools, release %s, V%s.88-fake\n"
          "Build cuda_%s.r%s/compiler.fake_0\n",
          v.c_str(), v.c_str(), v.c_str(), v.c_str());
      std::exit(0);
    } else if (a == "--list-gpu-arch" || a == "-arch-ls") {
      for (const char* arch : kArchList) std::printf("%s\n", arch);
      std::exit(0);
    } else if (a == "-c" || a == "--compile") {
      if (i + 1 < argc && argv[i + 1][0] != '-') args.src = argv[++i];
    } else if (a == "-shared" || a == "--shared") {
      args.link = true;
    } else if (a == "-o" || a == "--output-file") {
      args.out = next();
    } else if (a == "-gencode" || a == "--generate-code") {
      args.archs.push_back(gencode_target(next()));
      args.flags.push_back("-gencode " + args.archs.back());
    } else if (a.rfind("-gencode=", 0) == 0 || a.rfind("--generate-code=", 0) == 0) {
      args.archs.push_back(gencode_target(a.substr(a.find('=') + 1)));
    } else if (a == "-arch" || a == "--gpu-architecture") {
      args.archs.push_back(next());
    } else if (a.rfind("-arch=", 0) == 0) {
      args.archs.push_back(a.substr(6));
    } else if (a == "-MD" || a == "--generate-dependencies-with-compile") {
      args.depfile = true;
      args.flags.push_back(a);
    } else if (a == "-MF" || a == "--dependency-output") {
      args.depfile_path = next();
    } else if (a == "-MT") {
      args.depfile_target = next();
      args.flags.push_back(a + " " + args.depfile_target);
    } else if (a == "-I" || a == "--include-path") {
      args.include_dirs.push_back(next());
      args.flags.push_back("-I" + args.include_dirs.back());
    } else if (a.rfind("-I", 0) == 0) {
      args.include_dirs.push_back(a.substr(2));
      args.flags.push_back(a);
    } else if (a == "--threads" || a == "-t") {
      args.threads = parse_threads(next());
    } else if (a.rfind("--threads=", 0) == 0) {
      args.threads = parse_threads(a.substr(10));
    } else if (takes_value(a)) {
      args.flags.push_back(a + " " + next());
    } else if (!a.empty() && a[0] == '-') {
      // Any other flag (-O3, --use_fast_math, -Xcompiler=-fPIC): accepted, otherwise ignored.
      args.flags.push_back(a);
    } else if (args.src.empty()) {
      args.src = a;
      args.inputs.push_back(a);
    } else {
      args.inputs.push_back(a);
    }
  }
  return args;
}

/// Appends `line` to FAD_FAKE_LOG under an exclusive lock, so concurrent runs don't interleave.
void append_log(const std::string& line) {
  std::optional<std::string> path = env("FAD_FAKE_LOG");
  if (!path) return;
  int fd = ::open(path->c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) die("cannot open FAD_FAKE_LOG " + *path + ": " + std::strerror(errno));
  while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {}
  std::string text = line + "\n";
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  ::close(fd);  // releases the lock
}

/// Writes `content` to `path` atomically (path.tmp, then rename).
bool write_file(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out << content;
    if (!out.flush()) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Overrides read_overrides(const std::string& src) {
  Overrides o;
  std::optional<std::string> text = read_file(src);
  if (!text) return o;
  std::size_t at = text->find("// fake-nvcc:");
  if (at == std::string::npos) return o;
  std::istringstream line(text->substr(at + 13, text->find('\n', at) - at - 13));
  for (std::string field; line >> field;) {
    std::size_t eq = field.find('=');
    if (eq == std::string::npos) continue;
    std::string key = field.substr(0, eq);
    const char* value = field.c_str() + eq + 1;
    if (key == "peak_mb")
      o.peak_mb = std::atof(value);
    else if (key == "duration_s")
      o.duration_s = std::atof(value);
    else if (key == "exit")
      o.exit_code = std::atoi(value);
    else if (key == "children")
      o.children = std::atoi(value);
    else if (key == "print_mb")
      o.print_mb = std::atof(value);
    else if (key == "stop_self")
      o.stop_self = std::atoi(value) != 0;
    else if (key == "driver")
      o.driver = std::atoi(value) != 0;
    else if (key == "profile" && *value) {
      std::string path = value;
      std::size_t slash = src.rfind('/');
      if (path[0] != '/' && slash != std::string::npos) path = src.substr(0, slash + 1) + path;
      o.profile = path;
    }
  }
  return o;
}

std::vector<Sample> synthetic_profile(double peak_mb, double duration_s) {
  return {{0, 0}, {0.2 * duration_s, peak_mb}, {0.2 * duration_s, 0.4 * peak_mb}, {duration_s, 0.4 * peak_mb}};
}

/// A trace and, when its header says so, the archs it compiled at once.
struct Trace {
  std::vector<Sample> samples;
  int reference_parallel = 0;  ///< 0: not recorded
};

/// "# targets: sm_80, sm_90, nvcc --threads 2" -> min(2 threads, 2 targets).
int reference_parallel(const std::string& line) {
  if (line.find("targets:") == std::string::npos) return 0;
  int targets = 0;
  for (std::size_t at = line.find("sm_"); at != std::string::npos; at = line.find("sm_", at + 3)) ++targets;
  std::size_t t = line.find("--threads");
  if (targets == 0 || t == std::string::npos) return 0;
  int threads = std::atoi(line.c_str() + t + 9);
  return std::max(1, std::min(threads <= 0 ? targets : threads, targets));
}

Trace load_trace(const std::string& path) {
  std::optional<std::string> text = read_file(path);
  if (!text) die("cannot read FAD_FAKE_PROFILE " + path);
  Trace trace;
  std::vector<Sample>& samples = trace.samples;
  samples.push_back({0, 0});
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '#' && trace.reference_parallel == 0)
      trace.reference_parallel = reference_parallel(line);
    if (line.empty() || line[0] == '#') continue;
    Sample s{};
    if (std::sscanf(line.c_str(), "%lf %lf", &s.seconds, &s.mib) != 2) die("bad profile line '" + line + "'");
    samples.push_back(s);
  }
  return trace;
}

/// `trace` as compiled with `e` archs at once instead of its reference's.
std::vector<Sample> rescale_trace(const Trace& trace, int e) {
  const int ref = trace.reference_parallel;
  const double memory = 0.3 + 0.7 * e / ref;
  const double time = std::pow(static_cast<double>(ref) / e, 0.85);
  const int turns = e >= ref ? 1 : (ref + e - 1) / e;
  const double span = trace.samples.back().seconds * time / turns;
  std::vector<Sample> out;
  for (int k = 0; k < turns; ++k)
    for (const Sample& s : trace.samples) out.push_back({k * span + s.seconds * time / turns, s.mib * memory});
  return out;
}

/// The profile's memory at time t, linearly interpolated.
double mib_at(const std::vector<Sample>& profile, double t) {
  for (std::size_t i = 1; i < profile.size(); ++i) {
    if (t < profile[i].seconds) {
      const Sample& a = profile[i - 1];
      const Sample& b = profile[i];
      double span = b.seconds - a.seconds;
      return span <= 0 ? b.mib : a.mib + (b.mib - a.mib) * (t - a.seconds) / span;
    }
  }
  return profile.empty() ? 0 : profile.back().mib;
}

/// Memory held in mmap'ed chunks, every page written so that it is resident.
class Ballast {
 public:
  ~Ballast() { resize(0); }
  void resize(std::size_t bytes) {
    std::size_t want = (bytes + kChunkBytes / 2) / kChunkBytes;
    while (chunks_.size() < want) {
      void* p = ::mmap(nullptr, kChunkBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) die("out of memory");
      // Non-zero bytes on every page: the kernel must back each with a real page.
      for (std::size_t off = 0; off < kChunkBytes; off += kPageBytes) static_cast<char*>(p)[off] = 1;
      chunks_.push_back(p);
    }
    while (chunks_.size() > want) {
      ::munmap(chunks_.back(), kChunkBytes);  // munmap, unlike free, returns the pages at once
      chunks_.pop_back();
    }
  }

 private:
  std::vector<void*> chunks_;
};

/// Seconds of CPU time this process has had.
double process_cpu_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/// `n` threads that spin until destroyed: the compiler's CPU use.
class Burners {
 public:
  explicit Burners(int n) {
    for (int i = 0; i < n; ++i)
      threads_.emplace_back([this] {
        volatile std::uint64_t x = 0;
        while (!stop_.load(std::memory_order_relaxed))
          for (int k = 0; k < 10000; ++k) x = x + 1;
      });
  }
  ~Burners() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

/// Follows `profile` (times already scaled) with real memory until its end;
/// with `cpu_threads` > 0, time is CPU time per burning thread.
void replay(const std::vector<Sample>& profile, double mem_factor, int cpu_threads) {
  using Clock = std::chrono::steady_clock;
  const double end = profile.empty() ? 0 : profile.back().seconds;
  Ballast ballast;
  const auto start = Clock::now();
  const double cpu_start = process_cpu_s();
  std::optional<Burners> burners;
  if (cpu_threads > 0) burners.emplace(cpu_threads);
  double last_t = -1;
  while (true) {
    double t = cpu_threads > 0 ? (process_cpu_s() - cpu_start) / cpu_threads
                               : std::chrono::duration<double>(Clock::now() - start).count();
    if (t >= end) break;
    // A sample passed between two ticks still counts: sped-up replays must reach the trace's peaks.
    double mib = mib_at(profile, t);
    for (const Sample& s : profile) {
      if (s.seconds > last_t && s.seconds <= t) mib = std::max(mib, s.mib);
    }
    last_t = t;
    ballast.resize(static_cast<std::size_t>(mib * mem_factor * kMiB));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

/// The descriptors this process holds, e.g. "0,1,2".
std::string open_fds() {
  std::vector<int> fds;
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return "?";
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const int fd = std::atoi(e->d_name);
    if (fd != ::dirfd(dir)) fds.push_back(fd);
  }
  ::closedir(dir);
  std::sort(fds.begin(), fds.end());
  std::string out;
  for (int fd : fds) out += (out.empty() ? "" : ",") + std::to_string(fd);
  return out;
}

// The process's supplementary groups, comma-separated, in the order held.
std::string supplementary_groups() {
  std::vector<gid_t> groups(static_cast<std::size_t>(std::max(0, ::getgroups(0, nullptr))));
  const int n = groups.empty() ? 0 : ::getgroups(static_cast<int>(groups.size()), groups.data());
  std::string out;
  for (int i = 0; i < n; ++i) out += (i ? "," : "") + std::to_string(groups[static_cast<std::size_t>(i)]);
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

/// Where `#include` of `name` from `includer` resolves: the includer's own
/// directory for quoted names, then the -I directories; "" when nowhere (a
/// system header: not followed, as nvcc lists those under /usr).
std::string resolve_include(const std::string& name, bool quoted, const std::string& includer,
                            const std::vector<std::string>& include_dirs) {
  std::vector<std::string> candidates;
  if (quoted) {
    std::size_t slash = includer.rfind('/');
    candidates.push_back(slash == std::string::npos ? name : includer.substr(0, slash + 1) + name);
  }
  for (const std::string& dir : include_dirs) candidates.push_back(dir + "/" + name);
  for (const std::string& c : candidates)
    if (::access(c.c_str(), R_OK) == 0) return c;
  return "";
}

/// The source and every header it includes, transitively, in first-seen order.
std::vector<std::string> included_files(const std::string& src, const std::vector<std::string>& include_dirs) {
  std::vector<std::string> files{src};
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::optional<std::string> text = read_file(files[i]);
    if (!text) continue;
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);) {
      std::size_t at = line.find("#include");
      if (at == std::string::npos || line.find_first_not_of(" \t") != at) continue;
      std::size_t open = line.find_first_of("\"<", at + 8);
      if (open == std::string::npos) continue;
      const bool quoted = line[open] == '"';
      std::size_t close = line.find(quoted ? '"' : '>', open + 1);
      if (close == std::string::npos) continue;
      std::string found = resolve_include(line.substr(open + 1, close - open - 1), quoted, files[i], include_dirs);
      if (!found.empty() && std::find(files.begin(), files.end(), found) == files.end()) files.push_back(found);
    }
  }
  return files;
}

std::string fnv_hex(const std::string& data) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

int run_link(const Args& args) {
  if (args.out.empty()) die("-shared needs -o OUT");
  append_log("pid=" + std::to_string(::getpid()) + " link out=" + args.out);
  std::string content;
  for (const std::string& in : args.inputs) {
    std::optional<std::string> data = read_file(in);
    if (!data) die("cannot read input " + in);
    content += *data;
  }
  if (std::optional<std::string> forced = env("FAD_FAKE_EXIT"); forced && std::atoi(forced->c_str()) != 0) {
    return std::atoi(forced->c_str());
  }
  if (!write_file(args.out, content)) die("cannot write " + args.out);
  std::printf("fake-nvcc: linked %s from %zu objects\n", args.out.c_str(), args.inputs.size());
  return 0;
}

int run_compile(Args args) {
  if (args.src.empty()) die("no input files specified");
  if (args.out.empty()) {
    std::string base = args.src.substr(args.src.rfind('/') + 1);
    args.out = base.substr(0, base.rfind('.')) + ".o";
  }
  const std::string fds = open_fds();  // before anything of its own is opened
  append_log("pid=" + std::to_string(::getpid()) + " src=" + args.src + " out=" + args.out +
             " threads=" + std::to_string(args.threads) + " archs=" + join(args.archs) +
             " uid=" + std::to_string(::getuid()) + " groups=" + supplementary_groups() + " fds=" + fds);

  const Overrides over = read_overrides(args.src);
  const double time_scale = env_double("FAD_FAKE_TIME_SCALE", 1.0);
  const int gencodes = std::max<int>(1, static_cast<int>(args.archs.size()));
  const int parallel = args.threads == 0 ? gencodes : std::max(1, std::min(args.threads, gencodes));

  std::vector<Sample> profile;
  double mem_factor = env_double("FAD_FAKE_MEM_SCALE", 1.0) * parallel;
  auto use_trace = [&](const std::string& path) {
    Trace trace = load_trace(path);
    if (trace.reference_parallel > 0) {
      profile = rescale_trace(trace, parallel);
      mem_factor = env_double("FAD_FAKE_MEM_SCALE", 1.0);
    } else {
      profile = std::move(trace.samples);
    }
  };
  std::optional<std::string> peak_env = env("FAD_FAKE_PEAK_MB");
  if (over.profile && !over.peak_mb && !over.duration_s) {
    use_trace(*over.profile);
  } else if (over.peak_mb || over.duration_s || peak_env) {
    double peak = over.peak_mb ? *over.peak_mb : env_double("FAD_FAKE_PEAK_MB", 0);
    double duration = over.duration_s ? *over.duration_s : env_double("FAD_FAKE_DURATION_S", 1.0);
    profile = synthetic_profile(peak, duration);
  } else if (std::optional<std::string> trace = env("FAD_FAKE_PROFILE")) {
    use_trace(*trace);
  }
  for (Sample& s : profile) s.seconds *= time_scale;

  std::printf("fake-nvcc: compiling %s for %s (threads %d)\n", args.src.c_str(),
              args.archs.empty() ? "default arch" : join(args.archs).c_str(), args.threads);
  if (over.print_mb) {
    const std::string line = args.src + "(1): warning: fake warning " + std::string(64, 'w') + "\n";
    for (double printed = 0; printed < *over.print_mb * kMiB; printed += static_cast<double>(line.size()))
      std::fputs(line.c_str(), stdout);
  }
  std::fflush(stdout);
  if (!profile.empty()) {
    double peak = 0;
    for (const Sample& s : profile) peak = std::max(peak, s.mib);
    std::fprintf(stderr, "fake-nvcc: replaying %.1f s, peak %s\n", profile.back().seconds,
                 fad::format_size(static_cast<std::uint64_t>(peak * mem_factor * kMiB)).c_str());
  }
  const int children = over.children ? *over.children : static_cast<int>(env_double("FAD_FAKE_CHILDREN", 0));
  std::vector<pid_t> kids;
  for (int i = 0; i < children; ++i) {
    const pid_t kid = ::fork();
    if (kid == 0) {
      replay(profile, mem_factor, 0);
      ::_exit(0);
    }
    if (kid > 0) kids.push_back(kid);
  }
  if (over.stop_self) ::raise(SIGSTOP);
  const bool driver = over.driver && !kids.empty();
  if (!driver) replay(profile, mem_factor, env("FAD_FAKE_CPU") == std::optional<std::string>("1") ? parallel : 0);
  int child_signal = 0;
  for (pid_t kid : kids) {
    int status = 0;
    if (::waitpid(kid, &status, 0) == kid && WIFSIGNALED(status)) child_signal = WTERMSIG(status);
  }
  if (driver && child_signal != 0) {
    std::fprintf(stderr, "nvcc error   : 'cicc' died due to signal %d\n", child_signal);
    return 128 + child_signal;
  }

  if (std::optional<std::string> match = env("FAD_FAKE_FAIL_MATCH");
      match && args.src.find(*match) != std::string::npos) {
    std::fprintf(stderr, "%s(1): error: fake failure\n1 error detected in the compilation of \"%s\".\n",
                 args.src.c_str(), args.src.c_str());
    return 1;
  }
  int code = 0;
  if (over.exit_code)
    code = *over.exit_code;
  else if (std::optional<std::string> forced = env("FAD_FAKE_EXIT"))
    code = std::atoi(forced->c_str());
  if (code != 0) {
    std::fprintf(stderr, "fake-nvcc: exiting with forced code %d\n", code);
    return code;
  }
  const std::vector<std::string> inputs = included_files(args.src, args.include_dirs);
  std::string content;
  for (const std::string& f : inputs) content += f.substr(f.rfind('/') + 1) + '\0' + read_file(f).value_or("") + '\0';
  std::string flags;
  for (const std::string& f : args.flags) flags += (flags.empty() ? "" : " ") + f;
  if (!write_file(args.out, "fake-nvcc object\nsrc=" + args.src + "\narchs=" + join(args.archs) +
                                "\ncontent=" + fnv_hex(content) + "\nflags=" + flags + "\n")) {
    die("cannot write " + args.out + ": " + std::strerror(errno));
  }
  if (args.depfile) {
    // nvcc's layout: "TARGET : SRC \" then one prerequisite per line, indented.
    std::string dep = (args.depfile_target.empty() ? args.out : args.depfile_target) + " : " + inputs.front();
    for (std::size_t i = 1; i < inputs.size(); ++i) dep += " \\\n    " + inputs[i];
    dep += "\n";
    std::string path = args.depfile_path;
    if (path.empty()) path = args.out.substr(0, args.out.rfind('.')) + ".d";
    if (!write_file(path, dep)) die("cannot write " + path);
  }
  std::fprintf(stderr, "fake-nvcc: wrote %s\n", args.out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);
  return args.link ? run_link(args) : run_compile(std::move(args));
}
