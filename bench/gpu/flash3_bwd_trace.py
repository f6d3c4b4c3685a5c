#!/usr/bin/env python3
"""Where a flash3 D 256 backward item's clocks go (session 27, issue #5), from the clock64 stamps
of a measurement build (src/backends/flash3/bwd_trace.hpp: ATTNKIT_FLASH3_BWD_TRACE; built and
run by bench/gpu/flash3_bwd_trace_run.sh).

Per shape: one backward call (after two warm-up calls) with ATTNKIT_FLASH3_BWD_TRACE_OUT set; the
library writes the call's stamps (the first 64 items of the first 264 CTAs, per consumer
warpgroup). Printed per warpgroup: the median over items 1 .. n-2 of each phase, in SM clocks:
  wait        top -> Q / dO landed (the full-barrier wait; session 28)
  issue       landed -> S^T / dP^T issued (32 wgmma issues: they block while the queue is full)
  sdp         issued -> S^T / dP^T complete
  softmax     complete -> P^T / dS^T stored (exp, products, packing, stores, proxy fence)
  barrier     stored -> the item's 256-thread barrier passed (the other warpgroup's lag)
  dq          barrier -> dQ / dV / dK complete (12 wgmma issues; dQ's second half stored
              into the stage under dK; session 27's kernel: dQ complete)
  red         -> dQ's first half stored, proxy fence (session 27: 16 float4 atomics issued)
  dvdk        -> the stage released (session 27: dV / dK complete)
  gap         stage released -> the next item's top (loop overhead)
  period      this item's top -> the next item's top
against the GEMMs alone (wgmma_rate_probe bwd256, session 27: 3401 clocks per item).
With ATTNKIT_FLASH3_BWD_D256_LAYOUT=rs (branch wip/f3d256rs28) the RS layout stamps the nearest
points (bwd_d256_rs.cuh): sdp = S^T (WG 0) or dP^T (WG 1); softmax = P^T or dS^T stored;
barrier = dV / dK issued and the dS^T hand-off passed; dq = dV / dK and dQ done; red = dQ stored.

usage: flash3_bwd_trace.py --lib build_trace/libattnkit_c.so [--shapes 1k,4k] [--causal no,yes]
       flash3_bwd_trace.py --selftest   (the arithmetic on synthetic stamps; no GPU)
"""
import argparse
import os
import statistics
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/

CTAS, ITEMS, WGS, STAMPS = 264, 64, 2, 9  # bwd_trace.hpp
# Phase k runs from stamp ORDER[k] to ORDER[k + 1] (kStampLanded, index 8, sits after the top).
ORDER = [0, 8, 1, 2, 3, 4, 5, 6, 7]
PHASES = ["wait", "issue", "sdp", "softmax", "barrier", "dq", "red", "dvdk"]


def parse(raw):
    """raw little-endian uint64 words -> stamps[cta][item][wg] = [8 clocks] (0 = not reached)."""
    n = CTAS * ITEMS * WGS * STAMPS
    words = struct.unpack(f"<{n}Q", raw[: 8 * n])
    out = []
    for c in range(CTAS):
        items = []
        for i in range(ITEMS):
            base = ((c * ITEMS + i) * WGS) * STAMPS
            items.append([list(words[base + w * STAMPS: base + (w + 1) * STAMPS]) for w in range(WGS)])
        out.append(items)
    return out


def summarize(stamps):
    """Median per warpgroup of each phase and of the period, over items 1 .. n-2 of every CTA."""
    res = {}
    for w in range(WGS):
        ph = {p: [] for p in PHASES + ["gap", "period"]}
        for items in stamps:
            n = sum(1 for it in items if all(it[w]))
            for i in range(1, n - 1):
                s = items[i][w]
                for k, p in enumerate(PHASES):
                    ph[p].append(s[ORDER[k + 1]] - s[ORDER[k]])
                ph["gap"].append(items[i + 1][w][0] - s[ORDER[-1]])
                ph["period"].append(items[i + 1][w][0] - s[0])
        res[w] = {p: (statistics.median(v) if v else float("nan")) for p, v in ph.items()}
    return res


def selftest():
    # Synthetic: 2 CTAs x 4 items, phases 10, 20, ..., 80 clocks (in ORDER), gap 0, period 360.
    stamps = [[[[0] * STAMPS for _ in range(WGS)] for _ in range(ITEMS)] for _ in range(CTAS)]
    for c in range(2):
        for i in range(4):
            for w in range(WGS):
                t = 1000 + 360 * i
                for k in range(STAMPS):
                    stamps[c][i][w][ORDER[k]] = t
                    t += 10 * (k + 1)
    words = []
    for c in range(CTAS):
        for i in range(ITEMS):
            for w in range(WGS):
                words += stamps[c][i][w]
    res = summarize(parse(struct.pack(f"<{len(words)}Q", *words)))
    want = {p: 10 * (k + 1) for k, p in enumerate(PHASES)}
    want["gap"], want["period"] = 0, 360
    ok = all(res[w][p] == v for w in range(WGS) for p, v in want.items())
    print("selftest", "ok" if ok else f"FAILED: {res}")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default="build_trace/libattnkit_c.so")
    ap.add_argument("--shapes", default="1k,4k")
    ap.add_argument("--causal", default="no,yes")
    ap.add_argument("--selftest", action="store_true")
    args = ap.parse_args()
    if args.selftest:
        return selftest()
    import torch
    from attnkit_c import AttnkitC
    from peers import Shape, attnkit_runner, make_sets, parse_sizes
    path = os.path.join(tempfile.mkdtemp(), "bwd_trace.bin")
    os.environ["ATTNKIT_FLASH3_BWD_TRACE_OUT"] = path  # read by the library per call
    lib = AttnkitC(args.lib)
    cols = PHASES + ["gap", "period"]
    print(f"{'shape':38s} wg " + " ".join(f"{p:>8s}" for p in cols))
    for causal in [c == "yes" for c in args.causal.split(",")]:
        for s in parse_sizes(args.shapes):
            shp = Shape(s, 256, causal)
            sets = make_sets(torch, shp, 2, True)
            fn, _ = attnkit_runner(torch, lib, shp, "flash3", sets, "bwd")
            for i in range(3):  # two warm-up calls; the third call's stamps remain in the file
                fn(i)
            torch.cuda.synchronize()
            with open(path, "rb") as f:
                res = summarize(parse(f.read()))
            for w in range(WGS):
                print(f"{str(shp):38s} {w:2d} " + " ".join(f"{res[w][p]:8.0f}" for p in cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
