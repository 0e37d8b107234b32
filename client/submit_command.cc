// `fad submit`: pick the archs (flag or local GPUs), queue the build, and with
// --wait follow it by polling status until it finishes.
#include <filesystem>
#include <ostream>

#include "client/commands.h"
#include "client/exit_codes.h"
#include "client/render.h"

namespace fad::client {
namespace {

constexpr auto kWaitInterval = std::chrono::milliseconds(500);

// fadd runs the compiler from its own working directory, so a relative
// --nvcc path must be made absolute here; a bare name stays a PATH lookup.
std::string nvcc_for_daemon(const std::string& nvcc) {
  if (nvcc.find('/') == std::string::npos) return nvcc;
  std::error_code ec;
  auto absolute = std::filesystem::absolute(nvcc, ec);
  return ec ? nvcc : absolute.lexically_normal().string();
}

// Polls the build until it finishes; prints progress lines unless --json.
int wait_for_build(const Command& cmd, Context& ctx, std::int64_t id) {
  StatusRequest req;
  req.id = id;
  std::string last_key;
  while (true) {
    // fadd may restart while a build runs (an upgrade, a crash): the build
    // survives it, so the wait does too.
    CallResult reply = send_following(ctx, Request{"status", req.to_json()});
    if (auto* failure = std::get_if<CallFailure>(&reply)) {
      ctx.err << "fad: stopped waiting for build " << id << ": " << failure->message << "\n";
      return failure->exit_code;
    }
    auto& response = std::get<Response>(reply);
    if (!response.ok) {
      ctx.err << "fad: " << response.message << "\n";
      return exit_code_for_error(response);
    }
    const json* builds = response.result.contains("builds") ? &response.result["builds"] : nullptr;
    if (!builds || !builds->is_array() || builds->empty()) {
      ctx.err << "fad: fadd no longer knows build " << id << "\n";
      return kExitFailed;
    }
    const json& build = builds->front();
    const std::string state = build.value("state", std::string());
    if (is_final_build_state(state)) {
      if (cmd.json)
        ctx.out << build.dump(2) << "\n";
      else
        ctx.out << render_outcome(build);
      return exit_code_for_build_state(state);
    }
    if (!cmd.json && progress_key(build) != last_key) {
      last_key = progress_key(build);
      ctx.out << render_progress(build) << "\n";
      ctx.out.flush();
    }
    ctx.sleep(kWaitInterval);
  }
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
  if (cmd.json && !cmd.wait) ctx.out << json{{"id", id}}.dump() << "\n";
  if (!cmd.json) ctx.out << "submitted build " << id << "\n";
  ctx.out.flush();
  return cmd.wait ? wait_for_build(cmd, ctx, id) : kExitOk;
}

}  // namespace fad::client
