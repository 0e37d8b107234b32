// libfad-intercept.so: preloaded by `fad run` into every process of the build
// command (LD_PRELOAD), it routes each exec of an nvcc through `fad launch`,
// whatever PATH, PYTORCH_NVCC or CUDACXX say, the way Bear records compiles:
// execve, execv, execvp, execvpe, execl, execlp, execle, execveat,
// posix_spawn and posix_spawnp are wrapped; every other exec passes
// unchanged. An nvcc is a program named nvcc, or one whose resolved path is
// named nvcc (a toolkit's nvcc behind another name). Passed through: fad
// itself (its nvcc shim launches by itself), every exec made by a fad process
// (the launcher's own exec of the real nvcc, or of `nvcc --version`, must
// never loop back into a launcher) and anything a launcher's compiler runs
// (FAD_LAUNCH_ACTIVE).
//
// Limits: statically linked programs, setuid programs (the loader ignores
// LD_PRELOAD for them) and programs that exec by raw system call (Go) are not
// seen.
//
// The wrappers may run in a vfork child, where the heap is the parent's: they
// allocate nothing (stack and static buffers only) and call only
// async-signal-safe functions, plus realpath with a caller buffer.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <alloca.h>

extern char** environ;

namespace {

// Set once when the library loads, from the build's environment, so that a
// script clearing its environment (env -i) still reaches the same build with
// the same settings.
char g_fad[PATH_MAX];       // the fad binary (FAD_INTERCEPT_FAD)
char g_fad_real[PATH_MAX];  // its resolved path
bool g_in_fad = false;      // this process is fad: its execs are its own business
constexpr const char* kKept[] = {"FAD_BUILD_ID", "FAD_SOCKET",    "LD_PRELOAD",     "FAD_INTERCEPT_FAD",
                                 "FAD_CONFIG",   "FAD_CACHE_DIR", "FAD_CACHE_SIZE", "FAD_CLAIMS_DIR"};
constexpr size_t kKeptCount = sizeof kKept / sizeof kKept[0];
char g_kept[kKeptCount][PATH_MAX + 32];  // "NAME=value", or "" when unset

void copy_env(char* out, size_t size, const char* name) {
  const char* v = getenv(name);
  if (!v || !*v) return;
  size_t n = strlen(name), m = strlen(v);
  if (n + m + 2 > size) return;
  memcpy(out, name, n);
  out[n] = '=';
  memcpy(out + n + 1, v, m + 1);
}

__attribute__((constructor)) void load() {
  const char* fad = getenv("FAD_INTERCEPT_FAD");
  if (!fad || !*fad || strlen(fad) >= sizeof g_fad) return;
  memcpy(g_fad, fad, strlen(fad) + 1);
  if (!realpath(g_fad, g_fad_real)) g_fad_real[0] = '\0';
  char self[PATH_MAX];
  g_in_fad = g_fad_real[0] && realpath("/proc/self/exe", self) && strcmp(self, g_fad_real) == 0;
  for (size_t i = 0; i < kKeptCount; ++i) copy_env(g_kept[i], sizeof g_kept[i], kKept[i]);
}

template <class F>
F real(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

using execve_fn = int (*)(const char*, char* const[], char* const[]);
using execvpe_fn = int (*)(const char*, char* const[], char* const[]);
using execveat_fn = int (*)(int, const char*, char* const[], char* const[], int);
using spawn_fn = int (*)(pid_t*, const char*, const posix_spawn_file_actions_t*, const posix_spawnattr_t*,
                         char* const[], char* const[]);

const char* base_name(const char* path) {
  const char* slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

bool has_entry(char* const* env, const char* prefix) {
  if (!env) return false;
  const size_t n = strlen(prefix);
  for (; *env; ++env)
    if (strncmp(*env, prefix, n) == 0) return true;
  return false;
}

/// `name` searched on PATH into `out` (a name with '/' is copied); false when absent.
bool search_path(const char* name, char* out, size_t size) {
  if (strchr(name, '/')) {
    if (strlen(name) >= size) return false;
    memcpy(out, name, strlen(name) + 1);
    return true;
  }
  const char* path = getenv("PATH");
  if (!path) path = "/usr/local/bin:/usr/bin:/bin";
  const size_t name_len = strlen(name);
  while (*path) {
    const char* end = strchr(path, ':');
    size_t len = end ? static_cast<size_t>(end - path) : strlen(path);
    const char* dir = len ? path : ".";
    if (!len) len = 1;
    if (len + 1 + name_len < size) {
      memcpy(out, dir, len);
      out[len] = '/';
      memcpy(out + len + 1, name, name_len + 1);
      struct stat st;
      if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0) return true;
    }
    if (!end) break;
    path = end + 1;
  }
  return false;
}

/// Whether exec'ing `file` (a path, or a name searched on PATH when `search`)
/// with `envp` must go through fad launch; `resolved` receives its path.
bool is_routed(const char* file, char* const envp[], bool search, char* resolved, size_t size) {
  if (!g_fad[0] || g_in_fad || !file || !*file) return false;
  if (getenv("FAD_LAUNCH_ACTIVE") || has_entry(envp, "FAD_LAUNCH_ACTIVE=")) return false;
  if (search) {
    if (!search_path(file, resolved, size)) return false;
  } else {
    if (strlen(file) >= size) return false;
    memcpy(resolved, file, strlen(file) + 1);
  }
  char real_path[PATH_MAX];
  const bool has_real = realpath(resolved, real_path) != nullptr;
  if (has_real && g_fad_real[0] && strcmp(real_path, g_fad_real) == 0) return false;  // fad, or its nvcc shim
  if (strcmp(base_name(resolved), "nvcc") == 0) return true;
  return has_real && strcmp(base_name(real_path), "nvcc") == 0;
}

/// argv for `fad launch -- NVCC ARGS...` in `out` (argc + 4 slots).
void launch_argv(const char* nvcc, char* const argv[], char** out) {
  size_t i = 0;
  out[i++] = g_fad;
  out[i++] = const_cast<char*>("launch");
  out[i++] = const_cast<char*>("--");
  out[i++] = const_cast<char*>(nvcc);
  if (argv && argv[0])
    for (char* const* a = argv + 1; *a; ++a) out[i++] = *a;
  out[i] = nullptr;
}

size_t count(char* const* v) {
  size_t n = 0;
  if (v)
    while (v[n]) ++n;
  return n;
}

/// envp plus the build's variables it lacks, in `out` (count + kKeptCount + 1 slots).
void launch_envp(char* const envp[], char** out) {
  size_t i = 0;
  if (envp)
    for (; envp[i]; ++i) out[i] = envp[i];
  for (size_t k = 0; k < kKeptCount; ++k) {
    if (!g_kept[k][0]) continue;
    char prefix[32];
    const size_t n = strlen(kKept[k]);
    memcpy(prefix, kKept[k], n);
    prefix[n] = '=';
    prefix[n + 1] = '\0';
    if (!has_entry(envp, prefix)) out[i++] = g_kept[k];
  }
  out[i] = nullptr;
}

#define FAD_LAUNCH_VECTORS(argv, envp)                                                           \
  char** new_argv = static_cast<char**>(alloca((count(argv) + 5) * sizeof(char*)));              \
  char** new_envp = static_cast<char**>(alloca((count(envp) + kKeptCount + 1) * sizeof(char*))); \
  launch_argv(resolved, argv, new_argv);                                                         \
  launch_envp(envp, new_envp)

int routed_execve(const char* file, char* const argv[], char* const envp[], bool search) {
  char resolved[PATH_MAX];
  if (!is_routed(file, envp, search, resolved, sizeof resolved)) {
    if (search) return real<execvpe_fn>("execvpe")(file, argv, envp);
    return real<execve_fn>("execve")(file, argv, envp);
  }
  FAD_LAUNCH_VECTORS(argv, envp);
  return real<execve_fn>("execve")(g_fad, new_argv, new_envp);
}

int routed_spawn(pid_t* pid, const char* file, const posix_spawn_file_actions_t* actions, const posix_spawnattr_t* attr,
                 char* const argv[], char* const envp[], bool search) {
  char resolved[PATH_MAX];
  if (!is_routed(file, envp, search, resolved, sizeof resolved))
    return real<spawn_fn>(search ? "posix_spawnp" : "posix_spawn")(pid, file, actions, attr, argv, envp);
  FAD_LAUNCH_VECTORS(argv, envp);
  return real<spawn_fn>("posix_spawn")(pid, g_fad, actions, attr, new_argv, new_envp);
}

}  // namespace

extern "C" {

int execve(const char* path, char* const argv[], char* const envp[]) noexcept {
  return routed_execve(path, argv, envp, false);
}

int execv(const char* path, char* const argv[]) noexcept { return routed_execve(path, argv, environ, false); }

int execvp(const char* file, char* const argv[]) noexcept { return routed_execve(file, argv, environ, true); }

int execvpe(const char* file, char* const argv[], char* const envp[]) noexcept {
  return routed_execve(file, argv, envp, true);
}

int execveat(int dirfd, const char* path, char* const argv[], char* const envp[], int flags) noexcept {
  // Only paths that name a file by themselves can be checked; the rest pass.
  if ((path[0] == '/' || dirfd == AT_FDCWD) && flags == 0) return routed_execve(path, argv, envp, false);
  return real<execveat_fn>("execveat")(dirfd, path, argv, envp, flags);
}

int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions, const posix_spawnattr_t* attr,
                char* const argv[], char* const envp[]) {
  return routed_spawn(pid, path, actions, attr, argv, envp, false);
}

int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* actions, const posix_spawnattr_t* attr,
                 char* const argv[], char* const envp[]) {
  return routed_spawn(pid, file, actions, attr, argv, envp, true);
}

