// The integration-test harness; see harness.h.
#include "harness.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

extern char** environ;

namespace fad::test {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {

// The compile cache and the memory claims of one test: every test binary
// process runs one test case, so nothing leaks from one test into another
// (nor into the user's own cache).
const fs::path& test_scratch() {
  static const TempDir dir;
  return dir.path();
}

// The memory claims of launchers a test runs as another user: shared and
// sticky like the real directory. Without it their launchers would make
// /tmp/fad-claims as that user, which then is theirs alone on this machine
// (every other user's launchers would claim apart).
const fs::path& shared_test_claims() {
  static const TempDir dir;
  static const bool shared = [] {
    fs::permissions(dir.path(), fs::perms::all | fs::perms::sticky_bit);
    return true;
  }();
  (void)shared;
  return dir.path();
}

pid_t spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env_in, const fs::path& out,
            const fs::path& err) {
  std::map<std::string, std::string> env = env_in;
  for (const auto& [name, sub] : {std::pair{"FAD_CACHE_DIR", "cache"}, std::pair{"FAD_CLAIMS_DIR", "claims"}})
    if (!env.count(name) && !std::getenv(name)) env[name] = (test_scratch() / sub).string();
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string s(*e);
    auto key = s.substr(0, s.find('='));
    if (!env.count(key)) env_strings.push_back(s);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

int wait_exit(pid_t pid, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  while (true) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
}  // namespace

std::string slurp_file(const fs::path& path) { return slurp(path); }

pid_t start_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                    const fs::path& out, const fs::path& err) {
  return spawn(argv, env, out, err);
}

int wait_process(pid_t pid, int timeout_s) { return wait_exit(pid, timeout_s); }

std::optional<int> poll_process(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) != pid) return std::nullopt;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), {});
  // The state follows the command name, which may hold spaces and ')'.
  const auto close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? 'X' : stat[close + 2];
}

std::uint64_t rss_of_processes_matching(const std::string& needle, const fs::path& cwd) {
  std::uint64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (name.empty() || name[0] < '0' || name[0] > '9') continue;
    // The program itself (argv[0]), not a launcher that names it in its arguments.
    std::string cmdline = slurp(it->path() / "cmdline");
    const std::string program = cmdline.substr(0, cmdline.find('\0'));
    if (program.find(needle) == std::string::npos) continue;
    std::error_code link_ec;
    if (fs::read_symlink(it->path() / "cwd", link_ec) != cwd) continue;
    std::istringstream status(slurp(it->path() / "status"));
    for (std::string line; std::getline(status, line);)
      if (line.rfind("VmRSS:", 0) == 0) total += std::stoull(line.substr(6)) * 1024;
  }
  return total;
}

CommandResult run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, int timeout_s) {
  TempDir tmp;
  auto out = tmp.path() / "out", err = tmp.path() / "err";
  CommandResult r;
  const pid_t pid = spawn(argv, env, out, err);
  if (pid < 0) {
    r.exit_code = 127;
    r.err = "cannot run " + argv[0];
    return r;
  }
  r.exit_code = wait_exit(pid, timeout_s);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

CommandResult run_as_user(uid_t uid, gid_t gid, const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env, int timeout_s,
                          const std::vector<gid_t>& groups) {
  TempDir tmp;
  const auto out = tmp.path() / "out", err = tmp.path() / "err";
  std::map<std::string, std::string> env_set = env;
  if (!env_set.count("FAD_CLAIMS_DIR") && !std::getenv("FAD_CLAIMS_DIR"))
    env_set["FAD_CLAIMS_DIR"] = shared_test_claims().string();
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    if (!env_set.count(entry.substr(0, entry.find('=')))) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : env_set) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);
  const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  CommandResult r;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    ::dup2(null_fd, 0);
    if (::setgroups(groups.size(), groups.data()) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) ::_exit(126);
    if (::chdir("/") != 0) ::_exit(126);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  ::close(out_fd);
  ::close(err_fd);
  if (pid < 0) return r;
  r.exit_code = wait_exit(pid, timeout_s);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

