// CPU emulation shim of the CUDA features used by kernels/src/*_kernel.cuh.
// Only for kernels/emulation/emulate_kernels.cc (host g++ build); never used
// by the real nvcc build. Each emulated thread block runs as 128 std::threads;
// __shared__ becomes static storage (blocks run one at a time), barriers are
// pthread barriers, and WMMA fragments hold the whole 16x16 tile in every lane.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <pthread.h>
#include <algorithm>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

struct dim3 { unsigned x = 1, y = 1, z = 1; dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {} };
struct uint3e { int x, y, z; };
extern thread_local uint3e threadIdx;
extern thread_local uint3e blockIdx;

struct uint4 { unsigned x, y, z, w; };
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return uint4{a, b, c, d}; }
template <typename T> inline T __ldg(const T* p) { return *p; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

// ---- sync primitives
extern pthread_barrier_t g_block_barrier;
extern pthread_barrier_t g_warp_barrier[4];
extern float g_shfl[128];
extern std::mutex g_atomic_mu;
inline void __syncthreads() { pthread_barrier_wait(&g_block_barrier); }
inline void __syncwarp(unsigned = 0xffffffffu) { pthread_barrier_wait(&g_warp_barrier[threadIdx.x / 32]); }
inline float __shfl_xor_sync(unsigned, float v, int lanemask) {
  __syncwarp();
  g_shfl[threadIdx.x] = v;
  __syncwarp();
  float r = g_shfl[(threadIdx.x & ~31) | ((threadIdx.x & 31) ^ lanemask)];
  __syncwarp();
  return r;
}
inline float atomicAdd(float* p, float v) { std::lock_guard<std::mutex> l(g_atomic_mu); float o = *p; *p = o + v; return o; }

// ---- fp16 / bf16
struct __half { uint16_t b; };
struct __nv_bfloat16 { uint16_t b; };
inline float __half2float(__half h) {
  uint32_t s = (h.b >> 15) & 1, e = (h.b >> 10) & 31, m = h.b & 1023;
  float f;
  if (e == 0) f = std::ldexp((float)m, -24);
  else if (e == 31) f = m ? NAN : INFINITY;
  else f = std::ldexp((float)(m | 1024), (int)e - 25);
  return s ? -f : f;
}
inline __half __float2half_rn(float f) {
  // round to nearest even via search over neighbours (slow, exact enough for tests)
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  float a = std::fabs(f);
  if (std::isnan(f)) return __half{0x7e00};
  if (a >= 65520.f) return __half{(uint16_t)(sign | 0x7c00)};
  int e; std::frexp(a, &e);  // a = m * 2^e, m in [0.5,1)
  int q = std::max(e - 11, -24);  // quantum exponent
  float scaled = std::ldexp(a, -q);
  float r = std::nearbyint(scaled);  // default rounding mode: nearest even
  float v = std::ldexp(r, q);
  // encode v
  __half out{0};
  if (v == 0) { out.b = sign; return out; }
  int ee; float mm = std::frexp(v, &ee);  // v = mm*2^ee
  int exp_field = ee - 1 + 15;
  if (exp_field <= 0) { out.b = sign | (uint16_t)std::lround(std::ldexp(v, 24)); return out; }
  uint16_t mant = (uint16_t)std::lround((mm * 2 - 1) * 1024);
  out.b = sign | (uint16_t)(exp_field << 10) | mant;
  return out;
}
inline float __bfloat162float(__nv_bfloat16 h) { uint32_t u = (uint32_t)h.b << 16; float f; std::memcpy(&f, &u, 4); return f; }
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  uint32_t u; std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return __nv_bfloat16{0x7fc0};
  u += 0x7fff + ((u >> 16) & 1);
  return __nv_bfloat16{(uint16_t)(u >> 16)};
}

// ---- runtime bits used by host helpers in common.cuh
typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorInvalidDeviceFunction = 98, cudaErrorNoKernelImageForDevice = 209 };
typedef void* cudaStream_t;
struct cudaFuncAttributes { int dummy; };
template <typename K> inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes*, K) { return cudaSuccess; }
inline cudaError_t cudaGetLastError() { return cudaSuccess; }

// ---- WMMA emulation: every lane holds the whole 16x16 tile.
namespace nvcuda { namespace wmma {
struct matrix_a {}; struct matrix_b {}; struct accumulator {};
struct row_major {}; struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment { float x[16][16]; };
template <typename F> inline void fill_fragment(F& f, float v) { for (auto& r : f.x) for (auto& c : r) c = v; }
inline float ld(const float* p) { return *p; }
inline float ld(const __half* p) { return __half2float(*p); }
inline float ld(const __nv_bfloat16* p) { return __bfloat162float(*p); }
template <typename Use, typename T, typename P>
inline void load_matrix_sync(fragment<Use, 16, 16, 16, T, row_major>& f, const P* p, unsigned ldm) {
  __syncwarp();
  for (int i = 0; i < 16; ++i) for (int j = 0; j < 16; ++j) f.x[i][j] = ld(p + i * ldm + j);
  __syncwarp();
}
template <typename Use, typename T, typename P>
inline void load_matrix_sync(fragment<Use, 16, 16, 16, T, col_major>& f, const P* p, unsigned ldm) {
  __syncwarp();
  for (int i = 0; i < 16; ++i) for (int j = 0; j < 16; ++j) f.x[i][j] = ld(p + j * ldm + i);
  __syncwarp();
}
inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float, void>& f, const float* p, unsigned ldm, layout_t l) {
  __syncwarp();
  for (int i = 0; i < 16; ++i) for (int j = 0; j < 16; ++j) f.x[i][j] = l == mem_row_major ? p[i * ldm + j] : p[j * ldm + i];
  __syncwarp();
}
inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float, void>& f, unsigned ldm, layout_t l) {
  __syncwarp();
  if ((threadIdx.x & 31) == 0)
    for (int i = 0; i < 16; ++i) for (int j = 0; j < 16; ++j) (l == mem_row_major ? p[i * ldm + j] : p[j * ldm + i]) = f.x[i][j];
  __syncwarp();
}
template <typename A, typename B>
inline void mma_sync(fragment<accumulator, 16, 16, 16, float, void>& d, const A& a, const B& b,
                     const fragment<accumulator, 16, 16, 16, float, void>& c) {
  float t[16][16];
  for (int i = 0; i < 16; ++i) for (int j = 0; j < 16; ++j) {
    float s = c.x[i][j];
    for (int k = 0; k < 16; ++k) s += a.x[i][k] * b.x[k][j];
    t[i][j] = s;
  }
  std::memcpy(d.x, t, sizeof t);
}
}}  // namespace nvcuda::wmma
