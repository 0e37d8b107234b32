// launch.cuh - host side shared by the launchers: compile-time feature
// switches, the kernel launch (the only `<<< >>>` in the library, so the CPU
// emulation can replace it) and CUDA error mapping.
#pragma once

#include <cuda_runtime.h>

#include <type_traits>

#include "fad_attention.h"
#include "params.h"

namespace fad {

// Calls f(std::true_type) or f(std::false_type): each branch instantiates its
// own kernels, the way FlashAttention's launchers turn runtime flags into
// template parameters.
template <typename F>
inline auto bool_switch(bool cond, F&& f) {
  return cond ? f(std::true_type{}) : f(std::false_type{});
}

inline fad_status map_cuda_error(cudaError_t e) {
  if (e == cudaSuccess) return FAD_OK;
  if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction) return FAD_ERR_UNSUPPORTED_ARCH;
  return FAD_ERR_CUDA;
}

// Per-device facts the launchers decide with.
struct DeviceInfo {
  int sm_count = 0;
  int smem_optin = 0;  // bytes of dynamic shared memory one block may opt into
  int major = 0;
};

// Queries the current device (cheap attribute reads). Returns FAD_ERR_CUDA on
// a runtime failure and FAD_ERR_UNSUPPORTED_ARCH below compute capability 8.0.
inline fad_status device_info(DeviceInfo* info) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&info->major, cudaDevAttrComputeCapabilityMajor, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&info->sm_count, cudaDevAttrMultiProcessorCount, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&info->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return map_cuda_error(e);
  }
  return info->major >= 8 ? FAD_OK : FAD_ERR_UNSUPPORTED_ARCH;
}

// Launches kernel<<<grid, threads, smem, stream>>>(p), opting into more than
// 48 KiB of dynamic shared memory when the kernel needs it.
inline fad_status launch_kernel(void (*kernel)(Params), dim3 grid, int threads, int smem, cudaStream_t stream,
                                const Params& p) {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return FAD_OK;
  if (smem > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return map_cuda_error(e);
    }
  }
#ifdef FAD_EMULATION
  (void)stream;
  emu_launch(kernel, grid, threads, smem, p);
#else
  kernel<<<grid, threads, smem, stream>>>(p);
#endif
  const cudaError_t e = cudaGetLastError();
  return map_cuda_error(e);
}

}  // namespace fad
