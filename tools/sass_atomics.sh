#!/bin/bash
# sass_atomics.sh OBJ... : per kernel, how its global fp32 adds compiled: REDG (no return) or ATOMG
# (with a return). Session 32: any GPU-scope fence (__threadfence, fence.acq_rel.gpu) after a
# kernel's red.global.add, even one that never runs, makes ptxas emit all of them as ATOMG, and the
# flash3 backward's loop then waits for each item's 24 dQ adds to return from L2 (10-17 % at D 64 /
# 128). Prints one line per kernel that has either, then a summary; exits 1 when any flash3
# bwd_kernel has ATOMG adds (since session 33 the deterministic ones too: their hand-over is a
# release store).
# Needs cuobjdump (the GPU machine's CUDA; here: the Triton wheel's, see docs/gpu_workflow.md).
#   tools/sass_atomics.sh $(find build_sm -name 'bwd_d*_bf16.cu.o')
set -eu
[ $# -gt 0 ] || { echo "usage: $0 OBJ..." >&2; exit 2; }
for o in "$@"; do
  echo "## $o"
  cuobjdump -sass "$o" 2>/dev/null
done | python3 -c '
import re, sys
obj, name, counts, bad = None, None, {}, []
for line in sys.stdin:
    if line.startswith("## "):
        obj = line[3:].strip()
        continue
    m = re.search(r"Function : (\S+)", line)
    if m:
        name = m.group(1)
        continue
    m = re.search(r"\b(REDG|ATOMG)\.E\.ADD\.F32", line)
    if m and name:
        counts.setdefault((obj, name), {"REDG": 0, "ATOMG": 0})[m.group(1)] += 1
for (obj, name), c in sorted(counts.items()):
    flag = ""
    if c["ATOMG"] and "6flash33bwd10bwd_kernelI" in name:
        flag = "  <- ATOMG in a flash3 bwd_kernel"
        bad.append(name)
    print("%4d REDG %4d ATOMG  %s%s" % (c["REDG"], c["ATOMG"], name[:120], flag))
n_atom = sum(1 for c in counts.values() if c["ATOMG"])
print("kernels with fp32 adds: %d, with ATOMG adds: %d, flash3 bwd_kernel with ATOMG: %d"
      % (len(counts), n_atom, len(bad)))
sys.exit(1 if bad else 0)
'
