// fwd_kernel.cuh - the forward pass, FlashAttention-2's structure.
//
// A block owns BM query rows of one (batch, head); each warp owns 16 * MA of
// those rows for the whole kernel, so the softmax statistics, the scores S,
// the probabilities P and the fp32 output accumulator O live in that warp's
// registers (mma.sync m16n8k16 fragments) and never touch shared memory. K/V
// tiles of BN keys stream through one K and one V buffer: the cp.async load of
// V_j overlaps S = Q K_j^T and the softmax, the load of K_{j-1} overlaps
// O += P V_j, two barriers per tile. Key tiles run from the last to the first,
// so the tiles that need masking (causal diagonal, ragged tail) come first.
//
// The same template serves the split-KV/paged forward (decoding): SPLIT gives
// each block a slice of the key tiles and writes fp32 partial O and LSE, which
// combine_kernel merges; PAGED reads K/V rows through a block table.
#pragma once

#include "attn_common.cuh"
#include "tile.cuh"

namespace fad {

template <typename T_, int D_, int BM_, int BN_, int WARPS_, int KSTAGES_, int SUB_>
struct FwdTraits {
  using T = T_;
  static constexpr int D = D_, BM = BM_, BN = BN_, kWarps = WARPS_, kThreads = 32 * WARPS_;
  static constexpr int KST = KSTAGES_;  // K buffers: 2 lets K_{j-1} load during all of tile j
  static constexpr int SUB = SUB_;      // keys per softmax step: bounds the S registers
  static constexpr int MA = BM / (16 * kWarps);  // m16 atoms per warp
  static constexpr int NA = SUB / 8, DA = D / 8;  // n8 atoms of S (one step) and of O
  using QL = Tile<BM, D>;
  using KL = Tile<BN, D>;
  static constexpr int kQ = 0, kK = QL::kBytes, kV = kK + KST * KL::kBytes, kSmem = kV + KL::kBytes;
  static_assert(MA >= 1 && BM == 16 * MA * kWarps, "rows must split into whole m16 atoms per warp");
  static_assert(BN % SUB == 0 && SUB % 16 == 0 && D % 16 == 0, "tiles are whole k16 steps");
  static_assert(KST == 2 || SUB == BN, "one K buffer frees K only after the whole tile's S");
};

// Tiles per head dim: 128 query rows; four warps of 32 rows up to head dim 128
// (FlashAttention-2's sm80 arrangement), eight warps of 16 rows above. SUB
// and the key tile width keep the fp32 O and S fragments plus ptxas's
// ldmatrix prefetch under 255 registers with no spill in every switch
// combination (check_sass.py checks it). BIG = false serves devices with 99 KiB
// of shared memory per block (sm_86, sm_89).
template <typename T, int D, bool BIG> struct FwdCfg;
template <typename T, bool B> struct FwdCfg<T, 32, B> { using K = FwdTraits<T, 32, 128, 64, 4, 2, 64>; };
template <typename T, bool B> struct FwdCfg<T, 64, B> { using K = FwdTraits<T, 64, 128, 128, 4, 2, 32>; };
template <typename T, bool B> struct FwdCfg<T, 96, B> { using K = FwdTraits<T, 96, 128, 32, 4, 2, 32>; };
template <typename T, bool B> struct FwdCfg<T, 128, B> { using K = FwdTraits<T, 128, 128, 32, 4, 2, 32>; };
template <typename T> struct FwdCfg<T, 160, true> { using K = FwdTraits<T, 160, 128, 64, 8, 2, 64>; };
template <typename T> struct FwdCfg<T, 160, false> { using K = FwdTraits<T, 160, 128, 64, 8, 1, 64>; };
template <typename T> struct FwdCfg<T, 192, true> { using K = FwdTraits<T, 192, 128, 64, 8, 2, 64>; };
template <typename T> struct FwdCfg<T, 192, false> { using K = FwdTraits<T, 192, 128, 64, 8, 1, 64>; };
template <typename T> struct FwdCfg<T, 256, true> { using K = FwdTraits<T, 256, 128, 64, 8, 2, 32>; };
template <typename T> struct FwdCfg<T, 256, false> { using K = FwdTraits<T, 256, 64, 64, 4, 1, 64>; };

// Split-KV/paged tiles: 64 query rows (decoding has few), one K buffer.
template <typename T, int D>
struct SplitCfg {
  static constexpr int kBN = D <= 128 ? 128 : 64;
  using K = FwdTraits<T, D, 64, kBN, 4, 1, kBN>;
};

// Key rows of a paged KV cache: key n of a sequence lives in page
// table[n / page_size], slot n % page_size.
template <typename T>
struct PagedRows {
  const T* base;
  const int* table;
  int64_t page_stride, head_offset, row_stride;
  int n0, page_size;
  static constexpr bool kLinear = false;
  __device__ __forceinline__ const T* operator()(int r) const {
    const int n = n0 + r;
    return base + (int64_t)ldg(table + n / page_size) * page_stride + head_offset + (int64_t)(n % page_size) * row_stride;
  }
};

template <typename K, bool CAUSAL, bool LOCAL, bool EVEN, bool ALIBI, bool SOFTCAP, bool DROPOUT, bool SPLIT,
          bool PAGED>
__global__ void __launch_bounds__(K::kThreads, 1) fwd_kernel(const Params p) {
#if FAD_DEVICE_CODE
  using T = typename K::T;
  constexpr int D = K::D, BM = K::BM, BN = K::BN, MA = K::MA, NA = K::NA, DA = K::DA;
  using QL = typename K::QL;
  using KL = typename K::KL;
  const uint32_t sQ = smem_base() + K::kQ, sK = smem_base() + K::kK, sV = smem_base() + K::kV;

  const int m_blocks = (p.seqlen_q + BM - 1) / BM;
  const int m_block = SPLIT ? (int)blockIdx.x % m_blocks : (int)blockIdx.x;
  const int split = SPLIT ? (int)blockIdx.x / m_blocks : 0;
  const int h = blockIdx.y, b = blockIdx.z;
  const int hk = h / p.group;
  const SeqInfo s = seq_info(p, b);
  const int m0 = m_block * BM;
  if (m0 >= s.sq) return;

  const int l = lane_id(), g = l >> 2, t = l & 3;
  const int wrow = warp_id() * 16 * MA;  // this warp's first row in the block

  int key_lo, key_hi;
  key_range<CAUSAL, LOCAL>(p, s, m0, BM, &key_lo, &key_hi);
  int nb_lo = key_lo / BN, nb_hi = key_hi > key_lo ? (key_hi + BN - 1) / BN : key_lo / BN;
  if (SPLIT) {
    const int per = (nb_hi - nb_lo + p.num_splits - 1) / p.num_splits;
    const int lo = nb_lo + split * per;
    nb_hi = min(nb_hi, lo + per);
    nb_lo = lo;
  }

  const int valid_q = min(BM, s.sq - m0);
  const T* qg = static_cast<const T*>(p.q) + q_offset(p, b, h, s, p.q_batch, p.q_head, p.q_row) + (int64_t)m0 * p.q_row;
  const T* kg = static_cast<const T*>(p.k) + k_offset(p, b, hk, s, p.k_batch, p.k_head, p.k_row);
  const T* vg = static_cast<const T*>(p.v) + k_offset(p, b, hk, s, p.v_batch, p.v_head, p.v_row);
  // Key rows of the tile starting at key n0, in K or V memory.
  const int* table = PAGED ? p.block_table + b * p.block_table_batch : nullptr;
  auto kv_rows = [&](const T* base, const T* paged_base, int64_t page_stride, int64_t head_stride, int64_t row_stride,
                     int n0) {
    if constexpr (PAGED) {
      (void)base;
      return PagedRows<T>{paged_base, table, page_stride, (int64_t)hk * head_stride, row_stride, n0, p.page_size};
    } else {
      (void)paged_base, (void)page_stride, (void)head_stride;
      return StridedRows<T>{base + (int64_t)n0 * row_stride, row_stride};
    }
  };
  auto k_tile = [&](int n0) { return kv_rows(kg, static_cast<const T*>(p.k), p.k_batch, p.k_head, p.k_row, n0); };
  auto v_tile = [&](int n0) { return kv_rows(vg, static_cast<const T*>(p.v), p.v_batch, p.v_head, p.v_row, n0); };

  float acc_o[MA][DA][4];
  zero(acc_o);
  float row_max[MA][2], row_sum[MA][2];
#pragma unroll
  for (int a = 0; a < MA; ++a) row_max[a][0] = row_max[a][1] = kNegInf, row_sum[a][0] = row_sum[a][1] = 0.0f;

  const Mask<CAUSAL, LOCAL, EVEN> mask(p, s);
  const float alibi = ALIBI ? alibi_raw_slope(p, b, h) : 0.0f;
  const int bh = b * p.heads + h;
  const LdsmSweep<QL, Lanes::kRows16> q_frag(sQ, wrow);
  const LdsmSweep<KL, Lanes::kRows16> v_frag(sV, 0);

  constexpr int kSteps = BN / K::SUB;
  if (nb_hi > nb_lo) {
    load_tile<QL, K::kThreads, EVEN>(sQ, StridedRows<T>{qg, p.q_row}, valid_q, p.vec);
    const int n0 = (nb_hi - 1) * BN;
    load_tile<KL, K::kThreads, EVEN>(sK, k_tile(n0), s.sk - n0, p.vec);
    cp_async_commit();
  }

  int it = 0;
  for (int nb = nb_hi - 1; nb >= nb_lo; --nb, ++it) {
    const int n0 = nb * BN;
    const uint32_t sKj = sK + (K::KST == 2 ? (it & 1) * KL::kBytes : 0);
    cp_async_wait<0>();
    sync_block();  // K_j visible to all warps; every warp is done with V_{j+1} (and the other K buffer)
    load_tile<KL, K::kThreads, EVEN>(sV, v_tile(n0), s.sk - n0, p.vec);
    cp_async_commit();
    if (K::KST == 2) {
      if (nb > nb_lo) {
        const int n1 = n0 - BN;
        load_tile<KL, K::kThreads, EVEN>(sK + ((it + 1) & 1) * KL::kBytes,
                                         k_tile(n1), s.sk - n1, p.vec);
      }
      cp_async_commit();  // possibly empty: wait_group counts groups
    }
    const LdsmSweep<KL, Lanes::kPairs> k_frag(sKj, 0);

#pragma unroll
    for (int step = 0; step < kSteps; ++step) {
      const int c0 = step * K::SUB;  // first key of this softmax step within the tile
      // S = Q K_j^T over SUB keys
      float acc_s[MA][NA][4];
      zero(acc_s);
#pragma unroll
      for (int ks = 0; ks < D / 16; ++ks) {
        uint32_t qa[MA][4];
#pragma unroll
        for (int a = 0; a < MA; ++a) ldsm_x4(qa[a], q_frag(16 * a, 2 * ks));
#pragma unroll
        for (int np = 0; np < NA / 2; ++np) {
          uint32_t kb[4];
          ldsm_x4(kb, k_frag(c0 + 16 * np, 2 * ks));
#pragma unroll
          for (int a = 0; a < MA; ++a) {
            mma_16816<T>(acc_s[a][2 * np], qa[a], kb[0], kb[1]);
            mma_16816<T>(acc_s[a][2 * np + 1], qa[a], kb[2], kb[3]);
          }
        }
      }

      transform_scores<CAUSAL, LOCAL, EVEN, ALIBI, SOFTCAP>(
          acc_s, p, mask, mask.partial(m0 + wrow, 16 * MA, n0 + c0, K::SUB), m0 + wrow, n0 + c0, alibi);
      online_softmax(acc_s, acc_o, row_max, row_sum, p.scale_log2);
      if (DROPOUT) apply_dropout(acc_s, dropout_bits<MA, NA>(p, p.seed, p.offset, bh, m0 + wrow, n0 + c0));

      if (step == 0) {
        if (K::KST == 2) {
          cp_async_wait<1>();  // V_j landed; K_{j-1} may still be in flight
          sync_block();        // V_j visible to all warps
        } else {
          cp_async_wait<0>();
          sync_block();  // V_j visible; every warp is done with K_j
          if (nb > nb_lo) {
            const int n1 = n0 - BN;
            load_tile<KL, K::kThreads, EVEN>(sK, k_tile(n1), s.sk - n1, p.vec);
          }
          cp_async_commit();
        }
      }

      // O += P V_j, P straight from the S registers
#pragma unroll
      for (int kk = 0; kk < K::SUB / 16; ++kk) {
        uint32_t pa[MA][4];
#pragma unroll
        for (int a = 0; a < MA; ++a) probs_to_a<T, NA>(acc_s[a], kk, pa[a]);
#pragma unroll
        for (int dp = 0; dp < D / 16; ++dp) {
          uint32_t vb[4];
          ldsm_x4_t(vb, v_frag(c0 + 16 * kk, 2 * dp));
#pragma unroll
          for (int a = 0; a < MA; ++a) {
            mma_16816<T>(acc_o[a][2 * dp], pa[a], vb[0], vb[1]);
            mma_16816<T>(acc_o[a][2 * dp + 1], pa[a], vb[2], vb[3]);
          }
        }
      }
    }
  }

  // ---- epilogue: normalise, LSE, write O
  float lse[MA][2];
#pragma unroll
  for (int a = 0; a < MA; ++a)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const float sum = quad_sum(row_sum[a][hh]);
      const bool any = sum > 0.0f;
      float inv = any ? 1.0f / sum : 0.0f;
      if (DROPOUT) inv *= p.rp_keep;
      lse[a][hh] = any ? row_max[a][hh] * p.scale + log2_approx(sum) * kLn2 : kNegInf;
#pragma unroll
      for (int d = 0; d < DA; ++d) {
        acc_o[a][d][2 * hh] *= inv;
        acc_o[a][d][2 * hh + 1] *= inv;
      }
    }