std::vector<pid_t> processes_with_env(const std::string& entry) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (name.empty() || name[0] < '0' || name[0] > '9') continue;
    const std::string environ_text = slurp(it->path() / "environ");
    for (std::size_t pos = 0; pos < environ_text.size();) {
      const auto end_pos = environ_text.find('\0', pos);
      if (environ_text.compare(pos, end_pos - pos, entry) == 0) {
        out.push_back(std::stoi(name));
        break;
      }
      if (end_pos == std::string::npos) break;
      pos = end_pos + 1;
    }
  }
  return out;
}

std::uint64_t rss_of(pid_t pid) {
  std::istringstream status(slurp("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  return 0;
}

RawClient::RawClient(const std::string& socket_path) {
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path.c_str());
  if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

RawClient::~RawClient() {
  if (fd_ >= 0) ::close(fd_);
}

bool RawClient::send(const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const auto n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

std::optional<std::string> RawClient::read_line(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  while (pending_.find('\n') == std::string::npos) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd_, POLLIN, 0};
    // At least one look, even with no time left.
    if (::poll(&p, 1, static_cast<int>(std::max<long>(0, left.count()))) <= 0) {
      if (left.count() <= 0) return std::nullopt;
      continue;
    }
    const auto n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      if (pending_.empty()) return std::nullopt;
      return std::exchange(pending_, {});
    }
    pending_.append(buf, static_cast<std::size_t>(n));
  }
  const auto nl = pending_.find('\n');
  std::string line = pending_.substr(0, nl);
  pending_.erase(0, nl + 1);
  return line;
}

std::string find_tool(const std::vector<std::string>& candidates) {
  for (const auto& c : candidates)
    if (::access(c.c_str(), X_OK) == 0) return c;
  return {};
}

fs::path write_ninja_project(const fs::path& dir, int n, const std::string& fake_line, const std::string& launcher) {
  fs::create_directories(dir);
  std::ofstream ninja(dir / "build.ninja");
  ninja << "rule cc\n  command = " << launcher << (launcher.empty() ? "" : " ") << FAD_FAKE_NVCC_BIN
        << " -c $in -o $out -gencode arch=compute_90,code=sm_90\n";
  for (int i = 0; i < n; ++i) {
    const std::string name = "u" + std::to_string(100 + i);
    std::ofstream(dir / (name + ".cu")) << "// fake-nvcc: " << fake_line << "\n";
    ninja << "build " << name << ".o: cc " << name << ".cu\n";
  }
  return dir;
}

json find_build(const json& status, const std::string& name) {
  json found;
  for (const auto& b : status.at("builds"))
    if (b.at("name") == name && (found.is_null() || b.at("id") > found.at("id"))) found = b;
  return found;
}

bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

Daemon::Daemon() {
  // A config of the test's own: quick polling, and no user config leaking in.
  std::ofstream(dir() / "test-config.json") << "{\"poll_interval_ms\": 100}\n";
}

Daemon::~Daemon() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

void Daemon::write_kernels(const std::vector<FakeUnit>& units) {
  const fs::path k = kernels_dir();
  fs::create_directories(k / "src");
  fs::create_directories(k / "include");
  std::ofstream(k / "include" / "common.cuh") << "#pragma once\n";
  json manifest = {{"version", 1},     {"library", "fad_test"},       {"include_dirs", {"include"}},
                   {"flags", {"-O2"}}, {"link_flags", json::array()}, {"units", json::array()}};
  for (const auto& u : units) {
    std::ofstream src(k / "src" / (u.name + ".cu"));
    src << "#include \"common.cuh\"\n";
    if (!u.fake.empty()) src << "// fake-nvcc: " << u.fake << "\n";
    src << "__global__ void " << u.name << "_kernel() {}\n";
    manifest["units"].push_back({{"name", u.name},
                                 {"source", "src/" + u.name + ".cu"},
                                 {"family", u.name.substr(0, u.name.find('_'))},
                                 {"flags", json::array()}});
  }
  std::ofstream(k / "manifest.json") << manifest.dump(2);
}

