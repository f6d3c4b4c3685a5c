#!/usr/bin/env python3
"""What does the last, partial wave of CTAs cost the flash forward and FA-2? (session 18 probe)

Every BENCHMARKS.md shape has the same number of query tiles for a given D, whatever S is:
(16384 / S) * (2048 / D) * ceil(S / BM). At D = 256 our forward and FA-2 both run 64-row CTAs,
two per SM (132 SMs: 264 slots), and 2048 tiles are 7.76 waves: in the last one 64 slots have no
work. If a CTA takes the same time in every wave, the shape runs 8 CTA times for 7.76 of work.

This times attnkit:flash and torch SDPA FLASH_ATTENTION (FA-2), interleaved call by call (after
a sacrificial copy of ours), at the benchmark's (B, H) and at a nearby (B', H') whose tile count
is a multiple of the slot count ("full"), same S, D, causal mode. TFLOP/s counts the work each
shape does, so full / base shows what the partial wave costs each implementation.

usage: flash_wave_probe.py --lib build/libattnkit_c.so [--d 256] [--s 512,1024,4096]
                           [--causal 0] [--bm 64] [--per-sm 2] [--reps 30] [--rounds 2]
                           [--json out.json]
"""
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attnkit_c import AttnkitC, tensor_of  # noqa: E402
from flash3_tail_probe import time_interleaved  # noqa: E402
from flash3_wave_probe import full_shape  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--d", default="256")
    ap.add_argument("--s", default="512,1024,4096")
    ap.add_argument("--causal", default="0")
    ap.add_argument("--bm", type=int, default=64, help="query rows per CTA (ours and FA-2)")
    ap.add_argument("--per-sm", type=int, default=2, help="resident CTAs per SM")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    ak = AttnkitC(args.lib)
    slots = args.per_sm * torch.cuda.get_device_properties(0).multi_processor_count
    torch.manual_seed(0)
    rows = []
    for d in (int(x) for x in args.d.split(",")):
        for s in (int(x) for x in args.s.split(",")):
            for causal in (bool(int(x)) for x in args.causal.split(",")):
                nm = (s + args.bm - 1) // args.bm
                b, h = max(1, 16384 // s), 2048 // d
                b2, h2 = full_shape(b, h, nm, slots)
                opts = ak.options("flash", causal="bottom_right" if causal else None,
                                  stream=torch.cuda.current_stream().cuda_stream)
                for r in range(args.rounds):
                    res = {}
                    for tag, (bb, hh) in (("base", (b, h)), ("full", (b2, h2))):
                        q, k, v = (torch.randn(bb, s, hh, d, device="cuda", dtype=torch.bfloat16)
                                   for _ in range(3))
                        out = torch.empty_like(q)
                        ts = [tensor_of(t) for t in (q, k, v, out)]
                        tq, tk, tv = (t.transpose(1, 2) for t in (q, k, v))

                        def ours():
                            ak.forward(ts[0], ts[1], ts[2], ts[3], None, opts)

                        def fa2():
                            with sdpa_kernel(SDPBackend.FLASH_ATTENTION), torch.no_grad():
                                return F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)

                        ours()
                        err = ((out.float() - fa2().transpose(1, 2).float()).norm() /
                               out.float().norm()).item()
                        if not err < 2e-2:
                            raise SystemExit(f"D {d} S {s} B {bb} H {hh}: ours vs FA-2 rel {err}")
                        nothing = lambda: None  # noqa: E731
                        ms = time_interleaved([(nothing, ours), (nothing, ours), (nothing, fa2)],
                                              args.reps)
                        flops = 4.0 * bb * hh * s * s * d * (0.5 if causal else 1.0)
                        tiles = bb * hh * nm
                        res[tag] = {"b": bb, "h": hh, "tiles": tiles, "waves": tiles / slots,
                                    "ours": flops / ms[1] / 1e9, "fa2": flops / ms[2] / 1e9,
                                    "ours_ms": ms[1], "fa2_ms": ms[2]}
                        del q, k, v, out, tq, tk, tv
                    row = {"d": d, "s": s, "causal": causal, "round": r, **res,
                           "ours_full_over_base": res["full"]["ours"] / res["base"]["ours"],
                           "fa2_full_over_base": res["full"]["fa2"] / res["base"]["fa2"]}
                    rows.append(row)
                    bs, fu = res["base"], res["full"]
                    print(f"D {d:3d} S {s:5d} {'causal' if causal else 'nc    '} r{r} | base "
                          f"B{bs['b']:2d} H{bs['h']:2d} {bs['waves']:5.2f} waves: ours "
                          f"{bs['ours']:6.1f} FA-2 {bs['fa2']:6.1f} ({bs['ours'] / bs['fa2']:.3f})"
                          f" | full B{fu['b']:2d} H{fu['h']:2d} {fu['waves']:5.2f}: ours "
                          f"{fu['ours']:6.1f} FA-2 {fu['fa2']:6.1f} ({fu['ours'] / fu['fa2']:.3f})"
                          f" | full/base ours {row['ours_full_over_base']:.3f} FA-2 "
                          f"{row['fa2_full_over_base']:.3f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"slots": slots, "bm": args.bm, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
