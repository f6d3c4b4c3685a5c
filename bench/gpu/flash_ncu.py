#!/usr/bin/env python3
"""One call each of attnkit:flash forward + backward and torch SDPA FLASH_ATTENTION (FA-2)
forward + backward on one BENCHMARKS.md shape, inside a cudaProfilerStart/Stop window, for
Nsight Compute (bench/notes/flash.md, run 7):

  ncu --profile-from-start off --clock-control none --set full \
      -k regex:'fwd_kernel|bwd_fused_kernel|flash_bwd_dq_dk_dv' -o rep \
      python3 bench/gpu/flash_ncu.py --lib build-gpu/libattnkit_c.so --s 4096 --d 128 [--causal] \
      [--passes fwd,bwd]

Set-up (inputs, the backward's forward, module loads, one warm call of each) stays outside the
window, so only the four calls above are profiled.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/
import peers  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--s", type=int, default=4096)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--passes", default="fwd,bwd")
    a = ap.parse_args()
    import torch
    from attnkit_c import AttnkitC

    lib = AttnkitC(a.lib)
    shp = peers.Shape(a.s, a.d, a.causal)
    sets = peers.make_sets(torch, shp, 1, True)
    calls = []
    for pas in a.passes.split(","):
        mine, _ = peers.attnkit_runner(torch, lib, shp, "flash", sets, pas)
        ref, _ = peers.torch_runner(torch, shp, "flash", sets, pas)
        ref(0)
        calls += [(f"attnkit:flash {pas}", mine), (f"torch:flash {pas}", ref)]
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for name, fn in calls:
        fn(0)
        torch.cuda.synchronize()
        print("profiled", name, shp, flush=True)
    torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