void Daemon::start(std::vector<std::string> extra_args, std::map<std::string, std::string> env) {
  std::vector<std::string> argv = {FAD_FADD_BIN, "--socket",      socket(),     "--state-dir",
                                   state_dir(),  "--kernels-dir", kernels_dir()};
  bool has_nvcc = false;
  for (const auto& a : extra_args) has_nvcc |= a == "--nvcc";
  if (!has_nvcc) {
    argv.push_back("--nvcc");
    argv.push_back(FAD_FAKE_NVCC_BIN);
  }
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  argv.insert(argv.begin(), wrapper_.begin(), wrapper_.end());
  env.emplace("FAD_FAKE_LOG", fake_log_path());
  env.emplace("FAD_CONFIG", (dir() / "test-config.json").string());
  pid_ = spawn(argv, env, dir() / "fadd.log", dir() / "fadd.log");
  if (pid_ < 0) throw std::runtime_error("cannot run " + argv[0]);
  const bool up = wait_for(
      [&] {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = -1;
          return true;
        }
        return fad({"status"}).exit_code == 0;
      },
      std::chrono::seconds(30));
  if (!up || pid_ < 0) throw std::runtime_error("fadd did not come up:\n" + daemon_log());
}

int Daemon::start_expect_exit(std::vector<std::string> extra_args, std::string* log) {
  std::vector<std::string> argv = {FAD_FADD_BIN,    "--socket",    socket(), "--state-dir",    state_dir(),
                                   "--kernels-dir", kernels_dir(), "--nvcc", FAD_FAKE_NVCC_BIN};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  auto r = run(argv, {{"FAD_CONFIG", (dir() / "test-config.json").string()}}, 30);
  // Only stderr: a script reading it for why fadd would not start must find
  // it there (fadd once logged to stdout).
  if (log) *log = r.err;
  return r.exit_code;
}

void Daemon::kill9() {
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

int Daemon::terminate() {
  ::kill(pid_, SIGTERM);
  int code = wait_exit(pid_, 60);
  pid_ = -1;
  return code;
}

CommandResult Daemon::fad(std::vector<std::string> args, int timeout_s) {
  args.insert(args.begin(), FAD_FAD_BIN);
  return run(args, {{"FAD_SOCKET", socket()}, {"FAD_STATE_DIR", state_dir()}}, timeout_s);
}

json Daemon::status(std::int64_t id) {
  auto r = fad({"status", std::to_string(id), "--json"});
  if (r.exit_code != 0) throw std::runtime_error("fad status failed: " + r.err);
  return json::parse(r.out).at("builds").at(0);
}

json Daemon::status_all() {
  auto r = fad({"status", "--json"});
  if (r.exit_code != 0) throw std::runtime_error("fad status failed: " + r.err);
  return json::parse(r.out);
}

json Daemon::wait_for_build(const std::string& name, int timeout_s) {
  json b;
  wait_for(
      [&] {
        b = find_build(status_all(), name);
        return !b.is_null();
      },
      std::chrono::seconds(timeout_s));
  return b;
}

json Daemon::wait_final(std::int64_t id, int timeout_s) {
  json b;
  wait_for(
      [&] {
        b = status(id);
        const auto s = b.at("state").get<std::string>();
        return s == "succeeded" || s == "failed" || s == "cancelled";
      },
      std::chrono::seconds(timeout_s));
  return b;
}

std::int64_t Daemon::submit(std::vector<std::string> args) {
  args.insert(args.begin(), {"submit", "--json"});
  auto r = fad(args);
  if (r.exit_code != 0) throw std::runtime_error("fad submit failed: " + r.err);
  return json::parse(r.out).at("id").get<std::int64_t>();
}

std::vector<std::string> Daemon::fake_log() {
  std::vector<std::string> lines;
  std::istringstream in(slurp(fake_log_path()));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

std::vector<pid_t> Daemon::fake_pids() {
  std::vector<pid_t> pids;
  for (const auto& line : fake_log())
    if (line.rfind("pid=", 0) == 0) pids.push_back(std::stoi(line.substr(4)));
  return pids;
}

std::string Daemon::daemon_log() { return slurp(dir() / "fadd.log"); }

std::size_t Daemon::daemon_log_count(const std::string& text) {
  const std::string log = daemon_log();
  std::size_t n = 0;
  for (auto at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++n;
  return n;
}

}  // namespace fad::test
