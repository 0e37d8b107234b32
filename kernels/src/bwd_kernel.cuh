// bwd_kernel.cuh - attention backward pass templates.
//
// Three kernels:
//   1. bwd_preprocess: Dsum_i = rowsum(dO_i * O_i) (fp32) and zero the fp32 dQ
//      accumulator rows.
//   2. bwd_kernel: one block per (KV tile of BN rows, head, batch). K_j and V_j
//      stay in shared memory; the block walks over query tiles of BM rows,
//      recomputes P = exp(scale * Q K^T - LSE), and accumulates
//        dV += P^T dO,  dS = P * (dO V^T - Dsum),  dK += scale * dS^T Q
//      in registers (WMMA accumulator fragments on sm_80+), while
//        dQ += scale * dS K
//      is added atomically into the fp32 workspace.
//   3. bwd_convert_dq: fp32 workspace -> dQ in the output dtype.
#pragma once

#include "common.cuh"

namespace fad {

template <int D> struct BwdCfg;
template <> struct BwdCfg<32>  { static constexpr int BM = 32, BN = 64; };
template <> struct BwdCfg<64>  { static constexpr int BM = 16, BN = 64; };
template <> struct BwdCfg<96>  { static constexpr int BM = 16, BN = 32; };
template <> struct BwdCfg<128> { static constexpr int BM = 16, BN = 32; };
template <> struct BwdCfg<192> { static constexpr int BM = 16, BN = 16; };
template <> struct BwdCfg<256> { static constexpr int BM = 16, BN = 16; };

template <typename T>
struct BwdArgs {
  const T* q;
  const T* k;
  const T* v;
  const T* o;
  const T* dout;
  const float* lse;
  T* dq;
  T* dk;
  T* dv;
  float* dq_accum;  // [batch, heads, seqlen_q, D] fp32 (workspace)
  float* dsum;      // [batch, heads, seqlen_q] fp32 (workspace)
  int seqlen_q, seqlen_k, heads;
  int64_t q_b, q_h, q_r, k_b, k_h, k_r, v_b, v_h, v_r, o_b, o_h, o_r;
  int64_t do_b, do_h, do_r, dq_b, dq_h, dq_r, dk_b, dk_h, dk_r, dv_b, dv_h, dv_r;
  float scale;       // softmax scale
  float scale_log2;  // softmax scale * log2(e)
  bool vec;          // 16-byte loads allowed for q, k, v, dout
};

// One warp per query row: Dsum = sum_d dO*O; zero the dQ accumulator row.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads) bwd_preprocess(const BwdArgs<T> a) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int i = blockIdx.x * kWarps + warp;
  const int h = blockIdx.y, b = blockIdx.z;
  if (i >= a.seqlen_q) return;
  const T* og = a.o + b * a.o_b + h * a.o_h + (int64_t)i * a.o_r;
  const T* dog = a.dout + b * a.do_b + h * a.do_h + (int64_t)i * a.do_r;
  const int64_t row = ((int64_t)b * a.heads + h) * a.seqlen_q + i;
  float* acc = a.dq_accum + row * D;
  float s = 0.0f;
  for (int d = lane; d < D; d += 32) {
    s = fmaf(to_f(og[d]), to_f(dog[d]), s);
    acc[d] = 0.0f;
  }
#pragma unroll
  for (int w = 16; w > 0; w >>= 1) s += __shfl_xor_sync(0xffffffffu, s, w);
  if (lane == 0) a.dsum[row] = s;
}

template <typename T, int D>
__global__ void __launch_bounds__(kThreads) bwd_convert_dq(const BwdArgs<T> a) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int i = blockIdx.x * kWarps + warp;
  const int h = blockIdx.y, b = blockIdx.z;
  if (i >= a.seqlen_q) return;
  const int64_t row = ((int64_t)b * a.heads + h) * a.seqlen_q + i;
  const float* acc = a.dq_accum + row * D;
  T* dqg = a.dq + b * a.dq_b + h * a.dq_h + (int64_t)i * a.dq_r;
  for (int d = lane; d < D; d += 32) dqg[d] = from_f<T>(acc[d]);
}

template <typename T, int D>
struct BwdSmem {
  static constexpr int BM = BwdCfg<D>::BM, BN = BwdCfg<D>::BN;
  static constexpr int LDQ = D + 8;   // T
  static constexpr int LDS = BN + 4;  // float
  static constexpr int LDP = BN + 8;  // T
  static constexpr int kK = 0;
  static constexpr int kV = kK + BN * LDQ * (int)sizeof(T);
  static constexpr int kQ = kV + BN * LDQ * (int)sizeof(T);
  static constexpr int kDO = kQ + BM * LDQ * (int)sizeof(T);
  static constexpr int kS = kDO + BM * LDQ * (int)sizeof(T);
  static constexpr int kDP = kS + BM * LDS * (int)sizeof(float);
  static constexpr int kP = kDP + BM * LDS * (int)sizeof(float);
  static constexpr int kDS = kP + BM * LDP * (int)sizeof(T);
  static constexpr int kScr = kDS + BM * LDP * (int)sizeof(T);
  static constexpr int kRow = kScr + kWarps * 256 * (int)sizeof(float);
  static constexpr int kBytes = kRow + 2 * BM * (int)sizeof(float);
  static_assert(kV % 32 == 0 && kQ % 32 == 0 && kDO % 32 == 0 && kS % 32 == 0 && kDP % 32 == 0 &&
                    kP % 32 == 0 && kDS % 32 == 0 && kScr % 32 == 0,
                "alignment");
  static_assert(kBytes <= 48 * 1024, "backward tile exceeds 48 KiB static shared memory");
};

