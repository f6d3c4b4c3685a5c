#!/usr/bin/env python3
"""How much does a partial last query tile cost the flash3 forward? (session 12 probe)

D = 64 runs 192-row tiles (3 consumer warpgroups) by default; at S_q = 1024 the last tile of a
head holds 64 real rows and two idle warpgroups. This times flash3 at S_q = k * 192 (no partial
tile), at the benchmark's S_q and just above it, with S_k fixed, so TFLOP/s per S_q shows what
the partial tile costs; the same with 2 warpgroups (128-row tiles) and cuDNN for reference.
Shapes as BENCHMARKS.md at S_k (B = 16384 / S_k, H = 2048 / D), bf16, non-causal.

Session 13 (--rotate): the rotated static rounds (Tuning::rotate_rounds) on (the default) and
off, plus S_k 16k and causal 4k / 16k rows; the variants called in turn (A B C D A B C D ...)
with one median each; --lib-base adds a second shim (e.g. the commit before) to the same loop.

Session 69 (--partial): the partial tile's cost on today's kernels, as the ceiling of two levers
for D 64 non-causal 1k (1.055x cuDNN in session 66's table): a split-K last tile (session 13's
idea, never paid) and mixed tile heights (a head of 1024 rows as 4 tiles of 192 + 2 of 128 rows
instead of 5 of 192 + 1 of 64). S_q = 5 x 192 (no partial tile), 5 x 192 + 64 (a 1-warpgroup last
tile: the benchmark row), + 128 (a 2-warpgroup last tile) and 6 x 192, at S_k 1k and the same
around 4k; the variants interleaved call by call, --rounds times, one median each. Each row also
prints the call's time against the whole-tile row's per tile: X = (t / t_full x n_full - n_whole)
/ heads, the partial tile's cost in full tiles (n_full = tiles per head at the whole-tile S_q).

usage: flash3_tail_probe.py --lib build_f3/libflash3_shim.so [--reps 30] [--d 64] [--rotate] [--lib-base OTHER.so]
       flash3_tail_probe.py --lib build_f3/libflash3_shim.so --partial [--rounds 3] [--reps 40]
"""
import argparse
import os
import statistics
import sys
import time

import torch
from torch.nn.attention import SDPBackend

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flash3_vs_peers import load, make_flash3, make_sdpa, time_it  # noqa: E402


def time_interleaved(setups, reps, warmup=3):
    """Median ms per variant, the variants called in turn (A B C A B C ...) so that clock and
    thermal drift hit all alike. setups: list of (setup, run) callables."""
    for _ in range(warmup):
        for setup, run in setups:
            setup()
            run()
    torch.cuda.synchronize()
    ev = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
           for _ in range(reps)] for _ in setups]
    for i in range(reps):
        for j, (setup, run) in enumerate(setups):
            setup()
            ev[j][i][0].record()
            run()
            ev[j][i][1].record()
    torch.cuda.synchronize()
    return [statistics.median(a.elapsed_time(b) for a, b in e) for e in ev]


