#!/usr/bin/env python3
"""What does the last, partial round of tiles cost the flash3 forward? (session 17 probe)

Every GPU shape of BENCHMARKS.md has the same number of query tiles whatever S is:
(16384 / S) * (2048 / D) * ceil(S / BM) = 2048 at D 128 (BM 128), 1024 at D 256, 2730-3072 at
D 64 (BM 192). With G = 132 persistent CTAs that is 15.5 / 7.8 / 20.7-23.3 rounds: the last
round has work for only part of the SMs. If a tile takes the same time in every round, the
shape runs ceil(rounds) tile times for `rounds` tiles of work (-3.1 % at D 128 / 256).

This times flash3 and cuDNN, interleaved call by call (after a sacrificial flash3 copy), at the
benchmark's (B, H) and at a nearby (B', H') whose tile count is a multiple of the SM count
("full": every round full), same S, D, causal mode. TFLOP/s per call counts the work each shape
does, so full / base shows what the partial round costs each implementation.

usage: flash3_wave_probe.py --lib build_f3/libflash3_shim.so [--d 64,128,256] [--s 1024,4096]
                            [--causal 0,1] [--reps 20] [--rounds 2] [--json out.json]
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


def block_m(d, s, causal):
    """Query rows per tile of the flash3 default (launch.cuh run_forward)."""
    return 128 if d != 64 or (causal and s <= 1024) else 192


def full_shape(b, h, m_blocks, sms):
    """(B', H') nearest to B * H with B' * H' * m_blocks a multiple of sms (B' H' >= B H / 2)."""
    best = None
    for b2 in range(1, 4 * b + 1):
        for h2 in range(1, 4 * h + 1):
            if (b2 * h2 * m_blocks) % sms or 2 * b2 * h2 < b * h:
                continue
            key = (abs(b2 * h2 - b * h), abs(b2 - b))
            if best is None or key < best[0]:
                best = (key, b2, h2)
    return best[1], best[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--d", default="64,128,256")
    ap.add_argument("--s", default="1024,4096")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    fn, set_tuning = load(args.lib)
    set_tuning()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    torch.manual_seed(0)
    rows = []
    for d in (int(x) for x in args.d.split(",")):
        for s in (int(x) for x in args.s.split(",")):
            for causal in (bool(int(x)) for x in args.causal.split(",")):
                bm = block_m(d, s, causal)
                nm = (s + bm - 1) // bm
                b, h = max(1, 16384 // s), 2048 // d
                b2, h2 = full_shape(b, h, nm, sms)
                for r in range(args.rounds):
                    res = {}
                    for tag, (bb, hh) in (("base", (b, h)), ("full", (b2, h2))):
                        q, k, v = (torch.randn(bb, s, hh, d, device="cuda", dtype=torch.bfloat16)
                                   for _ in range(3))
                        out = torch.empty_like(q)
                        lse = torch.empty(bb, hh, s, device="cuda", dtype=torch.float32)
                        ours = make_flash3(fn, q, k, v, out, lse, causal)
                        cudnn = make_sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, causal)
                        nothing = lambda: None  # noqa: E731
                        ms = time_interleaved([(nothing, ours), (nothing, ours),
                                               (nothing, cudnn)], args.reps)
                        flops = 4.0 * bb * hh * s * s * d * (0.5 if causal else 1.0)
                        tiles = bb * hh * nm
                        res[tag] = {"b": bb, "h": hh, "tiles": tiles,
                                    "rounds": tiles / sms,
                                    "flash3": flops / ms[1] / 1e9, "cudnn": flops / ms[2] / 1e9}
                        del q, k, v, out, lse
                    row = {"d": d, "s": s, "causal": causal, "round": r, **res,
                           "flash3_full_over_base": res["full"]["flash3"] / res["base"]["flash3"],
                           "cudnn_full_over_base": res["full"]["cudnn"] / res["base"]["cudnn"]}
                    rows.append(row)
                    bs, fu = res["base"], res["full"]
                    print(f"D {d:3d} S {s:5d} {'causal' if causal else 'nc    '} r{r} | base "
                          f"B{bs['b']:2d} H{bs['h']:2d} {bs['rounds']:5.2f} rounds: flash3 "
                          f"{bs['flash3']:6.1f} cuDNN {bs['cudnn']:6.1f} | full B{fu['b']:2d} "
                          f"H{fu['h']:2d} {fu['rounds']:5.2f}: flash3 {fu['flash3']:6.1f} cuDNN "
                          f"{fu['cudnn']:6.1f} | full/base flash3 "
                          f"{row['flash3_full_over_base']:.3f} cuDNN "
                          f"{row['cudnn_full_over_base']:.3f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"sms": sms, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
