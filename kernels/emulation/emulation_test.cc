// emulation_test.cc - runs the library's real C ABI (dispatch.cu, the unit
// launchers and the device code, compiled for the CPU emulator) on every case
// of selftest/attention_cases.cc and checks O, LSE, dQ, dK and dV against the
// fp32 reference.
//
// Usage: fad-kernels-emulation [--filter TEXT]... [--list] [--require-all] [--verbose]
// A case whose unit is not in this build prints SKIP (FAD_ERR_NOT_BUILT). The
// build holds one dtype per head dim and mask for most head dims (units.txt);
// --require-all fails unless every head dim and mask ran in some dtype and no
// feature case was skipped. Exit 0 only if every case that ran passed.
//
// Per call it also checks what only the emulator sees: no violation (shared-
// memory races, uninitialised or unfinished reads, out-of-bounds accesses,
// misaligned ldmatrix rows), no ldmatrix bank conflict, and no atomics in a
// deterministic backward.
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "attention_cases.h"
#include "cuda_runtime.h"

int main(int argc, char** argv) {
  std::vector<std::string> filters;
  bool list = false, require_all = false, verbose = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--filter" && i + 1 < argc) {
      filters.push_back(argv[++i]);
    } else if (a == "--list") {
      list = true;
    } else if (a == "--require-all") {
      require_all = true;
    } else if (a == "--verbose") {
      verbose = true;
    } else {
      std::fprintf(stderr, "usage: %s [--filter TEXT]... [--list] [--require-all] [--verbose]\n", argv[0]);
      return 2;
    }
  }
  fad_emu::set_report_limit(verbose ? 1000 : 8);

  fad_cases::Hooks hooks;
  hooks.before_fwd = [](const fad_cases::Case& c) {
    fad_emu::device().smem_optin = c.small_smem ? 101376 : 166912;
    fad_emu::reset_stats();
  };
  hooks.before_bwd = [](const fad_cases::Case&) { fad_emu::reset_stats(); };
  hooks.after = [](const fad_cases::Case& c, bool bwd, fad_cases::Outcome& out) {
    const fad_emu::Stats& s = fad_emu::stats();
    const std::string pass = bwd ? "bwd" : "fwd";
    if (s.violations) out.fail(pass + ": " + std::to_string(s.violations) + " emulator violations");
    if (s.ldsm_wavefronts != s.ldsm_phases)
      out.fail(pass + ": ldmatrix bank conflicts (" + std::to_string(s.ldsm_wavefronts) + " wavefronts for " +
               std::to_string(s.ldsm_phases) + " matrices)");
    if (bwd && c.deterministic && s.atomics) out.fail("deterministic backward used atomics");
  };

  int run = 0, failed = 0, skipped = 0, missing = 0;
  std::set<std::pair<int, bool>> base_wanted, base_ran;
  for (const fad_cases::Case& c : fad_cases::all_cases()) {
    bool match = filters.empty();
    for (const auto& f : filters) match = match || c.name.find(f) != std::string::npos;
    if (!match) continue;
    if (list) {
      std::printf("%s\n", c.name.c_str());
      continue;
    }
    const fad_cases::Outcome o = fad_cases::run_case(c, hooks);
    ++run;
    if (c.base) base_wanted.insert({c.d, c.causal});
    if (o.skipped) {
      ++skipped;
      if (!c.base) ++missing;
      std::printf("SKIP %s (unit not in this build)\n", c.name.c_str());
    } else {
      if (c.base) base_ran.insert({c.d, c.causal});
      failed += !o.pass;
      std::printf("%s %s |%s\n", o.pass ? "PASS" : "FAIL", c.name.c_str(), o.detail.c_str());
    }
    std::fflush(stdout);
  }
  if (list) return 0;
  for (const auto& [d, causal] : base_wanted)
    if (!base_ran.count({d, causal})) {
      ++missing;
      std::printf("MISSING head dim %d %s: no dtype of it is in this build\n", d, causal ? "causal" : "full");
    }
  std::printf("emulation: %d passed, %d failed, %d skipped\n", run - failed - skipped, failed, skipped);
  return failed > 0 || (require_all && missing > 0) || run == skipped ? 1 : 0;
}
