#!/usr/bin/env python3
"""Profile target for ncu: flash3 forward and torch SDPA cuDNN once each per shape (session 3).

Each implementation runs exactly once per (D, S, causal) after the inputs are made, so an ncu
filter like -k regex:'fwd_kernel|sdpa|fprop' sees one launch of each. Optional --variants adds one
flash3 launch per named knob set (same keys as flash3_vs_peers.py set_tuning).
usage: ncu ... python3 flash3_prof.py --lib build_f3/libflash3_shim.so --shapes 128:1024:0,128:16384:0
"""
import argparse
import math

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import flash3_vs_peers as peers

VARIANTS = {"early": {"early": 1}, "v3": {"vst": 3}, "ordered": {"ordered": 1}, "cluster": {"cluster": 2},
            "base": {"uni": 0, "lazy": 0}, "uni": {"uni": 1, "lazy": 0}, "unilazy": {"uni": 1, "lazy": 1},
            "qreg": {"qreg": 1}, "diet": {"diet": 1},
            # session 19: the split tail (both launches), and its launch 2 alone (tail_probe)
            "tail": {"tail": 1}, "k2": {"tail": 1, "tprobe": 2},
            # session 41: the row sums in P V off / forced (tc_row_sum 0 / 1), with the ordered
            # softmax forced (D 128 1k: slot 31 / its twin 37 instead of the auto's slot 15)
            "tc0": {"tc": 0}, "tc": {"tc": 1}, "ordtc0": {"ordered": 1, "tc": 0},
            "ordtc": {"ordered": 1}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--shapes", required=True, help="D:S:causal,...")
    ap.add_argument("--variants", default="")
    a = ap.parse_args()
    fn, set_tuning = peers.load(a.lib)
    torch.manual_seed(0)
    for spec in a.shapes.split(","):
        d, s, c = (int(x) for x in spec.split(":"))
        b, h = 16384 // s, 2048 // d
        q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        out = torch.empty_like(q)
        lse = torch.empty(b, h, s, device="cuda", dtype=torch.float32)
        run = peers.make_flash3(fn, q, k, v, out, lse, bool(c))
        set_tuning()
        run()
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            ref = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                                 v.transpose(1, 2), is_causal=bool(c))
        for name in [x for x in a.variants.split(",") if x]:
            set_tuning(**VARIANTS[name])
            run()
            set_tuning()
        torch.cuda.synchronize()
        rel = ((out.float() - ref.transpose(1, 2).float()).norm() / ref.float().norm()).item()
        print(f"prof D={d} S={s} causal={c} rel_vs_cudnn {rel:.2e}", flush=True)


if __name__ == "__main__":
    main()
