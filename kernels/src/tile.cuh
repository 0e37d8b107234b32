// tile.cuh - swizzled shared-memory tiles and the copies and ldmatrix address
// patterns that feed the tensor cores.
//
// A tile holds ROWS x COLS 16-bit elements, row-major, cut into 16-byte chunks
// (8 elements). Rows are grouped into column blocks of W chunks (W = 8, i.e.
// 128-byte rows, when COLS is a multiple of 64, else W = 4); inside a block the
// chunk index is XOR-ed with a function of the row. ldmatrix reads one chunk
// from each of 8 consecutive rows per 8x8 matrix, and the swizzle sends those
// 8 reads to 8 different 16-byte bank groups, so neither ldmatrix nor the
// cp.async stores that fill the tile conflict. Without it a 256-byte row pitch
// (head dim 128) would put all 8 rows in the same banks: an 8-way conflict.
//
// The swizzle repeats every 8 rows, so moving 8k rows down a column block adds
// a constant. The address generators below keep one register per chunk
// position a warp visits and turn every other step into an immediate offset
// (a kernel's unrolled loops then address shared memory as register + constant
// instead of holding one 64-bit pointer per ldmatrix).
#pragma once

#include "primitives.cuh"

namespace fad {

template <int ROWS, int COLS>
struct Tile {
  static constexpr int kRows = ROWS;
  static constexpr int kCols = COLS;
  static constexpr int kChunks = COLS / 8;
  static constexpr int kW = (kChunks % 8 == 0) ? 8 : 4;
  static constexpr int kBytes = ROWS * COLS * 2;
  static_assert(COLS % 32 == 0, "tile width must be a multiple of 32 elements");
  static_assert(ROWS % 8 == 0, "tile height must be a multiple of the 8-row swizzle period");