  if (SPLIT) {
    const int64_t rows = (int64_t)p.batch * p.heads * p.seqlen_q;
#pragma unroll
    for (int a = 0; a < MA; ++a)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int i = m0 + wrow + 16 * a + g + 8 * hh;
        if (i < s.sq) {
          const int64_t r = split * rows + row_index(p, b, h, s, i);
          float* dst = p.o_accum + r * D + 2 * t;
#pragma unroll
          for (int d = 0; d < DA; ++d) {
            stg(dst + 8 * d, acc_o[a][d][2 * hh]);
            stg(dst + 8 * d + 1, acc_o[a][d][2 * hh + 1]);
          }
          if (t == 0) stg(p.lse_accum + r, lse[a][hh]);
        }
      }
    return;
  }

  // Stage O through this warp's own rows of the Q tile (no other warp reads
  // them), then write whole 16-byte chunks.
  sync_warp();
#pragma unroll
  for (int a = 0; a < MA; ++a)
#pragma unroll
    for (int d = 0; d < DA; ++d) store_frag<T, QL>(sQ, wrow + 16 * a, 8 * d, acc_o[a][d]);
  sync_warp();
  T* og = static_cast<T*>(p.o) + q_offset(p, b, h, s, p.o_batch, p.o_head, p.o_row) + (int64_t)m0 * p.o_row;
  store_rows_warp<QL, 16 * MA>(sQ, wrow, [=](int r) { return og + (int64_t)r * p.o_row; }, valid_q, p.vec);

  if (p.lse != nullptr && t == 0) {
#pragma unroll
    for (int a = 0; a < MA; ++a)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int i = m0 + wrow + 16 * a + g + 8 * hh;
        if (i < s.sq) stg(p.lse + row_index(p, b, h, s, i), lse[a][hh]);
      }
  }
  if (DROPOUT && p.rng_out != nullptr && blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0 &&
      threadIdx.x == 0) {
    stg(p.rng_out, p.seed);
    stg(p.rng_out + 1, p.offset);
  }