template <typename T, int D, bool CAUSAL>
__global__ void __launch_bounds__(kThreads) bwd_kernel(const BwdArgs<T> a) {
  using L = BwdSmem<T, D>;
  constexpr int BM = L::BM, BN = L::BN, LDQ = L::LDQ, LDS = L::LDS, LDP = L::LDP;

  __shared__ __align__(128) unsigned char smem[L::kBytes];
  T* Ks = reinterpret_cast<T*>(smem + L::kK);
  T* Vs = reinterpret_cast<T*>(smem + L::kV);
  T* Qs = reinterpret_cast<T*>(smem + L::kQ);
  T* dOs = reinterpret_cast<T*>(smem + L::kDO);
  float* S = reinterpret_cast<float*>(smem + L::kS);
  float* dP = reinterpret_cast<float*>(smem + L::kDP);
  T* Ps = reinterpret_cast<T*>(smem + L::kP);
  T* dSs = reinterpret_cast<T*>(smem + L::kDS);
  float* scratch = reinterpret_cast<float*>(smem + L::kScr);
  float* lse_s = reinterpret_cast<float*>(smem + L::kRow);  // lse * log2(e)
  float* dsum_s = lse_s + BM;

  const int tid = threadIdx.x;
  const int n0 = blockIdx.x * BN;
  const int h = blockIdx.y;
  const int b = blockIdx.z;
  const int sq = a.seqlen_q, sk = a.seqlen_k;
  const int offset = sk - sq;  // bottom-right causal alignment
  const int valid_k = min(BN, sk - n0);
  const int64_t bh_row0 = ((int64_t)b * a.heads + h) * sq;

  load_rows<T, BN, D, LDQ>(Ks, a.k + b * a.k_b + h * a.k_h + (int64_t)n0 * a.k_r, a.k_r, valid_k, a.vec);
  load_rows<T, BN, D, LDQ>(Vs, a.v + b * a.v_b + h * a.v_h + (int64_t)n0 * a.v_r, a.v_r, valid_k, a.vec);

  AccAtB<T, BN, D, BM, LDP, LDQ> acc_dv;
  AccAtB<T, BN, D, BM, LDP, LDQ> acc_dk;
  acc_dv.zero();
  acc_dk.zero();

  int m_start = 0;
  if (CAUSAL) {
    // first query that can see key n0: i + offset >= n0
    m_start = max(0, n0 - offset);
    m_start = (m_start / BM) * BM;
  }
  const T* qg = a.q + b * a.q_b + h * a.q_h;
  const T* dog = a.dout + b * a.do_b + h * a.do_h;

  for (int m0 = m_start; m0 < sq; m0 += BM) {
    const int valid_q = min(BM, sq - m0);
    __syncthreads();  // previous iteration done with Qs, dOs, Ps, dSs
    load_rows<T, BM, D, LDQ>(Qs, qg + (int64_t)m0 * a.q_r, a.q_r, valid_q, a.vec);
    load_rows<T, BM, D, LDQ>(dOs, dog + (int64_t)m0 * a.do_r, a.do_r, valid_q, a.vec);
    if (tid < BM) {
      const bool ok = tid < valid_q;
      lse_s[tid] = ok ? a.lse[bh_row0 + m0 + tid] * kLog2e : 0.0f;
      dsum_s[tid] = ok ? a.dsum[bh_row0 + m0 + tid] : 0.0f;
    }
    __syncthreads();
    gemm_nt<T, BM, BN, D, LDQ, LDQ, LDS>(Qs, Ks, S);
    gemm_nt<T, BM, BN, D, LDQ, LDQ, LDS>(dOs, Vs, dP);
    __syncthreads();
    for (int e = tid; e < BM * BN; e += kThreads) {
      const int r = e / BN, c = e % BN;
      const int qi = m0 + r, n = n0 + c;
      const bool ok = (qi < sq) && (n < sk) && (!CAUSAL || n <= qi + offset);
      const float p = ok ? exp2f(S[r * LDS + c] * a.scale_log2 - lse_s[r]) : 0.0f;
      const float ds = p * (dP[r * LDS + c] - dsum_s[r]);
      Ps[r * LDP + c] = from_f<T>(p);
      dSs[r * LDP + c] = from_f<T>(ds);
    }
    __syncthreads();
    acc_dv.update(Ps, dOs);
    acc_dk.update(dSs, Qs);
    gemm_nn_atomic<T, BM, D, BN, LDP, LDQ>(dSs, Ks, scratch, a.dq_accum + (bh_row0 + m0) * D, valid_q,
                                           a.scale);
  }

  acc_dk.store(a.dk + b * a.dk_b + h * a.dk_h + (int64_t)n0 * a.dk_r, a.dk_r, valid_k, a.scale, scratch);
  acc_dv.store(a.dv + b * a.dv_b + h * a.dv_h + (int64_t)n0 * a.dv_r, a.dv_r, valid_k, 1.0f, scratch);
}

}  // namespace fad
