// fad_attention_selftest.cu - correctness and speed of libfad_attention on a GPU.
//
// Runs every case of attention_cases.cc (each head dim, dtype and mask on
// ragged multi-tile shapes, plus GQA/MQA, variable lengths, sliding windows,
// softcap, ALiBi, dropout, paged KV, split-KV and the deterministic backward,
// which must also give identical bits twice) against the CPU reference, then
// measures TFLOP/s per variant. Variants whose unit this library was built
// without are reported as not built, not as failures.
//
// Usage: fad_attention_selftest [--no-bench] [--quick] [--bench-seqlen N] [--filter TEXT]
//   --quick  a quarter of the base cases and every feature case (for compute-sanitizer)
// Exit: 0 all passed; 1 a failure, including a GPU that is present but that
// CUDA cannot use (driver or runtime error, no kernel image for it); 0 with
// "SKIP: no CUDA device" only when the machine has no NVIDIA GPU at all.
#include <cuda_runtime.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attention_cases.h"
#include "fad_attention.h"

namespace {

bool api_checks() {
  bool ok = true;
  fad_attention_fwd_params p{};
  p.dtype = FAD_DTYPE_FP16;
  p.batch = p.heads = p.seqlen_q = p.seqlen_k = 1;
  p.head_dim = 80;
  ok &= fad_attention_fwd(&p, nullptr) == FAD_ERR_UNSUPPORTED_HEAD_DIM;
  p.head_dim = 64;
  p.dtype = (fad_dtype)7;
  ok &= fad_attention_fwd(&p, nullptr) == FAD_ERR_UNSUPPORTED_DTYPE;
  p.dtype = FAD_DTYPE_BF16;
  p.batch = -1;
  ok &= fad_attention_fwd(&p, nullptr) == FAD_ERR_INVALID_ARGUMENT;
  ok &= fad_attention_fwd(nullptr, nullptr) == FAD_ERR_INVALID_ARGUMENT;
  ok &= fad_attention_bwd(nullptr, nullptr) == FAD_ERR_INVALID_ARGUMENT;
  fad_attention_fwd_args a;
  fad_attention_fwd_args_init(&a);
  ok &= a.struct_size == sizeof a && a.window_left == -1 && a.window_right == -1;
  a.struct_size = 8;  // older than ABI 2's first struct
  ok &= fad_attention_fwd_v2(&a, nullptr) == FAD_ERR_INVALID_ARGUMENT;
  fad_attention_fwd_args_init(&a);
  a.dtype = FAD_DTYPE_FP16, a.head_dim = 64, a.batch = a.heads = a.seqlen_q = a.seqlen_k = 1;
  a.heads = 3, a.heads_k = 2;  // heads_k must divide heads
  ok &= fad_attention_fwd_v2(&a, nullptr) == FAD_ERR_INVALID_ARGUMENT;
  a.heads_k = 1, a.dropout_p = 1.0f;
  ok &= fad_attention_fwd_v2(&a, nullptr) == FAD_ERR_INVALID_ARGUMENT;
  ok &= std::strcmp(fad_status_string(FAD_OK), "FAD_OK") == 0;
  ok &= fad_attention_abi() == FAD_ATTENTION_ABI;
  std::printf("fad_attention %s (ABI %d); API argument checks: %s\n", fad_attention_version(), fad_attention_abi(),
              ok ? "PASS" : "FAIL");
  return ok;
}

// Whether this machine has an NVIDIA GPU, independently of CUDA: the driver's
// device nodes or its /proc entries.
bool nvidia_gpu_present() {
  struct stat st;
  if (stat("/dev/nvidia0", &st) == 0) return true;
  if (stat("/dev/dxg", &st) == 0 && stat("/usr/lib/wsl/lib/libcuda.so.1", &st) == 0) return true;  // WSL
  return system("ls /proc/driver/nvidia/gpus/* >/dev/null 2>&1") == 0;
}

struct Bench {
  double fwd_ms = 0, bwd_ms = 0, fwd_tflops = 0, bwd_tflops = 0;
  bool ok = true;
};

Bench bench_variant(fad_dtype dt, int D, bool causal, int S) {
  const int B = 4, H = 16;
  const size_t n = (size_t)B * H * S * D;
  Bench r;
  void *q, *k, *v, *o, *dO, *dq, *dk, *dv, *ws;
  float* lse;
  for (void** p : {&q, &k, &v, &o, &dO, &dq, &dk, &dv})
    if (cudaMalloc(p, n * 2) != cudaSuccess) return r.ok = false, r;
  cudaMalloc(&lse, (size_t)B * H * S * 4);
  {
    std::vector<uint16_t> h(n);
    std::mt19937 g(7);
    std::normal_distribution<float> dist(0.f, 1.f);
    for (auto& x : h) x = fad_cases::to_bits(dist(g), dt);
    for (void* p : {q, k, v, dO}) cudaMemcpy(p, h.data(), n * 2, cudaMemcpyHostToDevice);
  }
  const int64_t sb = (int64_t)S * H * D, sh = D, sr = (int64_t)H * D;  // [B, S, H, D]
  fad_attention_fwd_args fa;
  fad_attention_fwd_args_init(&fa);
  fa.dtype = dt, fa.q = q, fa.k = k, fa.v = v, fa.o = o, fa.lse = lse;
  fa.batch = B, fa.heads = H, fa.seqlen_q = S, fa.seqlen_k = S, fa.head_dim = D, fa.causal = causal;
  fa.num_splits = 1;
  fa.q_batch_stride = fa.k_batch_stride = fa.v_batch_stride = fa.o_batch_stride = sb;
  fa.q_head_stride = fa.k_head_stride = fa.v_head_stride = fa.o_head_stride = sh;
  fa.q_row_stride = fa.k_row_stride = fa.v_row_stride = fa.o_row_stride = sr;
  fad_attention_bwd_args ba;
  fad_attention_bwd_args_init(&ba);
  ba.dtype = dt, ba.q = q, ba.k = k, ba.v = v, ba.o = o, ba.dout = dO, ba.lse = lse, ba.dq = dq, ba.dk = dk, ba.dv = dv;
  ba.batch = B, ba.heads = H, ba.seqlen_q = S, ba.seqlen_k = S, ba.head_dim = D, ba.causal = causal;
  ba.q_batch_stride = ba.k_batch_stride = ba.v_batch_stride = ba.o_batch_stride = ba.do_batch_stride =
      ba.dq_batch_stride = ba.dk_batch_stride = ba.dv_batch_stride = sb;
  ba.q_head_stride = ba.k_head_stride = ba.v_head_stride = ba.o_head_stride = ba.do_head_stride = ba.dq_head_stride =
      ba.dk_head_stride = ba.dv_head_stride = sh;
  ba.q_row_stride = ba.k_row_stride = ba.v_row_stride = ba.o_row_stride = ba.do_row_stride = ba.dq_row_stride =
      ba.dk_row_stride = ba.dv_row_stride = sr;
  ba.workspace_bytes = fad_attention_bwd_workspace_size_v2(&ba);
  cudaMalloc(&ws, ba.workspace_bytes);
  ba.workspace = ws;

  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const int warm = 2, reps = 10;
  float ms = 0;
  for (int i = 0; i < warm; ++i) r.ok &= fad_attention_fwd_v2(&fa, nullptr) == FAD_OK;
  cudaEventRecord(e0);
  for (int i = 0; i < reps; ++i) r.ok &= fad_attention_fwd_v2(&fa, nullptr) == FAD_OK;
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  cudaEventElapsedTime(&ms, e0, e1);
  r.fwd_ms = ms / reps;
  for (int i = 0; i < warm; ++i) r.ok &= fad_attention_bwd_v2(&ba, nullptr) == FAD_OK;
  cudaEventRecord(e0);
  for (int i = 0; i < reps; ++i) r.ok &= fad_attention_bwd_v2(&ba, nullptr) == FAD_OK;
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  cudaEventElapsedTime(&ms, e0, e1);
  r.bwd_ms = ms / reps;
  r.ok &= cudaGetLastError() == cudaSuccess;
  // forward: two GEMMs of 2 S^2 D flops; backward: five (2.5x); causal halves both.
  const double fwd_flops = 4.0 * B * H * (double)S * S * D * (causal ? 0.5 : 1.0);
  r.fwd_tflops = fwd_flops / (r.fwd_ms * 1e-3) / 1e12;
  r.bwd_tflops = 2.5 * fwd_flops / (r.bwd_ms * 1e-3) / 1e12;
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  for (void* p : {q, k, v, o, dO, dq, dk, dv, ws}) cudaFree(p);
  cudaFree(lse);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  bool bench = true, quick = false;
  int bench_seqlen = 2048;
  std::vector<std::string> filters;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--no-bench")) bench = false;
    else if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--bench-seqlen") && i + 1 < argc) bench_seqlen = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--filter") && i + 1 < argc) filters.push_back(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--no-bench] [--quick] [--bench-seqlen N] [--filter TEXT]\n", argv[0]);
      return 2;
    }
  }
  bool all_ok = api_checks();

  int ndev = 0;
  const cudaError_t e = cudaGetDeviceCount(&ndev);
  const bool present = nvidia_gpu_present();
  if ((e != cudaSuccess || ndev == 0) && !present) {
    // No NVIDIA device node or driver entry: nothing to test (CUDA says
    // "no device" or, with no driver installed at all, "insufficient driver").
    std::printf("SKIP: no CUDA device (no NVIDIA GPU on this machine; CUDA: %s)\n",
                e == cudaSuccess ? "no device" : cudaGetErrorName(e));
    return all_ok ? 0 : 1;
  }
  if (e != cudaSuccess || ndev == 0) {
    std::printf("FAIL: an NVIDIA GPU is present but CUDA cannot use it: %s (%s)\n",
                e == cudaSuccess ? "no device visible" : cudaGetErrorString(e), cudaGetErrorName(e));
    return 1;
  }
  cudaDeviceProp prop;
  cudaError_t pe = cudaGetDeviceProperties(&prop, 0);
  if (pe == cudaSuccess) pe = cudaFree(nullptr);  // creates the context: a broken driver fails here
  if (pe != cudaSuccess) {
    std::printf("FAIL: the GPU is present but unusable: %s (%s)\n", cudaGetErrorString(pe), cudaGetErrorName(pe));
    return 1;
  }
  std::printf("device: %s (sm_%d%d, %d SMs, %zu KiB shared memory per block)\n", prop.name, prop.major, prop.minor,
              prop.multiProcessorCount, prop.sharedMemPerBlockOptin / 1024);

  int ran = 0, failed = 0, not_built = 0, index = 0;
  for (const fad_cases::Case& c : fad_cases::all_cases()) {
    bool match = filters.empty();
    for (const auto& f : filters) match = match || c.name.find(f) != std::string::npos;
    const bool base = index++ < 28;  // the first 28 cases are one per (head dim, dtype, mask)
    if (!match || (quick && base && index % 4 != 1)) continue;
    const fad_cases::Outcome o = fad_cases::run_case(c, {}, c.deterministic);
    if (o.skipped) {
      ++not_built;
      continue;
    }
    ++ran;
    failed += !o.pass;
    std::printf("  %s %s |%s\n", o.pass ? "PASS" : "FAIL", c.name.c_str(), o.detail.c_str());
    std::fflush(stdout);
    const cudaError_t sticky = cudaGetLastError();
    if (sticky != cudaSuccess) {
      std::printf("FAIL: CUDA error after %s: %s\n", c.name.c_str(), cudaGetErrorString(sticky));
      return 1;
    }
  }
  std::printf("correctness: %d passed, %d failed, %d not built in this library\n", ran - failed, failed, not_built);
  if (ran == 0) {
    std::printf("FAIL: this library holds none of the units the cases need\n");
    all_ok = false;
  }
  all_ok = all_ok && failed == 0;

  if (bench && all_ok) {
    std::printf("benchmark (B=4, H=16, S=%d, [B,S,H,D]):\n", bench_seqlen);
    for (fad_dtype dt : {FAD_DTYPE_FP16, FAD_DTYPE_BF16})
      for (int D : {32, 64, 96, 128, 160, 192, 256})
        for (int causal = 0; causal < 2; ++causal) {
          if (!fad_attention_has_variant(0, dt, D, causal) || !fad_attention_has_variant(2, dt, D, causal)) continue;
          const Bench b = bench_variant(dt, D, causal, bench_seqlen);
          std::printf("  %-4s d=%-3d %-6s | fwd %8.3f ms %7.1f TFLOP/s | bwd %8.3f ms %7.1f TFLOP/s%s\n",
                      dt == FAD_DTYPE_FP16 ? "fp16" : "bf16", D, causal ? "causal" : "full", b.fwd_ms, b.fwd_tflops,
                      b.bwd_ms, b.bwd_tflops, b.ok ? "" : "  (launch error)");
          all_ok &= b.ok;
        }
  }
  std::printf("%s\n", all_ok ? "ALL PASSED" : "FAILURES");
  return all_ok ? 0 : 1;
}