#endif
}

// Merges the split-KV partial results: one warp per query row.
template <typename T, int D>
__global__ void __launch_bounds__(128) combine_kernel(const Params p) {
#if FAD_DEVICE_CODE
  const int64_t rows = (int64_t)p.batch * p.heads * p.seqlen_q;
  const int64_t row = (int64_t)blockIdx.x * 4 + warp_id();
  if (row >= rows) return;
  const int l = lane_id();
  const int i = (int)(row % p.seqlen_q);
  const int h = (int)((row / p.seqlen_q) % p.heads);
  const int b = (int)(row / ((int64_t)p.seqlen_q * p.heads));
  float mx = kNegInf;
  for (int sp = 0; sp < p.num_splits; ++sp) mx = fmaxf(mx, ldg(p.lse_accum + sp * rows + row));
  float sum = 0.0f;
  if (mx != kNegInf)
    for (int sp = 0; sp < p.num_splits; ++sp) sum += exp2_approx((ldg(p.lse_accum + sp * rows + row) - mx) * kLog2e);
  const float lse = mx == kNegInf ? kNegInf : mx + log2_approx(sum) * kLn2;
  T* og = static_cast<T*>(p.o) + (int64_t)b * p.o_batch + (int64_t)h * p.o_head + (int64_t)i * p.o_row;
  for (int d = l; d < D; d += 32) {
    float acc = 0.0f;
    if (mx != kNegInf)
      for (int sp = 0; sp < p.num_splits; ++sp) {
        const float w = exp2_approx((ldg(p.lse_accum + sp * rows + row) - lse) * kLog2e);
        acc += w * ldg(p.o_accum + (sp * rows + row) * D + d);
      }
    stg16(og + d, to_bits<T>(acc));
  }
  if (p.lse != nullptr && l == 0) stg(p.lse + row, lse);
#endif
}

}  // namespace fad
