// fad-hung-fs: a FUSE filesystem that stops answering, as a hard NFS mount
// does when its server goes away. Programs touching it wait in the kernel,
// unkillably, until this program exits (the kernel then fails their calls).
//
//   fad-hung-fs MOUNTPOINT SCRIPT FLAG
//
// Its root holds three executables:
//   nvcc           SCRIPT's text; opening it (exec does) hangs while FLAG exists
//   hangs-on-open  stat answers; opening it never does
//   stat-hangs     even stat never answers
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

[[noreturn]] void hang() {
  for (;;) ::pause();
}

int fs_getattr(const char* path, struct stat* st, fuse_file_info*) {
  std::memset(st, 0, sizeof *st);
  if (std::strcmp(path, "/") == 0) {
    st->st_mode = S_IFDIR | 0755;
    st->st_nlink = 2;
    return 0;
  }
  if (std::strcmp(path, "/stat-hangs") == 0) hang();
  const bool nvcc = std::strcmp(path, "/nvcc") == 0;
  if (nvcc || std::strcmp(path, "/hangs-on-open") == 0) {
    st->st_mode = S_IFREG | 0755;
    st->st_nlink = 1;
    st->st_size = nvcc ? static_cast<off_t>(script.size()) : 4096;
    return 0;
  }
  return -ENOENT;
}

int fs_open(const char* path, fuse_file_info*) {
  if (std::strcmp(path, "/nvcc") != 0 || ::access(flag.c_str(), F_OK) == 0) hang();
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
  char* args[] = {argv[0], const_cast<char*>("-f"), const_cast<char*>("-o"),
                  const_cast<char*>("allow_other,default_permissions"), argv[1], nullptr};
  return fuse_main(5, args, &ops, nullptr);
}
