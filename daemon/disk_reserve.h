// A few MiB fadd holds on the state disk for itself, as a file (a ballast).
// When the disk fills (a flood of compiler output, another program), every
// write to fadd's database fails, and what it could not write before it
// stops is lost: finished compiles would run again, a prune could not record
// what it deleted. Deleting this file gives those writes room; it is made
// again once the disk has room.
#pragma once

#include <cstdint>
#include <string>

namespace fad {

class DiskReserve {
 public:
  DiskReserve(std::string path, std::uint64_t bytes) : path_(std::move(path)), bytes_(bytes) {}

  /// Makes the file, all its blocks allocated, if it is not there; false
  /// when the disk has no room for it now (nothing is left behind).
  bool fill();
  /// Deletes the file: true when there was one, so room was freed.
  bool release();
  bool held() const;
  const std::string& path() const { return path_; }
  std::uint64_t bytes() const { return bytes_; }

 private:
  std::string path_;
  std::uint64_t bytes_;
};

}  // namespace fad
