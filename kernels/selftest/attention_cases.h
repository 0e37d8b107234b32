// attention_cases.h - the correctness cases of the library, shared by the GPU
// self-test (fad_attention_selftest.cu) and the CPU emulation
// (kernels/emulation/emulation_test.cc): each case calls the public C ABI on
// device memory (cudaMalloc / cudaMemcpy, which the emulator also provides)
// and compares O, LSE, dQ, dK and dV with the fp32 reference.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fad_attention.h"

namespace fad_cases {

struct Case {
  std::string name;
  fad_dtype dt = FAD_DTYPE_FP16;
  int d = 64;
  int batch = 1, heads = 2, heads_k = 0;
  int sq = 150, sk = 200;   // fixed lengths, or the maxima with varlen
  std::vector<int> lq, lk;  // varlen lengths
  bool causal = false;
  int wl = -1, wr = -1;
  float softcap = 0.0f;
  bool alibi = false, alibi_per_batch = false;
  float dropout = 0.0f;
  int page = 0;             // paged KV cache page size (forward only)
  bool seqused = false;     // per-sequence KV lengths (with paged)
  int splits = 1;           // forward num_splits (0: automatic)
  bool deterministic = false;
  bool bshd = true;
  int pad = 0;              // elements after each row's head dim
  bool bwd = true;
  int abi = 2;
  bool small_smem = false;  // emulation only: a device with 99 KiB of shared memory per block
  bool base = false;        // one of the head dim x dtype x mask cases
};

// Per-dtype tolerance: max|got - ref| <= atol + rtol * max|ref|.
struct Tol {
  double fwd_atol, fwd_rtol, lse_atol, bwd_atol, bwd_rtol;
};
Tol tolerance(fad_dtype dt);

struct Outcome {
  bool pass = true, skipped = false;
  std::string detail;
  void fail(const std::string& why);
};

// Calls made around each library call; the emulation checks its counters here.
struct Hooks {
  std::function<void(const Case&)> before_fwd, before_bwd;
  std::function<void(const Case&, bool bwd, Outcome&)> after;
};

// Every case (the emulation's list; the GPU self-test runs the same).
std::vector<Case> all_cases();
std::string describe(const Case& c);

// Runs one case; FAD_ERR_NOT_BUILT from the library marks it skipped.
// `repeat_bwd_bitwise`: run the backward twice and require identical bits
// (the deterministic option's promise; only meaningful on a GPU).
Outcome run_case(const Case& c, const Hooks& hooks = {}, bool repeat_bwd_bitwise = false);

// fp16 / bf16 bit conversions on the host (round to nearest even).
uint16_t to_bits(float x, fad_dtype dt);
float from_bits(uint16_t b, fad_dtype dt);

}  // namespace fad_cases
