#!/usr/bin/env python3
"""Makespan of the flash3 backward's causal launch under two CTA orders (session 28, issue #5).

List scheduling on `--sms` SMs, one CTA per SM, CTAs started in launch order. A CTA costs its
items (query blocks that see its key block, top-left causal, Sq = Sk) plus `--c0` items of fixed
cost (K / V load, pipeline fill, epilogue). Two orders are compared:
  default  the grid's order, key block fastest (bwd_launch.cuh / bwd_launch_d256.cuh);
  lpt      bwd_order.hpp's lpt_cta: key block 0 of every pair first, within super-groups of
           `--group` (head, batch) pairs (0: one group of all pairs).
Prints each order's makespan over the ideal (total work / SMs).

Outcome (session 29, bench/notes/session29.md call 4): the model was wrong about the hardware.
It predicted 1.13 -> 1.01 at S 1k / 4k (D 64 / 128); the measured lpt order lost 3-5 % at 1k
and gained <= 2 % at 4k, so bwd_order.hpp was removed (branch wip/f3d256rs28). What the model
leaves out: mixing (head, batch) pairs costs L2 reuse, and the default order already starts
each pair at its heaviest key block. Kept as a record; do not tune orders on it alone.

usage: bwd_order_sim.py [--shapes 16x8x1024,4x8x4096,1x8x16384] [--bn 64,128] [--bm 64]
                        [--group 0,16] [--c0 1.5] [--sms 132]
"""
import argparse
import heapq


def makespan(costs, sms):
    free = [0.0] * sms
    heapq.heapify(free)
    for c in costs:
        heapq.heappush(free, heapq.heappop(free) + c)
    return max(free)


def costs(b, h, s, bn, bm, c0, order, group):
    nkb, nmb, pairs = s // bn, s // bm, b * h
    cost = lambda kb: nmb - (kb * bn) // bm + c0
    if order == "default":
        return [cost(kb) for _ in range(pairs) for kb in range(nkb)]
    group = group or pairs
    out = []
    for g0 in range(0, pairs, group):
        for kb in range(nkb):
            out += [cost(kb)] * min(group, pairs - g0)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="16x8x1024,4x8x4096,1x8x16384", help="BxHxS list")
    ap.add_argument("--bn", default="64,128", help="keys per CTA (D 256: 64, D 64 / 128: 128)")
    ap.add_argument("--bm", type=int, default=64, help="query rows per item")
    ap.add_argument("--group", default="0,16", help="lpt super-group sizes (0: all pairs)")
    ap.add_argument("--c0", type=float, default=1.5, help="fixed cost per CTA, in items")
    ap.add_argument("--sms", type=int, default=132)
    args = ap.parse_args()
    for bn in map(int, args.bn.split(",")):
        for shp in args.shapes.split(","):
            b, h, s = map(int, shp.split("x"))
            base = costs(b, h, s, bn, args.bm, args.c0, "default", 0)
            ideal = sum(base) / args.sms
            row = f"bn {bn:3d} B {b:2d} H {h} S {s:5d}: default {makespan(base, args.sms) / ideal:.3f}"
            for g in map(int, args.group.split(",")):
                lpt = costs(b, h, s, bn, args.bm, args.c0, "lpt", g)
                row += f"  lpt(group {g or 'all'}) {makespan(lpt, args.sms) / ideal:.3f}"
            print(row)


if __name__ == "__main__":
    main()
