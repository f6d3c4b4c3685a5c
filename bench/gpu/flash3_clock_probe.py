#!/usr/bin/env python3
"""SM clock and board power of the flash3 forward vs cuDNN, each run alone (session 16).

The question: at a shape where ncu (clocks locked) shows ours and cuDNN taking about the same SM
cycles, does the timed run lose because the board clocks ours lower under its 700 W limit? For
each shape, ours (the shim's defaults, or --variant knob sets) and torch SDPA cuDNN are queued
back to back for --seconds while nvidia-smi samples clocks.sm / power.draw every 50 ms
(clock_probe.py's sample). Prints per implementation us / call, TFLOP/s, median SM clock and
power, and TFLOP/s per GHz: the work per cycle, which the clock does not change.

usage: flash3_clock_probe.py --lib build_f3/libflash3_shim.so --shapes 256:4096:0,128:4096:0 \
           [--variant old=ordered:0] [--seconds 4] [--reps 2]
"""
import argparse
import os
import sys
import time

import torch
from torch.nn.attention import SDPBackend

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clock_probe import sample  # noqa: E402
from flash3_knob_ab import parse_variant  # noqa: E402
from flash3_vs_peers import load, make_flash3, make_sdpa  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--shapes", default="256:4096:0,128:4096:0", help="D:S:causal,...")
    ap.add_argument("--variant", action="append", default=[], help="NAME=KW:VAL,... (ours)")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args()
    fn, set_tuning = load(a.lib)
    variants = [parse_variant(v) for v in a.variant] or [("flash3", {})]
    torch.manual_seed(0)
    for spec in a.shapes.split(","):
        d, s, c = (int(x) for x in spec.split(":"))
        b, h = max(1, 16384 // s), 2048 // d
        q = torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16)
        k, v = torch.randn_like(q), torch.randn_like(q)
        out = torch.empty_like(q)
        lse = torch.empty(b, h, s, device="cuda", dtype=torch.float32)
        flops = 4.0 * b * h * s * s * d * (0.5 if c else 1.0)
        run = make_flash3(fn, q, k, v, out, lse, bool(c))
        cudnn = make_sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, bool(c))
        # (name, knobs or None for cuDNN, call): the knobs are set once per window, not per call
        impls = [(name, kw, run) for name, kw in variants] + [("cuDNN", None, cudnn)]
        for rep in range(a.reps):
            for name, kw, go in impls:
                if kw is not None:
                    set_tuning(**kw)
                for _ in range(5):  # (cuDNN builds its plan on a shape's first calls)
                    go()
                torch.cuda.synchronize()
                time.sleep(1.0)  # (idle first: each run starts from the same board state)
                ms, clk, pwr, n = sample(lambda i, go=go: go(), torch, a.seconds)
                tf = flops / ms / 1e9
                print(f"D={d} S={s} causal={c} r{rep} {name:8s} {ms * 1e3:8.1f} us/call "
                      f"{tf:6.1f} TFLOP/s  SM clock {clk:5.0f} MHz  power {pwr:5.1f} W  "
                      f"{tf / clk * 1e3:6.1f} TFLOP/s per GHz ({n} samples)", flush=True)
        set_tuning()
    return 0


if __name__ == "__main__":
    sys.exit(main())
