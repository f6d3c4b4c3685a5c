#!/usr/bin/env python3
"""Load balance of the flash3 forward's causal tile schedules, in a cost model (session 46).

No GPU: each tile costs `tile_cost` + its K/V blocks (the kernels' num_n_blocks, top-left causal,
S_q = S_k), and a schedule's balance is the busiest CTA's load over the mean. Schedules:
  zigzag  - tile_scheduler.cuh's static rounds (m fastest, causal m reversed, odd rounds reversed);
  dynamic - greedy to the least-loaded CTA in that same order (the dynamic scheduler, idealised);
  table   - branch wip/f3lpt46's lpt_schedule.hpp: greedy longest-first in sections of 2^k
            (batch, head) pairs whose K + V fit in --section-mb.
Rows: BENCHMARKS.md's causal shapes (B = 16384 / S, H = 2048 / D) on --ctas CTAs. The numbers in
bench/notes/session46.md's lpt tables come from this script (and the table column from the
branch's C++ builder, which gives the same values).
usage: python3 bench/causal_balance_model.py [--ctas 132] [--section-mb 16,24,32,48] [--tile-cost 1.0]
       python3 bench/causal_balance_model.py --sweep 1024,8192,256   (session 47: every S of the
       range at each D, the auto's schedule (zig-zag up to 32 m blocks, dynamic past) against
       the table with 32 MB power-of-two sections, sorted by the predicted gap)
"""
import argparse
import heapq
import math

# name, S, query rows per tile, keys per K/V block, head dim (launch.cuh: D 64 causal uses 2
# consumer warpgroups (128 rows) up to S 2048 unless S is a multiple of 192, else 3 (192 rows)).
ROWS = [("D64 c1k", 1024, 128, 128, 64), ("D64 c2k", 2048, 128, 128, 64),
        ("D64 c4k", 4096, 192, 128, 64), ("D64 c16k", 16384, 192, 128, 64),
        ("D128 c1k", 1024, 128, 128, 128), ("D128 c2k", 2048, 128, 128, 128),
        ("D128 c4k", 4096, 128, 128, 128), ("D128 c16k", 16384, 128, 128, 128),
        ("D256 c1k", 1024, 128, 64, 256), ("D256 c2k", 2048, 128, 64, 256),
        ("D256 c4k", 4096, 128, 64, 256), ("D256 c16k", 16384, 128, 64, 256)]


def blocks_of(m_block, s, bm, bn):
    last_row = min((m_block + 1) * bm, s)
    return min((last_row - 1) // bn + 1, (s + bn - 1) // bn)


def current_order(m, bh):  # m blocks of the tiles, in decode_tile's order
    return [m - 1 - i for _ in range(bh) for i in range(m)]


def sectioned_order(m, bh, sec):
    return [m - 1 - i for h0 in range(0, bh, sec) for i in range(m)
            for _ in range(h0, min(bh, h0 + sec))]


def zigzag(order, g, cost):
    load = [0.0] * g
    for r in range(math.ceil(len(order) / g)):
        for c in range(g):
            t = r * g + (g - 1 - c if r & 1 else c)
            if t < len(order):
                load[c] += cost(order[t])
    return load


def greedy(order, g, cost):
    heap = [(0.0, c) for c in range(g)]
    for mb in order:
        l, c = heapq.heappop(heap)
        heapq.heappush(heap, (l + cost(mb), c))
    return [l for l, _ in heap]


def ratio(load):
    return max(load) / (sum(load) / len(load))


def section_heads(mb, s, d, bh):
    """(heads whose K + V (4 S D bytes each) fit in mb MB, the largest power of two of them
    within bh: lpt_schedule.hpp lpt_heads_per_section)"""
    sec = max(1, (mb << 20) // (4 * s * d))
    p2 = 1
    while 2 * p2 <= min(sec, bh):
        p2 *= 2
    return sec, p2


def table_ratio(m, bh, s, d, ctas, cost, mb=32):
    return ratio(greedy(sectioned_order(m, bh, section_heads(mb, s, d, bh)[1]), ctas, cost))


def sweep(args):
    lo, hi, step = (int(x) for x in args.sweep.split(","))
    out = []
    for d, bn in ((64, 128), (128, 128), (256, 64)):
        for s in range(lo, hi + 1, step):
            bm = 128 if d != 64 or (s <= 2048 and s % 192 != 0) else 192
            m, bh = (s + bm - 1) // bm, (16384 // s) * (2048 // d)
            cost = lambda mb, s=s, bm=bm, bn=bn: args.tile_cost + blocks_of(mb, s, bm, bn)  # noqa: E731
            cur = current_order(m, bh)
            auto = zigzag(cur, args.ctas, cost) if m <= 32 else greedy(cur, args.ctas, cost)
            a, t = ratio(auto), table_ratio(m, bh, s, d, args.ctas, cost)
            out.append((a / t - 1, d, s, m, bh, a, t))
    print("predicted gain of the table over the auto's schedule (busiest CTA / mean load)")
    for gain, d, s, m, bh, a, t in sorted(out, reverse=True):
        print(f"D {d:3d} S {s:5d}: {m:3d} m blocks x {bh:4d} heads  "
              f"{'zigzag ' if m <= 32 else 'dynamic'} {a:.3f}  table {t:.3f}  gain {100 * gain:+.1f} %")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctas", type=int, default=132)
    ap.add_argument("--section-mb", default="16,24,32,48")
    ap.add_argument("--tile-cost", type=float, default=1.0)
    ap.add_argument("--sweep", default=None, help="LO,HI,STEP: S from LO to HI (see usage)")
    args = ap.parse_args()
    if args.sweep:
        sweep(args)
        return
    mbs = [int(x) for x in args.section_mb.split(",")]
    print("max / mean load per CTA; table: heads per section in brackets")
    for name, s, bm, bn, d in ROWS:
        m, bh = (s + bm - 1) // bm, (16384 // s) * (2048 // d)
        cost = lambda mb: args.tile_cost + blocks_of(mb, s, bm, bn)  # noqa: E731
        cur = current_order(m, bh)
        cols = [f"zigzag {ratio(zigzag(cur, args.ctas, cost)):.3f}",
                f"dynamic {ratio(greedy(cur, args.ctas, cost)):.3f}"]
        for mb in mbs:
            sec, p2 = section_heads(mb, s, d, bh)
            for label, h in ((f"{mb}MB", sec), (f"{mb}MB pow2", p2)):
                if label.endswith("pow2") and h == sec:
                    continue
                cols.append(f"{label}({h}) {ratio(greedy(sectioned_order(m, bh, h), args.ctas, cost)):.3f}")
        print(f"{name:10s} {m:3d} m blocks x {bh:4d} heads: " + "  ".join(cols))


if __name__ == "__main__":
    main()
