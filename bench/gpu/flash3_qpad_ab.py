#!/usr/bin/env python3
"""Bottom-aligned causal D 64 tiles without kernel code: a proxy A/B (session 59 design, section 4
of bench/notes/fwd-d64-causal-1k-s59.md; created in session 66 for
bench/notes/fwd-d64-causal1k-study-s66.md's P1).

A variant whose name starts with "pad" runs Q padded with PAD zero rows on top (S + PAD query rows)
with bottom-right causal alignment: its rows PAD.. attend exactly the keys of the unpadded
top-left causal call, but the tiles now end at the last query row (with S + PAD a multiple of 192
the 3-warpgroup kernel's 192-row tiles are bottom-aligned). The other variants run the plain
causal call. Each variant's output (the padded ones' rows PAD..) is compared with the first
variant's (max |difference|: not bitwise, the tiles differ), then all are timed in one process
(flash3_knob_ab.time_blocks: 1-second blocks, order reversed in odd rounds). TFLOP/s are the
unpadded call's causal FLOPs over each variant's time, so a padded variant is charged for its junk
rows: a lower bound on what bottom-aligned tiles would give.

usage (from the repository root):
  python3 bench/gpu/flash3_qpad_ab.py LIB S PAD ROUNDS NAME=[KNOB:V,...] ...
  e.g. flash3_qpad_ab.py build_shim/libflash3_shim.so 1024 128 3 def= pad= padlpt=lpt:1 def2=
(KNOB as flash3_vs_peers.py's set_tuning keywords; D 64, B = 16384 / S, H = 32, bf16.)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from flash3_knob_ab import parse_variant, time_blocks  # noqa: E402
from flash3_vs_peers import load, make_flash3  # noqa: E402


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    lib, s, pad, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    fn, set_tuning = load(lib)
    d = 64
    b, h = 16384 // s, 2048 // d
    torch.manual_seed(0)
    q = torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16)
    k, v = torch.randn_like(q), torch.randn_like(q)
    qp = torch.zeros(b, s + pad, h, d, device="cuda", dtype=torch.bfloat16)
    qp[:, pad:] = q

    def runner(qq, causal):  # causal: 1 top-left, 2 bottom-right (flash3_shim.cpp)
        o = torch.empty_like(qq)
        lse = torch.empty(b, h, qq.shape[1], device="cuda", dtype=torch.float32)
        return make_flash3(fn, qq, k, v, o, lse, causal), o

    setups, names, outs = [], [], {}
    for text in sys.argv[5:]:
        name, kw = parse_variant(text)
        padded = name.startswith("pad")
        run, o = runner(qp, 2) if padded else runner(q, 1)
        set_tuning(**kw)
        run()
        torch.cuda.synchronize()
        outs[name] = o[:, pad:] if padded else o
        ref = outs[(names or [name])[0]]
        last_lpt = getattr(set_tuning, "last_lpt", None)
        print(f"{name}: slot {set_tuning.last_slot()} lpt rounds "
              f"{last_lpt() if last_lpt else '?'} max|out - first| "
              f"{(outs[name].float() - ref.float()).abs().max().item():.2e}", flush=True)
        setups.append((lambda kw=kw: set_tuning(**kw), run))
        names.append(name)
    flops = 4.0 * b * h * s * s * d * 0.5
    windows = [[] for _ in setups]
    for r in range(rounds):
        tf = [flops / (ms * 1e-3) / 1e12 for ms in time_blocks(setups, 1.0, r, windows)]
        print(f"S={s} r{r} " + "  ".join(f"{n} {x:6.1f} ({x / tf[0]:.3f})"
                                          for n, x in zip(names, tf)), flush=True)
    set_tuning()


if __name__ == "__main__":
    main()
