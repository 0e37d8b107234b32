// Host entry points of the test project's kernels. Each returns 0 on success.
#pragma once
int run_saxpy(int n);
int run_reduce(int n);
int run_transpose(int rows, int cols);
int run_scan(int n);
int run_histogram(int n);
