// bwd_kernel.cuh - the backward pass, FlashAttention-2's structure.
//
//   bwd_preprocess  Dsum_i = rowsum(dO_i * O_i); zeroes the fp32 dQ accumulator.
//   bwd_kernel      one block per (BN keys, KV head, batch); K and V stay in
//                   shared memory, dK and dV accumulate in registers over every
//                   query tile of every query head of the GQA group. Per query
//                   tile (Q and dO double-buffered with cp.async):
//                     dP = dO V^T, S = Q K^T            (all warps, BM x BN)
//                     P, dS = P * (dP - Dsum) in registers -> shared memory
//                     dV += P^T dO, dK += dS^T Q        (all warps, BN x D)
//                     dQ += dS K                        (all warps, BM x D, fp32 atomics)
//   bwd_dq_kernel   deterministic dQ: one block per (BM queries, head, batch)
//                   recomputes S and dP and keeps dQ in registers; bwd_kernel
//                   then skips its dQ product and no atomics remain.
//   bwd_convert_dq  fp32 accumulator * scale -> dQ.
//
// dS is kept in softmax-logit units times the softcap derivative; the softmax
// scale is applied once to dK (epilogue) and dQ (convert / dq epilogue).
#pragma once

#include "attn_common.cuh"
#include "tile.cuh"

