#!/usr/bin/env python3
"""Which GPU kernels does one call launch, and for how long: attnkit:cudnn against torch:cudnn
(SDPA forced to CUDNN_ATTENTION) on the same inputs, in one process, under torch.profiler.

Issue #6 asks that the cudnn backend's wrapper cost nothing measurable. Timing both (bench/peers.py
--rounds) answers it within the machine's noise; this answers it exactly: if both launch the same
cuDNN kernels with the same GPU time, every difference left is host-side (plan lookup, argument
packing) or noise.

  python3 bench/gpu/cudnn_kernels.py --lib build-gpu/libattnkit_c.so \\
      --cases fwd:256:4096:0,fwd:256:8192:1,bwd:128:2048:1 [--calls 20]

Each case is PASS:D:S:CAUSAL at BENCHMARKS.md's sizes (16384 tokens, hidden 2048, bf16).
Prints, per case and implementation, every kernel with its launches per call and mean GPU time,
and the total GPU time per call.
"""
import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from peers import Shape, attnkit_runner, make_sets, torch_runner  # noqa: E402


def kernel_table(torch, fn, calls):
    """{kernel name: (launches, total us)} over `calls` calls of fn, GPU time from the profiler."""
    from torch.profiler import ProfilerActivity, profile
    for i in range(3):
        fn(i)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(calls):
            fn(i)
        torch.cuda.synchronize()
    agg = collections.defaultdict(lambda: [0, 0.0])
    for ev in prof.events():
        if ev.device_type.name != "CUDA":
            continue
        agg[ev.name][0] += 1
        agg[ev.name][1] += getattr(ev, "device_time", None) or ev.cuda_time
    return agg


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default="build-gpu/libattnkit_c.so")
    ap.add_argument("--cases", default="fwd:256:4096:0,fwd:256:8192:1,fwd:128:512:1,bwd:64:512:1")
    ap.add_argument("--calls", type=int, default=20)
    args = ap.parse_args()
    import torch
    from attnkit_c import AttnkitC
    lib = AttnkitC(args.lib)
    for case in args.cases.split(","):
        pas, d, s, causal = case.split(":")
        shp = Shape(int(s), int(d), causal == "1")
        sets = make_sets(torch, shp, 2, pas == "bwd")
        print(f"== {pas} {shp}")
        for impl in ("attnkit:cudnn", "torch:cudnn"):
            if impl.startswith("attnkit"):
                fn, _ = attnkit_runner(torch, lib, shp, "cudnn", sets, pas)
            else:
                fn, _ = torch_runner(torch, shp, "cudnn", sets, pas)
            agg = kernel_table(torch, fn, args.calls)
            total = sum(v[1] for v in agg.values()) / args.calls
            print(f"  {impl}: {total:9.1f} us GPU time per call")
            for name, (n, us) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
                print(f"    {n / args.calls:4.1f} x {us / max(n, 1):9.1f} us  {name[:110]}")
        del sets
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
