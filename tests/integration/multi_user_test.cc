// A root fadd shared by several users, driven by the real client running as
// another user (nobody): that user cannot act on root's builds or stop fadd,
// their compiles run as them and their outputs are theirs, a pid that is not
// theirs is never adopted, and a squatted socket directory is refused.
// Needs root (to switch users); skips, saying so, otherwise.
#include <grp.h>
#include <pwd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <thread>
#include <set>
#include <sstream>

#include <catch2/catch.hpp>

#include "harness.h"

using namespace fad::test;

namespace {

struct Nobody {
  uid_t uid = 65534;
  gid_t gid = 65534;
  std::string group;
};

/// nobody and its group, when this test can switch to them.
std::optional<Nobody> nobody() {
  if (::geteuid() != 0) return std::nullopt;
  const passwd* pw = ::getpwnam("nobody");
  if (!pw) return std::nullopt;
  const group* gr = ::getgrgid(pw->pw_gid);
  if (!gr) return std::nullopt;
  return Nobody{pw->pw_uid, pw->pw_gid, gr->gr_name};
}

#define NEED_NOBODY(who)                                                                      \
  auto who = nobody();                                                                        \
  if (!who) {                                                                                 \
    WARN("SKIP: needs root and a 'nobody' user to run the client as another user; not run");  \
    return;                                                                                   \
  }                                                                                           \
  if (const auto closed = closed_to_others(fs::temp_directory_path()); !closed.empty()) {     \
    WARN("SKIP: other users cannot enter " << closed                                          \
                                           << " (on the way to TMPDIR), so nobody could not " \
                                              "reach the test's socket; not run");            \
    return;                                                                                   \
  }

/// The binaries another user must run, in a directory of the test's own that
/// anyone may enter (a CI checkout may sit in a 0700 directory).
struct SharedBins {
  TempDir dir;
  std::string fad, fake;
  SharedBins() {
    fad = (dir.path() / "fad").string();
    fake = (dir.path() / "fake-nvcc").string();
    fs::copy_file(FAD_FAD_BIN, fad);
    fs::copy_file(FAD_FAKE_NVCC_BIN, fake);
  }
};

/// A root fadd whose socket the nobody group may reach, compiling with the shared fake compiler.
void start_shared(Daemon& d, const SharedBins& bins, const Nobody& who, std::vector<FakeUnit> units) {
  d.write_kernels(units);
  d.write_config("{\"poll_interval_ms\": 100, \"socket_group\": \"" + who.group + "\", \"socket_mode\": \"0660\"}");
  std::ofstream(d.fake_log_path()).flush();
  fs::permissions(d.fake_log_path(), fs::perms::all & ~(fs::perms::owner_exec | fs::perms::group_exec |
                                                        fs::perms::others_exec));  // 0666: every user logs
  d.start({"--nvcc", bins.fake, "--cores", "8"});
}

// Forks a process of `who` that opens `n` connections to `socket` and holds
// them until killed; returns its pid and what `verdict` says of its last
// connection once all are open ('!' when the process could not become `who`).
std::pair<pid_t, char> hold_connections(const Nobody& who, const std::string& socket, int n,
                                        const std::function<char(RawClient&)>& verdict) {
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    char said = '!';
    std::vector<RawClient> idle;  // held open until the process is killed
    if (::setgroups(0, nullptr) == 0 && ::setgid(who.gid) == 0 && ::setuid(who.uid) == 0) {
      for (int i = 0; i < n; ++i) idle.emplace_back(socket);
      said = verdict(idle.back());
    }
    [[maybe_unused]] auto w = ::write(ready[1], &said, 1);
    ::pause();  // until killed
    ::_exit(0);
  }
  ::close(ready[1]);
  char said = 0;
  const bool got = ::read(ready[0], &said, 1) == 1;
  ::close(ready[0]);
  REQUIRE(got);
  return {pid, said};
}

/// Forks; the child (0 returned) runs as `who`, or exits 2 where it cannot.
pid_t fork_as(const Nobody& who) {
  const pid_t pid = ::fork();
  if (pid == 0 && (::setgroups(0, nullptr) != 0 || ::setgid(who.gid) != 0 || ::setuid(who.uid) != 0)) ::_exit(2);
  return pid;
}