namespace fad {

// Warp tiling of the three product shapes over WARPS warps: WMx warps along
// the rows, WARPS / WMx along the columns.
template <typename T_, int D_, int BM_, int BN_, int WARPS_, int QSTAGES_, int WM1_, int WM2_, int WM3_>
struct BwdTraits {
  using T = T_;
  static constexpr int D = D_, BM = BM_, BN = BN_, kWarps = WARPS_, kThreads = 32 * WARPS_, QST = QSTAGES_;
  // S, dP: BM x BN
  static constexpr int WM1 = WM1_, WN1 = WARPS_ / WM1_, MA1 = BM / (16 * WM1), NA1 = BN / (8 * WN1);
  // dV, dK: BN x D
  static constexpr int WM2 = WM2_, WN2 = WARPS_ / WM2_, MA2 = BN / (16 * WM2), DA2 = D / (8 * WN2);
  // dQ: BM x D, in column chunks of at most 12 atoms to bound registers
  static constexpr int WM3 = WM3_, WN3 = WARPS_ / WM3_, MA3 = BM / (16 * WM3), DA3 = D / (8 * WN3);
  static constexpr int chunk(int da) {
    for (int c = 12; c >= 2; c -= 2)
      if (da % c == 0) return c;
    return da;
  }
  static constexpr int CH3 = chunk(DA3);
  using QL = Tile<BM, D>;
  using KL = Tile<BN, D>;
  using PL = Tile<BM, BN>;
  static constexpr int kK = 0, kV = kK + KL::kBytes, kQ = kV + KL::kBytes, kDO = kQ + QST * QL::kBytes,
                       kP = kDO + QST * QL::kBytes, kDS = kP + PL::kBytes, kSmem = kDS + PL::kBytes;
  static_assert(MA1 >= 1 && BM == 16 * MA1 * WM1 && BN == 8 * NA1 * WN1 && NA1 % 2 == 0, "S/dP tiling");
  static_assert(MA2 >= 1 && BN == 16 * MA2 * WM2 && D == 8 * DA2 * WN2 && DA2 % 2 == 0, "dK/dV tiling");
  static_assert(MA3 >= 1 && BM == 16 * MA3 * WM3 && D == 8 * DA3 * WN3 && DA3 % CH3 == 0 && CH3 % 2 == 0,
                "dQ tiling");
  static_assert(BN % kWarps == 0, "epilogue rows per warp");
};

// Large tiles for devices with >= 163 KiB of shared memory per block (A100,
// H100), and tiles that fit 99 KiB (sm_86, sm_89); the launcher picks by the
// device's opt-in limit. dK and dV take 2 * BN * D / threads fp32 registers
// per thread for the whole kernel: at head dim 128, 128 keys per block would
// leave too few for S, dP and the fragments (ptxas spills), so 64; its warps
// take 32 x 32 blocks of dK, dV and dQ (2 x 4 warps: fewer ldmatrix per mma,
// 7 % faster on an H200; at head dim 64 the same for S and dP was slower).
template <typename T, int D, bool BIG> struct BwdCfg;
template <typename T> struct BwdCfg<T, 32, true> { using K = BwdTraits<T, 32, 128, 128, 8, 2, 8, 4, 8>; };
template <typename T> struct BwdCfg<T, 64, true> { using K = BwdTraits<T, 64, 64, 128, 8, 2, 4, 4, 4>; };
template <typename T> struct BwdCfg<T, 96, true> { using K = BwdTraits<T, 96, 64, 128, 8, 2, 4, 4, 4>; };
template <typename T> struct BwdCfg<T, 128, true> { using K = BwdTraits<T, 128, 64, 64, 8, 2, 4, 2, 2>; };
template <typename T> struct BwdCfg<T, 160, true> { using K = BwdTraits<T, 160, 64, 64, 8, 2, 4, 4, 4>; };
template <typename T> struct BwdCfg<T, 192, true> { using K = BwdTraits<T, 192, 64, 64, 8, 2, 4, 4, 4>; };
template <typename T> struct BwdCfg<T, 256, true> { using K = BwdTraits<T, 256, 64, 64, 8, 1, 4, 4, 4>; };
template <typename T> struct BwdCfg<T, 32, false> { using K = BwdTraits<T, 32, 64, 128, 8, 2, 4, 4, 4>; };
template <typename T> struct BwdCfg<T, 64, false> { using K = typename BwdCfg<T, 64, true>::K; };
template <typename T> struct BwdCfg<T, 96, false> { using K = BwdTraits<T, 96, 64, 64, 8, 2, 4, 4, 4>; };
template <typename T> struct BwdCfg<T, 128, false> { using K = BwdTraits<T, 128, 64, 64, 8, 1, 4, 4, 4>; };
template <typename T> struct BwdCfg<T, 160, false> { using K = BwdTraits<T, 160, 64, 64, 8, 1, 4, 4, 4>; };
template <typename T> struct BwdCfg<T, 192, false> { using K = BwdTraits<T, 192, 64, 32, 8, 1, 4, 2, 4>; };
template <typename T> struct BwdCfg<T, 256, false> { using K = BwdTraits<T, 256, 32, 32, 4, 1, 2, 2, 2>; };

// Deterministic dQ: warps own 16 query rows each, like the forward.
template <typename T_, int D_, int BM_, int BN_, int WARPS_, int KSTAGES_>
struct DqTraits {
  using T = T_;
  static constexpr int D = D_, BM = BM_, BN = BN_, kWarps = WARPS_, kThreads = 32 * WARPS_, KST = KSTAGES_;
  static constexpr int MA = BM / (16 * kWarps), NA = BN / 8, DA = D / 8;
  using QL = Tile<BM, D>;
  using KL = Tile<BN, D>;
  static constexpr int kQ = 0, kDO = QL::kBytes, kV = 2 * QL::kBytes, kK = kV + KL::kBytes,
                       kSmem = kK + KST * KL::kBytes;
  static_assert(MA >= 1 && BM == 16 * MA * kWarps && BN % 16 == 0, "dq tiling");
};
template <typename T, int D>
struct DqCfg {
  using K = DqTraits<T, D, 64, (D <= 128 ? 64 : 32), 4, (D <= 128 ? 2 : 1)>;
};

// Per-row softmax inputs of the backward, as stored: LSE (-inf for rows past
// the sequence or with no visible key) and Dsum.
template <int MA>
__device__ __forceinline__ void load_row_stats(const Params& p, int b, int h, const SeqInfo& s, int row0,
                                               float (&lse)[MA][2], float (&dsum)[MA][2]) {
  const int g = lane_id() >> 2;
#pragma unroll
  for (int a = 0; a < MA; ++a)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int i = row0 + 16 * a + g + 8 * hh;
      // Converted to base 2 only where it is used (scores_to_grads): no
      // instruction here waits for the loads, which overlap the S and dP
      // products (waiting here cost 6-9 % of the backward on an H200).
      float l = kNegInf, ds = 0.0f;
      if (i < s.sq) {
        const int64_t r = row_index(p, b, h, s, i);
        l = ldg(p.lse + r);
        ds = ldg(p.dsum + r);
      }
      lse[a][hh] = l;
      dsum[a][hh] = ds;
    }
}

