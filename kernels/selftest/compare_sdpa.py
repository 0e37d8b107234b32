#!/usr/bin/env python3
"""Compare libfad_attention against torch.nn.functional.scaled_dot_product_attention.

Usage: python3 compare_sdpa.py [path/to/libfad_attention.so]

Needs torch with CUDA; otherwise prints a SKIP message and exits 0.
Layout used here: [B, H, S, D] contiguous. Causal comparisons use
seqlen_q == seqlen_k because SDPA's is_causal is top-left aligned while fad is
bottom-right aligned (identical when the lengths match).
"""
import ctypes
import os
import sys


def skip(msg):
    print(f"SKIP: {msg}")
    sys.exit(0)


try:
    import torch
    import torch.nn.functional as F
except Exception as e:  # noqa: BLE001
    skip(f"torch not importable ({e})")
if not torch.cuda.is_available():
    skip("torch has no CUDA device")

LIB = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.getcwd(), "libfad_attention.so")
lib = ctypes.CDLL(LIB)

FAD_DTYPE_FP16, FAD_DTYPE_BF16 = 0, 1
i64 = ctypes.c_int64


class FwdParams(ctypes.Structure):
    _fields_ = [("q", ctypes.c_void_p), ("k", ctypes.c_void_p), ("v", ctypes.c_void_p),
                ("o", ctypes.c_void_p), ("lse", ctypes.c_void_p), ("dtype", ctypes.c_int),
                ("batch", ctypes.c_int), ("heads", ctypes.c_int), ("seqlen_q", ctypes.c_int),
                ("seqlen_k", ctypes.c_int), ("head_dim", ctypes.c_int)] + \
               [(f"{t}_{s}_stride", i64) for t in ("q", "k", "v", "o") for s in ("batch", "head", "row")] + \
               [("softmax_scale", ctypes.c_float), ("causal", ctypes.c_int)]


class BwdParams(ctypes.Structure):
    _fields_ = [("q", ctypes.c_void_p), ("k", ctypes.c_void_p), ("v", ctypes.c_void_p),
                ("o", ctypes.c_void_p), ("dout", ctypes.c_void_p), ("lse", ctypes.c_void_p),
                ("dq", ctypes.c_void_p), ("dk", ctypes.c_void_p), ("dv", ctypes.c_void_p),
                ("dtype", ctypes.c_int), ("batch", ctypes.c_int), ("heads", ctypes.c_int),
                ("seqlen_q", ctypes.c_int), ("seqlen_k", ctypes.c_int), ("head_dim", ctypes.c_int)] + \
               [(f"{t}_{s}_stride", i64) for t in ("q", "k", "v", "o", "do", "dq", "dk", "dv")
                for s in ("batch", "head", "row")] + \
               [("softmax_scale", ctypes.c_float), ("causal", ctypes.c_int),
                ("workspace", ctypes.c_void_p), ("workspace_bytes", ctypes.c_size_t)]


lib.fad_attention_fwd.argtypes = [ctypes.POINTER(FwdParams), ctypes.c_void_p]
lib.fad_attention_fwd.restype = ctypes.c_int
lib.fad_attention_bwd.argtypes = [ctypes.POINTER(BwdParams), ctypes.c_void_p]
lib.fad_attention_bwd.restype = ctypes.c_int
lib.fad_status_string.argtypes = [ctypes.c_int]
lib.fad_status_string.restype = ctypes.c_char_p
lib.fad_attention_version.restype = ctypes.c_char_p


def set_strides(p, name, t):
    setattr(p, f"{name}_batch_stride", t.stride(0))
    setattr(p, f"{name}_head_stride", t.stride(1))
    setattr(p, f"{name}_row_stride", t.stride(2))