CommandResult as_nobody(const Nobody& who, const SharedBins& bins, Daemon& d, std::vector<std::string> args) {
  args.insert(args.begin(), bins.fad);
  return run_as_user(who.uid, who.gid, args, {{"FAD_SOCKET", d.socket()}, {"FAD_FAKE_LOG", d.fake_log_path()}});
}

std::vector<std::string> lines_with(Daemon& d, const std::string& needle) {
  std::vector<std::string> out;
  for (const auto& l : d.fake_log())
    if (l.find(needle) != std::string::npos) out.push_back(l);
  return out;
}

}  // namespace

TEST_CASE("another user cannot cancel, pause, resume, retry or stop root's build", "[integration][users]") {
  NEED_NOBODY(who);
  SharedBins bins;
  Daemon d;
  start_shared(d, bins, *who, {{"fwd_slow", "peak_mb=4 duration_s=30"}, {"fwd_b", ""}});
  const auto id = d.submit({"--arch", "9.0"});
  REQUIRE(wait_for([&] { return d.status(id).at("units").at("running") == 1; }, std::chrono::seconds(30)));
  const std::string sid = std::to_string(id);
  for (const char* verb : {"cancel", "pause", "resume", "retry"}) {
    auto r = as_nobody(*who, bins, d, {verb, sid});
    INFO(verb << ": " << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.err == "fad: build " + sid + " belongs to root; only root may " + verb + " it\n");
  }
  auto stop = as_nobody(*who, bins, d, {"daemon", "stop"});
  CHECK(stop.exit_code == 1);
  CHECK(stop.err == "fad: only root may stop this fadd\n");
  CHECK(as_nobody(*who, bins, d, {"logs", sid}).exit_code == 1);
  // Looking is allowed, and shows whose build it is.
  auto status = as_nobody(*who, bins, d, {"status"});
  REQUIRE(status.exit_code == 0);
  CHECK(status.out.find("USER") != std::string::npos);
  CHECK(status.out.find(" root ") != std::string::npos);
  auto b = d.status(id);
  CHECK(b.at("state") == "running");
  CHECK(b.at("user") == "root");
  CHECK(b.at("uid") == 0);
  CHECK(d.running());
  CHECK(d.fad({"cancel", sid}).exit_code == 0);
}

TEST_CASE("another user's compiles hold the groups their client's process held, not the group database's",
          "[integration][users]") {
  NEED_NOBODY(who);
  SharedBins bins;
  Daemon d;
  start_shared(d, bins, *who, {{"fwd_a", ""}});
  // nobody's process holds group 4242, which no group database gives it;
  // before, fadd looked the groups up and ran the compile without it.
  const gid_t extra = 4242;
  auto r = run_as_user(who->uid, who->gid, {bins.fad, "submit", "--arch", "9.0", "--wait"},
                       {{"FAD_SOCKET", d.socket()}, {"FAD_FAKE_LOG", d.fake_log_path()}}, 120, {extra});
  INFO(r.out << r.err << d.daemon_log());
  REQUIRE(r.exit_code == 0);
  const auto lines = lines_with(d, " uid=" + std::to_string(who->uid) + " ");
  REQUIRE(lines.size() == 1);
  INFO(lines[0]);
  const auto at = lines[0].find(" groups=") + 8;
  std::set<std::string> groups;  // the kernel keeps them sorted, not in the order given
  std::stringstream list(lines[0].substr(at, lines[0].find(' ', at) - at));
  for (std::string g; std::getline(list, g, ',');) groups.insert(g);
  CHECK(groups == std::set<std::string>{std::to_string(who->gid), std::to_string(extra)});
}