// From raw scores s and dP (MA x NA atoms at (row0, col0)) to the dropped
// probabilities P (into s, for dV) and dS (into dp, for dK and dQ).
template <bool CAUSAL, bool LOCAL, bool EVEN, bool ALIBI, bool SOFTCAP, bool DROPOUT, int MA, int NA>
__device__ __forceinline__ void scores_to_grads(float (&s)[MA][NA][4], float (&dp)[MA][NA][4], const Params& p,
                                                const Mask<CAUSAL, LOCAL, EVEN>& mask, bool masked, int row0,
                                                int col0, float alibi, const float (&lse_raw)[MA][2],
                                                const float (&dsum)[MA][2], uint64_t seed, uint64_t offset, int bh) {
  const int l = lane_id(), g = l >> 2, t = l & 3;
  float lse2[MA][2];  // base 2; +inf where no key is visible (P = 0)
#pragma unroll
  for (int a = 0; a < MA; ++a)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh)
      lse2[a][hh] = lse_raw[a][hh] == kNegInf ? __builtin_huge_valf() : lse_raw[a][hh] * kLog2e;
  const uint64_t keep = DROPOUT ? dropout_bits<MA, NA>(p, seed, offset, bh, row0, col0) : 0;
#pragma unroll
  for (int a = 0; a < MA; ++a)
#pragma unroll
    for (int n = 0; n < NA; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int hh = e >> 1;
        const int i = row0 + 16 * a + g + 8 * hh, j = col0 + 8 * n + 2 * t + (e & 1);
        float x = s[a][n][e], dcap = 1.0f;
        if (SOFTCAP) {
          const float th = tanh_approx(x * p.softcap_in);
          x = p.softcap_out * th;
          dcap = 1.0f - th * th;
        }
        if (ALIBI) x -= alibi * fabsf((float)(i + mask.off - j));
        float pr = exp2_approx(x * p.scale_log2 - lse2[a][hh]);
        if (masked && mask.hidden(i, j)) pr = 0.0f;
        float z = 1.0f;
        if (DROPOUT) z = (keep >> (4 * (a * NA + n) + e)) & 1 ? p.rp_keep : 0.0f;
        dp[a][n][e] = pr * (dp[a][n][e] * z - dsum[a][hh]) * dcap;
        s[a][n][e] = pr * z;
      }
    }
}

template <typename T, int D>
__global__ void __launch_bounds__(128) bwd_preprocess(const Params p) {
#if FAD_DEVICE_CODE
  const int i = blockIdx.x * 4 + warp_id();
  const int h = blockIdx.y, b = blockIdx.z, l = lane_id();
  const SeqInfo s = seq_info(p, b);
  if (i >= s.sq) return;
  const T* og = static_cast<const T*>(p.o_in) + q_offset(p, b, h, s, p.o_batch, p.o_head, p.o_row) + (int64_t)i * p.o_row;
  const T* dog = static_cast<const T*>(p.dout) + q_offset(p, b, h, s, p.do_batch, p.do_head, p.do_row) +
                 (int64_t)i * p.do_row;
  const int64_t r = row_index(p, b, h, s, i);
  float acc = 0.0f;
  for (int d = l; d < D; d += 32) {
    acc += lo_f32<T>(ldg16(og + d)) * lo_f32<T>(ldg16(dog + d));
    if (!p.deterministic) stg(p.dq_accum + r * D + d, 0.0f);
  }
  acc = quad_sum(acc);
  acc += shfl_xor(acc, 4);
  acc += shfl_xor(acc, 8);
  acc += shfl_xor(acc, 16);
  if (l == 0) stg(p.dsum + r, acc);
#endif
}

