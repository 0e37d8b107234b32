// RMS normalisation of each row times a per-column weight, one warp per row.
#include "probe_kernels.h"

namespace {

__global__ void rms_norm_kernel(const float* in, const float* weight, float* out, int rows, int cols, float eps) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* src = in + static_cast<long>(row) * cols;
  float sq = 0.f;
  for (int c = lane; c < cols; c += 32) sq += src[c] * src[c];
  for (int offset = 16; offset > 0; offset /= 2) sq += __shfl_xor_sync(0xffffffffu, sq, offset);
  const float scale = rsqrtf(sq / cols + eps);
  float* dst = out + static_cast<long>(row) * cols;
  for (int c = lane; c < cols; c += 32) dst[c] = src[c] * scale * weight[c];
}

}  // namespace

cudaError_t launch_rms_norm(const float* in, const float* weight, float* out, int rows, int cols, float eps,
                            cudaStream_t stream) {
  constexpr int kWarps = 4;
  if (rows == 0) return cudaSuccess;
  rms_norm_kernel<<<(rows + kWarps - 1) / kWarps, 32 * kWarps, 0, stream>>>(in, weight, out, rows, cols, eps);
  return cudaGetLastError();
}