TEST_CASE("another user's build compiles as that user and its files are theirs", "[integration][users]") {
  NEED_NOBODY(who);
  SharedBins bins;
  Daemon d;
  start_shared(d, bins, *who, {{"fwd_a", ""}, {"fwd_b", ""}});
  auto r = as_nobody(*who, bins, d, {"submit", "--arch", "9.0", "--json", "--wait"});
  INFO(r.out << r.err << d.daemon_log());
  REQUIRE(r.exit_code == 0);
  const auto build = json::parse(r.out).at("builds").at(0);  // the document of 'fad status ID --json'
  CHECK(build.at("state") == "succeeded");
  CHECK(build.at("user") == "nobody");
  const std::string sid = std::to_string(build.at("id").get<int>());
  // Every compiler ran as nobody, the probe of the compiler too (no root line at all).
  CHECK(lines_with(d, " uid=" + std::to_string(who->uid)).size() == 2);
  CHECK(lines_with(d, " uid=0 ").empty());
  const fs::path dir = fs::path(d.state_dir()) / "builds" / sid;
  struct stat st {};
  for (const auto& p :
       {dir / "obj" / "fwd_a.o", dir / "lib" / "libfad_test.so", dir / "logs" / "fwd_a.log", dir / "build.log"}) {
    INFO(p);
    REQUIRE(::stat(p.c_str(), &st) == 0);
    CHECK(st.st_uid == who->uid);
    CHECK((st.st_mode & 077) == 0);
  }
  // They read their files by name; nobody lists the state dir.
  CHECK(run_as_user(who->uid, who->gid, {"/bin/cat", (dir / "lib" / "libfad_test.so").string()}).exit_code == 0);
  CHECK(run_as_user(who->uid, who->gid, {"/bin/ls", d.state_dir()}).exit_code != 0);
  CHECK(as_nobody(*who, bins, d, {"logs", sid, "fwd_a"}).exit_code == 0);
  // Root's own build compiles as root.
  const auto mine = d.submit({"--arch", "9.0"});
  CHECK(d.wait_final(mine).at("state") == "succeeded");
  CHECK(lines_with(d, " uid=0 ").size() == 2);
}

TEST_CASE("another user's compiler and its probes see none of a root fadd's own environment", "[integration][users]") {
  NEED_NOBODY(who);
  SharedBins bins;
  Daemon d;
  d.write_kernels({{"fwd_a", ""}});
  d.write_config("{\"poll_interval_ms\": 100, \"socket_group\": \"" + who->group + "\", \"socket_mode\": \"0660\"}");
  std::ofstream(d.fake_log_path()).flush();
  fs::permissions(d.fake_log_path(),
                  fs::perms::all & ~(fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec));
  // A service's environment may hold credentials meant for root alone.
  d.start({"--nvcc", bins.fake, "--cores", "8"}, {{"SERVICE_TOKEN", "topsecret"}, {"NVCC_APPEND_FLAGS", "-lineinfo"}});
  const auto seen = bins.dir.path() / "seen-env";
  std::ofstream(seen).flush();
  fs::permissions(seen, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                            fs::perms::group_write | fs::perms::others_read | fs::perms::others_write);
  const auto nvcc = bins.dir.path() / "env-nvcc";
  std::ofstream(nvcc) << "#!/bin/sh\n{ env; echo ---; } >> " << seen.string() << "\nexec " << bins.fake << " \"$@\"\n";
  fs::permissions(nvcc, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                            fs::perms::others_exec);
  auto r = as_nobody(*who, bins, d, {"submit", "--arch", "9.0", "--nvcc", nvcc.string(), "--wait"});
  INFO(r.err << d.daemon_log());
  REQUIRE(r.exit_code == 0);
  const std::string env = slurp(seen);
  std::size_t runs = 0;
  for (auto at = env.find("\n---\n"); at != std::string::npos; at = env.find("\n---\n", at + 1)) ++runs;
  CHECK(runs >= 3);  // its two probes, its compile and its link
  CHECK(env.find("topsecret") == std::string::npos);
  CHECK(env.find("HOME=/root") == std::string::npos);
  CHECK(env.find("USER=nobody") != std::string::npos);
  CHECK(env.find("NVCC_APPEND_FLAGS=-lineinfo") != std::string::npos);  // what changes the compile is kept
  CHECK(env.find("PATH=") != std::string::npos);
}

TEST_CASE("a compiler another user names is never run as root", "[integration][users]") {
  NEED_NOBODY(who);
  SharedBins bins;
  Daemon d;
  start_shared(d, bins, *who, {{"fwd_a", ""}});
  // Only root may run this one; run by fadd as root it would leave a mark.
  const auto mark = d.dir() / "ran-as-root";
  const auto evil = bins.dir.path() / "evil-nvcc";
  std::ofstream(evil) << "#!/bin/sh\ntouch " << mark.string() << "\nexec " << bins.fake << " \"$@\"\n";
  fs::permissions(evil, fs::perms::owner_all);
  auto r = as_nobody(*who, bins, d, {"submit", "--arch", "9.0", "--nvcc", evil.string()});
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("Permission denied") != std::string::npos);
  CHECK(!fs::exists(mark));
  CHECK(d.status_all().at("builds").empty());
}

