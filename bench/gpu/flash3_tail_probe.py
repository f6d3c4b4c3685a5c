#!/usr/bin/env python3
"""How much does a partial last query tile cost the flash3 forward? (session 12 probe)

D = 64 runs 192-row tiles (3 consumer warpgroups) by default; at S_q = 1024 the last tile of a
head holds 64 real rows and two idle warpgroups. This times flash3 at S_q = k * 192 (no partial
tile), at the benchmark's S_q and just above it, with S_k fixed, so TFLOP/s per S_q shows what
the partial tile costs; the same with 2 warpgroups (128-row tiles) and cuDNN for reference.
Shapes as BENCHMARKS.md at S_k (B = 16384 / S_k, H = 2048 / D), bf16, non-causal.

Session 13 (--split): the split last tile (Tuning::split_tail) on (the default) and off, plus
S_k 16k and causal 4k / 16k rows; each variant timed twice (forward order, then reversed).

usage: flash3_tail_probe.py --lib build_f3/libflash3_shim.so [--reps 30] [--d 64] [--split]
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
    ap.add_argument("--split", action="store_true",
                    help="session 13: also time the split last tile off (Tuning::split_tail = 0) "
                         "and add S_k 16k and causal rows; two passes in opposite order")
    args = ap.parse_args()
    fn, set_tuning = load(args.lib)
    d = args.d
    torch.manual_seed(0)
    shapes = [(1024, (960, 1024, 1152), False), (4096, (4032, 4096, 4224), False)]
    # variant name -> set_tuning kwargs (None: cuDNN)
    variants = [("3 WG", {"wgs": 3}), ("2 WG", {"wgs": 2}), ("cuDNN", None)]
    if args.split:
        if not getattr(set_tuning, "has_split", False):
            raise SystemExit("--split: the shim has no flash3_set_knobs_split")
        shapes += [(16384, (16384,), False), (4096, (4096,), True), (16384, (16384,), True)]
        variants = [("3 WG", {"wgs": 3}), ("3 WG nosplit", {"wgs": 3, "split": 0}),
                    ("2 WG", {"wgs": 2}), ("cuDNN", None)]
    for sk, sqs, causal in shapes:
        b, h = max(1, 16384 // sk), 2048 // d
        for sq in sqs:
            q = torch.randn(b, sq, h, d, device="cuda", dtype=torch.bfloat16)
            k = torch.randn(b, sk, h, d, device="cuda", dtype=torch.bfloat16)
            v = torch.randn(b, sk, h, d, device="cuda", dtype=torch.bfloat16)
            out = torch.empty_like(q)
            lse = torch.empty(b, h, sq, device="cuda", dtype=torch.float32)
            flops = 4.0 * b * h * sq * sk * d * (0.5 if causal else 1.0)
            res = {name: [] for name, _ in variants}
            for order in ((variants, variants[::-1]) if args.split else (variants,)):
                for name, kw in order:
                    if kw is None:
                        set_tuning()
                        run = make_sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, causal)
                    else:
                        set_tuning(**kw)
                        run = make_flash3(fn, q, k, v, out, lse, causal)
                    res[name].append(flops / time_it([run], args.reps) / 1e9)
            set_tuning()
            row = [f"D={d} Sk={sk:5d} Sq={sq:5d} {'causal' if causal else 'nc    '} "
                   f"(Sq/192 = {sq / 192:6.2f})"]
            row += [f"{name} " + " / ".join(f"{x:6.1f}" for x in res[name]) for name, _ in variants]
            print("  ".join(row) + " TFLOP/s", flush=True)


if __name__ == "__main__":
    main()
