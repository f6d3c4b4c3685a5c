#!/usr/bin/env python3
"""How much does a partial last query tile cost the flash3 forward? (session 12 probe)

D = 64 runs 192-row tiles (3 consumer warpgroups) by default; at S_q = 1024 the last tile of a
head holds 64 real rows and two idle warpgroups. This times flash3 at S_q = k * 192 (no partial
tile), at the benchmark's S_q and just above it, with S_k fixed, so TFLOP/s per S_q shows what
the partial tile costs; the same with 2 warpgroups (128-row tiles) and cuDNN for reference.
Shapes as BENCHMARKS.md at S_k (B = 16384 / S_k, H = 2048 / D), bf16, non-causal.

usage: flash3_tail_probe.py --lib build_f3/libflash3_shim.so [--reps 30] [--d 64]
"""
import argparse
import os
import sys

import torch
from torch.nn.attention import SDPBackend

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flash3_vs_peers import load, make_flash3, make_sdpa, time_it  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--d", type=int, default=64)
    args = ap.parse_args()
    fn, set_tuning = load(args.lib)
    d = args.d
    torch.manual_seed(0)
    for sk, sqs in ((1024, (960, 1024, 1152)), (4096, (4032, 4096, 4224))):
        b, h = 16384 // sk, 2048 // d
        for sq in sqs:
            q = torch.randn(b, sq, h, d, device="cuda", dtype=torch.bfloat16)
            k = torch.randn(b, sk, h, d, device="cuda", dtype=torch.bfloat16)
            v = torch.randn(b, sk, h, d, device="cuda", dtype=torch.bfloat16)
            out = torch.empty_like(q)
            lse = torch.empty(b, h, sq, device="cuda", dtype=torch.float32)
            flops = 4.0 * b * h * sq * sk * d
            row = [f"D={d} Sk={sk:5d} Sq={sq:5d} (Sq/192 = {sq / 192:6.2f})"]
            for wgs in (3, 2):
                set_tuning(wgs=wgs)
                ms = time_it([make_flash3(fn, q, k, v, out, lse, False)], args.reps)
                row.append(f"flash3 {wgs} WG {flops / ms / 1e9:6.1f}")
            set_tuning()
            ms = time_it([make_sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, False)], args.reps)
            row.append(f"cuDNN {flops / ms / 1e9:6.1f} TFLOP/s")
            print("  ".join(row), flush=True)


if __name__ == "__main__":
    main()