def fad_fwd(q, k, v, causal):
    B, H, Sq, D = q.shape
    o = torch.empty_like(q)
    lse = torch.empty(B, H, Sq, device=q.device, dtype=torch.float32)
    p = FwdParams(q=q.data_ptr(), k=k.data_ptr(), v=v.data_ptr(), o=o.data_ptr(), lse=lse.data_ptr(),
                  dtype=FAD_DTYPE_FP16 if q.dtype == torch.float16 else FAD_DTYPE_BF16,
                  batch=B, heads=H, seqlen_q=Sq, seqlen_k=k.shape[2], head_dim=D,
                  softmax_scale=D ** -0.5, causal=int(causal))
    for n, t in (("q", q), ("k", k), ("v", v), ("o", o)):
        set_strides(p, n, t)
    st = lib.fad_attention_fwd(ctypes.byref(p), ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
    if st != 0:
        raise RuntimeError(lib.fad_status_string(st).decode())
    return o, lse


def fad_bwd(q, k, v, o, lse, do, causal):
    B, H, Sq, D = q.shape
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    p = BwdParams(q=q.data_ptr(), k=k.data_ptr(), v=v.data_ptr(), o=o.data_ptr(), dout=do.data_ptr(),
                  lse=lse.data_ptr(), dq=dq.data_ptr(), dk=dk.data_ptr(), dv=dv.data_ptr(),
                  dtype=FAD_DTYPE_FP16 if q.dtype == torch.float16 else FAD_DTYPE_BF16,
                  batch=B, heads=H, seqlen_q=Sq, seqlen_k=k.shape[2], head_dim=D,
                  softmax_scale=D ** -0.5, causal=int(causal), workspace=None, workspace_bytes=0)
    for n, t in (("q", q), ("k", k), ("v", v), ("o", o), ("do", do), ("dq", dq), ("dk", dk), ("dv", dv)):
        set_strides(p, n, t)
    st = lib.fad_attention_bwd(ctypes.byref(p), ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
    if st != 0:
        raise RuntimeError(lib.fad_status_string(st).decode())
    return dq, dk, dv


def timeit(fn, reps=10):
    for _ in range(2):
        fn()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps):
        fn()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) / reps


def main():
    print(f"libfad_attention {lib.fad_attention_version().decode()} vs torch {torch.__version__} "
          f"on {torch.cuda.get_device_name()}")
    torch.manual_seed(0)
    ok = True
    for dtype in (torch.float16, torch.bfloat16):
        tol = 2e-2 if dtype == torch.float16 else 6e-2
        for D in (32, 64, 96, 128, 192, 256):
            for causal in (False, True):
                B, H, S = 2, 4, 333
                q, k, v, do = (torch.randn(B, H, S, D, device="cuda", dtype=dtype) for _ in range(4))
                o, lse = fad_fwd(q, k, v, causal)
                dq, dk, dv = fad_bwd(q, k, v, o, lse, do, causal)
                qr, kr, vr = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
                ref = F.scaled_dot_product_attention(qr, kr, vr, is_causal=causal)
                ref.backward(do)
                errs = [(a - b).abs().max().item() / max(1.0, b.abs().max().item())
                        for a, b in ((o, ref), (dq, qr.grad), (dk, kr.grad), (dv, vr.grad))]
                good = all(e <= tol for e in errs)
                ok &= good
                # speed at a larger size
                Bs, Hs, Ss = 4, 16, 2048
                qs, ks, vs = (torch.randn(Bs, Hs, Ss, D, device="cuda", dtype=dtype) for _ in range(3))
                t_fad = timeit(lambda: fad_fwd(qs, ks, vs, causal))
                t_ref = timeit(lambda: F.scaled_dot_product_attention(qs, ks, vs, is_causal=causal))
                flops = 4 * Bs * Hs * Ss * Ss * D * (0.5 if causal else 1.0)
                print(f"{str(dtype):15s} d={D:<3d} causal={int(causal)} rel.err O/dQ/dK/dV="
                      f"{'/'.join(f'{e:.1e}' for e in errs)} {'PASS' if good else 'FAIL'} | fwd fad "
                      f"{flops / t_fad / 1e9:6.1f} TFLOP/s, sdpa {flops / t_ref / 1e9:6.1f} TFLOP/s")
    print("ALL PASSED" if ok else "FAILURES")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
