// The real ProcessLauncher: Boost.Process v2 on the daemon's io_context.
#pragma once

#include <map>
#include <memory>

#include <boost/asio/io_context.hpp>

#include "daemon/process_launcher.h"

namespace fad {

class BoostLauncher final : public ProcessLauncher {
 public:
  explicit BoostLauncher(boost::asio::io_context& io);
  ~BoostLauncher() override;
  Result<int> launch(const LaunchSpec& spec, std::function<void(ExitInfo)> on_exit) override;
  void signal_group(int pgid, int sig) override;
  std::uint64_t group_memory(int pgid) override;

 private:
  struct Child;
  boost::asio::io_context& io_;
  std::map<int, std::unique_ptr<Child>> children_;
};

}  // namespace fad
