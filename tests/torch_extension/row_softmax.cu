// Softmax over each row, one block per row: max, then sum of exponentials,
// then the scaled values (three passes keep it simple and exact enough).
#include "probe_kernels.h"

namespace {

constexpr int kThreads = 256;

__device__ float block_reduce(float v, bool is_max) {
  __shared__ float scratch[kThreads];
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (int step = blockDim.x / 2; step > 0; step /= 2) {
    if (threadIdx.x < step) {
      const float other = scratch[threadIdx.x + step];
      scratch[threadIdx.x] = is_max ? fmaxf(scratch[threadIdx.x], other) : scratch[threadIdx.x] + other;
    }
    __syncthreads();
  }
  const float result = scratch[0];
  __syncthreads();  // scratch is reused by the next reduction
  return result;
}

__global__ void row_softmax_kernel(const float* in, float* out, int cols) {
  const float* row = in + static_cast<long>(blockIdx.x) * cols;
  float* dst = out + static_cast<long>(blockIdx.x) * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
  m = block_reduce(m, true);
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(row[c] - m);
  s = block_reduce(s, false);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) dst[c] = expf(row[c] - m) / s;
}

}  // namespace

cudaError_t launch_row_softmax(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  row_softmax_kernel<<<rows, kThreads, 0, stream>>>(in, out, cols);
  return cudaGetLastError();
}
