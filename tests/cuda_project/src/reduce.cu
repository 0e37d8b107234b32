#include <vector>
#include "kernels.h"

template <int Block>
__global__ void block_sum(const int* in, int n, int* out) {
  __shared__ int partial[Block];
  int i = blockIdx.x * Block + threadIdx.x;
  partial[threadIdx.x] = i < n ? in[i] : 0;
  __syncthreads();
  for (int s = Block / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, partial[0]);
}

int run_reduce(int n) {
  std::vector<int> v(n, 1);
  int *din, *dout, result = 0;
  cudaMalloc(&din, n * sizeof(int));
  cudaMalloc(&dout, sizeof(int));
  cudaMemcpy(din, v.data(), n * sizeof(int), cudaMemcpyHostToDevice);
  cudaMemset(dout, 0, sizeof(int));
  block_sum<256><<<(n + 255) / 256, 256>>>(din, n, dout);
  cudaMemcpy(&result, dout, sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(din);
  cudaFree(dout);
  return result == n ? 0 : 1;
}