def make_tensors(b, sq, sk, h, d):
    """q, k, v (bf16, BSHD, random), out and lse for one shape."""
    q = torch.randn(b, sq, h, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, sk, h, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(b, sk, h, d, device="cuda", dtype=torch.bfloat16)
    return q, k, v, torch.empty_like(q), torch.empty(b, h, sq, device="cuda", dtype=torch.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--rotate", action="store_true",
                    help="session 13: the rotated static rounds (Tuning::rotate_rounds) on and "
                         "off, plus S_k 16k and causal rows; the variants interleaved call by call")
    ap.add_argument("--lib-base", default=None,
                    help="a second shim (e.g. built from the commit before) timed as "
                         "'3 WG base' in the same loop (code generation check)")
    ap.add_argument("--partial", action="store_true",
                    help="session 69: the partial tile's cost in full tiles (see the docstring)")
    ap.add_argument("--rounds", type=int, default=3, help="--partial: interleaved rounds")
    args = ap.parse_args()
    if args.partial:
        return partial_probe(args)
    fn, set_tuning = load(args.lib)
    base = load(args.lib_base) if args.lib_base else None
    d = args.d
    torch.manual_seed(0)
    shapes = [(1024, (960, 1024, 1152), False, None), (4096, (4032, 4096, 4224), False, None)]
    # variant name -> set_tuning kwargs (None: cuDNN)
    variants = [("3 WG", {"wgs": 3}), ("2 WG", {"wgs": 2}), ("cuDNN", None)]
    if args.rotate:
        if not getattr(set_tuning, "has_rotate", False):
            raise SystemExit("--rotate: the shim has no flash3_set_knobs_rotate")
        shapes += [(16384, (16384,), False, None), (4096, (4096,), True, None),
                   (16384, (16384,), True, None)]
        variants = [("3 WG", {"wgs": 3}), ("norotate", {"wgs": 3, "rotate": 0}),
                    ("2 WG", {"wgs": 2}), ("cuDNN", None)]
    for sk, sqs, causal, batch in shapes:
        b, h = batch or max(1, 16384 // sk), 2048 // d
        for sq in sqs:
            q, k, v, out, lse = make_tensors(b, sq, sk, h, d)
            flops = 4.0 * b * h * sq * sk * d * (0.5 if causal else 1.0)
            row = [f"D={d} B={b:3d} Sk={sk:5d} Sq={sq:5d} {'causal' if causal else 'nc    '} "
                   f"(Sq/192 = {sq / 192:6.2f})"]
            # (name, setup, run): set_tuning for the variant (cuDNN: the defaults), then its call
            named = [(name, set_tuning if kw is None else (lambda kw=kw: set_tuning(**kw)),
                      make_sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, causal) if kw is None
                      else make_flash3(fn, q, k, v, out, lse, causal)) for name, kw in variants]
            if base is not None:
                named.insert(0, ("3 WG base", lambda: base[1](wgs=3),
                                 make_flash3(base[0], q, k, v, out, lse, causal)))
            if args.rotate:
                ms = time_interleaved([(setup, run) for _, setup, run in named], args.reps)
                row += [f"{name} {flops / t / 1e9:6.1f} ({t * 1e3:7.1f} us)"
                        for (name, _, _), t in zip(named, ms)]
            else:
                for name, setup, run in named:
                    setup()
                    row.append(f"{name} {flops / time_it([run], args.reps) / 1e9:6.1f}")
            set_tuning()
            print("  ".join(row) + " TFLOP/s", flush=True)


def partial_probe(args):
    """--partial: per S_k, the S_q rows below, flash3 (auto; 3 WG forced) and cuDNN interleaved."""
    fn, set_tuning = load(args.lib)
    d, kbm = args.d, 192
    torch.manual_seed(0)
    for sk in (1024, 4096):
        b, h = max(1, 16384 // sk), 2048 // d
        n_whole = sk // kbm  # whole 192-row tiles below S_k (5 at 1k, 21 at 4k)
        sqs = [n_whole * kbm + r for r in (0, 64, 128, 192)]
        variants = [("auto", {}), ("3WG", {"wgs": 3}), ("cuDNN", None)]
        rows = {}
        for rnd in range(args.rounds):
            for sq in sqs:
                q, k, v, out, lse = make_tensors(b, sq, sk, h, d)
                named = [(name, set_tuning if kw is None else (lambda kw=kw: set_tuning(**kw)),
                          make_sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, False) if kw is None
                          else make_flash3(fn, q, k, v, out, lse, False)) for name, kw in variants]
                if rnd == 0 and sq == sqs[0]:  # preheat ~1.5 s: the clock at its loaded level
                    t_end = time.time() + 1.5
                    while time.time() < t_end:
                        for _ in range(20):
                            named[0][2]()
                        torch.cuda.synchronize()
                ms = time_interleaved([(setup, run) for _, setup, run in named], args.reps)
                slots = []
                for name, kw in variants[:2]:
                    set_tuning(**kw)
                    make_flash3(fn, q, k, v, out, lse, False)()
                    slots.append(set_tuning.last_slot() if set_tuning.last_slot else -1)
                set_tuning()
                rows.setdefault(sq, []).append((ms, slots))
                flops = 4.0 * b * h * sq * sk * d
                print(f"r{rnd} D={d} B={b} H={h} Sk={sk} Sq={sq} slots {slots}: " + "  ".join(
                    f"{name} {flops / t / 1e9:6.1f} ({t * 1e3:7.1f} us)"
                    for (name, _), t in zip(variants, ms)), flush=True)
        # The partial tile's cost in full tiles per head, against the whole-tile row (sqs[0]).
        print(f"Sk={sk}: the last tile's cost in full 192-row tiles (X), per round, from the "
              f"3WG / auto / cuDNN times against Sq={sqs[0]} ({n_whole} whole tiles a head)")
        for sq in sqs[1:]:
            xs = []
            for rnd in range(args.rounds):
                t0, t1 = rows[sqs[0]][rnd][0], rows[sq][rnd][0]
                xs.append(" / ".join(f"{t1[j] / t0[j] * n_whole - n_whole:5.3f}" for j in (1, 0, 2)))
            print(f"  Sq={sq} (last tile {sq - n_whole * kbm} rows): " + ";  ".join(xs))


if __name__ == "__main__":
    main()