// The variadic forms gather their arguments and take the paths above.
#define FAD_GATHER_ARGS(first, with_env)                              \
  va_list ap;                                                         \
  va_start(ap, first);                                                \
  size_t n = 1;                                                       \
  {                                                                   \
    va_list count_ap;                                                 \
    va_copy(count_ap, ap);                                            \
    while (va_arg(count_ap, char*)) ++n;                              \
    va_end(count_ap);                                                 \
  }                                                                   \
  char** args = static_cast<char**>(alloca((n + 1) * sizeof(char*))); \
  args[0] = const_cast<char*>(first);                                 \
  for (size_t i = 1; i <= n; ++i) args[i] = va_arg(ap, char*);        \
  char* const* env = environ;                                         \
  if (with_env) env = va_arg(ap, char* const*);                       \
  va_end(ap)

int execl(const char* path, const char* arg, ...) noexcept {
  FAD_GATHER_ARGS(arg, false);
  return routed_execve(path, args, env, false);
}

int execlp(const char* file, const char* arg, ...) noexcept {
  FAD_GATHER_ARGS(arg, false);
  return routed_execve(file, args, env, true);
}

int execle(const char* path, const char* arg, ...) noexcept {
  FAD_GATHER_ARGS(arg, true);
  return routed_execve(path, args, env, false);
}

}  // extern "C"
