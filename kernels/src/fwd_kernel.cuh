// fwd_kernel.cuh - FlashAttention-2 style forward kernel template.
//
// One thread block (128 threads) owns BM query rows of one (batch, head). It
// streams K/V tiles of BN rows through shared memory, computes S = Q K^T and
// O += P V (WMMA on sm_80+, scalar FMA otherwise) and keeps the running row
// max / row sum of the online softmax in shared memory. O is accumulated in
// fp32 shared memory and normalised at the end; LSE is written in fp32.
#pragma once

#include "common.cuh"

namespace fad {

// Tile configuration per head dim; all configurations use < 48 KiB of static
// shared memory so no opt-in is needed on any architecture.
template <int D> struct FwdCfg;
template <> struct FwdCfg<32>  { static constexpr int BM = 64, BN = 64; };
template <> struct FwdCfg<64>  { static constexpr int BM = 64, BN = 32; };
template <> struct FwdCfg<96>  { static constexpr int BM = 32, BN = 64; };
template <> struct FwdCfg<128> { static constexpr int BM = 32, BN = 32; };
template <> struct FwdCfg<192> { static constexpr int BM = 16, BN = 32; };
template <> struct FwdCfg<256> { static constexpr int BM = 16, BN = 32; };

template <typename T>
struct FwdArgs {
  const T* q;
  const T* k;
  const T* v;
  T* o;
  float* lse;
  int seqlen_q, seqlen_k;
  int64_t q_b, q_h, q_r, k_b, k_h, k_r, v_b, v_h, v_r, o_b, o_h, o_r;
  float scale_log2;  // softmax_scale * log2(e)
  int heads;
  bool vec;
};

template <typename T, int D>
struct FwdSmem {
  static constexpr int BM = FwdCfg<D>::BM, BN = FwdCfg<D>::BN;
  static constexpr int LDQ = D + 8;   // T elements
  static constexpr int LDS = BN + 4;  // float
  static constexpr int LDP = BN + 8;  // T
  static constexpr int LDO = D + 4;   // float
  static constexpr int kQ = 0;
  static constexpr int kKV = kQ + BM * LDQ * (int)sizeof(T);
  static constexpr int kS = kKV + BN * LDQ * (int)sizeof(T);
  static constexpr int kP = kS + BM * LDS * (int)sizeof(float);
  static constexpr int kO = kP + BM * LDP * (int)sizeof(T);
  static constexpr int kRow = kO + BM * LDO * (int)sizeof(float);
  static constexpr int kBytes = kRow + 3 * BM * (int)sizeof(float);
  static_assert(kKV % 32 == 0 && kS % 32 == 0 && kP % 32 == 0 && kO % 32 == 0, "alignment");
  static_assert(kBytes <= 48 * 1024, "forward tile exceeds 48 KiB static shared memory");
  static_assert(kThreads % BM == 0 && (kThreads / BM) <= 32, "row groups must fit in a warp");
};

template <typename T, int D, bool CAUSAL>
__global__ void __launch_bounds__(kThreads) fwd_kernel(const FwdArgs<T> a) {
  using L = FwdSmem<T, D>;
  constexpr int BM = L::BM, BN = L::BN, LDQ = L::LDQ, LDS = L::LDS, LDP = L::LDP, LDO = L::LDO;
  constexpr int GROUP = kThreads / BM;  // threads cooperating on one softmax row

  __shared__ __align__(128) unsigned char smem[L::kBytes];
  T* Qs = reinterpret_cast<T*>(smem + L::kQ);
  T* KVs = reinterpret_cast<T*>(smem + L::kKV);
  float* S = reinterpret_cast<float*>(smem + L::kS);
  T* P = reinterpret_cast<T*>(smem + L::kP);
  float* O = reinterpret_cast<float*>(smem + L::kO);
  float* row_m = reinterpret_cast<float*>(smem + L::kRow);
  float* row_l = row_m + BM;
  float* row_alpha = row_l + BM;

  const int tid = threadIdx.x;
  const int m0 = blockIdx.x * BM;
  const int h = blockIdx.y;
  const int b = blockIdx.z;
  const int sq = a.seqlen_q, sk = a.seqlen_k;
  const int offset = sk - sq;  // bottom-right causal alignment
  const int valid_q = min(BM, sq - m0);

  const T* qg = a.q + b * a.q_b + h * a.q_h + (int64_t)m0 * a.q_r;
  const T* kg = a.k + b * a.k_b + h * a.k_h;
  const T* vg = a.v + b * a.v_b + h * a.v_h;

  load_rows<T, BM, D, LDQ>(Qs, qg, a.q_r, valid_q, a.vec);
  for (int e = tid; e < BM * D; e += kThreads) O[(e / D) * LDO + (e % D)] = 0.0f;
  if (tid < BM) {
    row_m[tid] = neg_inf();
    row_l[tid] = 0.0f;
  }

  int n_end = sk;
  if (CAUSAL) n_end = max(0, min(sk, m0 + BM + offset));

  const int r = tid / GROUP;  // softmax row of this thread
  const int g = tid % GROUP;
  const int qi = m0 + r;

  for (int n0 = 0; n0 < n_end; n0 += BN) {
    const int valid_k = min(BN, sk - n0);
    __syncthreads();  // previous P V product done with KVs / P
    load_rows<T, BN, D, LDQ>(KVs, kg + (int64_t)n0 * a.k_r, a.k_r, valid_k, a.vec);
    __syncthreads();
    gemm_nt<T, BM, BN, D, LDQ, LDQ, LDS>(Qs, KVs, S);
    __syncthreads();

    // ---- online softmax on row r (GROUP threads per row)
    {
      float* srow = S + r * LDS;
      float mx = neg_inf();
      for (int c = g; c < BN; c += GROUP) {
        const int n = n0 + c;
        const bool ok = (n < sk) && (!CAUSAL || n <= qi + offset);
        const float s = ok ? srow[c] * a.scale_log2 : neg_inf();
        srow[c] = s;
        mx = fmaxf(mx, s);
      }
#pragma unroll
      for (int w = GROUP / 2; w > 0; w >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, w));
      const float m_old = row_m[r];
      const float m_new = fmaxf(m_old, mx);
      const bool empty = (m_new == neg_inf());
      const float alpha = empty ? 1.0f : exp2f(m_old - m_new);
      float sum = 0.0f;
      T* prow = P + r * LDP;
      for (int c = g; c < BN; c += GROUP) {
        const float p = empty ? 0.0f : exp2f(srow[c] - m_new);
        prow[c] = from_f<T>(p);
        sum += p;
      }
#pragma unroll
      for (int w = GROUP / 2; w > 0; w >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, w);
      if (g == 0) {
        row_m[r] = m_new;
        row_l[r] = row_l[r] * alpha + sum;
        row_alpha[r] = alpha;
      }
    }
    __syncthreads();

    for (int e = tid; e < BM * D; e += kThreads) O[(e / D) * LDO + (e % D)] *= row_alpha[e / D];
    load_rows<T, BN, D, LDQ>(KVs, vg + (int64_t)n0 * a.v_r, a.v_r, valid_k, a.vec);
    __syncthreads();
    gemm_nn_acc<T, BM, D, BN, LDP, LDQ, LDO>(P, KVs, O);
  }
  __syncthreads();

  // ---- epilogue: normalise and write O, LSE
  T* og = a.o + b * a.o_b + h * a.o_h + (int64_t)m0 * a.o_r;
  for (int e = tid; e < BM * D; e += kThreads) {
    const int rr = e / D, c = e % D;
    if (rr < valid_q) {
      const float l = row_l[rr];
      const float val = l > 0.0f ? O[rr * LDO + c] / l : 0.0f;
      og[(int64_t)rr * a.o_r + c] = from_f<T>(val);
    }
  }
  if (a.lse != nullptr && tid < valid_q) {
    const float l = row_l[tid];
    const float lse = l > 0.0f ? (row_m[tid] + log2f(l)) * kLn2 : neg_inf();
    a.lse[((int64_t)b * a.heads + h) * sq + m0 + tid] = lse;
  }
}

}  // namespace fad
