#!/usr/bin/env python3
"""Timeline of flash3's split tail (session 19, src/backends/flash3/tail.cuh) from a trace build.

Needs a shim built with ATTNKIT_FLASH3_TRACE (`F3_TRACE=1 F3_DIMS=128 bash
bench/gpu/flash3_shim_only.sh`). kernel.cuh stamps, per CTA: thread 0's %globaltimer and clock64
at entry and exit (trace slot 47; 46 in the tail kernel), and in the tail kernel consumer
warpgroup 0's clock64 when it is ready, after its last flush turn (the last piece's epilogue and
merge), after griddepcontrol.wait, and at each piece's start and return. For D 128 non-causal at
S 1k and 16k (the benchmark's B, H), launch 2 alone (Tuning::tail_probe = 2) and both launches,
this prints: launch 1's exit spread, launch 2's entry / exit spread (globaltimer, us, from launch
1's first exit), and over launch 2's CTAs the medians / maxima (us) of: entry -> consumer ready,
each piece's time (start -> return), last return -> flush done, flush done -> after the wait,
and entry -> exit.
usage: flash3_tail_trace.py --lib build_trace/libflash3_shim.so [--s 1024,16384]
"""
import argparse
import ctypes
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flash3_tile_trace import KMAX, WGS, WORDS, traced_call  # noqa: E402
from flash3_vs_peers import load, make_flash3  # noqa: E402


def stats(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    return f"med {statistics.median(xs):7.2f} max {max(xs):7.2f} min {min(xs):7.2f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--s", default="1024,16384")
    a = ap.parse_args()
    fn, set_tuning = load(a.lib)
    lib = ctypes.CDLL(a.lib)
    lib.flash3_set_trace.argtypes = [ctypes.c_void_p]
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    ghz = getattr(props, "clock_rate", 1980000) / 1e6  # kHz -> GHz (max clock)
    buf = torch.zeros(sms * KMAX * WGS * WORDS, dtype=torch.int64, device="cuda")
    d = 128
    torch.manual_seed(0)
    for s in map(int, a.s.split(",")):
        b, h = max(1, 16384 // s), 2048 // d
        q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        out = torch.empty_like(q)
        lse = torch.empty(b, h, s, device="cuda", dtype=torch.float32)
        run = make_flash3(fn, q, k, v, out, lse, False)
        for name, kw in (("launch 2 alone", {"tail": 1, "tprobe": 2}), ("both", {"tail": 1})):
            set_tuning(**kw)
            t = traced_call(run, lib, buf, sms)
            set_tuning()
            us = lambda cyc: cyc / ghz / 1000.0  # noqa: E731
            k1 = [(c[47][0][0], c[47][0][1]) for c in t if c[47][0][1] > 0]
            k2 = [c for c in t if c[46][0][1] > 0]
            t0 = min([x for x, _ in k1] + [c[46][0][0] for c in k2])
            print(f"D={d} S={s} {name}: clock {ghz:.2f} GHz (max; stamps in us)")
            if k1:
                print(f"  launch 1 exits   (us from first entry) {stats([(y - t0) / 1e3 for _, y in k1])}")
            print(f"  launch 2 entries (us from first entry) {stats([(c[46][0][0] - t0) / 1e3 for c in k2])}")
            print(f"  launch 2 exits   (us from first entry) {stats([(c[46][0][1] - t0) / 1e3 for c in k2])}")
            print(f"  launch 2 entry -> exit (gt)            {stats([(c[46][0][1] - c[46][0][0]) / 1e3 for c in k2])}")
            print(f"  entry -> consumer ready                {stats([us(c[48][0][0] - c[46][0][2]) for c in k2])}")
            for i in range(4):
                ps = [c[49 + i][0] for c in k2 if c[49 + i][0][1] > 0]
                if not ps:
                    break
                info = [p[3] for p in ps]
                print(f"  piece {i}: {len(ps):3d} CTAs, blocks {stats([x & 0xffff for x in info])}; "
                      f"start -> return {stats([us(p[1] - p[0]) for p in ps])}")
            print(f"  last return -> flush done (epilogue)   {stats([us(c[48][0][1] - max(c[49 + i][0][1] for i in range(8))) for c in k2])}")
            print(f"  flush done -> after wait               {stats([us(c[48][0][2] - c[48][0][1]) for c in k2])}")
            print(f"  ready -> first piece start             {stats([us(c[49][0][0] - c[48][0][0]) for c in k2])}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