TEST_CASE("fad launch as another user: the compile is theirs and root's pid is never adopted", "[integration][users]") {
  NEED_NOBODY(who);
  SharedBins bins;
  Daemon d;
  start_shared(d, bins, *who, {});
  const auto work = bins.dir.path() / "work";
  fs::create_directories(work);
  ::chown(work.c_str(), who->uid, who->gid);
  std::ofstream(work / "k.cu") << "// fake-nvcc: peak_mb=2 duration_s=0.2\n";
  auto r = run_as_user(who->uid, who->gid,
                       {bins.fad, "launch", bins.fake, "-c", (work / "k.cu").string(), "-o", (work / "k.o").string()},
                       {{"FAD_SOCKET", d.socket()}, {"FAD_FAKE_LOG", d.fake_log_path()}});
  INFO(r.err << d.daemon_log());
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("without fad") == std::string::npos);  // it went through fadd
  CHECK(lines_with(d, " uid=" + std::to_string(who->uid)).size() == 1);
  const auto builds = d.status_all().at("builds");
  REQUIRE(builds.size() == 1);
  CHECK(builds.at(0).at("user") == "nobody");
  CHECK(d.status(builds.at(0).at("id")).at("units").at("succeeded") == 1);

  // A hand-written client, as nobody, claiming fadd's own (root's) pid as its compiler.
  int to_parent[2];
  REQUIRE(::pipe(to_parent) == 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(to_parent[0]);
    auto report = [&](const std::string& text, int code) {
      [[maybe_unused]] auto n = ::write(to_parent[1], text.data(), text.size());
      ::_exit(code);
    };
    if (::setgroups(0, nullptr) != 0 || ::setgid(who->gid) != 0 || ::setuid(who->uid) != 0) report("setuid", 2);
    auto ask = [&](const json& request) {
      RawClient c(d.socket());
      if (!c.ok() || !c.send(request.dump() + "\n")) report("cannot connect", 3);
      auto line = c.read_line(std::chrono::seconds(10));
      if (!line) report("no answer", 4);
      return json::parse(*line);
    };
    json body = {{"session", 99},     {"cwd", "/"},       {"argv", {bins.fake, "-c", "/x.cu"}},
                 {"source", "/x.cu"}, {"output", "/x.o"}, {"archs", json::array()}};
    auto launched = ask({{"v", 1}, {"type", "launch"}, {"body", body}});
    if (launched["ok"] != true) report(launched.dump(), 5);
    const auto unit = launched["result"]["unit_id"];
    for (int i = 0; i < 100; ++i) {
      auto poll = ask({{"v", 1}, {"type", "launch_poll"}, {"body", {{"unit_id", unit}}}});
      if (poll["result"]["state"] == "admitted") break;
      ::usleep(100000);
    }
    auto started = ask({{"v", 1}, {"type", "launch_started"}, {"body", {{"unit_id", unit}, {"pid", d.pid()}}}});
    report(started.dump(), started["ok"] == false ? 0 : 1);
  }
  ::close(to_parent[1]);
  std::string said;
  char buf[4096];
  for (ssize_t n; (n = ::read(to_parent[0], buf, sizeof buf)) > 0;) said.append(buf, static_cast<std::size_t>(n));
  ::close(to_parent[0]);
  INFO(said);
  CHECK(wait_process(child, 30) == 0);
  CHECK(said.find("belongs to root, not to nobody") != std::string::npos);
  CHECK(::kill(d.pid(), 0) == 0);
}

namespace {
/// Something answering at a socket as fadd does, that admits every launch
/// with a cluster step of its choosing: what a socket's owner could send.
class StepSender {
 public:
  StepSender(const fs::path& socket, std::vector<std::string> step) : step_(std::move(step)) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket.c_str());
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    ::chmod(socket.c_str(), 0666);
    REQUIRE(::listen(fd_, 16) == 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~StepSender() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }

