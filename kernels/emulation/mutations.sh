#!/usr/bin/env bash
# Mutation check of the CPU emulation: applies each known kernel bug to a copy
# of kernels/, builds the emulation against the copy, runs the cases the bug
# touches, and expects a failure. Exit 0 only if every mutation was caught.
# A mutation whose text is no longer in the sources fails the script (it
# would otherwise pass without testing anything).
#
# Usage: kernels/emulation/mutations.sh [NAME...]   (default: all; --list names them)
# Takes about 20-40 s per mutation on 2 cores.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
kernels="$(cd "$here/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/fad_mutations.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# One mutation per line, fields separated by ASCII 0x1f (unit separator): name, file (under kernels/), text,
# replacement (may be empty), units to build, case filters (comma-separated).
# In text and replacement, \n stands for a newline.
mutations=$(cat <<'EOF'
syncwarp-epilogue  src/fwd_kernel.cuh      for (int d = 0; d < DA; ++d) store_frag<T, QL>(sQ, wrow + 16 * a, 8 * d, acc_o[a][d]);\n  sync_warp();      for (int d = 0; d < DA; ++d) store_frag<T, QL>(sQ, wrow + 16 * a, 8 * d, acc_o[a][d]);  fwd_hdim64_fp16_noncausal  fp16 d64 full b1 h2/2 sq150 sk200 dropout
syncwarp-dq-epilogue  src/bwd_kernel.cuh      for (int d = 0; d < DA; ++d) store_frag<T, QL>(sQ, wrow + 16 * a, 8 * d, acc_q[a][d]);\n  sync_warp();      for (int d = 0; d < DA; ++d) store_frag<T, QL>(sQ, wrow + 16 * a, 8 * d, acc_q[a][d]);  fwd_hdim64_fp16_noncausal bwd_hdim64_fp16_noncausal  deterministic
ldmatrix-misaligned  src/tile.cuh      return b[(chunk0 % L::kW) >> 1] + ((chunk0 / L::kW) * L::kRows + row0) * L::kW * 16;      return b[(chunk0 % L::kW) >> 1] + ((chunk0 / L::kW) * L::kRows + row0) * L::kW * 16 + 8;  fwd_hdim64_fp16_noncausal  fp16 d64 full b1 h2/2 sq150 sk200 dropout
no-swizzle  src/tile.cuh  return kW == 8 ? (r & 7) : ((r >> 1) & 3);  return 0 * r;  fwd_hdim128_fp16_noncausal  fp16 d128 full b1 h2/2 sq150 sk200
no-zero-fill  src/tile.cuh  cp_async16(dst0 + (blk * L::kRows + j * kStep) * kW * 16, ok ? src + blk * kW * 8 : nullptr, ok);\n        }\n      }\n    } else {  if (ok) cp_async16(dst0 + (blk * L::kRows + j * kStep) * kW * 16, src + blk * kW * 8, ok);\n        }\n      }\n    } else {  fwd_hdim64_fp16_noncausal  fp16 d64 full b1 h2/2 sq70 sk90 pad3,fp16 d64 full b1 h2/2 sq150 sk200 dropout
no-rescale  src/attn_common.cuh          o[a][d][2 * h] *= alpha;\n        o[a][d][2 * h + 1] *= alpha;    fwd_hdim32_fp16_noncausal fwd_hdim96_fp16_noncausal  fp16 d32 full,fp16 d96 full
launcher-grid-floor  src/fwd_launch.cuh    const dim3 grid((p.seqlen_q + K::BM - 1) / K::BM, p.heads, p.batch);    const dim3 grid(p.seqlen_q / K::BM, p.heads, p.batch);  fwd_hdim64_fp16_noncausal  fp16 d64 full b1 h2/2 sq150
no-barrier-before-v-load  src/fwd_kernel.cuh      cp_async_wait<0>();\n    sync_block();  // K_j visible      cp_async_wait<0>();  // K_j visible  fwd_hdim64_fp16_noncausal  fp16 d64 full b1 h2/2 sq150 sk200 dropout
no-wait-for-v  src/fwd_kernel.cuh            cp_async_wait<1>();  // V_j landed            // V_j landed  fwd_hdim64_fp16_noncausal  fp16 d64 full b1 h2/2 sq150 sk200 dropout
causal-off-by-one  src/attn_common.cuh      if (CAUSAL) h = h || j > i + off;      if (CAUSAL) h = h || j >= i + off;  fwd_hdim64_fp16_causal  fp16 d64 causal
v-not-transposed  src/fwd_kernel.cuh            ldsm_x4_t(vb, v_frag(c0 + 16 * kk, 2 * dp));            ldsm_x4(vb, v_frag(c0 + 16 * kk, 2 * dp));  fwd_hdim64_fp16_noncausal  fp16 d64 full b1 h2/2 sq150 sk200 dropout
p-fragment-order  src/attn_common.cuh    a[1] = pack2<T>(s[2 * k][2], s[2 * k][3]);\n  a[2] = pack2<T>(s[2 * k + 1][0], s[2 * k + 1][1]);    a[2] = pack2<T>(s[2 * k][2], s[2 * k][3]);\n  a[1] = pack2<T>(s[2 * k + 1][0], s[2 * k + 1][1]);  fwd_hdim64_fp16_noncausal  fp16 d64 full b1 h2/2 sq150 sk200 dropout
dropout-counter  src/attn_common.cuh  uint32_t c[4] = {(uint32_t)j >> 1, (uint32_t)((i >> 4) * 8 + (i & 7))  uint32_t c[4] = {(uint32_t)j, (uint32_t)((i >> 4) * 8 + (i & 7))  fwd_hdim64_fp16_noncausal bwd_hdim64_fp16_noncausal  dropout
softcap-derivative  src/bwd_kernel.cuh            dcap = 1.0f - th * th;            dcap = 1.0f;  fwd_hdim96_fp16_noncausal bwd_hdim96_fp16_noncausal  softcap
alibi-sign  src/attn_common.cuh          if (ALIBI) x -= alibi_raw * fabsf((float)(i + mask.off - j));          if (ALIBI) x += alibi_raw * fabsf((float)(i + mask.off - j));  fwd_hdim64_fp16_noncausal bwd_hdim64_fp16_noncausal  alibi
gqa-head  src/fwd_kernel.cuh    const int hk = h / p.group;\n  const SeqInfo s = seq_info(p, b);\n  const int m0 = m_block * BM;\n  if (m0 >= s.sq) return;\n\n  const int l = lane_id()    const int hk = h % p.heads_k;\n  const SeqInfo s = seq_info(p, b);\n  const int m0 = m_block * BM;\n  if (m0 >= s.sq) return;\n\n  const int l = lane_id()  fwd_hdim128_fp16_noncausal  d128 full b1 h4/2
varlen-lse-rows  src/attn_common.cuh    return p.cu_q != nullptr ? (int64_t)h * p.total_q + s.q_row0 + i    return p.cu_q != nullptr ? (int64_t)h * p.total_q + i  fwd_hdim64_fp16_noncausal bwd_hdim64_fp16_noncausal  varlen
paged-slot  src/fwd_kernel.cuh  return base + (int64_t)ldg(table + n / page_size) * page_stride  return base + (int64_t)ldg(table + r / page_size) * page_stride  fwd_split_hdim128_fp16_causal  paged64
split-combine-weight  src/fwd_kernel.cuh          const float w = exp2_approx((ldg(p.lse_accum + sp * rows + row) - lse) * kLog2e);          const float w = exp2_approx(ldg(p.lse_accum + sp * rows + row) - lse);  fwd_split_hdim128_fp16_noncausal  splits3
no-barrier-before-dkdv  src/bwd_kernel.cuh      sync_block();  // P and dS complete      // P and dS complete  fwd_hdim64_fp16_noncausal bwd_hdim64_fp16_noncausal  fp16 d64 full b1 h2/2 sq150 sk200 dropout
deterministic-no-dq  src/bwd_launch.cuh                                  decltype(cap)::value, decltype(drop)::value>;\n    return launch_kernel(kernel, grid, K::kThreads, K::kSmem, stream, p);                                  decltype(cap)::value, decltype(drop)::value>;\n    (void)kernel, (void)grid;\n    return FAD_OK;  fwd_hdim64_fp16_noncausal bwd_hdim64_fp16_noncausal  deterministic
abi1-causal  src/dispatch.cu    a->causal = v1.causal;\n  a->num_splits = 1;    a->causal = 0;\n  a->num_splits = 1;  fwd_hdim96_fp16_causal fwd_hdim96_fp16_noncausal bwd_hdim96_fp16_causal bwd_hdim96_fp16_noncausal  fp16 d96 causal b1 h2/2 sq170 sk140 abi1
EOF
)

names() { cut -d $'\x1f' -f1 <<<"$mutations" | sed 's/ *$//'; }
if [[ "${1:-}" == "--list" ]]; then names; exit 0; fi
selected=("$@")

# Objects that do not depend on the kernels: built once.
inc_common=(-I"$kernels/emulation/cuda_shim" -I"$kernels/include" -I"$kernels/reference" -I"$kernels/selftest")
mkdir -p "$work/common"
g++ -std=c++17 -O2 -w "${inc_common[@]}" -c "$kernels/emulation/emu_runtime.cc" -o "$work/common/emu_runtime.o" &
g++ -std=c++17 -O2 -w "${inc_common[@]}" -c "$kernels/reference/reference_attention.cc" -o "$work/common/reference.o" &
g++ -std=c++17 -O1 -w -DFAD_EMULATION "${inc_common[@]}" -c "$kernels/emulation/emulation_test.cc" -o "$work/common/test.o" &
g++ -std=c++17 -O1 -w -DFAD_EMULATION "${inc_common[@]}" -c "$kernels/selftest/attention_cases.cc" -o "$work/common/cases.o" &
wait

caught=0 missed=0 total=0
while IFS=$'\x1f' read -r name file text repl units filter; do
  name=${name% }; file=${file# }; file=${file% }; text=${text# }; text=${text% }; repl=${repl# }; repl=${repl% }
  units=${units# }; filter=${filter# }
  [[ -z "$name" ]] && continue
  if ((${#selected[@]})) && [[ " ${selected[*]} " != *" $name "* ]]; then continue; fi
  total=$((total + 1))
  copy="$work/$name"
  rm -rf "$copy"
  mkdir -p "$copy"
  cp -r "$kernels/src" "$kernels/include" "$copy/"
  if ! python3 - "$copy/$file" "$text" "$repl" <<'PY'
import sys
path, text, repl = sys.argv[1], sys.argv[2].replace("\\n", "\n"), sys.argv[3].replace("\\n", "\n")
src = open(path).read()
if src.count(text) != 1:
    sys.exit(f"{path}: the mutation's text occurs {src.count(text)} times")
open(path, "w").write(src.replace(text, repl))
PY
  then
    echo "ERROR  $name: does not apply to $file"
    missed=$((missed + 1))
    continue
  fi
  inc=(-I"$kernels/emulation/cuda_shim" -I"$copy/src" -I"$copy/include" -I"$kernels/reference" -I"$kernels/selftest")
  objs=()
  for u in $units dispatch; do
    g++ -std=c++17 -x c++ -DFAD_EMULATION -O0 -w "${inc[@]}" -c "$copy/src/$u.cu" -o "$copy/$u.o" &
    objs+=("$copy/$u.o")
  done
  wait
  g++ -rdynamic -o "$copy/emu" "${objs[@]}" "$work"/common/*.o -ldl
  args=()
  IFS=',' read -ra filters <<<"$filter"
  for f in "${filters[@]}"; do args+=(--filter "$f"); done
  if "$copy/emu" "${args[@]}" >"$copy/out.txt" 2>&1; then
    echo "MISSED $name (the emulation passed: $(tail -n1 "$copy/out.txt"))"
    missed=$((missed + 1))
  elif grep -q "0 passed, 0 failed" "$copy/out.txt"; then
    echo "MISSED $name (no case ran: $(tail -n1 "$copy/out.txt"))"
    missed=$((missed + 1))
  else
    why=$(grep -m1 -E "^FAIL|EMULATION (VIOLATION|FATAL)" "$copy/out.txt" | cut -c1-150)
    echo "CAUGHT $name: $why"
    caught=$((caught + 1))
  fi
  rm -rf "$copy"
done <<<"$mutations"
echo "mutations: $caught caught, $missed missed, of $total"
[[ $missed -eq 0 && $total -gt 0 ]]
