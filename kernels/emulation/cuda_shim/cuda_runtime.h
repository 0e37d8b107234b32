// CPU emulation shim of the CUDA runtime surface the kernels and their
// launchers use. Only for the emulation build (g++ with -DFAD_EMULATION, see
// kernels/emulation/); the real build never sees this directory. Device
// memory is host memory registered with the emulator, launches run on the
// emulator (emu_runtime.h), errors follow the runtime's sticky-last-error
// model.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cuda_bf16.h"
#include "cuda_fp16.h"
#include "emu_runtime.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct uint3 {
  unsigned x, y, z;
};
extern uint3 threadIdx, blockIdx, blockDim, gridDim;  // set by the emulator before every switch

struct uint4 {
  unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return uint4{a, b, c, d}; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }

typedef enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorNoDevice = 100,
  cudaErrorNoKernelImageForDevice = 209,
} cudaError_t;
typedef struct CUstream_st* cudaStream_t;
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
enum cudaDeviceAttr {
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
};
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3 };

cudaError_t& emu_last_error();
inline cudaError_t emu_fail(cudaError_t e) {
  if (e != cudaSuccess) emu_last_error() = e;
  return e;
}
inline cudaError_t cudaGetLastError() {
  const cudaError_t e = emu_last_error();
  emu_last_error() = cudaSuccess;
  return e;
}
inline cudaError_t cudaGetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int) {
  const fad_emu::Device& d = fad_emu::device();
  switch (a) {
    case cudaDevAttrMultiProcessorCount: *v = d.sm_count; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor: *v = d.major; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor: *v = d.minor; return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = d.smem_optin; return cudaSuccess;
  }
  return emu_fail(cudaErrorInvalidValue);
}
template <typename K>
cudaError_t cudaFuncSetAttribute(K* kernel, cudaFuncAttribute, int bytes) {
  return emu_fail((cudaError_t)fad_emu::set_func_smem(reinterpret_cast<const void*>(kernel), bytes));
}
inline cudaError_t cudaMalloc(void** p, size_t n) {
  *p = fad_emu::dev_alloc(n);
  return *p ? cudaSuccess : emu_fail(cudaErrorMemoryAllocation);
}
inline cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t) { return cudaMalloc(p, n); }
inline cudaError_t cudaFree(void* p) {
  fad_emu::dev_free(p);
  return cudaSuccess;
}
inline cudaError_t cudaFreeAsync(void* p, cudaStream_t) { return cudaFree(p); }
inline cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind) {
  std::memcpy(dst, src, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemset(void* p, int v, size_t n) {
  std::memset(p, v, n);
  return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }

// The emulation's replacement for kernel<<<grid, threads, smem>>>(p).
template <typename P>
void emu_launch(void (*kernel)(P), dim3 grid, int threads, int smem, const P& p) {
  struct Ctx {
    void (*kernel)(P);
    const P* p;
  } ctx{kernel, &p};
  const int e = fad_emu::run_grid(
      reinterpret_cast<const void*>(kernel), grid, threads, smem,
      [](const void* c) {
        const Ctx* x = static_cast<const Ctx*>(c);
        x->kernel(*x->p);
      },
      &ctx);
  emu_fail((cudaError_t)e);
}
