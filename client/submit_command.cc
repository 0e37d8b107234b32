// `fad submit`: pick the archs (flag or local GPUs), queue the build, and with
// --wait follow it to its end (follow.cc).
#include <cstdlib>
#include <filesystem>
#include <ostream>

#include "client/commands.h"
#include "client/exit_codes.h"
#include "common/compiler_identity.h"

namespace fad::client {
namespace {

// fadd runs the compiler from its own working directory and environment, so
// a relative --nvcc path is made absolute here, and a bare name is looked up
// on the user's PATH (the nvcc they would run themselves, not whichever one
// a system fadd's PATH finds). A name not on it is left to fadd's lookup.
std::string nvcc_for_daemon(const std::string& nvcc) {
  std::error_code ec;
  const auto cwd = std::filesystem::current_path(ec);
  if (nvcc.find('/') == std::string::npos) {
    const char* path = std::getenv("PATH");
    auto found = ec ? std::string() : find_program(nvcc, path ? path : "", cwd.string());
    return found.empty() ? nvcc : found;
  }
  auto absolute = std::filesystem::absolute(nvcc, ec);
  return ec ? nvcc : absolute.lexically_normal().string();
}

}  // namespace

int run_submit(const Command& cmd, Context& ctx) {
  std::vector<Arch> archs = cmd.archs;
  if (archs.empty()) {
    auto detected = ctx.detect_archs();
    if (!detected || detected->empty()) {
      ctx.err << "fad: no GPU found to pick an arch from; pass --arch (e.g. --arch 9.0)\n";
      return kExitUsage;
    }
    archs = *detected;
  }
  SubmitRequest req;
  for (const auto& arch : archs) req.archs.push_back(arch.display());
  req.kernels = cmd.kernels;
  if (cmd.nvcc) req.nvcc = nvcc_for_daemon(*cmd.nvcc);
  req.name = cmd.name;

  int rc = kExitOk;
  auto result = request(ctx, "submit", req.to_json(), rc);
  if (!result) return rc;
  const json* id_field = result->contains("id") ? &(*result)["id"] : nullptr;
  if (!id_field || !id_field->is_number_integer()) {
    ctx.err << "fad: fadd accepted the build but sent no id\n";
    return kExitFailed;
  }
  const auto id = id_field->get<std::int64_t>();
  if (cmd.json && !cmd.wait) ctx.out << with_schema(json{{"id", id}}).dump() << "\n";
  if (!cmd.json) ctx.out << "submitted build " << id << "\n";
  ctx.out.flush();
  return cmd.wait ? follow_build(ctx, id, cmd.json, true) : kExitOk;
}

}  // namespace fad::client
