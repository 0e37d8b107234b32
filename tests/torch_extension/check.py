"""Imports the built probe and, where a GPU is present, checks its kernels
against PyTorch's own operators. Prints SKIP (exit 0) for the GPU part
without a GPU: the import alone proves the extension links against torch."""
import sys

import torch

import fad_torch_probe

if not torch.cuda.is_available():
    print("SKIP: no CUDA device; fad_torch_probe imported, its kernels were not run")
    sys.exit(0)

torch.manual_seed(0)
failures = 0
for rows, cols in ((1, 1), (7, 33), (128, 1000), (3, 4096)):
    x = torch.randn(rows, cols, device="cuda")
    w = torch.randn(cols, device="cuda")
    got = fad_torch_probe.row_softmax(x)
    err = (got - torch.softmax(x, dim=1)).abs().max().item()
    ref = x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + 1e-6) * w
    err2 = (fad_torch_probe.rms_norm(x, w) - ref).abs().max().item()
    ok = err < 1e-5 and err2 < 1e-4
    failures += not ok
    print(f"{rows}x{cols}: softmax max err {err:.2e}, rms_norm max err {err2:.2e} {'ok' if ok else 'FAIL'}")
sys.exit(1 if failures else 0)
