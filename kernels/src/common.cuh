// common.cuh - shared device helpers for the fad attention kernels.
// Internal header: not part of the public ABI.
#pragma once

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
#include <stdint.h>
#include <math.h>

#include "fad_attention.h"

// Tensor-core (WMMA) path only on sm_80+ (bf16 WMMA requires sm_80); every
// other device pass (sm_75) and the host pass use the scalar FMA path.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 800)
#define FAD_USE_WMMA 1
#else
#define FAD_USE_WMMA 0
#endif

namespace fad {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// ---------------------------------------------------------------- conversions
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

__device__ __forceinline__ float neg_inf() { return -INFINITY; }

// ------------------------------------------------------------- tile loading
// Copies ROWS x D elements from global (row stride `row_stride` elements, head
// dim contiguous) into shared memory (leading dimension LDS). Rows >= valid are
// zero-filled. `vec` selects 16-byte vector loads (caller guarantees alignment).
template <typename T, int ROWS, int D, int LDS>
__device__ __forceinline__ void load_rows(T* __restrict__ s, const T* __restrict__ g,
                                          int64_t row_stride, int valid, bool vec) {
  constexpr int kChunks = D / 8;  // 8 x 16-bit = 16 bytes
  static_assert(D % 8 == 0, "head dim must be a multiple of 8");
  static_assert((LDS * sizeof(T)) % 16 == 0, "smem rows must be 16-byte aligned");
  for (int i = threadIdx.x; i < ROWS * kChunks; i += kThreads) {
    const int r = i / kChunks;
    const int c = (i % kChunks) * 8;
    T* dst = s + r * LDS + c;
    if (r < valid) {
      const T* src = g + (int64_t)r * row_stride + c;
      if (vec) {
        *reinterpret_cast<uint4*>(dst) = __ldg(reinterpret_cast<const uint4*>(src));
      } else {
#pragma unroll
        for (int j = 0; j < 8; ++j) dst[j] = src[j];
      }
    } else {
      *reinterpret_cast<uint4*>(dst) = make_uint4(0u, 0u, 0u, 0u);
    }
  }
}

// ------------------------------------------------------------------- GEMMs
// All operands live in shared memory. M, N, K are multiples of 16.

// C[M x N] (fp32, ldc) = A[M x K] (row-major, lda) * B[N x K]^T (B row-major, ldb)
template <typename T, int M, int N, int K, int LDA, int LDB, int LDC>
__device__ __forceinline__ void gemm_nt(const T* __restrict__ A, const T* __restrict__ B,
                                        float* __restrict__ C) {
#if FAD_USE_WMMA
  using namespace nvcuda;
  constexpr int TN = N / 16;
  const int warp = threadIdx.x / 32;
  for (int t = warp; t < (M / 16) * TN; t += kWarps) {
    const int tm = t / TN, tn = t % TN;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
#pragma unroll 4
    for (int k = 0; k < K; k += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b;
      wmma::load_matrix_sync(a, A + tm * 16 * LDA + k, LDA);
      wmma::load_matrix_sync(b, B + tn * 16 * LDB + k, LDB);
      wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(C + tm * 16 * LDC + tn * 16, acc, LDC, wmma::mem_row_major);
  }
#else
  for (int e = threadIdx.x; e < M * N; e += kThreads) {
    const int r = e / N, c = e % N;
    const T* a = A + r * LDA;
    const T* b = B + c * LDB;
    float s = 0.0f;
#pragma unroll 8
    for (int k = 0; k < K; ++k) s = fmaf(to_f(a[k]), to_f(b[k]), s);
    C[r * LDC + c] = s;
  }
#endif
}

// C[M x N] (fp32 smem, ldc) += A[M x K] (row-major) * B[K x N] (row-major)
template <typename T, int M, int N, int K, int LDA, int LDB, int LDC>
__device__ __forceinline__ void gemm_nn_acc(const T* __restrict__ A, const T* __restrict__ B,
                                            float* __restrict__ C) {
#if FAD_USE_WMMA
  using namespace nvcuda;
  constexpr int TN = N / 16;
  const int warp = threadIdx.x / 32;
  for (int t = warp; t < (M / 16) * TN; t += kWarps) {
    const int tm = t / TN, tn = t % TN;
    float* c = C + tm * 16 * LDC + tn * 16;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(acc, c, LDC, wmma::mem_row_major);
#pragma unroll
    for (int k = 0; k < K; k += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b;
      wmma::load_matrix_sync(a, A + tm * 16 * LDA + k, LDA);
      wmma::load_matrix_sync(b, B + k * LDB + tn * 16, LDB);
      wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(c, acc, LDC, wmma::mem_row_major);
  }
#else
  for (int e = threadIdx.x; e < M * N; e += kThreads) {
    const int r = e / N, c = e % N;
    const T* a = A + r * LDA;
    float s = 0.0f;
#pragma unroll 8
    for (int k = 0; k < K; ++k) s = fmaf(to_f(a[k]), to_f(B[k * LDB + c]), s);
    C[r * LDC + c] += s;
  }
#endif
}

// gdst[r * N + c] += scale * (A[M x K] * B[K x N])[r][c] for r < valid, using
// fp32 atomics. `scratch` is kWarps * 256 floats of shared memory.
template <typename T, int M, int N, int K, int LDA, int LDB>
__device__ __forceinline__ void gemm_nn_atomic(const T* __restrict__ A, const T* __restrict__ B,
                                               float* __restrict__ scratch,
                                               float* __restrict__ gdst, int valid, float scale) {
#if FAD_USE_WMMA
  using namespace nvcuda;
  constexpr int TN = N / 16;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  float* scr = scratch + warp * 256;
  for (int t = warp; t < (M / 16) * TN; t += kWarps) {
    const int tm = t / TN, tn = t % TN;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
#pragma unroll
    for (int k = 0; k < K; k += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b;
      wmma::load_matrix_sync(a, A + tm * 16 * LDA + k, LDA);
      wmma::load_matrix_sync(b, B + k * LDB + tn * 16, LDB);
      wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(scr, acc, 16, wmma::mem_row_major);
    __syncwarp();
    for (int i = lane; i < 256; i += 32) {
      const int r = tm * 16 + i / 16;
      if (r < valid) atomicAdd(gdst + (int64_t)r * N + tn * 16 + (i % 16), scale * scr[i]);
    }
    __syncwarp();
  }
#else
  (void)scratch;
  for (int e = threadIdx.x; e < M * N; e += kThreads) {
    const int r = e / N, c = e % N;
    if (r >= valid) continue;
    const T* a = A + r * LDA;
    float s = 0.0f;
#pragma unroll 8
    for (int k = 0; k < K; ++k) s = fmaf(to_f(a[k]), to_f(B[k * LDB + c]), s);
    atomicAdd(gdst + (int64_t)r * N + c, scale * s);
  }
#endif
}

// Register accumulator for OUT[M x N] += A^T * B, where A is K x M (row-major,
// lda) and B is K x N (row-major, ldb), both in shared memory. Used for
// dV += P^T dO and dK += dS^T Q in the backward pass.
template <typename T, int M, int N, int K, int LDA, int LDB>
struct AccAtB {
  static constexpr int kTiles = (M / 16) * (N / 16);
#if FAD_USE_WMMA
  static_assert(kTiles % kWarps == 0, "tiles must divide evenly among warps");
  static constexpr int kPer = kTiles / kWarps;
  nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> frag[kPer];

  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int i = 0; i < kPer; ++i) nvcuda::wmma::fill_fragment(frag[i], 0.0f);
  }
  __device__ __forceinline__ void update(const T* __restrict__ A, const T* __restrict__ B) {
    using namespace nvcuda;
    const int warp = threadIdx.x / 32;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int t = warp + i * kWarps;
      const int tm = t / (N / 16), tn = t % (N / 16);
#pragma unroll
      for (int k = 0; k < K; k += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::col_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b;
        wmma::load_matrix_sync(a, A + k * LDA + tm * 16, LDA);
        wmma::load_matrix_sync(b, B + k * LDB + tn * 16, LDB);
        wmma::mma_sync(frag[i], a, b, frag[i]);
      }
    }
  }
  // g[r * row_stride + c] = scale * OUT[r][c] for r < valid.
  __device__ __forceinline__ void store(T* __restrict__ g, int64_t row_stride, int valid, float scale,
                                        float* __restrict__ scratch) {
    using namespace nvcuda;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    float* scr = scratch + warp * 256;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int t = warp + i * kWarps;
      const int tm = t / (N / 16), tn = t % (N / 16);
      wmma::store_matrix_sync(scr, frag[i], 16, wmma::mem_row_major);
      __syncwarp();
      for (int j = lane; j < 256; j += 32) {
        const int r = tm * 16 + j / 16;
        if (r < valid) g[(int64_t)r * row_stride + tn * 16 + (j % 16)] = from_f<T>(scale * scr[j]);
      }
      __syncwarp();
    }
  }
#else
  static_assert((M * N) % kThreads == 0, "elements must divide evenly among threads");
  static constexpr int kPer = (M * N) / kThreads;
  float acc[kPer];

  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int i = 0; i < kPer; ++i) acc[i] = 0.0f;
  }
  __device__ __forceinline__ void update(const T* __restrict__ A, const T* __restrict__ B) {
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int e = threadIdx.x + i * kThreads;
      const int r = e / N, c = e % N;
      float s = 0.0f;
#pragma unroll 4
      for (int k = 0; k < K; ++k) s = fmaf(to_f(A[k * LDA + r]), to_f(B[k * LDB + c]), s);
      acc[i] += s;
    }
  }
  __device__ __forceinline__ void store(T* __restrict__ g, int64_t row_stride, int valid, float scale,
                                        float* __restrict__ scratch) {
    (void)scratch;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int e = threadIdx.x + i * kThreads;
      const int r = e / N, c = e % N;
      if (r < valid) g[(int64_t)r * row_stride + c] = from_f<T>(scale * acc[i]);
    }
  }
#endif
};

// ------------------------------------------------------------- host helpers
inline fad_status map_cuda_error(cudaError_t e) {
  if (e == cudaSuccess) return FAD_OK;
  if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction) {
    return FAD_ERR_UNSUPPORTED_ARCH;
  }
  return FAD_ERR_CUDA;
}

// Checks the kernel has an image for the current device (cudaFuncGetAttributes
// fails with cudaErrorInvalidDeviceFunction / NoKernelImageForDevice otherwise).
template <typename K>
inline fad_status check_kernel_image(K kernel) {
  cudaFuncAttributes attr;
  cudaError_t e = cudaFuncGetAttributes(&attr, kernel);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // clear the non-sticky error
    return map_cuda_error(e);
  }
  return FAD_OK;
}

inline fad_status check_launch() {
  cudaError_t e = cudaGetLastError();
  return map_cuda_error(e);
}

}  // namespace fad
