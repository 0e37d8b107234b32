#include <vector>
#include "kernels.h"

__global__ void histogram(const unsigned char* in, int n, unsigned* bins) {
  __shared__ unsigned local[256];
  local[threadIdx.x] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[in[i]], 1u);
  __syncthreads();
  atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

int run_histogram(int n) {
  std::vector<unsigned char> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<unsigned char>(i % 256);
  unsigned char* din;
  unsigned* dbins;
  std::vector<unsigned> bins(256);
  cudaMalloc(&din, n);
  cudaMalloc(&dbins, 256 * sizeof(unsigned));
  cudaMemcpy(din, v.data(), n, cudaMemcpyHostToDevice);
  cudaMemset(dbins, 0, 256 * sizeof(unsigned));
  histogram<<<32, 256>>>(din, n, dbins);
  cudaMemcpy(bins.data(), dbins, 256 * sizeof(unsigned), cudaMemcpyDeviceToHost);
  cudaFree(din);
  cudaFree(dbins);
  for (int b = 0; b < 256; ++b)
    if (bins[b] != static_cast<unsigned>(n / 256 + (b < n % 256 ? 1 : 0))) return 1;
  return 0;
}