template <typename T, int D>
__global__ void __launch_bounds__(128) bwd_convert_dq(const Params p) {
#if FAD_DEVICE_CODE
  const int i = blockIdx.x * 4 + warp_id();
  const int h = blockIdx.y, b = blockIdx.z, l = lane_id();
  const SeqInfo s = seq_info(p, b);
  if (i >= s.sq) return;
  const int64_t r = row_index(p, b, h, s, i);
  T* dqg = static_cast<T*>(p.dq) + q_offset(p, b, h, s, p.dq_batch, p.dq_head, p.dq_row) + (int64_t)i * p.dq_row;
  for (int d = l; d < D; d += 32) stg16(dqg + d, to_bits<T>(ldg(p.dq_accum + r * D + d) * p.scale));
#endif
}

template <typename K, bool CAUSAL, bool LOCAL, bool EVEN, bool ALIBI, bool SOFTCAP, bool DROPOUT>
__global__ void __launch_bounds__(K::kThreads, 1) bwd_kernel(const Params p) {
#if FAD_DEVICE_CODE
  using T = typename K::T;
  constexpr int D = K::D, BM = K::BM, BN = K::BN, QST = K::QST;
  constexpr int MA1 = K::MA1, NA1 = K::NA1, MA2 = K::MA2, DA2 = K::DA2, MA3 = K::MA3, DA3 = K::DA3, CH3 = K::CH3;
  using QL = typename K::QL;
  using KL = typename K::KL;
  using PL = typename K::PL;
  const uint32_t smem = smem_base();
  const uint32_t sK = smem + K::kK, sV = smem + K::kV, sP = smem + K::kP, sdS = smem + K::kDS;

  const int n0 = blockIdx.x * BN, hk = blockIdx.y, b = blockIdx.z;
  const SeqInfo s = seq_info(p, b);
  if (n0 >= s.sk) return;
  const int w = warp_id(), l = lane_id(), g = l >> 2, t = l & 3;
  const int valid_k = min(BN, s.sk - n0);
  const int off = s.sk - s.sq;

  // Queries that see some key of this block.
  int i_lo = 0, i_hi = s.sq;
  if (CAUSAL) i_lo = max(i_lo, n0 - off);
  if (LOCAL && p.window_right >= 0) i_lo = max(i_lo, n0 - off - p.window_right);
  if (LOCAL && p.window_left >= 0) i_hi = min(i_hi, n0 + BN - off + p.window_left);
  const int mb_lo = i_lo / BM, mb_n = i_hi > i_lo ? (i_hi + BM - 1) / BM - mb_lo : 0;
  const int n_it = mb_n * p.group;

  const T* kg = static_cast<const T*>(p.k) + k_offset(p, b, hk, s, p.k_batch, p.k_head, p.k_row) + (int64_t)n0 * p.k_row;
  const T* vg = static_cast<const T*>(p.v) + k_offset(p, b, hk, s, p.v_batch, p.v_head, p.v_row) + (int64_t)n0 * p.v_row;
  load_tile<KL, K::kThreads, EVEN>(sK, StridedRows<T>{kg, p.k_row}, valid_k, p.vec);
  load_tile<KL, K::kThreads, EVEN>(sV, StridedRows<T>{vg, p.v_row}, valid_k, p.vec);

  // Loads the Q and dO tiles of iteration `it` into stage `st`.
  auto load_q = [&](int it, int st) {
    const int h = hk * p.group + it / mb_n;
    const int m0 = (mb_lo + it % mb_n) * BM;
    const T* qg = static_cast<const T*>(p.q) + q_offset(p, b, h, s, p.q_batch, p.q_head, p.q_row) + (int64_t)m0 * p.q_row;
    const T* dog =
        static_cast<const T*>(p.dout) + q_offset(p, b, h, s, p.do_batch, p.do_head, p.do_row) + (int64_t)m0 * p.do_row;
    const int valid = min(BM, s.sq - m0);
    load_tile<QL, K::kThreads, EVEN>(smem + K::kQ + st * QL::kBytes, StridedRows<T>{qg, p.q_row}, valid, p.vec);
    load_tile<QL, K::kThreads, EVEN>(smem + K::kDO + st * QL::kBytes, StridedRows<T>{dog, p.do_row}, valid, p.vec);
  };
  if (n_it > 0) load_q(0, 0);
  cp_async_commit();

  float acc_dv[MA2][DA2][4], acc_dk[MA2][DA2][4];
  zero(acc_dv);
  zero(acc_dk);

  const Mask<CAUSAL, LOCAL, EVEN> mask(p, s);
  const uint64_t seed = DROPOUT ? ldg(p.rng_in) : 0, offset = DROPOUT ? ldg(p.rng_in + 1) : 0;
  // Warp positions in the three products.
  const int r1 = (w / K::WN1) * 16 * MA1, c1 = (w % K::WN1) * 8 * NA1;
  const int r2 = (w / K::WN2) * 16 * MA2, c2 = (w % K::WN2) * 8 * DA2;
  const int r3 = (w / K::WN3) * 16 * MA3, c3 = (w % K::WN3) * 8 * DA3;

  for (int it = 0; it < n_it; ++it) {
    const int st = QST == 2 ? (it & 1) : 0;
    const int h = hk * p.group + it / mb_n;
    const int m0 = (mb_lo + it % mb_n) * BM;
    const uint32_t sQ = smem + K::kQ + st * QL::kBytes;
    const uint32_t sdO = smem + K::kDO + st * QL::kBytes;
    cp_async_wait<0>();
    sync_block();  // this stage landed; every warp is done with the previous iteration
    if (QST == 2 && it + 1 < n_it) load_q(it + 1, st ^ 1);
    cp_async_commit();

    float lse[MA1][2], dsum[MA1][2];
    load_row_stats(p, b, h, s, m0 + r1, lse, dsum);
    const float alibi = ALIBI ? alibi_raw_slope(p, b, h) : 0.0f;

    // dP = dO V^T and S = Q K^T over this warp's BM x BN slice
    float acc_dp[MA1][NA1][4], acc_s[MA1][NA1][4];
    zero(acc_dp);
    zero(acc_s);
    {
      const LdsmSweep<QL, Lanes::kRows16> do_frag(sdO, r1), q_frag(sQ, r1);
      const LdsmSweep<KL, Lanes::kPairs> v_frag(sV, c1), k_frag(sK, c1);
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks) {
      uint32_t da[MA1][4], qa[MA1][4];
#pragma unroll
      for (int a = 0; a < MA1; ++a) {
        ldsm_x4(da[a], do_frag(16 * a, 2 * ks));
        ldsm_x4(qa[a], q_frag(16 * a, 2 * ks));
      }
#pragma unroll
      for (int np = 0; np < NA1 / 2; ++np) {
        uint32_t vb[4], kb[4];
        ldsm_x4(vb, v_frag(16 * np, 2 * ks));
        ldsm_x4(kb, k_frag(16 * np, 2 * ks));
#pragma unroll
        for (int a = 0; a < MA1; ++a) {
          mma_16816<T>(acc_dp[a][2 * np], da[a], vb[0], vb[1]);
          mma_16816<T>(acc_dp[a][2 * np + 1], da[a], vb[2], vb[3]);
          mma_16816<T>(acc_s[a][2 * np], qa[a], kb[0], kb[1]);
          mma_16816<T>(acc_s[a][2 * np + 1], qa[a], kb[2], kb[3]);
        }
      }
    }
    }
    const bool masked = mask.partial(m0 + r1, 16 * MA1, n0 + c1, 8 * NA1);
    scores_to_grads<CAUSAL, LOCAL, EVEN, ALIBI, SOFTCAP, DROPOUT>(acc_s, acc_dp, p, mask, masked, m0 + r1, n0 + c1,
                                                                   alibi, lse, dsum, seed, offset, b * p.heads + h);
#pragma unroll
    for (int a = 0; a < MA1; ++a)
#pragma unroll
      for (int n = 0; n < NA1; ++n) {
        store_frag<T, PL>(sP, r1 + 16 * a, c1 + 8 * n, acc_s[a][n]);
        store_frag<T, PL>(sdS, r1 + 16 * a, c1 + 8 * n, acc_dp[a][n]);
      }
    sync_block();  // P and dS complete

    // dV += P^T dO, dK += dS^T Q (keys are the rows: A = P^T via ldmatrix.trans)
    {
      const LdsmSpan<PL, Lanes::kPairs, MA2> p_frag(sP, 0, r2 >> 3), ds_frag(sdS, 0, r2 >> 3);
      const LdsmSpan<QL, Lanes::kRows16, DA2 / 2> do_frag(sdO, 0, c2 >> 3), q_frag(sQ, 0, c2 >> 3);
#pragma unroll
    for (int kq = 0; kq < BM / 16; ++kq) {
      uint32_t pa[MA2][4], sa[MA2][4];
#pragma unroll
      for (int a = 0; a < MA2; ++a) {
        ldsm_x4_t(pa[a], p_frag(16 * kq, a));
        ldsm_x4_t(sa[a], ds_frag(16 * kq, a));
      }
#pragma unroll
      for (int dp = 0; dp < DA2 / 2; ++dp) {
        uint32_t ob[4], qb[4];
        ldsm_x4_t(ob, do_frag(16 * kq, dp));
        ldsm_x4_t(qb, q_frag(16 * kq, dp));
#pragma unroll
        for (int a = 0; a < MA2; ++a) {
          mma_16816<T>(acc_dv[a][2 * dp], pa[a], ob[0], ob[1]);
          mma_16816<T>(acc_dv[a][2 * dp + 1], pa[a], ob[2], ob[3]);
          mma_16816<T>(acc_dk[a][2 * dp], sa[a], qb[0], qb[1]);
          mma_16816<T>(acc_dk[a][2 * dp + 1], sa[a], qb[2], qb[3]);
        }
      }
    }
    }

    // dQ += dS K, added to the fp32 accumulator
    if (!p.deterministic) {
      const LdsmSweep<PL, Lanes::kRows16> ds_frag(sdS, r3);
      const LdsmSpan<KL, Lanes::kRows16, DA3 / 2> k_frag(sK, 0, c3 >> 3);
#pragma unroll
      for (int cc = 0; cc < DA3; cc += CH3) {
        float acc_q[MA3][CH3][4];
        zero(acc_q);
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk) {
          uint32_t sa[MA3][4];
#pragma unroll
          for (int a = 0; a < MA3; ++a) ldsm_x4(sa[a], ds_frag(16 * a, 2 * kk));
#pragma unroll
          for (int dp = 0; dp < CH3 / 2; ++dp) {
            uint32_t kb[4];
            ldsm_x4_t(kb, k_frag(16 * kk, cc / 2 + dp));
#pragma unroll
            for (int a = 0; a < MA3; ++a) {
              mma_16816<T>(acc_q[a][2 * dp], sa[a], kb[0], kb[1]);
              mma_16816<T>(acc_q[a][2 * dp + 1], sa[a], kb[2], kb[3]);
            }
          }
        }
#pragma unroll
        for (int a = 0; a < MA3; ++a)
#pragma unroll
          for (int hh = 0; hh < 2; ++hh) {
            const int i = m0 + r3 + 16 * a + g + 8 * hh;
            if (i < s.sq) {
              float* dst = p.dq_accum + row_index(p, b, h, s, i) * D + c3 + 8 * cc + 2 * t;
#pragma unroll
              for (int n = 0; n < CH3; ++n) {
                atomic_add_f32x2(dst + 8 * n, acc_q[a][n][2 * hh], acc_q[a][n][2 * hh + 1]);
              }
            }
          }
      }
    }

    if (QST == 1 && it + 1 < n_it) {
      sync_block();  // every warp is done with this stage
      load_q(it + 1, 0);
      cp_async_commit();
    }
  }

  // ---- epilogue: stage dK (scaled) and dV through the K and V tiles
  cp_async_wait<0>();
  sync_block();
