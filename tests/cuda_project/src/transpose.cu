#include <vector>
#include "kernels.h"

constexpr int kTile = 32;

__global__ void transpose(const float* in, float* out, int rows, int cols) {
  __shared__ float tile[kTile][kTile + 1];  // +1 avoids shared-memory bank conflicts
  int x = blockIdx.x * kTile + threadIdx.x, y = blockIdx.y * kTile + threadIdx.y;
  if (x < cols && y < rows) tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
  __syncthreads();
  x = blockIdx.y * kTile + threadIdx.x;
  y = blockIdx.x * kTile + threadIdx.y;
  if (x < rows && y < cols) out[y * rows + x] = tile[threadIdx.x][threadIdx.y];
}

int run_transpose(int rows, int cols) {
  std::vector<float> a(rows * cols), b(rows * cols);
  for (int i = 0; i < rows * cols; ++i) a[i] = static_cast<float>(i);
  float *da, *db;
  cudaMalloc(&da, a.size() * sizeof(float));
  cudaMalloc(&db, b.size() * sizeof(float));
  cudaMemcpy(da, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice);
  dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile), block(kTile, kTile);
  transpose<<<grid, block>>>(da, db, rows, cols);
  cudaMemcpy(b.data(), db, b.size() * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(da);
  cudaFree(db);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      if (b[c * rows + r] != a[r * cols + c]) return 1;
  return 0;
}
