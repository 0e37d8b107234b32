// fadd's log files; see log_files.h.
#include "daemon/log_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/sinks/rotating_file_sink.h>

namespace fad {

std::vector<std::string> log_file_names(const std::string& log_file, std::size_t max_files) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i <= max_files; ++i)
    names.push_back(spdlog::sinks::rotating_file_sink_mt::calc_filename(log_file, i));
  return names;
}

std::vector<std::pair<std::string, unsigned>> close_log_files(const std::string& log_file, std::size_t max_files,
                                                              uid_t owner) {
  std::vector<std::pair<std::string, unsigned>> changed;
  for (const auto& path : log_file_names(log_file, max_files)) {
    // By descriptor, never through a link: the mode changed is that of the
    // file looked at.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == owner && (st.st_mode & 077) != 0 &&
        ::fchmod(fd, 0600) == 0)
      changed.emplace_back(path, static_cast<unsigned>(st.st_mode & 07777));
    ::close(fd);
  }
  return changed;
}

}  // namespace fad
