#!/usr/bin/env python3
"""Is compiled FlexAttention right on [B, H, S, D] views of BSHD storage (the layout
bench/peers.py gives it)? Session 23's first softcap benchmark found it 1.41 (relative) off there
and right on contiguous copies. Compares, per case, compiled flex on the transposed view and on a
contiguous copy with an fp32 reference (rows independent: the last 256 query rows of batch 0,
heads 0-1, against every key), without and with a softcap score_mod, causal and not.

  python3 bench/gpu/flex_layout_check.py [--s 4096] [--d 128]
"""
import argparse

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention


def reference(q, k, v, causal, cap, rows=256):
    s, d = q.shape[1], q.shape[3]
    i0 = s - rows
    qs = q[0, i0:, :2].float().transpose(0, 1)
    ks, vs = (t[0, :, :2].float().transpose(0, 1) for t in (k, v))
    sc = qs @ ks.transpose(1, 2) / d ** 0.5
    if cap:
        sc = cap * torch.tanh(sc / cap)
    if causal:
        i = torch.arange(i0, s, device="cuda")[:, None]
        sc = sc.masked_fill(torch.arange(s, device="cuda")[None, :] > i, float("-inf"))
    return (torch.softmax(sc, -1) @ vs).transpose(0, 1), i0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--s", type=int, default=4096)
    ap.add_argument("--d", type=int, default=128)
    args = ap.parse_args()
    torch._dynamo.config.cache_size_limit = 64
    s, d = args.s, args.d
    b, h = 16384 // s, 2048 // d
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    compiled = torch.compile(flex_attention, dynamic=False)
    for causal in (False, True):
        bm = create_block_mask(lambda b_, h_, qi, kv: qi >= kv, None, None, s, s,
                               device="cuda") if causal else None
        for cap in (0.0, 50.0):
            sm = (lambda sc, b_, h_, qi, kv: cap * torch.tanh(sc / cap)) if cap else None
            ref, i0 = reference(q, k, v, causal, cap)
            for layout in ("view", "contiguous"):
                ins = [t.transpose(1, 2) for t in (q, k, v)]
                if layout == "contiguous":
                    ins = [t.contiguous() for t in ins]
                out = compiled(*ins, score_mod=sm, block_mask=bm).transpose(1, 2)
                got = out[0, i0:, :2].float()
                rel = float((got - ref).norm() / ref.norm())
                print(f"S={s} D={d} causal={int(causal)} softcap={cap:g} {layout:10s} "
                      f"rel err {rel:.2e} {'WRONG' if rel > 2e-2 else 'ok'}", flush=True)


if __name__ == "__main__":
    main()
