// Rows for store tests: a build and compile units as a planner would make them.
#pragma once

#include <string>

#include "daemon/model.h"

namespace fad::test {

inline BuildRecord make_build(const std::string& name = "b") {
  BuildRecord b;
  b.name = name;
  b.archs = {"9.0", "12.0"};
  b.kernels_glob = "*";
  b.nvcc = "/opt/fake/nvcc";
  b.created_at = "2026-01-01T00:00:00Z";
  return b;
}

inline UnitRecord make_unit(const std::string& name, int seq) {
  UnitRecord u;
  u.seq = seq;
  u.name = name;
  u.kind = UnitKind::compile;
  u.source = "src/" + name + ".cu";
  u.family = "fam";
  u.archs = {"9.0"};
  u.argv = {"/opt/fake/nvcc", "-c", "src/" + name + ".cu", "-o", "/state/builds/{build}/obj/" + name + ".o"};
  u.output_path = "/state/builds/{build}/obj/" + name + ".o";
  u.log_path = "/state/builds/{build}/logs/" + name + ".log";
  u.key = "key-" + name;
  u.content_hash = "hash-" + name;
  u.flags = "-O3";
  u.compiler = "V13";
  u.prior_peak = 1000;
  u.prior_duration_s = 2.5;
  return u;
}

}  // namespace fad::test
