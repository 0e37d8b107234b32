#!/usr/bin/env python3
"""Compare libfad_attention with torch.nn.functional.scaled_dot_product_attention:
correctness of O, dQ, dK, dV and TFLOP/s, forward and backward, of fad, of SDPA's own
choice of kernel and of its FlashAttention-2 backend.

Usage: python3 compare_sdpa.py path/to/libfad_attention.so

Needs torch with CUDA; otherwise prints SKIP and exits 0. Layout [B, H, S, D]
contiguous; causal comparisons use seqlen_q == seqlen_k (SDPA's is_causal is
top-left aligned, fad's bottom-right: identical for equal lengths). Calls go
through ABI 2 (fad_attention_fwd_v2 / fad_attention_bwd_v2). Variants the
library was built without are listed as not built.
"""
import contextlib
import ctypes
import sys

P, I32, I64, U32, U64, F32 = (ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_uint32, ctypes.c_uint64,
                              ctypes.c_float)


def strides(*names):
    return [(f"{n}_{s}_stride", I64) for n in names for s in ("batch", "head", "row")]


class FwdArgs(ctypes.Structure):
    _fields_ = ([("struct_size", U32), ("dtype", I32), ("q", P), ("k", P), ("v", P), ("o", P), ("lse", P)] +
                [(n, I32) for n in ("batch", "heads", "heads_k", "seqlen_q", "seqlen_k", "head_dim")] +
                strides("q", "k", "v", "o") +
                [("softmax_scale", F32), ("causal", I32), ("window_left", I32), ("window_right", I32),
                 ("softcap", F32), ("alibi_slopes", P), ("alibi_batch_stride", I64), ("dropout_p", F32),
                 ("philox_seed", U64), ("philox_offset", U64), ("rng_state", P), ("cu_seqlens_q", P),
                 ("cu_seqlens_k", P), ("total_q", I32), ("seqused_k", P), ("block_table", P),
                 ("block_table_batch_stride", I64), ("page_block_size", I32), ("num_splits", I32),
                 ("workspace", P), ("workspace_bytes", ctypes.c_size_t)])


class BwdArgs(ctypes.Structure):
    _fields_ = ([("struct_size", U32), ("dtype", I32)] +
                [(n, P) for n in ("q", "k", "v", "o", "dout", "lse", "dq", "dk", "dv")] +
                [(n, I32) for n in ("batch", "heads", "heads_k", "seqlen_q", "seqlen_k", "head_dim")] +
                strides("q", "k", "v", "o", "do", "dq", "dk", "dv") +
                [("softmax_scale", F32), ("causal", I32), ("window_left", I32), ("window_right", I32),
                 ("softcap", F32), ("alibi_slopes", P), ("alibi_batch_stride", I64), ("dropout_p", F32),
                 ("rng_state", P), ("cu_seqlens_q", P), ("cu_seqlens_k", P), ("total_q", I32),
                 ("deterministic", I32), ("workspace", P), ("workspace_bytes", ctypes.c_size_t)])