#pragma unroll
  for (int a = 0; a < MA2; ++a)
#pragma unroll
    for (int d = 0; d < DA2; ++d) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_dk[a][d][e] *= p.scale;
      store_frag<T, KL>(sK, r2 + 16 * a, c2 + 8 * d, acc_dk[a][d]);
      store_frag<T, KL>(sV, r2 + 16 * a, c2 + 8 * d, acc_dv[a][d]);
    }
  sync_block();
  constexpr int kRowsPerWarp = BN / K::kWarps;
  T* dkg = static_cast<T*>(p.dk) + k_offset(p, b, hk, s, p.dk_batch, p.dk_head, p.dk_row) + (int64_t)n0 * p.dk_row;
  T* dvg = static_cast<T*>(p.dv) + k_offset(p, b, hk, s, p.dv_batch, p.dv_head, p.dv_row) + (int64_t)n0 * p.dv_row;
  store_rows_warp<KL, kRowsPerWarp>(sK, w * kRowsPerWarp, [=](int r) { return dkg + (int64_t)r * p.dk_row; }, valid_k,
                                    p.vec);
  store_rows_warp<KL, kRowsPerWarp>(sV, w * kRowsPerWarp, [=](int r) { return dvg + (int64_t)r * p.dv_row; }, valid_k,
                                    p.vec);
