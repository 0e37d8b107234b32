// A compiler on a filesystem that stopped answering (a FUSE mount standing in
// for a hard NFS mount whose server went away): whatever touches it waits in
// the kernel, unkillably, until the mount answers. fadd must go on serving
// everyone meanwhile, whether the stat, the probe's exec or a unit's exec is
// what hangs, and every waiting submit and unit must end once it answers.
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <fstream>

#include "harness.h"

namespace fad::test {
namespace {

/// The mounted filesystem; unmounted (and its program killed) on destruction.
class HungMount {
 public:
  explicit HungMount(const fs::path& dir) : mount_(dir / "hung"), flag_(dir / "hang-nvcc"), err_(dir / "fs.err") {
    fs::create_directories(mount_);
    const auto script = dir / "nvcc-script";
    std::ofstream(script) << "#!/bin/sh\nexec " << FAD_FAKE_NVCC_BIN << " \"$@\"\n";
    pid_ = start_process({FAD_HUNG_FS_BIN, mount_.string(), script.string(), flag_.string()}, {}, dir / "fs.out", err_);
    struct stat parent {};
    ::stat(dir.c_str(), &parent);
    mounted_ = wait_for(
                   [&] {
                     struct stat st {};
                     return poll_process(pid_) || (::stat(mount_.c_str(), &st) == 0 && st.st_dev != parent.st_dev);
                   },
                   std::chrono::seconds(10)) &&
               !poll_process(pid_);
  }
  ~HungMount() { answer(); }
  HungMount(const HungMount&) = delete;
  HungMount& operator=(const HungMount&) = delete;

  bool mounted() const { return mounted_; }
  std::string path(const std::string& name) const { return (mount_ / name).string(); }
  /// Whether a call on `path` ("open /ok/nvcc") hangs now.
  bool hanging(const std::string& call) const {
    return slurp(err_).find("hanging: " + call + "\n") != std::string::npos;
  }
  /// From now on, exec of ok/nvcc hangs too.
  void hang_nvcc() const { std::ofstream(flag_) << "1\n"; }
  /// The server goes away for good: the kernel fails every waiting call.
  void answer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait_process(pid_, 30);
      pid_ = -1;
    }
    if (mounted_) ::umount2(mount_.c_str(), MNT_DETACH);
    mounted_ = false;
  }

 private:
  fs::path mount_;
  fs::path flag_;
  fs::path err_;
  pid_t pid_ = -1;
  bool mounted_ = false;
};

}  // namespace

TEST_CASE("a compiler on a filesystem that stopped answering holds only the submits and units that named it",
          "[integration][hostile]") {
#ifndef FAD_HUNG_FS_BIN
  WARN("SKIP: built without libfuse3; the hung-filesystem test did not run");
#else
  if (::geteuid() != 0 || ::access("/dev/fuse", R_OK | W_OK) != 0) {
    WARN("SKIP: needs root and /dev/fuse to mount a filesystem; the hung-filesystem test did not run");
    return;
  }
  Daemon d;
  d.write_kernels({{"fwd_a", ""}, {"fwd_b", ""}});
  HungMount mount(d.dir());
  if (!mount.mounted()) {
    WARN("SKIP: the FUSE filesystem could not be mounted here; the hung-filesystem test did not run");
    return;
  }
  d.start();
  // 1. A build with the mounted compiler while it still answers: it is
  //    probed, and its answer cached.
  const auto first = d.submit({"--arch", "9.0", "--nvcc", mount.path("ok/nvcc")});
  CHECK(d.wait_final(first).at("state") == "succeeded");
  // 2. Three ways to hang: the lookup's stat, the probe's exec, and (the
  //    probe answered from the cache) a unit's exec.
  const auto out = [&](const std::string& name) { return d.dir() / name; };
  const pid_t stat_submit =
      start_process({FAD_FAD_BIN, "submit", "--socket", d.socket(), "--arch", "9.0", "--nvcc", mount.path("stat/nvcc")},
                    {{"FAD_TIMEOUT", "600"}}, out("stat.out"), out("stat.err"));
  const pid_t exec_submit =
      start_process({FAD_FAD_BIN, "submit", "--socket", d.socket(), "--arch", "9.0", "--nvcc", mount.path("open/nvcc")},
                    {{"FAD_TIMEOUT", "600"}}, out("exec.out"), out("exec.err"));
  REQUIRE(wait_for([&] { return mount.hanging("getattr /stat/nvcc") && mount.hanging("open /open/nvcc"); },
                   std::chrono::seconds(30)));
  mount.hang_nvcc();
  const auto hung = d.submit({"--arch", "9.0", "--nvcc", mount.path("ok/nvcc")});
  REQUIRE(wait_for([&] { return mount.hanging("open /ok/nvcc"); }, std::chrono::seconds(30)));
  CHECK(d.status(hung).at("units").at("running").get<int>() >= 1);
  // 3. Meanwhile fadd answers everyone, and builds with a compiler that
  //    answers run to the end.
  CHECK(d.fad({"status"}, 20).exit_code == 0);
  const auto other = d.submit({"--arch", "9.0"});
  CHECK(d.wait_final(other).at("state") == "succeeded");
  CHECK_FALSE(poll_process(stat_submit).has_value());  // both still waiting on the mount
  // (or, for the one that execs, already told its probe's 30 s ran out on a slow machine)
  const bool exec_waits = !poll_process(exec_submit).has_value();
  CHECK((exec_waits || slurp(out("exec.err")).find("did not answer within the time limit") != std::string::npos));
  // 4. The mount answers (its server is gone): every submit and unit waiting
  //    on it ends, saying why.
  mount.answer();
  CHECK(wait_process(stat_submit, 60) != 0);
  CHECK_THAT(slurp(out("stat.err")), Catch::Contains(mount.path("stat/nvcc")));
  CHECK(wait_process(exec_submit, 60) != 0);
  // Its probe's time limit (30 s) may have struck first on a slow machine: also an answer.
  CHECK_THAT(slurp(out("exec.err")), Catch::Contains("cannot run " + mount.path("open/nvcc")) ||
                                         Catch::Contains("did not answer within the time limit"));
  const auto ended = d.wait_final(hung);
  CHECK(ended.at("state") == "failed");
  // (Its compiles came from the compile cache; the link ran the compiler.)
  CHECK_THAT(d.fad({"logs", std::to_string(hung), "link"}).out,
             Catch::Contains("fad-exec: cannot run " + mount.path("ok/nvcc")));
  CHECK(d.fad({"status"}).exit_code == 0);
#endif
}

}  // namespace fad::test
