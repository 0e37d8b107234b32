// fad run's nvcc shim directory; see shim_dir.h.
#include "client/shim_dir.h"

#include <stdlib.h>

#include <filesystem>
#include <system_error>

#include "common/stale_temps.h"

namespace fad::client {

namespace fs = std::filesystem;

std::string make_shim_dir(const std::string& root, const std::string& fad) {
  sweep_stale_temps(root, StaleTemps::all);
  std::string path = root + "/" + temp_name_start(kShimDirPrefix) + "XXXXXX";
  if (!::mkdtemp(path.data())) return {};
  std::error_code ec;
  fs::create_symlink(fad, fs::path(path) / "nvcc", ec);
  return path;
}

}  // namespace fad::client
