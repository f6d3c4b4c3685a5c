#!/usr/bin/env python3
"""Per-tile timing of the flash3 forward from clock64 stamps (session 13).

Needs a shim built with ATTNKIT_FLASH3_TRACE (`F3_TRACE=1 bash bench/gpu/flash3_shim_only.sh`):
each consumer warpgroup stamps clock64 when it starts a tile (before its flush turn, if any) and
when the tile call returns (FwdArgs::trace). For D = 64, 3 warpgroups (192-row tiles), this prints
per tile kind the median period of warpgroup 0 (its start of tile k to its start of tile k+1, in
SM clock cycles: what a tile costs the CTA) and, for a head's last tile, each warpgroup's
flush turn, blocks (a split tile: its own blocks and skips; else the whole tile call) and merge
(a split tile: partials handed over / merged, epilogue). Kinds: F = full tile, T = a head's last tile with <= 64 rows (split when
Tuning::split_tail is on, one working warpgroup when off); "F>T" = a full tile followed by T (its
period includes the flush turn before a split tile).

usage: flash3_tile_trace.py --lib build_trace/libflash3_shim.so
"""
import argparse
import ctypes
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flash3_vs_peers import load, make_flash3  # noqa: E402

KMAX, WGS = 64, 3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    a = ap.parse_args()
    fn, set_tuning = load(a.lib)
    lib = ctypes.CDLL(a.lib)
    lib.flash3_set_trace.argtypes = [ctypes.c_void_p]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    buf = torch.zeros(sms * KMAX * WGS * 5, dtype=torch.int64, device="cuda")
    d = 64
    torch.manual_seed(0)
    for sk, sq, b in ((1024, 1024, 16), (1024, 1152, 16), (4096, 4096, 4)):
        h = 2048 // d
        q = torch.randn(b, sq, h, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, sk, h, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, sk, h, d, device="cuda", dtype=torch.bfloat16)
        out = torch.empty_like(q)
        lse = torch.empty(b, h, sq, device="cuda", dtype=torch.float32)
        run = make_flash3(fn, q, k, v, out, lse, False)
        for split in (-1, 0):
            set_tuning(wgs=3, split=split)
            for _ in range(5):
                run()
            buf.zero_()
            lib.flash3_set_trace(ctypes.c_void_p(buf.data_ptr()))
            run()
            torch.cuda.synchronize()
            lib.flash3_set_trace(None)
            t = buf.view(sms, KMAX, WGS, 5).cpu().tolist()
            periods, parts = {}, {w: {"flush": [], "blocks": [], "merge": []} for w in range(WGS)}
            for c in range(sms):
                tiles = [t[c][kk] for kk in range(KMAX) if t[c][kk][0][0] != 0]
                last_m = (sq + 191) // 192 - 1
                kind = ["T" if (e[0][4] & 0xFFFF) == last_m and sq - last_m * 192 <= 64 else "F"
                        for e in tiles]
                for i in range(len(tiles) - 1):
                    key = kind[i] + (">T" if kind[i] == "F" and kind[i + 1] == "T" else "")
                    periods.setdefault(key, []).append(tiles[i + 1][0][0] - tiles[i][0][0])
                for i, e in enumerate(tiles):
                    if kind[i] != "T":
                        continue
                    for w in range(WGS):
                        start, flushed, mid, ret = e[w][0], e[w][1], e[w][2], e[w][3]
                        parts[w]["flush"].append(flushed - start)
                        if mid:
                            parts[w]["blocks"].append(mid - flushed)
                            parts[w]["merge"].append(ret - mid)
                        else:
                            parts[w]["blocks"].append(ret - flushed)
            split_seen = any((t[c][kk][0][4] >> 31) & 1 for c in range(sms) for kk in range(KMAX))
            line = [f"Sk={sk:5d} Sq={sq:5d} B={b:2d} split_tail={split:2d} (split tiles seen: "
                    f"{'yes' if split_seen else 'no'})"]
            for key in sorted(periods):
                p = periods[key]
                line.append(f"period {key:3s} n={len(p):4d} median {statistics.median(p):7.0f} cyc")
            if parts[0]["blocks"]:
                for part in ("flush", "blocks", "merge"):
                    if parts[0][part]:
                        line.append(f"T {part} per WG: " + " / ".join(
                            f"{statistics.median(parts[w][part]):6.0f}" for w in range(WGS)))
            print("  ".join(line), flush=True)
    set_tuning()


if __name__ == "__main__":
    main()
