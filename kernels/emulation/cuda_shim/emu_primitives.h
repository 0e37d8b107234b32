// emu_primitives.h - the kernels' primitives (src/primitives.cuh) on the CPU
// emulator: same names and signatures, per-lane semantics in emu_runtime.cc.
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "cuda_runtime.h"

#define FAD_DEVICE_CODE 1

namespace fad {

inline int lane_id() { return threadIdx.x & 31; }
inline int warp_id() { return threadIdx.x >> 5; }
// Shared addresses are byte offsets into the block's arena (base 0).
inline uint32_t smem_base() { return 0; }
inline unsigned char* smem_ptr(uint32_t a) { return fad_emu::dyn_smem() + a; }

inline void sync_block() { fad_emu::syncthreads(); }
inline void sync_warp() { fad_emu::syncwarp(); }
inline float shfl_xor(float v, int mask) { return fad_emu::shfl_xor(v, mask); }

template <typename T>
inline void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  fad_emu::mma_16816(std::is_same<T, __nv_bfloat16>::value, d, a, b0, b1);
}
inline void ldsm_x4(uint32_t (&r)[4], uint32_t row) { fad_emu::ldmatrix_x4(r, smem_ptr(row), false); }
inline void ldsm_x4_t(uint32_t (&r)[4], uint32_t row) { fad_emu::ldmatrix_x4(r, smem_ptr(row), true); }

inline void cp_async16(uint32_t dst, const void* src, bool pred) { fad_emu::cp_async16(smem_ptr(dst), src, pred); }
inline void cp_async_commit() { fad_emu::cp_async_commit(); }
template <int N>
inline void cp_async_wait() {
  fad_emu::cp_async_wait(N);
}

inline void sts32(uint32_t a, uint32_t v) { fad_emu::smem_store(smem_ptr(a), &v, 4); }
inline void sts128(uint32_t a, uint4 v) { fad_emu::smem_store(smem_ptr(a), &v, 16); }
inline uint4 lds128(uint32_t a) {
  uint4 v;
  fad_emu::smem_load(&v, smem_ptr(a), 16);
  return v;
}

template <typename V>
inline V ldg(const V* p) {
  V v;
  fad_emu::gmem_load(&v, p, sizeof(V));
  return v;
}
inline uint4 ldg128(const void* p) {
  uint4 v;
  fad_emu::gmem_load(&v, p, 16);
  return v;
}
inline uint16_t ldg16(const void* p) {
  uint16_t v;
  fad_emu::gmem_load(&v, p, 2);
  return v;
}
template <typename V>
inline void stg(V* p, V v) {
  fad_emu::gmem_store(p, &v, sizeof(V));
}
inline void stg128(void* p, uint4 v) { fad_emu::gmem_store(p, &v, 16); }
inline void stg16(void* p, uint16_t v) { fad_emu::gmem_store(p, &v, 2); }
inline void atomic_add_f32(float* p, float v) { fad_emu::gmem_atomic_add(p, v); }
inline void atomic_add_f32x2(float* p, float v0, float v1) { fad_emu::gmem_atomic_add2(p, v0, v1); }

inline float exp2_approx(float x) { return std::exp2(x); }
inline float log2_approx(float x) { return std::log2(x); }
inline float tanh_approx(float x) { return std::tanh(x); }

template <typename T>
inline uint32_t pack2(float lo, float hi);
template <>
inline uint32_t pack2<__half>(float lo, float hi) {
  return __float2half_rn(lo).b | (uint32_t(__float2half_rn(hi).b) << 16);
}
template <>
inline uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  return __float2bfloat16_rn(lo).b | (uint32_t(__float2bfloat16_rn(hi).b) << 16);
}
template <typename T>
inline float lo_f32(uint32_t v);
template <>
inline float lo_f32<__half>(uint32_t v) {
  return __half2float(__half{(uint16_t)(v & 0xffffu)});
}
template <>
inline float lo_f32<__nv_bfloat16>(uint32_t v) {
  return __bfloat162float(__nv_bfloat16{(uint16_t)(v & 0xffffu)});
}
template <typename T>
inline float hi_f32(uint32_t v) {
  return lo_f32<T>(v >> 16);
}
template <typename T>
inline uint16_t to_bits(float x) {
  return (uint16_t)(pack2<T>(x, 0.0f) & 0xffffu);
}

}  // namespace fad
