#!/usr/bin/env python3
"""Is a backward row's per-process swing an allocation effect? (session 33)

flash3's D 128 non-causal S 4k backward read 500-572 TFLOP/s in seven processes of session 33
(cuDNN 564), while its other rows moved by ~1 %. This probe times, in ONE process, T "trials" of
the same shape, each with its own allocations: a fresh torch stream (so a fresh attnkit
workspace: cuda::workspace is cached per (device, stream)), a dummy allocation of a random size
first (shifting every later address), fresh input sets and fresh dq / dk / dv. The trials are
timed round-robin for --rounds rounds (median of --runs calls each, CUDA events, peers.py's
Timer). A trial that is slow in every round while others are fast says the swing follows the
allocation, not the process. Then the slowest and the fastest trial swap workspaces (the inputs
and outputs of one run on the other's stream) to say which allocation it follows.

  python3 bench/gpu/bwd_swing_probe.py --lib build_sm/libattnkit_c.so --cases 128:4096:0,128:1024:0
"""
import argparse
import os
import random
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import peers  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--backend", default="flash3")
    ap.add_argument("--cases", default="128:4096:0", help="D:S:causal, comma-separated")
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--sets", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    import torch
    from attnkit_c import AttnkitC

    lib = AttnkitC(args.lib)
    rng = random.Random(args.seed)
    timer = peers.Timer(torch, warmup=3, runs=args.runs)
    for case in args.cases.split(","):
        d, s, c = (int(x) for x in case.split(":"))
        shp = peers.Shape(s, d, bool(c))
        fl = peers.flops(shp.b, shp.h, shp.s, shp.d, shp.causal, "bwd")
        trials = []  # (name, fn, stream, sets)
        for t in range(args.trials):
            st = torch.cuda.Stream()
            pad = torch.empty(rng.randrange(0, 64 << 20) + 256 * rng.randrange(0, 4096),
                              dtype=torch.uint8, device="cuda")
            with torch.cuda.stream(st):
                sets = peers.make_sets(torch, shp, args.sets, True)
                fn, outs = peers.attnkit_runner(torch, lib, shp, args.backend, sets, "bwd")
            torch.cuda.synchronize()
            ptrs = " ".join(f"{k}={outs[k].data_ptr() % (2 << 20):#x}" for k in ("dq", "dk", "dv"))
            print(f"{shp} trial {t}: q0={sets[0]['q'].data_ptr() % (2 << 20):#x} {ptrs} "
                  f"(mod 2 MiB)", flush=True)
            trials.append((f"t{t}", fn, st, sets, pad))

        def time_all(items, rounds):
            res = {name: [] for name, *_ in items}
            for r in range(rounds):
                order = items if r % 2 == 0 else items[::-1]
                for name, fn, st, *_ in order:
                    with torch.cuda.stream(st):
                        ms = timer(fn)[0]
                    res[name].append(fl / ms / 1e9)
            return res

        res = time_all(trials, args.rounds)
        med = {k: statistics.median(v) for k, v in res.items()}
        for k, v in res.items():
            print(f"{shp} {k}: " + " ".join(f"{x:7.1f}" for x in v) + f"  median {med[k]:7.1f}",
                  flush=True)
        lo, hi = min(med, key=med.get), max(med, key=med.get)
        print(f"{shp} spread: slowest {lo} {med[lo]:.1f}, fastest {hi} {med[hi]:.1f} "
              f"({med[hi] / med[lo] - 1:+.1%})", flush=True)
        if med[hi] / med[lo] < 1.03:
            continue
        # Swap: the slow trial's inputs / outputs on the fast trial's stream (its workspace), and
        # the other way round.
        by = {name: (st, sets) for name, _, st, sets, _ in trials}
        cross = []
        for a, b in ((lo, hi), (hi, lo)):
            st_b = by[b][0]
            with torch.cuda.stream(st_b):
                fn, _ = peers.attnkit_runner(torch, lib, shp, args.backend, by[a][1], "bwd")
            cross.append((f"{a}-inputs+{b}-ws", fn, st_b))
        items = [(lo, trials[int(lo[1:])][1], by[lo][0]), (hi, trials[int(hi[1:])][1], by[hi][0])]
        res = time_all(items + cross, args.rounds)
        for k, v in res.items():
            print(f"{shp} swap {k}: " + " ".join(f"{x:7.1f}" for x in v) +
                  f"  median {statistics.median(v):7.1f}", flush=True)
        del trials
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
