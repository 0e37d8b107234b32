#include <vector>
#include "kernels.h"

// Inclusive scan of one block with Hillis-Steele steps.
__global__ void block_scan(int* data, int n) {
  extern __shared__ int buf[];
  int i = threadIdx.x;
  buf[i] = i < n ? data[i] : 0;
  __syncthreads();
  for (int offset = 1; offset < blockDim.x; offset *= 2) {
    int v = i >= offset ? buf[i - offset] : 0;
    __syncthreads();
    buf[i] += v;
    __syncthreads();
  }
  if (i < n) data[i] = buf[i];
}

int run_scan(int n) {
  std::vector<int> v(n, 1);
  int* d;
  cudaMalloc(&d, n * sizeof(int));
  cudaMemcpy(d, v.data(), n * sizeof(int), cudaMemcpyHostToDevice);
  block_scan<<<1, 1024, 1024 * sizeof(int)>>>(d, n);
  cudaMemcpy(v.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(d);
  for (int i = 0; i < n; ++i)
    if (v[i] != i + 1) return 1;
  return 0;
}
