// fad-hung-fs: a FUSE filesystem that stops answering, as a hard NFS mount
// does when its server goes away. Programs touching it wait in the kernel,
// unkillably, until this program exits (the kernel then fails their calls).
//
//   fad-hung-fs MOUNTPOINT SCRIPT FLAG
//
// Three directories, each with one executable `nvcc`, so that a lookup hung
// in one directory (which holds that directory's lock in the kernel) does not
// hold up the others:
//   ok/nvcc     SCRIPT's text; opening it (exec does) hangs while FLAG exists
//   open/nvcc   stat answers; opening it never does
//   stat/nvcc   even stat never answers
// It runs in the foreground until killed; the caller unmounts MOUNTPOINT.
#define FUSE_USE_VERSION 31
#include <fuse3/fuse.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

namespace {

std::string script;
std::string flag;

/// Says which call hangs (on stderr, for the test to wait on), then never answers.
[[noreturn]] void hang(const char* call, const char* path) {
  std::fprintf(stderr, "hanging: %s %s\n", call, path);
  std::fflush(stderr);
  for (;;) ::pause();
}

int fs_getattr(const char* path, struct stat* st, fuse_file_info*) {
  std::memset(st, 0, sizeof *st);
  const std::string p = path;
  if (p == "/" || p == "/ok" || p == "/open" || p == "/stat") {
    st->st_mode = S_IFDIR | 0755;
    st->st_nlink = 2;
    return 0;
  }
  if (p == "/stat/nvcc") hang("getattr", path);
  if (p == "/ok/nvcc" || p == "/open/nvcc") {
    st->st_mode = S_IFREG | 0755;
    st->st_nlink = 1;
    st->st_size = p == "/ok/nvcc" ? static_cast<off_t>(script.size()) : 4096;
    return 0;
  }
  return -ENOENT;
}

int fs_open(const char* path, fuse_file_info*) {
  if (std::strcmp(path, "/ok/nvcc") != 0 || ::access(flag.c_str(), F_OK) == 0) hang("open", path);
  return 0;
}

int fs_read(const char*, char* buf, size_t size, off_t offset, fuse_file_info*) {
  if (offset >= static_cast<off_t>(script.size())) return 0;
  const size_t n = std::min(size, script.size() - static_cast<size_t>(offset));
  std::memcpy(buf, script.data() + offset, n);
  return static_cast<int>(n);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fputs("usage: fad-hung-fs MOUNTPOINT SCRIPT FLAG\n", stderr);
    return 2;
  }
  std::ifstream in(argv[2], std::ios::binary);
  script.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  flag = argv[3];
  fuse_operations ops{};
  ops.getattr = fs_getattr;
  ops.open = fs_open;
  ops.read = fs_read;
  // Foreground, multithreaded (a hung call must not hold the others), and
  // every user may look (a root fadd probes as the submitting user).
  char* args[] = {argv[0],
                  const_cast<char*>("-f"),
                  const_cast<char*>("-o"),
                  const_cast<char*>("allow_other,default_permissions"),
                  argv[1],
                  nullptr};
  return fuse_main(5, args, &ops, nullptr);
}