def main():
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001
        print(f"SKIP: torch not importable ({e})")
        return 0
    if not torch.cuda.is_available():
        print("SKIP: torch has no CUDA device")
        return 0
    if len(sys.argv) < 2:
        sys.exit("usage: compare_sdpa.py path/to/libfad_attention.so")
    lib = ctypes.CDLL(sys.argv[1])
    lib.fad_attention_fwd_v2.argtypes = [ctypes.POINTER(FwdArgs), P]
    lib.fad_attention_bwd_v2.argtypes = [ctypes.POINTER(BwdArgs), P]
    lib.fad_status_string.restype = ctypes.c_char_p
    lib.fad_attention_version.restype = ctypes.c_char_p
    lib.fad_attention_has_variant.argtypes = [I32, I32, I32, I32]

    def check(st, what):
        if st != 0:
            raise RuntimeError(f"{what}: {lib.fad_status_string(st).decode()}")

    def set_strides(a, name, t):
        setattr(a, f"{name}_batch_stride", t.stride(0))
        setattr(a, f"{name}_head_stride", t.stride(1))
        setattr(a, f"{name}_row_stride", t.stride(2))

    def fwd(q, k, v, causal):
        o = torch.empty_like(q)
        lse = torch.empty(q.shape[0], q.shape[1], q.shape[2], device=q.device, dtype=torch.float32)
        a = FwdArgs(struct_size=ctypes.sizeof(FwdArgs), dtype=0 if q.dtype == torch.float16 else 1,
                    q=q.data_ptr(), k=k.data_ptr(), v=v.data_ptr(), o=o.data_ptr(), lse=lse.data_ptr(),
                    batch=q.shape[0], heads=q.shape[1], heads_k=k.shape[1], seqlen_q=q.shape[2],
                    seqlen_k=k.shape[2], head_dim=q.shape[3], softmax_scale=q.shape[3] ** -0.5, causal=int(causal),
                    window_left=-1, window_right=-1, num_splits=1)
        for n, t in (("q", q), ("k", k), ("v", v), ("o", o)):
            set_strides(a, n, t)
        check(lib.fad_attention_fwd_v2(ctypes.byref(a), P(torch.cuda.current_stream().cuda_stream)), "forward")
        return o, lse

    def bwd(q, k, v, o, lse, do, causal):
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        a = BwdArgs(struct_size=ctypes.sizeof(BwdArgs), dtype=0 if q.dtype == torch.float16 else 1,
                    q=q.data_ptr(), k=k.data_ptr(), v=v.data_ptr(), o=o.data_ptr(), dout=do.data_ptr(),
                    lse=lse.data_ptr(), dq=dq.data_ptr(), dk=dk.data_ptr(), dv=dv.data_ptr(), batch=q.shape[0],
                    heads=q.shape[1], heads_k=k.shape[1], seqlen_q=q.shape[2], seqlen_k=k.shape[2],
                    head_dim=q.shape[3], softmax_scale=q.shape[3] ** -0.5, causal=int(causal), window_left=-1,
                    window_right=-1)
        for n, t in (("q", q), ("k", k), ("v", v), ("o", o), ("do", do), ("dq", dq), ("dk", dk), ("dv", dv)):
            set_strides(a, n, t)
        check(lib.fad_attention_bwd_v2(ctypes.byref(a), P(torch.cuda.current_stream().cuda_stream)), "backward")
        return dq, dk, dv

    def timeit(fn, reps=10):
        for _ in range(3):
            fn()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        torch.cuda.synchronize()
        return s.elapsed_time(e) / reps

    # "sdpa" is PyTorch's own choice of kernel (on Hopper it may be a
    # wgmma kernel, cuDNN's, beyond what mma.sync reaches); "fa2" pins its
    # FlashAttention-2 backend, the design these kernels follow.
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        flash = SDPBackend.FLASH_ATTENTION
    except ImportError:
        sdpa_kernel, flash = None, None
    print(f"libfad_attention {lib.fad_attention_version().decode()} vs torch {torch.__version__} "
          f"on {torch.cuda.get_device_name()}: TFLOP/s of fad, of SDPA's own choice (sdpa) and of its "
          f"FlashAttention-2 backend (fa2), with fad's speed relative to each")
    torch.manual_seed(0)
    ok = True
    for dtype in (torch.float16, torch.bfloat16):
        tol = 2e-2 if dtype == torch.float16 else 6e-2
        for D in (32, 64, 96, 128, 160, 192, 256):
            for causal in (False, True):
                dt = 0 if dtype == torch.float16 else 1
                if not (lib.fad_attention_has_variant(0, dt, D, int(causal)) and
                        lib.fad_attention_has_variant(2, dt, D, int(causal))):
                    print(f"{str(dtype):15s} d={D:<3d} causal={int(causal)} not built")
                    continue
                B, H, S = 2, 4, 333
                q, k, v, do = (torch.randn(B, H, S, D, device="cuda", dtype=dtype) for _ in range(4))
                o, lse = fwd(q, k, v, causal)
                dq, dk, dv = bwd(q, k, v, o, lse, do, causal)
                qr, kr, vr = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
                ref = F.scaled_dot_product_attention(qr, kr, vr, is_causal=causal)
                ref.backward(do)
                errs = [(a - b).abs().max().item() / max(1.0, b.abs().max().item())
                        for a, b in ((o, ref), (dq, qr.grad), (dk, kr.grad), (dv, vr.grad))]
                good = all(e <= tol for e in errs)
                ok &= good
                Bs, Hs, Ss = 4, 16, 4096
                qs, ks, vs, dos = (torch.randn(Bs, Hs, Ss, D, device="cuda", dtype=dtype) for _ in range(4))
                os_, ls = fwd(qs, ks, vs, causal)
                t_fad_f = timeit(lambda: fwd(qs, ks, vs, causal))
                t_fad_b = timeit(lambda: bwd(qs, ks, vs, os_, ls, dos, causal))
                flops = 4 * Bs * Hs * Ss * Ss * D * (0.5 if causal else 1.0)

                def sdpa_times(backend):
                    # The backward runs the kernel the forward was dispatched to.
                    try:
                        with sdpa_kernel(backend) if backend is not None else contextlib.nullcontext():
                            t_f = timeit(lambda: F.scaled_dot_product_attention(qs, ks, vs, is_causal=causal))
                            qg, kg, vg = (t.detach().clone().requires_grad_(True) for t in (qs, ks, vs))
                            out = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
                        t_b = timeit(lambda: torch.autograd.grad(out, (qg, kg, vg), dos, retain_graph=True))
                        return t_f, t_b
                    except RuntimeError:  # the backend does not take this shape or GPU
                        return None

                def rate(name, t_fad, t_ref, work):
                    if t_ref is None:
                        return f"{name}    n/a        "
                    return f"{name} {work / t_ref / 1e9:6.1f} ({t_ref / t_fad:4.2f}x)"

                default = sdpa_times(None)
                fa2 = sdpa_times(flash) if flash is not None else None
                print(f"{str(dtype):15s} d={D:<3d} causal={int(causal)} rel.err O/dQ/dK/dV="
                      f"{'/'.join(f'{e:.1e}' for e in errs)} {'PASS' if good else 'FAIL'} | TFLOP/s fwd fad "
                      f"{flops / t_fad_f / 1e9:6.1f} {rate('sdpa', t_fad_f, default and default[0], flops)} "
                      f"{rate('fa2', t_fad_f, fa2 and fa2[0], flops)} | bwd fad {2.5 * flops / t_fad_b / 1e9:6.1f} "
                      f"{rate('sdpa', t_fad_b, default and default[1], 2.5 * flops)} "
                      f"{rate('fa2', t_fad_b, fa2 and fa2[1], 2.5 * flops)}")
    print("ALL PASSED" if ok else "FAILURES")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
