// fad_attention_selftest.cu - correctness + speed self-test for libfad_attention.
//
// For every variant (fp16/bf16 x head dim x causal) it runs the forward and
// backward passes on random inputs for several ragged shapes (seqlen_q !=
// seqlen_k, tails that are not multiples of the tile sizes, strided
// [B,S,H,D] layouts) and compares with the CPU reference
// (kernels/reference/reference_attention.cc) computed from the same
// dtype-rounded inputs. Then it measures TFLOP/s per variant.
//
// Pass criterion per tensor:  max|gpu - ref| <= atol + rtol * max|ref|
//   fp16: forward  (O)      atol 2e-3, rtol 1e-2    LSE atol 1e-3 (abs)
//         backward (dQ,dK,dV) atol 1e-2, rtol 2e-2
//   bf16: forward  (O)      atol 1e-2, rtol 3e-2    LSE atol 1e-2 (abs)
//         backward           atol 5e-2, rtol 5e-2
//
// Usage: fad_attention_selftest [--no-bench] [--bench-seqlen N]
// Exit: 0 all passed, 1 a failure, 0 with "SKIP: no CUDA device" if no GPU.
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "fad_attention.h"
#include "reference_attention.h"

namespace {

struct Tol {
  double fwd_atol, fwd_rtol, lse_atol, bwd_atol, bwd_rtol;
};
const Tol kTolFp16 = {2e-3, 1e-2, 1e-3, 1e-2, 2e-2};
const Tol kTolBf16 = {1e-2, 3e-2, 1e-2, 5e-2, 5e-2};

#define CUDA_CHECK(x)                                                                   \
  do {                                                                                  \
    cudaError_t e_ = (x);                                                               \
    if (e_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, \
                   __LINE__);                                                           \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

uint16_t to_bits(float x, fad_dtype dt) {
  uint16_t r;
  if (dt == FAD_DTYPE_FP16) {
    __half h = __float2half_rn(x);
    std::memcpy(&r, &h, 2);
  } else {
    __nv_bfloat16 h = __float2bfloat16_rn(x);
    std::memcpy(&r, &h, 2);
  }
  return r;
}
float from_bits(uint16_t b, fad_dtype dt) {
  if (dt == FAD_DTYPE_FP16) {
    __half h;
    std::memcpy(&h, &b, 2);
    return __half2float(h);
  }
  __nv_bfloat16 h;
  std::memcpy(&h, &b, 2);
  return __bfloat162float(h);
}

// A [B, H, S, D] logical tensor stored either as BHSD or BSHD on the device.
struct DevTensor {
  int B, H, S, D;
  bool bshd;
  uint16_t* dev = nullptr;
  int64_t sb() const { return (int64_t)S * H * D; }
  int64_t sh() const { return bshd ? D : (int64_t)S * D; }
  int64_t sr() const { return bshd ? (int64_t)H * D : D; }
  size_t n() const { return (size_t)B * H * S * D; }
  size_t phys(int b, int h, int s, int d) const { return (size_t)(b * sb() + h * sh() + s * sr() + d); }
  void alloc() { CUDA_CHECK(cudaMalloc(&dev, std::max<size_t>(n(), 1) * 2)); CUDA_CHECK(cudaMemset(dev, 0, std::max<size_t>(n(), 1) * 2)); }
  void release() { if (dev) cudaFree(dev); dev = nullptr; }
  // upload logical BHSD fp32 (already rounded) data
  void upload(const std::vector<float>& x, fad_dtype dt) {
    std::vector<uint16_t> h(n());
    for (int b = 0; b < B; ++b) for (int hh = 0; hh < H; ++hh) for (int s = 0; s < S; ++s) for (int d = 0; d < D; ++d)
      h[phys(b, hh, s, d)] = to_bits(x[(((size_t)b * H + hh) * S + s) * D + d], dt);
    CUDA_CHECK(cudaMemcpy(dev, h.data(), n() * 2, cudaMemcpyHostToDevice));
  }
  std::vector<float> download(fad_dtype dt) const {
    std::vector<uint16_t> h(n());
    CUDA_CHECK(cudaMemcpy(h.data(), dev, n() * 2, cudaMemcpyDeviceToHost));
    std::vector<float> x(n());
    for (int b = 0; b < B; ++b) for (int hh = 0; hh < H; ++hh) for (int s = 0; s < S; ++s) for (int d = 0; d < D; ++d)
      x[(((size_t)b * H + hh) * S + s) * D + d] = from_bits(h[phys(b, hh, s, d)], dt);
    return x;
  }
};

std::vector<float> random_rounded(size_t n, std::mt19937& g, fad_dtype dt) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = from_bits(to_bits(dist(g), dt), dt);
  return v;
}

struct Err {
  double max_err = 0, max_ref = 0;
  bool ok(double atol, double rtol) const { return max_err <= atol + rtol * max_ref; }
};
Err compare(const std::vector<float>& got, const std::vector<float>& ref) {
  Err e;
  for (size_t i = 0; i < ref.size(); ++i) {
    double d = std::fabs((double)got[i] - ref[i]);
    if (!(d == d)) d = INFINITY;  // NaN
    e.max_err = std::max(e.max_err, d);
    e.max_ref = std::max(e.max_ref, (double)std::fabs(ref[i]));
  }
  return e;
}
Err compare_lse(const std::vector<float>& got, const std::vector<float>& ref) {
  Err e;
  for (size_t i = 0; i < ref.size(); ++i) {
    double d;
    if (std::isinf(ref[i])) d = (std::isinf(got[i]) && got[i] < 0) ? 0.0 : INFINITY;
    else d = std::fabs((double)got[i] - ref[i]);
    if (!(d == d)) d = INFINITY;
    e.max_err = std::max(e.max_err, d);
  }
  return e;
}

void fill_fwd_strides(fad_attention_fwd_params& p, const DevTensor& q, const DevTensor& k, const DevTensor& v,
                      const DevTensor& o) {
  p.q_batch_stride = q.sb(); p.q_head_stride = q.sh(); p.q_row_stride = q.sr();
  p.k_batch_stride = k.sb(); p.k_head_stride = k.sh(); p.k_row_stride = k.sr();
  p.v_batch_stride = v.sb(); p.v_head_stride = v.sh(); p.v_row_stride = v.sr();
  p.o_batch_stride = o.sb(); p.o_head_stride = o.sh(); p.o_row_stride = o.sr();
}

struct Shape { int b, h, sq, sk; };

// Runs one variant on one shape; returns true if within tolerance.
bool check_variant(fad_dtype dt, int D, bool causal, const Shape& sh, unsigned seed) {
  const Tol& tol = dt == FAD_DTYPE_FP16 ? kTolFp16 : kTolBf16;
  std::mt19937 g(seed);
  fad_ref::AttentionShape rs;
  rs.batch = sh.b; rs.heads = sh.h; rs.seqlen_q = sh.sq; rs.seqlen_k = sh.sk; rs.head_dim = D;
  rs.scale = 1.0f / std::sqrt((float)D); rs.causal = causal;

  auto q = random_rounded(fad_ref::q_elems(rs), g, dt);
  auto k = random_rounded(fad_ref::kv_elems(rs), g, dt);
  auto v = random_rounded(fad_ref::kv_elems(rs), g, dt);
  auto dout = random_rounded(fad_ref::q_elems(rs), g, dt);

  // Q-side tensors in [B,S,H,D], K/V-side tensors in [B,H,S,D].
  DevTensor tq{sh.b, sh.h, sh.sq, D, true}, to{sh.b, sh.h, sh.sq, D, true}, tdo{sh.b, sh.h, sh.sq, D, true},
      tdq{sh.b, sh.h, sh.sq, D, true};
  DevTensor tk{sh.b, sh.h, sh.sk, D, false}, tv{sh.b, sh.h, sh.sk, D, false}, tdk{sh.b, sh.h, sh.sk, D, false},
      tdv{sh.b, sh.h, sh.sk, D, false};
  for (DevTensor* t : {&tq, &to, &tdo, &tdq, &tk, &tv, &tdk, &tdv}) t->alloc();
  tq.upload(q, dt); tk.upload(k, dt); tv.upload(v, dt); tdo.upload(dout, dt);
  float* lse = nullptr;
  CUDA_CHECK(cudaMalloc(&lse, std::max<size_t>(fad_ref::lse_elems(rs), 1) * 4));

  fad_attention_fwd_params fp{};
  fp.q = tq.dev; fp.k = tk.dev; fp.v = tv.dev; fp.o = to.dev; fp.lse = lse;
  fp.dtype = dt; fp.batch = sh.b; fp.heads = sh.h; fp.seqlen_q = sh.sq; fp.seqlen_k = sh.sk; fp.head_dim = D;
  fill_fwd_strides(fp, tq, tk, tv, to);
  fp.softmax_scale = rs.scale; fp.causal = causal;
  fad_status st = fad_attention_fwd(&fp, nullptr);
  bool ok = true;
  if (st != FAD_OK) {
    std::printf("  fwd launch failed: %s\n", fad_status_string(st));
    ok = false;
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  fad_attention_bwd_params bp{};
  bp.q = tq.dev; bp.k = tk.dev; bp.v = tv.dev; bp.o = to.dev; bp.dout = tdo.dev; bp.lse = lse;
  bp.dq = tdq.dev; bp.dk = tdk.dev; bp.dv = tdv.dev;
  bp.dtype = dt; bp.batch = sh.b; bp.heads = sh.h; bp.seqlen_q = sh.sq; bp.seqlen_k = sh.sk; bp.head_dim = D;
  bp.q_batch_stride = tq.sb(); bp.q_head_stride = tq.sh(); bp.q_row_stride = tq.sr();
  bp.k_batch_stride = tk.sb(); bp.k_head_stride = tk.sh(); bp.k_row_stride = tk.sr();
  bp.v_batch_stride = tv.sb(); bp.v_head_stride = tv.sh(); bp.v_row_stride = tv.sr();
  bp.o_batch_stride = to.sb(); bp.o_head_stride = to.sh(); bp.o_row_stride = to.sr();
  bp.do_batch_stride = tdo.sb(); bp.do_head_stride = tdo.sh(); bp.do_row_stride = tdo.sr();
  bp.dq_batch_stride = tdq.sb(); bp.dq_head_stride = tdq.sh(); bp.dq_row_stride = tdq.sr();
  bp.dk_batch_stride = tdk.sb(); bp.dk_head_stride = tdk.sh(); bp.dk_row_stride = tdk.sr();
  bp.dv_batch_stride = tdv.sb(); bp.dv_head_stride = tdv.sh(); bp.dv_row_stride = tdv.sr();
  bp.softmax_scale = rs.scale; bp.causal = causal;
  bp.workspace = nullptr;  // library allocates
  st = fad_attention_bwd(&bp, nullptr);
  if (st != FAD_OK) {
    std::printf("  bwd launch failed: %s\n", fad_status_string(st));
    ok = false;
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> ro(fad_ref::q_elems(rs)), rl(fad_ref::lse_elems(rs));
  std::vector<float> rdq(fad_ref::q_elems(rs)), rdk(fad_ref::kv_elems(rs)), rdv(fad_ref::kv_elems(rs));
  fad_ref::attention_forward(rs, q.data(), k.data(), v.data(), ro.data(), rl.data());
  fad_ref::attention_backward(rs, q.data(), k.data(), v.data(), dout.data(), rdq.data(), rdk.data(), rdv.data());

  std::vector<float> glse(fad_ref::lse_elems(rs));
  CUDA_CHECK(cudaMemcpy(glse.data(), lse, glse.size() * 4, cudaMemcpyDeviceToHost));
  Err eo = compare(to.download(dt), ro);
  Err el = compare_lse(glse, rl);
  Err eq = compare(tdq.download(dt), rdq);
  Err ek = compare(tdk.download(dt), rdk);
  Err ev = compare(tdv.download(dt), rdv);
  const bool ok_o = eo.ok(tol.fwd_atol, tol.fwd_rtol), ok_l = el.max_err <= tol.lse_atol;
  const bool ok_q = eq.ok(tol.bwd_atol, tol.bwd_rtol), ok_k = ek.ok(tol.bwd_atol, tol.bwd_rtol),
             ok_v = ev.ok(tol.bwd_atol, tol.bwd_rtol);
  ok = ok && ok_o && ok_l && ok_q && ok_k && ok_v;
  std::printf("  %-5s d=%-3d %-9s b=%d h=%d sq=%-4d sk=%-4d | O %.2e%s LSE %.2e%s dQ %.2e%s dK %.2e%s dV %.2e%s  %s\n",
              dt == FAD_DTYPE_FP16 ? "fp16" : "bf16", D, causal ? "causal" : "noncausal", sh.b, sh.h, sh.sq,
              sh.sk, eo.max_err, ok_o ? "" : "!", el.max_err, ok_l ? "" : "!", eq.max_err, ok_q ? "" : "!",
              ek.max_err, ok_k ? "" : "!", ev.max_err, ok_v ? "" : "!", ok ? "PASS" : "FAIL");
  for (DevTensor* t : {&tq, &to, &tdo, &tdq, &tk, &tv, &tdk, &tdv}) t->release();
  cudaFree(lse);
  return ok;
}

void bench_variant(fad_dtype dt, int D, bool causal, int seqlen) {
  const int B = 4, H = 16, S = seqlen;
  const size_t n = (size_t)B * H * S * D;
  void *q, *k, *v, *o, *dO, *dq, *dk, *dv, *ws;
  float* lse;
  for (void** p : {&q, &k, &v, &o, &dO, &dq, &dk, &dv}) {
    CUDA_CHECK(cudaMalloc(p, n * 2));
    CUDA_CHECK(cudaMemset(*p, 0, n * 2));
  }
  CUDA_CHECK(cudaMalloc(&lse, (size_t)B * H * S * 4));
  // Small random-ish values: fill with a constant pattern via host upload.
  {
    std::vector<uint16_t> h(n);
    std::mt19937 g(7);
    std::normal_distribution<float> dist(0.f, 1.f);
    for (auto& x : h) x = to_bits(dist(g), dt);
    for (void* p : {q, k, v, dO}) CUDA_CHECK(cudaMemcpy(p, h.data(), n * 2, cudaMemcpyHostToDevice));
  }
  const int64_t sb = (int64_t)H * S * D, shs = (int64_t)S * D, sr = D;
  fad_attention_fwd_params fp{};
  fp.q = q; fp.k = k; fp.v = v; fp.o = o; fp.lse = lse; fp.dtype = dt; fp.batch = B; fp.heads = H;
  fp.seqlen_q = S; fp.seqlen_k = S; fp.head_dim = D; fp.causal = causal; fp.softmax_scale = 0.f;
  fp.q_batch_stride = fp.k_batch_stride = fp.v_batch_stride = fp.o_batch_stride = sb;
  fp.q_head_stride = fp.k_head_stride = fp.v_head_stride = fp.o_head_stride = shs;
  fp.q_row_stride = fp.k_row_stride = fp.v_row_stride = fp.o_row_stride = sr;
  fad_attention_bwd_params bp{};
  bp.q = q; bp.k = k; bp.v = v; bp.o = o; bp.dout = dO; bp.lse = lse; bp.dq = dq; bp.dk = dk; bp.dv = dv;
  bp.dtype = dt; bp.batch = B; bp.heads = H; bp.seqlen_q = S; bp.seqlen_k = S; bp.head_dim = D;
  bp.causal = causal; bp.softmax_scale = 0.f;
  bp.q_batch_stride = bp.k_batch_stride = bp.v_batch_stride = bp.o_batch_stride = bp.do_batch_stride =
      bp.dq_batch_stride = bp.dk_batch_stride = bp.dv_batch_stride = sb;
  bp.q_head_stride = bp.k_head_stride = bp.v_head_stride = bp.o_head_stride = bp.do_head_stride =
      bp.dq_head_stride = bp.dk_head_stride = bp.dv_head_stride = shs;
  bp.q_row_stride = bp.k_row_stride = bp.v_row_stride = bp.o_row_stride = bp.do_row_stride =
      bp.dq_row_stride = bp.dk_row_stride = bp.dv_row_stride = sr;
  bp.workspace_bytes = fad_attention_bwd_workspace_size(&bp);
  CUDA_CHECK(cudaMalloc(&ws, bp.workspace_bytes));
  bp.workspace = ws;

  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  const int warm = 2, reps = 10;
  float ms_f = 0, ms_b = 0;
  bool launch_ok = true;
  for (int i = 0; i < warm; ++i) launch_ok &= fad_attention_fwd(&fp, nullptr) == FAD_OK;
  CUDA_CHECK(cudaEventRecord(e0));
  for (int i = 0; i < reps; ++i) launch_ok &= fad_attention_fwd(&fp, nullptr) == FAD_OK;
  CUDA_CHECK(cudaEventRecord(e1));
  CUDA_CHECK(cudaEventSynchronize(e1));
  CUDA_CHECK(cudaEventElapsedTime(&ms_f, e0, e1));
  for (int i = 0; i < warm; ++i) launch_ok &= fad_attention_bwd(&bp, nullptr) == FAD_OK;
  CUDA_CHECK(cudaEventRecord(e0));
  for (int i = 0; i < reps; ++i) launch_ok &= fad_attention_bwd(&bp, nullptr) == FAD_OK;
  CUDA_CHECK(cudaEventRecord(e1));
  CUDA_CHECK(cudaEventSynchronize(e1));
  CUDA_CHECK(cudaEventElapsedTime(&ms_b, e0, e1));
  ms_f /= reps;
  ms_b /= reps;
  // fwd: 2 GEMMs of 2*S*S*D flops each; bwd: 5 GEMMs (2.5x fwd). Causal halves the work.
  const double fwd_flops = 4.0 * B * H * (double)S * S * D * (causal ? 0.5 : 1.0);
  const double bwd_flops = 2.5 * fwd_flops;
  std::printf("  %-5s d=%-3d %-9s B=%d H=%d S=%d | fwd %8.3f ms %7.2f TFLOP/s | bwd %8.3f ms %7.2f TFLOP/s%s\n",
              dt == FAD_DTYPE_FP16 ? "fp16" : "bf16", D, causal ? "causal" : "noncausal", B, H, S, ms_f,
              fwd_flops / (ms_f * 1e-3) / 1e12, ms_b, bwd_flops / (ms_b * 1e-3) / 1e12,
              launch_ok ? "" : "  (launch error)");
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  for (void* p : {q, k, v, o, dO, dq, dk, dv, ws}) cudaFree(p);
  cudaFree(lse);
}

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
  ok &= std::strcmp(fad_status_string(FAD_OK), "FAD_OK") == 0;
  std::printf("fad_attention version %s; API argument checks: %s\n", fad_attention_version(), ok ? "PASS" : "FAIL");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  bool bench = true;
  int bench_seqlen = 2048;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--no-bench")) bench = false;
    else if (!std::strcmp(argv[i], "--bench-seqlen") && i + 1 < argc) bench_seqlen = std::atoi(argv[++i]);
  }
  bool all_ok = api_checks();

  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("SKIP: no CUDA device\n");
    return all_ok ? 0 : 1;
  }
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  std::printf("tolerance: max|err| <= atol + rtol*max|ref|; fp16 fwd %.0e/%.0e bwd %.0e/%.0e; bf16 fwd %.0e/%.0e bwd %.0e/%.0e\n",
              kTolFp16.fwd_atol, kTolFp16.fwd_rtol, kTolFp16.bwd_atol, kTolFp16.bwd_rtol, kTolBf16.fwd_atol,
              kTolBf16.fwd_rtol, kTolBf16.bwd_atol, kTolBf16.bwd_rtol);

  const Shape shapes[] = {{2, 2, 97, 97}, {1, 3, 65, 130}, {1, 2, 70, 33}, {1, 1, 1, 17}};
  const int dims[] = {32, 64, 96, 128, 192, 256};
  const fad_dtype dts[] = {FAD_DTYPE_FP16, FAD_DTYPE_BF16};
  int fails = 0, total = 0;
  unsigned seed = 1234;
  std::printf("correctness:\n");
  for (fad_dtype dt : dts)
    for (int D : dims)
      for (int c = 0; c < 2; ++c)
        for (const Shape& s : shapes) {
          ++total;
          if (!check_variant(dt, D, c != 0, s, seed++)) ++fails;
        }
  std::printf("correctness: %d/%d passed\n", total - fails, total);
  if (bench) {
    std::printf("benchmark (seqlen %d):\n", bench_seqlen);
    for (fad_dtype dt : dts)
      for (int D : dims)
        for (int c = 0; c < 2; ++c) bench_variant(dt, D, c != 0, bench_seqlen);
  }
  all_ok = all_ok && fails == 0;
  std::printf("%s\n", all_ok ? "ALL PASSED" : "FAILURES");
  return all_ok ? 0 : 1;
}