#endif
}

template <typename K, bool CAUSAL, bool LOCAL, bool EVEN, bool ALIBI, bool SOFTCAP, bool DROPOUT>
__global__ void __launch_bounds__(K::kThreads, 1) bwd_dq_kernel(const Params p) {
#if FAD_DEVICE_CODE
  using T = typename K::T;
  constexpr int D = K::D, BM = K::BM, BN = K::BN, MA = K::MA, NA = K::NA, DA = K::DA, KST = K::KST;
  using QL = typename K::QL;
  using KL = typename K::KL;
  const uint32_t smem = smem_base();
  const uint32_t sQ = smem + K::kQ, sdO = smem + K::kDO, sV = smem + K::kV;

  const int m_block = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int hk = h / p.group;
  const SeqInfo s = seq_info(p, b);
  const int m0 = m_block * BM;
  if (m0 >= s.sq) return;
  const int wrow = warp_id() * 16 * MA;

  int key_lo, key_hi;
  key_range<CAUSAL, LOCAL>(p, s, m0, BM, &key_lo, &key_hi);
  const int nb_lo = key_lo / BN, nb_hi = key_hi > key_lo ? (key_hi + BN - 1) / BN : key_lo / BN;
  const int valid_q = min(BM, s.sq - m0);
  const T* qg = static_cast<const T*>(p.q) + q_offset(p, b, h, s, p.q_batch, p.q_head, p.q_row) + (int64_t)m0 * p.q_row;
  const T* dog =
      static_cast<const T*>(p.dout) + q_offset(p, b, h, s, p.do_batch, p.do_head, p.do_row) + (int64_t)m0 * p.do_row;
  const T* kg = static_cast<const T*>(p.k) + k_offset(p, b, hk, s, p.k_batch, p.k_head, p.k_row);
  const T* vg = static_cast<const T*>(p.v) + k_offset(p, b, hk, s, p.v_batch, p.v_head, p.v_row);
  auto load_k = [&](int nb, int st) {
    const int n0 = nb * BN;
    load_tile<KL, K::kThreads, EVEN>(smem + K::kK + st * KL::kBytes, StridedRows<T>{kg + (int64_t)n0 * p.k_row, p.k_row},
                                     s.sk - n0, p.vec);
  };
  auto load_v = [&](int nb) {
    const int n0 = nb * BN;
    load_tile<KL, K::kThreads, EVEN>(sV, StridedRows<T>{vg + (int64_t)n0 * p.v_row, p.v_row}, s.sk - n0, p.vec);
  };

  float acc_q[MA][DA][4];
  zero(acc_q);
  float lse[MA][2], dsum[MA][2];
  load_row_stats(p, b, h, s, m0 + wrow, lse, dsum);
  const Mask<CAUSAL, LOCAL, EVEN> mask(p, s);
  const float alibi = ALIBI ? alibi_raw_slope(p, b, h) : 0.0f;
  const uint64_t seed = DROPOUT ? ldg(p.rng_in) : 0, offset = DROPOUT ? ldg(p.rng_in + 1) : 0;
  const LdsmSweep<QL, Lanes::kRows16> q_frag(sQ, wrow), do_frag(sdO, wrow);
  const LdsmSweep<KL, Lanes::kPairs> v_frag(sV, 0);

  if (nb_hi > nb_lo) {
    load_tile<QL, K::kThreads, EVEN>(sQ, StridedRows<T>{qg, p.q_row}, valid_q, p.vec);
    load_tile<QL, K::kThreads, EVEN>(sdO, StridedRows<T>{dog, p.do_row}, valid_q, p.vec);
    load_k(nb_hi - 1, 0);
    load_v(nb_hi - 1);
    cp_async_commit();
  }
  int it = 0;
  for (int nb = nb_hi - 1; nb >= nb_lo; --nb, ++it) {
    const int n0 = nb * BN;
    const int st = KST == 2 ? (it & 1) : 0;
    const uint32_t sK = smem + K::kK + st * KL::kBytes;
    cp_async_wait<0>();
    sync_block();  // K_j and V_j landed; every warp is done with the previous tile
    if (KST == 2 && nb > nb_lo) load_k(nb - 1, st ^ 1);
    cp_async_commit();

    float acc_dp[MA][NA][4], acc_s[MA][NA][4];
    zero(acc_dp);
    zero(acc_s);
    const LdsmSweep<KL, Lanes::kPairs> k_frag(sK, 0);
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks) {
      uint32_t da[MA][4], qa[MA][4];
#pragma unroll
      for (int a = 0; a < MA; ++a) {
        ldsm_x4(da[a], do_frag(16 * a, 2 * ks));
        ldsm_x4(qa[a], q_frag(16 * a, 2 * ks));
      }
#pragma unroll
      for (int np = 0; np < NA / 2; ++np) {
        uint32_t vb[4], kb[4];
        ldsm_x4(vb, v_frag(16 * np, 2 * ks));
        ldsm_x4(kb, k_frag(16 * np, 2 * ks));
#pragma unroll
        for (int a = 0; a < MA; ++a) {
          mma_16816<T>(acc_dp[a][2 * np], da[a], vb[0], vb[1]);
          mma_16816<T>(acc_dp[a][2 * np + 1], da[a], vb[2], vb[3]);
          mma_16816<T>(acc_s[a][2 * np], qa[a], kb[0], kb[1]);
          mma_16816<T>(acc_s[a][2 * np + 1], qa[a], kb[2], kb[3]);
        }
      }
    }
    const bool masked = mask.partial(m0 + wrow, 16 * MA, n0, BN);
    scores_to_grads<CAUSAL, LOCAL, EVEN, ALIBI, SOFTCAP, DROPOUT>(acc_s, acc_dp, p, mask, masked, m0 + wrow, n0,
                                                                   alibi, lse, dsum, seed, offset, b * p.heads + h);
    sync_block();  // every warp is done with V_j
    if (nb > nb_lo) load_v(nb - 1);  // with one K buffer, K_{j-1} follows the dQ product
    cp_async_commit();

    // dQ += dS K_j, dS straight from registers
    const LdsmSweep<KL, Lanes::kRows16> kt_frag(sK, 0);
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      uint32_t sa[MA][4];
#pragma unroll
      for (int a = 0; a < MA; ++a) probs_to_a<T, NA>(acc_dp[a], kk, sa[a]);
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        uint32_t kb[4];
        ldsm_x4_t(kb, kt_frag(16 * kk, 2 * dp));
#pragma unroll
        for (int a = 0; a < MA; ++a) {
          mma_16816<T>(acc_q[a][2 * dp], sa[a], kb[0], kb[1]);
          mma_16816<T>(acc_q[a][2 * dp + 1], sa[a], kb[2], kb[3]);
        }
      }
    }
    if (KST == 1 && nb > nb_lo) {
      sync_block();  // every warp is done with K_j
      load_k(nb - 1, 0);
      cp_async_commit();
    }
  }

  // ---- epilogue: dQ * scale through this warp's own Q rows
#pragma unroll
  for (int a = 0; a < MA; ++a)
#pragma unroll
    for (int d = 0; d < DA; ++d)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_q[a][d][e] *= p.scale;
  sync_warp();
#pragma unroll
  for (int a = 0; a < MA; ++a)
#pragma unroll
    for (int d = 0; d < DA; ++d) store_frag<T, QL>(sQ, wrow + 16 * a, 8 * d, acc_q[a][d]);
  sync_warp();
  T* dqg = static_cast<T*>(p.dq) + q_offset(p, b, h, s, p.dq_batch, p.dq_head, p.dq_row) + (int64_t)m0 * p.dq_row;
  store_rows_warp<QL, 16 * MA>(sQ, wrow, [=](int r) { return dqg + (int64_t)r * p.dq_row; }, valid_q, p.vec);
#endif
}

}  // namespace fad
