// primitives.cuh - the hardware operations every kernel is built from.
//
// The kernels reach tensor cores, shared memory, global memory and the warp's
// exchange network only through the small functions below. nvcc compiles the
// inline PTX here (sm_80 and newer). The CPU emulation (kernels/emulation/)
// defines FAD_EMULATION and supplies the same functions with per-lane
// semantics: mma.sync fragment layouts and ldmatrix as the PTX ISA states them,
// cp.async as a copy that lands only at cp.async.wait_group, and race, bounds,
// alignment and bank checks on every shared-memory access. So what the
// emulation tests is the kernels' own layout and synchronisation logic.
#pragma once

#include <stdint.h>

#ifdef FAD_EMULATION
#include "emu_primitives.h"
#else

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

// Device code for sm_80+ only: mma.sync m16n8k16 with bf16 and cp.async start
// there. Other device passes compile empty kernels; the launchers refuse such
// devices with FAD_ERR_UNSUPPORTED_ARCH before launching.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 800)
#define FAD_DEVICE_CODE 1
#else
#define FAD_DEVICE_CODE 0
#endif

namespace fad {

__device__ __forceinline__ int lane_id() { return threadIdx.x & 31; }
__device__ __forceinline__ int warp_id() { return threadIdx.x >> 5; }

// Shared memory is addressed by 32-bit shared-window addresses: the base of
// the block's dynamic shared memory plus byte offsets, so that an address is
// one register plus an immediate.
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ uint32_t smem_base() {
  extern __shared__ __align__(128) unsigned char fad_dynamic_smem[];
  return smem_u32(fad_dynamic_smem);
}

// ------------------------------------------------------------ synchronisation
__device__ __forceinline__ void sync_block() { __syncthreads(); }
__device__ __forceinline__ void sync_warp() { __syncwarp(); }
__device__ __forceinline__ float shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }

// --------------------------------------------------------------- tensor cores
// d += a * b for one m16n8k16 tile; a, b hold 16-bit T pairs in the PTX ISA's
// fragment layout, d is the fp32 accumulator fragment.
template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);

template <>
__device__ __forceinline__ void mma_16816<__half>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if FAD_DEVICE_CODE
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                                         uint32_t b1) {
#if FAD_DEVICE_CODE
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// Four 8x8 16-bit matrices; lane l supplies the row address of matrix l/8, row
// l%8, and receives in r[i] row l/4, columns 2(l%4) and 2(l%4)+1 of matrix i.
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], uint32_t smem_row) {
#if FAD_DEVICE_CODE
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_row));
#endif
}

// As ldsm_x4 with each matrix transposed: r[i] holds rows 2(l%4), 2(l%4)+1 of
// column l/4.
__device__ __forceinline__ void ldsm_x4_t(uint32_t (&r)[4], uint32_t smem_row) {
#if FAD_DEVICE_CODE
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_row));
#endif
}

// ------------------------------------------------------------------ cp.async
// 16 bytes global -> shared without staging in registers; when `pred` is false
// the destination is zero-filled (source size 0) and `src` is not read.
__device__ __forceinline__ void cp_async16(uint32_t smem_dst, const void* gmem_src, bool pred) {
#if FAD_DEVICE_CODE
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_dst), "l"(gmem_src),
               "r"(pred ? 16 : 0));
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if FAD_DEVICE_CODE
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if FAD_DEVICE_CODE
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

// -------------------------------------------------------------- shared memory
__device__ __forceinline__ void sts32(uint32_t a, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a), "r"(v));
}
__device__ __forceinline__ void sts128(uint32_t a, uint4 v) {
  asm volatile("st.shared.v4.b32 [%0], {%1,%2,%3,%4};\n" ::"r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));
}
__device__ __forceinline__ uint4 lds128(uint32_t a) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a));
  return v;
}

// -------------------------------------------------------------- global memory
template <typename V>
__device__ __forceinline__ V ldg(const V* p) {
  return __ldg(p);
}
__device__ __forceinline__ uint4 ldg128(const void* p) { return __ldg(reinterpret_cast<const uint4*>(p)); }
__device__ __forceinline__ uint16_t ldg16(const void* p) { return __ldg(reinterpret_cast<const unsigned short*>(p)); }
template <typename V>
__device__ __forceinline__ void stg(V* p, V v) {
  *p = v;
}
__device__ __forceinline__ void stg128(void* p, uint4 v) { *reinterpret_cast<uint4*>(p) = v; }
__device__ __forceinline__ void stg16(void* p, uint16_t v) { *reinterpret_cast<uint16_t*>(p) = v; }
__device__ __forceinline__ void atomic_add_f32(float* p, float v) { atomicAdd(p, v); }
// p[0] += v0, p[1] += v1 (p 8-byte aligned): one 8-byte vector reduction on
// sm_90 (red.global.add.v2.f32, PTX ISA 8.1), two scalar ones before.
__device__ __forceinline__ void atomic_add_f32x2(float* p, float v0, float v1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(p), "f"(v0), "f"(v1) : "memory");
#else
  atomicAdd(p, v0);
  atomicAdd(p + 1, v1);
#endif
}

// ----------------------------------------------------------------------- math
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float log2_approx(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float tanh_approx(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// ---------------------------------------------------------------- conversion
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}
template <typename T>
__device__ __forceinline__ float lo_f32(uint32_t v);
template <>
__device__ __forceinline__ float lo_f32<__half>(uint32_t v) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(v & 0xffffu)));
}
template <>
__device__ __forceinline__ float lo_f32<__nv_bfloat16>(uint32_t v) {
  return __uint_as_float(v << 16);
}
template <typename T>
__device__ __forceinline__ float hi_f32(uint32_t v) {
  return lo_f32<T>(v >> 16);
}
template <typename T>
__device__ __forceinline__ uint16_t to_bits(float x) {
  return static_cast<uint16_t>(pack2<T>(x, 0.0f) & 0xffffu);
}

}  // namespace fad

#endif  // FAD_EMULATION