  __device__ __forceinline__ static constexpr int swizzle(int r) { return kW == 8 ? (r & 7) : ((r >> 1) & 3); }
  // Byte offset of chunk `c` of row `r`.
  __device__ __forceinline__ static constexpr int offset(int r, int c) {
    return (((c / kW) * ROWS + r) * kW + ((c % kW) ^ swizzle(r))) * 16;
  }
};

// The row and chunk a lane addresses in an x4 ldmatrix, relative to the
// (row0, chunk0) corner of a 16 x 16 block:
//   kRows16: row l & 15, chunk l >> 4. Yields the A fragment (m16 x k16) of a
//            tile stored [m][k], or with .trans the B fragments of two n8
//            atoms (r[0..1]: n0, r[2..3]: n0 + 8) of a tile stored [k][n].
//   kPairs:  row (l >> 4) * 8 + (l & 7), chunk (l >> 3) & 1. Yields the B
//            fragments of two n8 atoms of a tile stored [n][k], or with
//            .trans the A fragment of a tile stored [k][m].
enum class Lanes { kRows16, kPairs };
template <Lanes P>
__device__ __forceinline__ int lane_row(int l) {
  return P == Lanes::kRows16 ? (l & 15) : (((l >> 4) << 3) | (l & 7));
}
template <Lanes P>
__device__ __forceinline__ int lane_chunk(int l) {
  return P == Lanes::kRows16 ? (l >> 4) : ((l >> 3) & 1);
}

// ldmatrix addresses for a warp that sweeps the whole width of a tile from a
// fixed first row (`row_base`, a multiple of 8): kW / 2 registers.
template <typename L, Lanes P>
struct LdsmSweep {
  uint32_t b[L::kW / 2];
  __device__ __forceinline__ LdsmSweep(uint32_t tile, int row_base) {
    const int l = lane_id();
#pragma unroll
    for (int i = 0; i < L::kW / 2; ++i) b[i] = tile + L::offset(row_base + lane_row<P>(l), 2 * i + lane_chunk<P>(l));
  }
  // The 16 x 16 block at (row_base + row0, chunk0); row0 a multiple of 8 and
  // chunk0 even, both known at compile time once the caller's loops unroll.
  __device__ __forceinline__ uint32_t operator()(int row0, int chunk0) const {
    return b[(chunk0 % L::kW) >> 1] + ((chunk0 / L::kW) * L::kRows + row0) * L::kW * 16;
  }
};

// ldmatrix addresses for a warp that visits N chunk pairs starting at a
// runtime chunk (`chunk_base`, even) and moves down the rows: N registers.
template <typename L, Lanes P, int N>
struct LdsmSpan {
  uint32_t b[N];
  __device__ __forceinline__ LdsmSpan(uint32_t tile, int row_base, int chunk_base) {
    const int l = lane_id();
#pragma unroll
    for (int j = 0; j < N; ++j) b[j] = tile + L::offset(row_base + lane_row<P>(l), chunk_base + 2 * j + lane_chunk<P>(l));
  }
  // The 16 x 16 block at (row_base + row0, chunk_base + 2j); row0 a multiple of 8.
  __device__ __forceinline__ uint32_t operator()(int row0, int j) const { return b[j] + row0 * L::kW * 16; }
};

// ------------------------------------------------------- global <-> shared
// Rows of a strided tensor: row r starts at base + r * stride.
template <typename T>
struct StridedRows {
  const T* base;
  int64_t stride;
  static constexpr bool kLinear = true;
  __device__ __forceinline__ const T* operator()(int r) const { return base + (int64_t)r * stride; }
};

// Hides a value's origin from the optimiser, so that multiples of a loop-
// invariant stride are formed where they are used instead of being hoisted
// out of the main loop into registers of their own.
__device__ __forceinline__ void opaque(int64_t& v) {
#ifndef FAD_EMULATION
  asm volatile("" : "+l"(v));
#else
  (void)v;
#endif
}

// Copies a tile from global memory with cp.async. Thread t owns chunk
// (t % W) of each W-chunk column block and rows t / W, t / W + THREADS / W,
// ...: a step that is a multiple of the 8-row swizzle period, so every copy of
// a thread lands at one register plus a constant, and the global side moves by
// whole row steps. `rows(r)` gives the first element of row r (called only for
// r < valid); rows at or past `valid` are zero-filled. `vec` is false when the
// tensor is not 16-byte aligned: then each chunk is read element by element and
// stored synchronously (visible after the caller's next barrier, like the
// async path).
template <typename L, int THREADS, bool EVEN, typename Rows>
__device__ __forceinline__ void load_tile(uint32_t tile, const Rows& rows, int valid, bool vec) {
  constexpr int kW = L::kW, kStep = THREADS / kW, kBlocks = L::kChunks / kW;
  constexpr int kRowIters = (L::kRows + kStep - 1) / kStep;
  static_assert(kStep % 8 == 0, "row step must keep the swizzle phase");
  const int tid = threadIdx.x;
  const int r0 = tid / kW, cw = tid % kW;
  const uint32_t dst0 = tile + L::offset(r0, cw);
  if (vec) {
    if constexpr (Rows::kLinear) {
      int64_t step = kStep * rows.stride;
      opaque(step);
      const auto* src = rows.base + (int64_t)r0 * rows.stride + cw * 8;
#pragma unroll
      for (int j = 0; j < kRowIters; ++j, src += step) {
        const int r = r0 + j * kStep;
        if (L::kRows % kStep == 0 || r < L::kRows) {
          const bool ok = EVEN || r < valid;
#pragma unroll
          for (int blk = 0; blk < kBlocks; ++blk)
            cp_async16(dst0 + (blk * L::kRows + j * kStep) * kW * 16, ok ? src + blk * kW * 8 : nullptr, ok);
        }
      }
    } else {
#pragma unroll
      for (int j = 0; j < kRowIters; ++j) {
        const int r = r0 + j * kStep;
        if (L::kRows % kStep == 0 || r < L::kRows) {
          const bool ok = EVEN || r < valid;
          const auto* src = ok ? rows(r) + cw * 8 : nullptr;
#pragma unroll
          for (int blk = 0; blk < kBlocks; ++blk)
            cp_async16(dst0 + (blk * L::kRows + j * kStep) * kW * 16, ok ? src + blk * kW * 8 : nullptr, ok);
        }
      }
    }
    return;
  }
#pragma unroll 1
  for (int j = 0; j < kRowIters; ++j) {
    const int r = r0 + j * kStep;
    if (r < L::kRows) {
      const bool ok = r < valid;
      const auto* src = ok ? rows(r) + cw * 8 : nullptr;
#pragma unroll 1
      for (int blk = 0; blk < kBlocks; ++blk) {
        uint32_t w[4] = {0, 0, 0, 0};
        if (ok) {
#pragma unroll
          for (int k = 0; k < 4; ++k)
            w[k] = ldg16(src + blk * kW * 8 + 2 * k) | (uint32_t(ldg16(src + blk * kW * 8 + 2 * k + 1)) << 16);
        }
        sts128(dst0 + (blk * L::kRows + j * kStep) * kW * 16, make_uint4(w[0], w[1], w[2], w[3]));
      }
    }
  }
}

// Writes rows [row0, row0 + NROWS) of a tile to global memory, one warp,
// 16-byte stores (element stores when `vec` is false); rows at or past `valid`
// are skipped.
template <typename L, int NROWS, typename RowPtr>
__device__ __forceinline__ void store_rows_warp(uint32_t tile, int row0, const RowPtr& row_ptr, int valid, bool vec) {
  constexpr int kTotal = NROWS * L::kChunks;
  const int l = lane_id();
#pragma unroll
  for (int i = 0; i < (kTotal + 31) / 32; ++i) {
    const int e = i * 32 + l;
    if (kTotal % 32 == 0 || e < kTotal) {
      const int r = row0 + e / L::kChunks, c = e % L::kChunks;
      if (r < valid) {
        const uint4 v = lds128(tile + L::offset(r, c));
        auto* dst = row_ptr(r) + c * 8;
        if (vec) {
          stg128(dst, v);
        } else {
          const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            stg16(dst + 2 * j, static_cast<uint16_t>(w[j] & 0xffffu));
            stg16(dst + 2 * j + 1, static_cast<uint16_t>(w[j] >> 16));
          }
        }
      }
    }
  }
}

// Stores an m16n8 fp32 accumulator fragment, converted to T, into a tile
// stored [m][n] at rows m0.., columns n0..n0+7 (m0 a multiple of 8, n0 of 8).
template <typename T, typename L>
__device__ __forceinline__ void store_frag(uint32_t tile, int m0, int n0, const float (&c)[4]) {
  const int l = lane_id();
  const int g = l >> 2, t = l & 3;
  sts32(tile + L::offset(m0 + g, n0 >> 3) + 4 * t, pack2<T>(c[0], c[1]));
  sts32(tile + L::offset(m0 + g + 8, n0 >> 3) + 4 * t, pack2<T>(c[2], c[3]));
}

}  // namespace fad
