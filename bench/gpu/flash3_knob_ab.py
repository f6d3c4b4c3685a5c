#!/usr/bin/env python3
"""Same-process A/B of flash3 forward knobs, the variants called in turn (A B C A B C ...).

Each --variant is NAME=KW:VAL,KW:VAL (keywords of flash3_vs_peers.load's set_tuning, e.g.
qpf:0 or qpf:4,kvpf:1; NAME= alone keeps the defaults); cuDNN (torch SDPA CUDNN_ATTENTION) is
timed in the same loop. Shapes as BENCHMARKS.md (B = 16384 / S, H = 2048 / D, bf16), S_q = S_k.
Prints per shape each variant's TFLOP/s (median of --reps calls), its ratio to the first variant
and to cuDNN, and the launch slot each variant ran (a knob that fell back to another kernel shows
there); --rounds repeats the whole loop (drift check); --json writes every number.
--shim NAME=PATH (repeatable, session 15) adds another shim's defaults as a variant in the same
loop: a build switch (e.g. -DATTNKIT_FLASH3_FWD_EARLY_TEST=1) against the default build, in one
process (shims built with flash3_shim_only.sh, whose -fno-gnu-unique keeps their statics apart).

usage: flash3_knob_ab.py --lib build_f3/libflash3_shim.so --d 256 --s 1024,4096 --causal 0,1 \
           --variant base=qpf:0 --variant pf4=qpf:4 [--reps 30] [--rounds 2] [--json out.json]
"""
import argparse
import json
import os
import sys

import torch
from torch.nn.attention import SDPBackend

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flash3_tail_probe import time_interleaved  # noqa: E402
from flash3_vs_peers import load, make_flash3, make_sdpa  # noqa: E402


def parse_variant(text):
    name, _, kws = text.partition("=")
    kw = {}
    for item in filter(None, kws.split(",")):
        key, _, val = item.partition(":")
        kw[key] = int(val)
    return name, kw


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--d", default="256")
    ap.add_argument("--s", default="1024,4096,16384")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--variant", action="append", required=True)
    ap.add_argument("--shim", action="append", default=[],
                    help="NAME=PATH: another shim, its defaults timed as variant NAME")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    fn, set_tuning = load(args.lib)
    variants = [parse_variant(v) for v in args.variant]
    shims = []  # (name, fn, set_tuning) of the other builds
    for text in args.shim:
        name, _, path = text.partition("=")
        shims.append((name, *load(path)))
    names = [n for n, _ in variants] + [n for n, _, _ in shims]
    rows = []
    torch.manual_seed(0)
    for d in map(int, args.d.split(",")):
        for s in map(int, args.s.split(",")):
            for causal in (c == "1" for c in args.causal.split(",")):
                b, h = max(1, 16384 // s), 2048 // d
                q = torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16)
                k = torch.randn_like(q)
                v = torch.randn_like(q)
                out = torch.empty_like(q)
                lse = torch.empty(b, h, s, device="cuda", dtype=torch.float32)
                flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
                run = make_flash3(fn, q, k, v, out, lse, causal)
                slots = {}
                for name, kw in variants:
                    set_tuning(**kw)
                    run()
                    torch.cuda.synchronize()
                    slots[name] = set_tuning.last_slot() if set_tuning.last_slot else -1
                setups = [((lambda kw=kw: set_tuning(**kw)), run) for _, kw in variants]
                for name, fn_x, set_x in shims:
                    set_x()
                    setups.append((set_x, make_flash3(fn_x, q, k, v, out, lse, causal)))
                    setups[-1][1]()
                    torch.cuda.synchronize()
                    slots[name] = set_x.last_slot() if set_x.last_slot else -1
                setups.append((set_tuning, make_sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, causal)))
                for r in range(args.rounds):
                    ms = time_interleaved(setups, args.reps)
                    tf = [flops / t / 1e9 for t in ms]
                    cudnn = tf[-1]
                    line = [f"D={d:3d} S={s:5d} {'causal' if causal else 'nc    '} r{r}"]
                    for name, x in zip(names, tf):
                        line.append(f"{name} {x:6.1f} ({x / tf[0]:.3f}, cuDNN {x / cudnn:.3f}, "
                                    f"slot {slots[name]})")
                    line.append(f"cuDNN {cudnn:6.1f}")
                    print("  ".join(line), flush=True)
                    rows.append({"d": d, "s": s, "causal": causal, "round": r,
                                 "tflops": dict(zip(names, tf)),
                                 "cudnn": cudnn, "slots": slots})
                set_tuning()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"variants": [{"name": n, "knobs": kw} for n, kw in variants] +
                       [{"name": n, "shim": t.partition("=")[2]}
                        for (n, _, _), t in zip(shims, args.shim)],
                       "reps": args.reps, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