 private:
  void serve() {
    for (int client; (client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC)) >= 0; ::close(client)) {
      std::string line;
      char c;
      while (::read(client, &c, 1) == 1 && c != '\n') line += c;
      const auto type = json::parse(line, nullptr, false).value("type", std::string());
      json result = json::object();
      if (type == "launch") result = {{"unit_id", 7}, {"build_id", 1}};
      if (type == "launch_poll") result = {{"state", "admitted"}, {"threads", 1}, {"step", step_}};
      const std::string answer = json{{"v", 1}, {"ok", true}, {"result", result}}.dump() + "\n";
      [[maybe_unused]] auto n = ::write(client, answer.data(), answer.size());
    }
  }
  std::vector<std::string> step_;
  int fd_ = -1;
  std::thread thread_;
};
}  // namespace

TEST_CASE("a launcher runs a cluster step only from a fadd of its own user", "[integration][users][hostile]") {
  NEED_NOBODY(who);
  SharedBins bins;
  const auto work = bins.dir.path() / "work";
  fs::create_directories(work);
  fs::permissions(work, fs::perms::all);  // nobody writes its object here; the step's mark too
  std::ofstream(work / "k.cu") << "// fake-nvcc: duration_s=0\n";
  const auto mark = work / "step-ran";
  // Root's (this test's) socket, its step a program of its choosing.
  StepSender sender(bins.dir.path() / "fadd.sock",
                    {"/bin/sh", "-c", "id -u > " + mark.string() + "; exec \"$0\" \"$@\""});
  const std::vector<std::string> launch = {
      bins.fad, "launch", bins.fake, "-c", (work / "k.cu").string(), "-o", (work / "k.o").string()};
  const std::map<std::string, std::string> env = {{"FAD_SOCKET", (bins.dir.path() / "fadd.sock").string()},
                                                  {"FAD_CACHE_SIZE", "0"}};
  // Another user's launcher refuses to run it: it would run as nobody what root chose.
  auto refused = run_as_user(who->uid, who->gid, launch, env);
  INFO(refused.err);
  CHECK(refused.exit_code == 1);
  CHECK(refused.err.find("refusing the cluster step sent by the fadd at") != std::string::npos);
  CHECK(refused.err.find("it runs as uid 0, not as you (uid " + std::to_string(who->uid) + ")") != std::string::npos);
  CHECK_FALSE(fs::exists(mark));
  CHECK_FALSE(fs::exists(work / "k.o"));
  // The same user's launcher runs it (a Slurm fadd runs as its user), and the compile in it.
  auto ran = run(launch, env);
  INFO(ran.err);
  CHECK(ran.exit_code == 0);
  CHECK(slurp_file(mark) == "0\n");
  CHECK(fs::exists(work / "k.o"));
}

TEST_CASE("a root fadd refuses a state dir another user could change, and creates nothing in it",
          "[integration][users][hostile]") {
  NEED_NOBODY(who);
  TempDir tmp;
  ::chmod(tmp.path().c_str(), 0755);
  const auto theirs = tmp.path() / "theirs";
  fs::create_directories(theirs);
  ::chown(theirs.c_str(), who->uid, who->gid);
  // Theirs, or inside theirs: they could swap its trash or builds for a link.
  for (const auto& state : {theirs, theirs / "state"}) {
    auto r = run({FAD_FADD_BIN, "--state-dir", state.string(), "--socket", (tmp.path() / "s").string(), "--config",
                  std::string(FAD_SOURCE_DIR) + "/config/fad.json"},
                 {}, 30);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK(
        (r.out + r.err).find("refusing state dir " + state.string() + ": " + theirs.string() + " belongs to nobody") !=
        std::string::npos);
    CHECK_FALSE(fs::exists(theirs / "state"));
    CHECK_FALSE(fs::exists(theirs / "fad.db"));
  }
}

