#!/usr/bin/env python3
"""The proxies a GPU engineer reads without a GPU, per kernel: ptxas registers,
spills, shared memory and occupancy, and the SASS instruction mix (HMMA, LDSM,
LDGSTS per tile), checked against what the kernel's tiles imply.

Usage:
  check_sass.py [--arch 80] [--arch 90] [--json OUT]            # the probe: CI's check
  check_sass.py --unit fwd_hdim128_fp16_causal [--unit ...]     # whole compile units

The probe (kernels/sass/probe.cu) instantiates, per direction and tile
configuration, the plainest and the busiest switch combination. Units are
the real compile units of the library (minutes each on sm_90).

Checks (exit 1 if any fails):
  - no spill and no local-memory instruction (LDL/STL) in any kernel;
  - main loops: the HMMA and LDSM counts are whole multiples of one tile's
    worth (the loop body is there, and nothing fell back to another path),
    and cp.async (LDGSTS) is used;
  - the dynamic shared memory a kernel needs fits an sm_80 block (163 KiB).
Needs nvcc and cuobjdump with nvdisasm (scripts/setup.sh installs the last two
into .tools/ when the toolkit lacks them). Without nvcc it prints SKIP and
exits 0.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.dirname(HERE)
ROOT = os.path.dirname(KERNELS)
FLAGS = ["-O3", "-std=c++17", "--expt-relaxed-constexpr", "-lineinfo", "--resource-usage"]
SMEM_SM = {80: 167936, 86: 102400, 89: 102400, 90: 233472}  # shared memory per SM
SMEM_BLOCK = {80: 166912, 86: 101376, 89: 101376, 90: 232448}  # per block, opt-in
REGS_SM = 65536


def tool(name):
    for d in [os.path.join(ROOT, ".tools", "bin"), "/usr/local/cuda/bin"] + os.environ.get("PATH", "").split(":"):
        p = os.path.join(d, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


# ------------------------------------------------------------ tile geometry
def parse_kernel(mangled):
    """Kind and template numbers of one of the library's kernels, from its
    mangled name, e.g. fad::fwd_kernel<FwdTraits<__half, 128, 128, 32, 4, 2, 32>, ...>."""
    m = re.search(r"fad(\d+)(\w+?)I.*?(Fwd|Bwd|Dq)TraitsI(6__half|13__nv_bfloat16)((?:Li\d+E)+)E((?:Lb[01]E)*)",
                  mangled)
    if not m:
        return None
    kind = {"Fwd": "fwd", "Bwd": "bwd", "Dq": "dq"}[m.group(3)]
    nums = [int(x) for x in re.findall(r"Li(\d+)E", m.group(5))]
    flags = [int(x) for x in re.findall(r"Lb([01])E", m.group(6))]
    return {"kind": kind, "dtype": "bf16" if "bfloat" in m.group(4) else "fp16", "nums": nums, "flags": flags}


def tile_expectations(k):
    """Per-tile, per-warp HMMA and LDSM counts, per-thread LDGSTS per tile,
    threads and dynamic shared memory implied by the kernel's traits (the same
    arithmetic as FwdTraits / BwdTraits / DqTraits)."""
    n = k["nums"]

    def tile(rows, cols):
        return rows * cols * 2

    if k["kind"] == "fwd":
        d, bm, bn, warps, kst, sub = n
        ma = bm // (16 * warps)
        steps = bn // sub
        hmma = 2 * ma * bn * d // 128
        ldsm = steps * ma * d // 16 + 2 * (bn // 16) * (d // 16)
        threads = 32 * warps
        ldgsts = 2 * bn * d // 8 // threads
        smem = tile(bm, d) + (kst + 1) * tile(bn, d)
        tile_name = f"{bm}x{bn}"
        per = "key tile"
    elif k["kind"] == "bwd":
        d, bm, bn, warps, qst, wm1, wm2, wm3 = n
        wn1, wn2, wn3 = warps // wm1, warps // wm2, warps // wm3
        ma1, na1 = bm // (16 * wm1), bn // (8 * wn1)
        ma2, da2 = bn // (16 * wm2), d // (8 * wn2)
        ma3, da3 = bm // (16 * wm3), d // (8 * wn3)
        ch3 = next((c for c in range(12, 1, -2) if da3 % c == 0), da3)
        hmma = 2 * ma1 * na1 * d // 16 + 2 * ma2 * da2 * bm // 16 + ma3 * da3 * bn // 16
        ldsm = (d // 16) * (2 * ma1 + na1) + (bm // 16) * (2 * ma2 + da2) + (da3 // ch3) * (bn // 16) * (ma3 + ch3 // 2)
        threads = 32 * warps
        ldgsts = 2 * bm * d // 8 // threads
        smem = 2 * tile(bn, d) + 2 * qst * tile(bm, d) + 2 * tile(bm, bn)
        tile_name = f"{bm}x{bn}"
        per = "query tile"
    else:
        d, bm, bn, warps, kst = n
        ma, na, da = bm // (16 * warps), bn // 8, d // 8
        hmma = 2 * ma * na * d // 16 + ma * da * bn // 16
        ldsm = (d // 16) * (2 * ma + na) + (bn // 16) * (d // 16)
        threads = 32 * warps
        ldgsts = 2 * bn * d // 8 // threads
        smem = 2 * tile(bm, d) + (kst + 1) * tile(bn, d)
        tile_name = f"{bm}x{bn}"
        per = "key tile"
    return {"kind": k["kind"], "hmma_per_tile": hmma, "ldsm_per_tile": ldsm, "ldgsts_per_tile": ldgsts, "threads": threads,
            "smem": smem, "tile": tile_name, "per": per, "head_dim": n[0]}


def occupancy(regs, threads, smem, arch):
    """Blocks per SM (and warps) from registers (allocated per warp in units of
    256) and shared memory (1 KiB reserved per block)."""
    regs_warp = ((max(regs, 1) * 32 + 255) // 256) * 256
    by_regs = REGS_SM // (regs_warp * (threads // 32))
    by_smem = SMEM_SM.get(arch, SMEM_SM[80]) // (smem + 1024) if smem else 32
    blocks = max(0, min(by_regs, by_smem, 2048 // threads, 32))
    return blocks, blocks * threads // 32


# ------------------------------------------------------------ compiling
def compile_object(src, arch, out_dir, nvcc, extra=()):
    obj = os.path.join(out_dir, os.path.basename(src) + f".sm{arch}.o")
    cmd = [nvcc, "-c", src, "-o", obj, *FLAGS, "-I", os.path.join(KERNELS, "include"), "-I",
           os.path.join(KERNELS, "src"), "-gencode", f"arch=compute_{arch},code=sm_{arch}", "--threads", "1", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"check_sass: nvcc failed for {src} (sm_{arch}):\n{r.stdout}{r.stderr}")
    return obj, r.stdout + r.stderr


def resource_usage(log):
    """{mangled: {regs, spill_stores, spill_loads, stack}} from ptxas -v output."""
    out, cur = {}, None
    for line in log.splitlines():
        m = re.search(r"(?:Compiling entry function|Function properties for) '?([\w$]+)'?", line)
        if m:
            cur = m.group(1)
            out.setdefault(cur, {})
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and cur:
            out[cur].update(stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m and cur:
            out[cur]["regs"] = int(m.group(1))
    return out


def sass_mix(obj, cuobjdump):
    env = dict(os.environ, PATH=os.path.dirname(tool("nvdisasm") or "/usr/local/cuda/bin/nvdisasm") + ":" +
               os.environ.get("PATH", ""))
    r = subprocess.run([cuobjdump, "-sass", obj], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"check_sass: cuobjdump -sass failed: {r.stderr.strip()}")
    mix, cur = {}, None
    for line in r.stdout.splitlines():
        m = re.match(r"\s+Function : (\S+)", line)
        if m:
            cur = m.group(1)
            mix[cur] = {"HMMA": 0, "LDSM": 0, "LDGSTS": 0, "BAR": 0, "MUFU": 0, "LDL_STL": 0, "SHFL": 0, "insts": 0}
            continue
        m = re.match(r"\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if m and cur:
            op = m.group(1)
            c = mix[cur]
            c["insts"] += 1
            base = op.split(".")[0]
            if base in ("HMMA", "LDSM", "LDGSTS", "MUFU", "SHFL"):
                c[base] += 1
            elif base == "BAR":
                c["BAR"] += 1
            elif base in ("LDL", "STL"):
                c["LDL_STL"] += 1
    return mix


def demangle(names):
    cxxfilt = shutil.which("c++filt")
    if not cxxfilt:
        return {n: n for n in names}
    r = subprocess.run([cxxfilt], input="\n".join(names), capture_output=True, text=True)
    return dict(zip(names, r.stdout.splitlines()))


def analyse(obj, log, arch, cuobjdump):
    usage = resource_usage(log)
    mix = sass_mix(obj, cuobjdump)
    names = demangle(list(mix))
    rows, failures = [], []
    for mangled, c in sorted(mix.items()):
        u = usage.get(mangled, {})
        k = parse_kernel(mangled)
        row = {"kernel": names.get(mangled, mangled), "mangled": mangled, "arch": arch, "regs": u.get("regs"),
               "spill_bytes": u.get("spill_stores", 0) + u.get("spill_loads", 0), **c}
        short = re.sub(r"\(fad::Params\)$", "", row["kernel"]).replace("fad::", "")
        if u.get("spill_stores", 0) or u.get("spill_loads", 0) or c["LDL_STL"]:
            failures.append(f"sm_{arch} {short}: {row['spill_bytes']} spill bytes, {c['LDL_STL']} LDL/STL")
        if k:
            e = tile_expectations(k)
            row.update(e)
            row["flags"] = k["flags"]
            row["dtype"] = k["dtype"]
            blocks, warps = occupancy(row["regs"] or 255, e["threads"], e["smem"], arch)
            row["blocks_per_sm"], row["warps_per_sm"] = blocks, warps
            row["loop_copies"] = c["HMMA"] / e["hmma_per_tile"] if e["hmma_per_tile"] else 0
            if c["HMMA"] == 0 or c["HMMA"] % e["hmma_per_tile"]:
                failures.append(f"sm_{arch} {short}: {c['HMMA']} HMMA, not a multiple of {e['hmma_per_tile']} per tile")
            if c["LDSM"] == 0 or c["LDSM"] % e["ldsm_per_tile"]:
                failures.append(f"sm_{arch} {short}: {c['LDSM']} LDSM, not a multiple of {e['ldsm_per_tile']} per tile")
            if c["LDGSTS"] == 0:
                failures.append(f"sm_{arch} {short}: no cp.async (LDGSTS)")
            if e["smem"] > SMEM_BLOCK[80]:
                failures.append(f"sm_{arch} {short}: {e['smem']} bytes of shared memory exceed an sm_80 block")
        rows.append(row)
    return rows, failures


def print_table(rows):
    print(f"{'arch':5} {'kind':4} {'dt':4} {'D':>3} {'tile':>7} {'thr':>3} {'regs':>4} {'spill':>5} {'smem KiB':>8} "
          f"{'blk/SM':>6} {'HMMA':>5} {'LDSM':>5} {'LDGSTS':>6} {'HMMA/t':>6} {'LDSM/t':>6} {'HMMA/LDSM':>9}  switches")
    for r in rows:
        if "hmma_per_tile" not in r:
            print(f"sm_{r['arch']:<3} {'-':4} {'':4} {'':>3} {'':>7} {'':>3} {r['regs'] or 0:>4} {r['spill_bytes']:>5} "
                  f"{'':>8} {'':>6} {r['HMMA']:>5} {r['LDSM']:>5} {r['LDGSTS']:>6}   {r['kernel'][:60]}")
            continue
        kind = {"fwd": "fwd", "bwd": "bwd", "dq": "dq"}[r["kind"]] if "kind" in r else "?"
        print(f"sm_{r['arch']:<3} {kind:4} {r['dtype']:4} {r['head_dim']:>3} {r['tile']:>7} {r['threads']:>3} "
              f"{r['regs']:>4} {r['spill_bytes']:>5} {r['smem'] / 1024:>8.1f} {r['blocks_per_sm']:>6} {r['HMMA']:>5} "
              f"{r['LDSM']:>5} {r['LDGSTS']:>6} {r['hmma_per_tile']:>6} {r['ldsm_per_tile']:>6} "
              f"{r['hmma_per_tile'] / r['ldsm_per_tile']:>9.2f}  {''.join(map(str, r['flags']))}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", type=int, action="append", help="SM arch, e.g. 80 (repeatable; default 80 and 90)")
    ap.add_argument("--unit", action="append", default=[], help="a compile unit of the library instead of the probe")
    ap.add_argument("--json", help="write every figure here")
    ap.add_argument("--quiet", action="store_true", help="print failures and the summary only")
    args = ap.parse_args()
    archs = args.arch or [80, 90]
    nvcc, cuobjdump = tool("nvcc"), tool("cuobjdump")
    if not nvcc or os.environ.get("FAD_SKIP_REAL_NVCC"):
        print("SKIP: no nvcc (or FAD_SKIP_REAL_NVCC set); the SASS checks did not run")
        return 0
    if not cuobjdump or not tool("nvdisasm"):
        sys.exit("check_sass: cuobjdump and nvdisasm are needed (scripts/setup.sh installs them into .tools/)")
    sources = [os.path.join(KERNELS, "src", u + ".cu") for u in args.unit] or [os.path.join(HERE, "probe.cu")]
    rows, failures = [], []
    with tempfile.TemporaryDirectory(prefix="fad-sass-") as tmp:
        for src in sources:
            for arch in archs:
                obj, log = compile_object(src, arch, tmp, nvcc)
                r, f = analyse(obj, log, arch, cuobjdump)
                for x in r:
                    x["source"] = os.path.relpath(src, KERNELS)
                rows += r
                failures += f
    if not args.quiet:
        print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"archs": archs, "kernels": rows, "failures": failures}, f, indent=1)
    for f in failures:
        print("FAIL", f)
    checked = len(rows)
    print(f"sass: {checked} kernels checked on {', '.join(f'sm_{a}' for a in archs)}; {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
