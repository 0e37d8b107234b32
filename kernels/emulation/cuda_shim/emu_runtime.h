// emu_runtime.h - the CPU machine the kernels run on in the emulation.
//
// A thread block is a set of fibers (one per CUDA thread) on one OS thread,
// switched round-robin at every synchronisation point: a warp collective
// (mma.sync, ldmatrix, shfl, __syncwarp) completes when all 32 lanes reached
// it, __syncthreads when the whole block did. Blocks of a grid run one after
// the other, so a run is deterministic.
//
// What it checks, per access:
//   shared memory: bounds and alignment; a read of bytes never written (the
//     arena is poisoned with 0xff, which reads as NaN); a read of bytes whose
//     cp.async has not completed (cp.async lands only at cp.async.wait_group);
//     read-after-write, write-after-read and write-after-write between lanes
//     of one warp with no __syncwarp (or __syncthreads) between them, and
//     between warps with no __syncthreads; bank conflicts of every ldmatrix;
//   global memory: every access inside a live cudaMalloc allocation;
//   launches: block size, grid limits, dynamic shared memory within the
//     48 KiB default or the kernel's opt-in attribute and the device limit;
//   warps: every lane reaches the same collective, none has exited.
// Violations are counted and the first few printed; a deadlock or a
// divergent collective ends the process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

struct dim3;

namespace fad_emu {

// The emulated device.
struct Device {
  int sm_count = 108;
  int smem_optin = 166912;  // A100: 163 KiB per block
  int major = 8, minor = 0;
};
Device& device();

struct Stats {
  std::uint64_t violations = 0;   // every check that failed
  std::uint64_t launches = 0, blocks = 0;
  std::uint64_t mma = 0, ldsm = 0, cp_async = 0, atomics = 0;
  std::uint64_t ldsm_wavefronts = 0;  // shared-memory wavefronts the ldmatrix phases needed
  std::uint64_t ldsm_phases = 0;      // ... and the ideal (one per 8x8 matrix)
};
Stats& stats();
void reset_stats();
// Prints at most `n` more violation messages (default 8 per process).
void set_report_limit(int n);
void violation(const std::string& what);
[[noreturn]] void fatal(const std::string& what);

// ---- global memory
void* dev_alloc(std::size_t bytes);
void dev_free(void* p);
// False (and a violation) unless [p, p + n) lies in one live allocation.
bool gmem_ok(const void* p, std::size_t n, const char* what);

// ---- kernel execution
int set_func_smem(const void* kernel, int bytes);  // cudaFuncSetAttribute(MaxDynamicSharedMemorySize)
// Runs body(ctx) for every thread of every block; returns a cudaError_t value.
int run_grid(const void* kernel, const dim3& grid, int threads, int smem_bytes, void (*body)(const void*),
             const void* ctx);

unsigned char* dyn_smem();
int tid();

// ---- synchronisation and warp collectives (per-lane semantics)
void syncthreads();
void syncwarp();
float shfl_xor(float v, int lane_mask);
void mma_16816(bool bf16, float d[4], const std::uint32_t a[4], std::uint32_t b0, std::uint32_t b1);
void ldmatrix_x4(std::uint32_t r[4], const void* smem_row, bool trans);

// ---- shared memory
void cp_async16(void* smem_dst, const void* gmem_src, bool pred);
void cp_async_commit();
void cp_async_wait(int pending);
void smem_store(void* p, const void* v, std::size_t n);
void smem_load(void* out, const void* p, std::size_t n);

// ---- global memory from kernels
void gmem_load(void* out, const void* p, std::size_t n);
void gmem_store(void* p, const void* v, std::size_t n);
void gmem_atomic_add(float* p, float v);
void gmem_atomic_add2(float* p, float v0, float v1);  // one 8-byte vector reduction

}  // namespace fad_emu