TEST_CASE("another user's fadd on root's state dir says whose it is, not the first file it cannot open",
          "[integration][users]") {
  // Bug: a user's 'fad daemon start' with a system config said only
  // "refusing --log-file STATE/fadd.log: ... Permission denied".
  NEED_NOBODY(who);
  SharedBins bins;
  const std::string fadd = (bins.dir.path() / "fadd").string();
  fs::copy_file(FAD_FADD_BIN, fadd);
  TempDir tmp;
  ::chmod(tmp.path().c_str(), 0755);
  const auto state = tmp.path() / "state";
  fs::create_directories(state);
  ::chmod(state.c_str(), 0711);  // as a root fadd leaves it
  auto r = run_as_user(who->uid, who->gid,
                       {fadd, "--state-dir", state.string(), "--socket", (tmp.path() / "s.sock").string(), "--config",
                        std::string(FAD_SOURCE_DIR) + "/config/fad.json", "--log-file", (state / "fadd.log").string()},
                       {});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.err == "fadd: the state dir " + state.string() +
                     " belongs to root (mode 0711), and nobody may not write in it (another user's fadd's, named by "
                     "a shared config?); run your own with 'fad daemon start --state-dir DIR --socket PATH'\n");
  CHECK(fs::is_empty(state));
}

TEST_CASE("a root fadd refuses a log file or socket path another user could change, and creates nothing there",
          "[integration][users][hostile]") {
  NEED_NOBODY(who);
  TempDir tmp;
  ::chmod(tmp.path().c_str(), 0755);
  const auto fadd = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv{FAD_FADD_BIN, "--state-dir", (tmp.path() / "state").string(), "--config",
                                  std::string(FAD_SOURCE_DIR) + "/config/fad.json"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto r = run(argv, {}, 30);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    return r.out + r.err;
  };
  const std::string socket = (tmp.path() / "run" / "s.sock").string();
  // A shared sticky directory (/tmp): another user could plant a link where
  // fadd creates the log, or renames it at rotation.
  const auto shared = tmp.path() / "shared";
  fs::create_directories(shared);
  ::chmod(shared.c_str(), 01777);
  CHECK_THAT(fadd({"--socket", socket, "--log-file", (shared / "fadd.log").string()}),
             Catch::Contains("refusing --log-file " + (shared / "fadd.log").string() + ": " + shared.string() +
                             " is writable by everyone (owner root, mode 1777)"));
  // Their link (or file) in a directory of root's.
  const auto logs = tmp.path() / "logs";
  fs::create_directories(logs);
  fs::create_symlink(tmp.path() / "victim", logs / "fadd.log");
  ::lchown((logs / "fadd.log").c_str(), who->uid, who->gid);
  CHECK_THAT(fadd({"--socket", socket, "--log-file", (logs / "fadd.log").string()}),
             Catch::Contains((logs / "fadd.log").string() + " belongs to nobody"));
  CHECK_FALSE(fs::exists(tmp.path() / "victim"));
  // A socket under their directory: they could swap its directory between
  // bind() and the chown and chmod fadd then gives the socket by path.
  const auto theirs = tmp.path() / "theirs";
  fs::create_directories(theirs);
  ::chown(theirs.c_str(), who->uid, who->gid);
  CHECK_THAT(fadd({"--socket", (theirs / "sub" / "s.sock").string()}),
             Catch::Contains("refusing the socket directory " + (theirs / "sub").string() + ": " + theirs.string() +
                             " belongs to nobody"));
  CHECK_FALSE(fs::exists(theirs / "sub"));
}

TEST_CASE("the client refuses a socket directory another user squatted", "[integration][users]") {
  NEED_NOBODY(who);
  // A uid of the test's own, so that no real /tmp/fad-UID is touched.
  const uid_t uid = 61000 + static_cast<uid_t>(::getpid() % 1000);
  const fs::path squatted = "/tmp/fad-" + std::to_string(uid);
  fs::remove_all(squatted);
  fs::create_directories(squatted);
  ::chown(squatted.c_str(), who->uid, who->gid);
  SharedBins bins;
  auto r = run_as_user(uid, uid, {bins.fad, "status"}, {{"FAD_SOCKET", ""}, {"XDG_RUNTIME_DIR", ""}});
  fs::remove_all(squatted);
  INFO(r.err);
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("refusing to talk to the socket in " + squatted.string()) != std::string::npos);
  CHECK(r.err.find("belongs to nobody") != std::string::npos);
}

