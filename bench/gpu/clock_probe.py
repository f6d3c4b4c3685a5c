#!/usr/bin/env python3
"""SM clock and board power while one implementation runs back to back (bench/notes/flash.md,
session 8): for each of attnkit:<backend> and torch SDPA <peer> on one BENCHMARKS.md shape, calls
are queued for --seconds while nvidia-smi samples clocks.sm / power.draw every 50 ms; prints the
median clock and power per implementation and the calls' mean time (CUDA events over the window).
The question it answers: does a kernel that is faster at boost clock (ncu, --clock-control none,
one launch) lose its lead in a sustained run because the board lowers the clock for it?

  python3 bench/gpu/clock_probe.py --lib build-gpu/libattnkit_c.so --s 2048 --d 256 [--causal]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/
import peers  # noqa: E402


def sample(fn, torch, seconds):
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                            "-lms", "50"], stdout=subprocess.PIPE, text=True)
    time.sleep(0.3)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    n, t0 = 0, time.time()
    s.record()
    while time.time() - t0 < seconds:
        for _ in range(10):
            fn(n)
            n += 1
        torch.cuda.synchronize()  # keep the host within ~10 calls of the GPU
    e.record()
    torch.cuda.synchronize()
    smi.terminate()
    out, _ = smi.communicate()
    rows = [r.split(",") for r in out.strip().splitlines() if r.count(",") == 1]
    clk = [float(a) for a, _ in rows]
    pwr = [float(b) for _, b in rows]
    return s.elapsed_time(e) / n, statistics.median(clk), statistics.median(pwr), len(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--backend", default="flash")
    ap.add_argument("--peer", default="flash")
    ap.add_argument("--s", type=int, default=2048)
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--pass", dest="pas", default="fwd")
    ap.add_argument("--seconds", type=float, default=4.0)
    a = ap.parse_args()
    import torch
    from attnkit_c import AttnkitC

    lib = AttnkitC(a.lib)
    shp = peers.Shape(a.s, a.d, a.causal)
    sets = peers.make_sets(torch, shp, 3, True)
    impls = [(f"attnkit:{a.backend}", peers.attnkit_runner(torch, lib, shp, a.backend, sets, a.pas)[0]),
             (f"torch:{a.peer}", peers.torch_runner(torch, shp, a.peer, sets, a.pas)[0])]
    fl = peers.flops(shp.b, shp.h, shp.s, shp.d, shp.causal, a.pas)
    for rep in range(2):
        for name, fn in impls:
            time.sleep(1.0)
            ms, clk, pwr, k = sample(fn, torch, a.seconds)
            print(f"{rep} {name:16s} {ms * 1e3:8.1f} us/call {fl / ms / 1e9:7.1f} TFLOP/s  "
                  f"SM clock {clk:6.0f} MHz  power {pwr:6.1f} W  ({k} samples)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
