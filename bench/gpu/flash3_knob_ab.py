#!/usr/bin/env python3
"""Same-process A/B of flash3 forward knobs, the variants called in turn (A B C A B C ...).

Each --variant is NAME=KW:VAL,KW:VAL (keywords of flash3_vs_peers.load's set_tuning, e.g.
qpf:0 or qpf:4,kvpf:1; NAME= alone keeps the defaults); cuDNN (torch SDPA CUDNN_ATTENTION) is
timed in the same loop. Shapes as BENCHMARKS.md (B = 16384 / S, H = 2048 / D, bf16), S_q = S_k.
Prints per shape each variant's TFLOP/s (median of --reps calls), its ratio to the first variant
and to cuDNN, and the launch slot each variant ran (a knob that fell back to another kernel shows
there); --rounds repeats the whole loop (drift check); --json writes every number. Each variant's
first output is compared with cuDNN's (max abs difference, printed; MISMATCH past --max-err).
--shim NAME=PATH[@KW:VAL,...] (repeatable, session 15; knobs session 16) adds another shim's
defaults (or those knobs in it) as a variant in the same loop: a build switch against the
default build, in one process (shims built with flash3_shim_only.sh F3_DEFS=..., whose
-fno-gnu-unique keeps their statics apart; flash3_defs_ab.sh does both in one call).

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
                    help="NAME=PATH[@KW:VAL,...]: another shim (its defaults, or those knobs) "
                         "timed as variant NAME")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json", default=None)
    ap.add_argument("--max-err", type=float, default=0.05,
                    help="flag a variant whose first output differs from cuDNN's by more")
    args = ap.parse_args()
    fn, set_tuning = load(args.lib)
    variants = [parse_variant(v) for v in args.variant]
    shims = []  # (name, fn, its knob setup, last_slot) of the other builds
    libs = {}  # path -> (fn, set_tuning): one load per shim file
    for text in args.shim:
        name, _, rest = text.partition("=")
        path, _, kws = rest.partition("@")
        if path not in libs:
            libs[path] = load(path)
        fn_x, set_x = libs[path]
        kw = parse_variant("=" + kws)[1]
        shims.append((name, fn_x, lambda set_x=set_x, kw=kw: set_x(**kw), set_x.last_slot))
    names = [n for n, _ in variants] + [n for n, _, _, _ in shims]
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
                # (session 16) each variant's first output against cuDNN's, out poisoned with
                # NaN before it: a variant that is fast because it is wrong shows here.
                ref = make_sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, causal)().transpose(1, 2)
                slots, errs = {}, {}

                def first_run(name, go, slot_of, tail_of=None):
                    out.fill_(float("nan"))
                    go()
                    torch.cuda.synchronize()
                    slots[name] = slot_of() if slot_of else -1
                    if tail_of is not None and tail_of() > 0:  # session 19: split tail tiles
                        slots[name] = f"{slots[name]}+tail{tail_of()}"
                    errs[name] = (out.float() - ref.float()).abs().max().item()  # NaN stays NaN
                for name, kw in variants:
                    set_tuning(**kw)
                    first_run(name, run, set_tuning.last_slot, set_tuning.last_tail)
                setups = [((lambda kw=kw: set_tuning(**kw)), run) for _, kw in variants]
                for name, fn_x, set_x, slot_x in shims:
                    set_x()
                    setups.append((set_x, make_flash3(fn_x, q, k, v, out, lse, causal)))
                    first_run(name, setups[-1][1], slot_x)
                bad = [n for n, e in errs.items() if not e <= args.max_err]
                print(f"D={d:3d} S={s:5d} causal={int(causal)} max|out - cuDNN|: " +
                      ", ".join(f"{n} {e:.2e}" for n, e in errs.items()) +
                      (f"  MISMATCH: {' '.join(bad)}" if bad else ""), flush=True)
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
                                 "cudnn": cudnn, "slots": slots, "max_err": errs})
                set_tuning()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"variants": [{"name": n, "knobs": kw} for n, kw in variants] +
                       [{"name": n, "shim": t.partition("=")[2]}
                        for (n, _, _, _), t in zip(shims, args.shim)],
                       "reps": args.reps, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