TEST_CASE("socket_group and socket_mode decide who reaches fadd", "[integration][users]") {
  NEED_NOBODY(who);
  SharedBins bins;
  Daemon d;
  start_shared(d, bins, *who, {});
  struct stat st {};
  REQUIRE(::stat(d.socket().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0660);
  CHECK(st.st_gid == who->gid);
  REQUIRE(::stat(fs::path(d.socket()).parent_path().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0750);
  CHECK(as_nobody(*who, bins, d, {"status"}).exit_code == 0);
  // Someone outside the group cannot connect at all.
  const uid_t outsider = 62000 + static_cast<uid_t>(::getpid() % 1000);
  auto r = run_as_user(outsider, outsider, {bins.fad, "status"}, {{"FAD_SOCKET", d.socket()}});
  CHECK(r.exit_code == 3);
}

TEST_CASE("another user's 2,000 idle connections do not lock root out", "[integration][users][hostile]") {
  NEED_NOBODY(who);
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  if (lim.rlim_max < 2200) {
    WARN("SKIP: needs 2,200 descriptors; the flood was not tried");
    return;
  }
  const rlimit old = lim;
  lim.rlim_cur = std::max<rlim_t>(lim.rlim_cur, 2200);
  ::setrlimit(RLIMIT_NOFILE, &lim);
  SharedBins bins;
  Daemon d;
  start_shared(d, bins, *who, {});
  // The last connection's refusal says fadd has taken every one of them off
  // its backlog (in order), so root's status below is timed, not queued
  // behind the flood's connects; the idle ones' 10 s start from their accept.
  const auto [flood, verdict] = hold_connections(*who, d.socket(), 2000, [](RawClient& last) {
    const auto line = last.read_line(std::chrono::seconds(30));
    return line && line->find("too many connections from your user") != std::string::npos ? 'r' : 'x';
  });
  REQUIRE(verdict == 'r');
  const auto start = std::chrono::steady_clock::now();
  auto r = d.fad({"status"}, 30);
  const double root_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(r.exit_code == 0);
  CHECK(root_s < 5);  // locked out would be the client's 30 s
  auto theirs = as_nobody(*who, bins, d, {"status"});
  CHECK(theirs.exit_code == 3);
  CHECK(theirs.err.find("too many connections from your user") != std::string::npos);
  WARN("FIGURE with nobody holding 2,000 idle connections, root's fad status took " << root_s * 1000 << " ms");
  ::kill(flood, SIGKILL);
  wait_process(flood, 10);
  ::setrlimit(RLIMIT_NOFILE, &old);
}

TEST_CASE("users at their own cap leave room for other users, and when the table is full root still gets in",
          "[integration][users][hostile]") {
  NEED_NOBODY(who);
  SharedBins bins;
  Daemon d;
  // 400 descriptors leave fadd 200 connections: 192 for other users than
  // root, of which users holding 8 or more may take 128 together.
  d.set_wrapper({"prlimit", "--nofile=400:400", "--"});
  start_shared(d, bins, *who, {});
  // fadd admits connections in order: once the last one is refused, every
  // earlier one has been admitted or refused.
  const auto refused = [](RawClient& last) {
    const auto line = last.read_line(std::chrono::seconds(20));
    return line && line->find("too many connections (") != std::string::npos ? 'r' : 'x';
  };
  const auto [flood, verdict] = hold_connections(*who, d.socket(), 300, refused);
  CHECK(verdict == 'r');
  auto theirs = as_nobody(*who, bins, d, {"status"});
  CHECK(theirs.exit_code == 3);
  CHECK(theirs.err.find("too many connections (128 open, limit 128 while your user holds 128)") != std::string::npos);
  const std::map<std::string, std::string> env{{"FAD_SOCKET", d.socket()}, {"FAD_FAKE_LOG", d.fake_log_path()}};
  auto other = run_as_user(61001, who->gid, {bins.fad, "status"}, env);
  INFO(other.err);
  CHECK(other.exit_code == 0);  // another user gets in beside them
  // Eight other users (any uid will do) each get their few connections.
  std::vector<pid_t> light;
  for (uid_t uid = 61001; uid <= 61008; ++uid) {
    const auto [pid, last] = hold_connections(Nobody{uid, who->gid, who->group}, d.socket(), 8,
                                              [](RawClient& c) { return c.ok() ? 'o' : 'x'; });
    light.push_back(pid);
    CHECK(last == 'o');
  }
  // Now other users hold all 192: a ninth is refused, with the count that
  // says every light user's connection was admitted.
  auto shut_out = run_as_user(61009, who->gid, {bins.fad, "status"}, env);
  CHECK(shut_out.exit_code == 3);
  CHECK(shut_out.err.find("too many connections (192 open, limit 192)") != std::string::npos);
  auto r = d.fad({"status"}, 30);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  for (pid_t pid : light) ::kill(pid, SIGKILL);
  for (pid_t pid : light) wait_process(pid, 10);
  ::kill(flood, SIGKILL);
  wait_process(flood, 10);
}

TEST_CASE("a user flooding fadd with expensive reads is slowed to their share, not refused",
          "[integration][long][users][hostile]") {
  NEED_NOBODY(who);
  SharedBins bins;
  Daemon d;
  std::vector<FakeUnit> units;
  for (int i = 0; i < 300; ++i) units.push_back({"u" + std::to_string(i), ""});
  start_shared(d, bins, *who, units);
  // 300 units take about a minute under the sanitizers on two busy cores.
  REQUIRE(d.fad({"submit", "--arch", "9.0", "--wait"}, 300).exit_code == 0);
  // Eight connections asking for the 300-unit build's report back to back:
  // fadd's time goes to answering them, far over a quarter of it. The flood
  // exits 3 if a request is ever refused or dropped.
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t flood = fork_as(*who);
  if (flood == 0) {
    ::close(ready[0]);
    std::vector<RawClient> askers;
    for (int i = 0; i < 8; ++i) askers.emplace_back(d.socket());
    const std::string report = R"({"v":1,"type":"report","body":{"id":1}})"
                               "\n";
    for (auto& c : askers) c.send(report);
    [[maybe_unused]] auto w = ::write(ready[1], "r", 1);
    for (;;)
      for (auto& c : askers) {
        auto line = c.read_line(std::chrono::seconds(60));
        if (!line || line->find(R"("ok":true)") == std::string::npos) ::_exit(3);
        c.send(report);
      }
  }
  ::close(ready[1]);
  char said = 0;
  CHECK(::read(ready[0], &said, 1) == 1);
  ::close(ready[0]);
  const std::string slowed = "uid " + std::to_string(who->uid) + " has used its share of fadd's time";
  CHECK(wait_for([&] { return d.daemon_log().find(slowed) != std::string::npos; }, std::chrono::seconds(60)));
  // While slowed, that user is still answered, and root is not held up.
  const auto start = std::chrono::steady_clock::now();
  auto r = d.fad({"status", "1"}, 30);
  const double root_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(r.exit_code == 0);
  const auto theirs_start = std::chrono::steady_clock::now();
  auto theirs = as_nobody(*who, bins, d, {"status", "1"});
  const double theirs_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - theirs_start).count();
  INFO(theirs.err);
  CHECK(theirs.exit_code == 0);
  // That user's launcher requests are not held for the share (a launcher has
  // deadlines): answered, and the time it took is a figure below.
  int answer[2];
  REQUIRE(::pipe(answer) == 0);
  const pid_t poller = fork_as(*who);
  if (poller == 0) {
    ::close(answer[0]);
    RawClient c(d.socket());
    const auto asked = std::chrono::steady_clock::now();
    c.send(R"({"v":1,"type":"launch_poll","body":{"unit_id":999999}})"
           "\n");
    const auto line = c.read_line(std::chrono::seconds(60));
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
    [[maybe_unused]] auto w = ::write(answer[1], &took, sizeof took);
    ::_exit(line && line->find("no launched unit 999999") != std::string::npos ? 0 : 3);
  }
  ::close(answer[1]);
  double poll_s = -1;
  CHECK(::read(answer[0], &poll_s, sizeof poll_s) == sizeof poll_s);
  ::close(answer[0]);
  CHECK(wait_process(poller, 60) == 0);
  CHECK(::waitpid(flood, nullptr, WNOHANG) == 0);  // still flooding: never refused
  WARN("FIGURE with nobody's 8 connections asking for reports back to back, root's fad status 1 took "
       << root_s * 1000 << " ms, nobody's " << theirs_s * 1000 << " ms, nobody's launch_poll " << poll_s * 1000
       << " ms");
  ::kill(flood, SIGKILL);
  wait_process(flood, 10);
}
