#!/usr/bin/env python3
"""Per-tile timing of the flash3 forward from clock64 stamps (session 13).

Needs a shim built with ATTNKIT_FLASH3_TRACE (`F3_TRACE=1 bash bench/gpu/flash3_shim_only.sh`):
each consumer warpgroup stamps clock64 when it starts a tile (before its flush turn, if any) and
when the tile call returns (FwdArgs::trace). For D = 64, 3 warpgroups (192-row tiles), this prints
per tile kind the median period of warpgroup 0 (its start of tile k to its start of tile k+1, in
SM clock cycles: what a tile costs the CTA), for a head's last tile each warpgroup's tile call,
and the spread of the CTAs' busy times (warpgroup 0's first start to last return: with the
static schedule unrotated, CTAs that hold only partial tiles finish early).
Kinds: F = full tile, T = a head's last tile with <= 64 rows (one working warpgroup). Each shape
runs with Tuning::rotate_rounds at auto and off. (Session 13 also traced a split last tile, on
branch wip/f3fwd19-split.)

Session 14 (--d 256): the tile-at-a-time consumer of D = 256 (2 warpgroups, 128-row tiles,
64-key blocks) stamps a tile's start, its Q landing, its epilogue's start and its return; per
shape (S 1k / 4k non-causal; 4-, 8- or 16-byte O stores) this prints the medians per
warpgroup of: the Q wait (start -> Q landed), the mainloop (Q -> epilogue), the epilogue, the gap
to the next tile's start and the period (start -> next start), first tiles apart.
Session 15: also, per mainloop turn (turns 1 .. n-1 of a tile, 64 keys each), the cycles
warpgroup thread 0 spent waiting for K, for V, for S = Q K^T (wgmma wait 1) and for the previous
P V (wait 0), issuing the wgmmas, the mask + softmax, the post-P V part (release, rescale, P
conversion) and the rest (loop, fences, turn-0 / last-turn share): where the mainloop's
cycles above the tensor cores' ~2048 per block (2 x 2 M MAC at 2048 MAC/clk/SM) go.
Session 16: each shape with the ordered softmax at auto (on at D 256) and off (the trace's clock
reads move ptxas's waits, so the ordered kernel's split is not what the timed build runs).

Session 58: --as-timed (every knob at its auto, the split tail off; --tuning adds knobs) with
--s: D 256 as above over those S; D 64 / 128 the per-tile period and K/V block count of the
overlapped consumer per S, and the line period = F + n x c fitted over them (F: a tile's fixed
cost, c: a block's).

Session 63: --causal (D = 256): causal shapes, without the per-turn parts; every D = 256 row
also prints warpgroup 0's boundary (Q waits + epilogues + gaps) and epilogues as shares of the
CTAs' busy time.

Session 66: --causal at D = 64 / 128 (implies --as-timed): the causal shapes of the overlapped
consumer, whose tiles visit 1 .. n K/V blocks; per S the median period per block count, the least
squares line period = F + n x c over the tiles of that one call (F: a tile's fixed cost, c: a
block's; bench/notes/fwd-d64-causal1k-study-s66.md, step 0), and the CTAs' spread from their start
to their last tile's start (the schedule's balance as run).

Session 67: --phases at D = 64 / 128 (as timed, the split tail off; with or without --causal):
the overlapped consumer's turn-0 stamps (mainloop.cuh Consumer::stamp, words 4-10) split each
tile of each warpgroup into parts (PHASES: the tile prologue to turn 0's token, S, softmax,
the pending P V wait, the previous tile's epilogue, turn 1, the later turns, the end) plus the
gap to the next tile and the period, medians per K/V block count (trace_phases). The stamps
cost ~500 cycles a tile themselves (session 67 calls 1 / 3).

usage: flash3_tile_trace.py --lib build_trace/libflash3_shim.so [--d 64|128|256]
       [--s 1024,4096,16384] [--as-timed [--tuning qpf:4]] [--causal] [--phases]
"""
import argparse
import ctypes
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flash3_vs_peers import load, make_flash3  # noqa: E402

KMAX, WGS, WORDS = 64, 3, 12  # (mainloop.cuh kTraceWords)
# Tiles 46-63 of the trace are kernel.cuh's per-CTA stamps (46 / 47: the kernel's start, 48 / 49+:
# the split tail), not tiles: only k < KTILES are read as tiles (session 58; before, slot 47's
# entry was read as a CTA's last tile: one garbage entry a CTA in the medians, "busy" < 0).
KTILES = 46


def traced_call(run, lib, buf, sms):
    """Five warm-up calls, then one call with the trace on: its words as nested lists
    [cta][tile k][warpgroup][word] (FwdArgs::trace; words 0-3 stamps, 4-10 WaitClock sums or,
    in the overlapped consumer, Consumer::stamp's stamps)."""
    for _ in range(5):
        run()
    buf.zero_()
    lib.flash3_set_trace(ctypes.c_void_p(buf.data_ptr()))
    run()
    torch.cuda.synchronize()
    lib.flash3_set_trace(None)
    return buf.view(sms, KMAX, WGS, WORDS).cpu().tolist()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--d", type=int, default=64)
    # Session 58 (D = 256): the sequence lengths, and --as-timed: the timed build's knobs (every
    # auto, the split tail off so that every S has the same 1,024 whole tiles) instead of
    # session 14's set (Q prefetch off, 8-byte O stores, the ordered softmax at auto and off).
    ap.add_argument("--s", default="1024,4096")
    ap.add_argument("--as-timed", action="store_true")
    # Session 63 (D = 256): causal shapes; per-turn parts are left out (a causal tile's turn
    # count varies), and every row also prints the boundary's share of the CTAs' busy time.
    # Session 66 (D = 64 / 128): trace_fit over the causal shapes (trace_fit_causal).
    ap.add_argument("--causal", action="store_true")
    # Session 67 (D = 64 / 128): the overlapped consumer's turn-0 stamps (mainloop.cuh
    # Consumer::stamp, words 4-10), split into parts per block count (trace_phases).
    ap.add_argument("--phases", action="store_true")
    ap.add_argument("--tuning", default="",
                    help="with --as-timed: more knobs as KW:VAL,... (set_tuning's keywords, "
                         "e.g. qpf:4 for the next tile's Q prefetched into L2 4 blocks ahead)")
    a = ap.parse_args()
    extra = {k: int(v) for k, _, v in (x.partition(":") for x in a.tuning.split(",") if x)}
    fn, set_tuning = load(a.lib)
    lib = ctypes.CDLL(a.lib)
    lib.flash3_set_trace.argtypes = [ctypes.c_void_p]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    buf = torch.zeros(sms * KMAX * WGS * WORDS, dtype=torch.int64, device="cuda")
    if a.d == 256:
        trace_256(fn, set_tuning, lib, sms, buf, [int(x) for x in a.s.split(",")], a.as_timed,
                  extra, a.causal)
        return
    if a.phases:
        if a.d == 256:
            sys.exit("--phases: D 64 / 128 only (D 256 runs consume_tile_simple: --d 256 alone)")
        for s in (int(x) for x in a.s.split(",")):
            trace_phases(fn, set_tuning, lib, sms, buf, a.d, s, a.causal, extra)
        return
    if a.as_timed or a.causal:
        trace_fit(fn, set_tuning, lib, sms, buf, a.d, [int(x) for x in a.s.split(",")], extra,
                  a.causal)
        return
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
        for rotate in (-1, 0):
            set_tuning(wgs=3, rotate=rotate)
            t = traced_call(run, lib, buf, sms)
            periods, own, busy = {}, {w: [] for w in range(WGS)}, []
            for c in range(sms):
                tiles = [t[c][kk] for kk in range(KTILES) if t[c][kk][0][0] != 0]
                last_m = (sq + 191) // 192 - 1
                kind = ["T" if (e[0][3] & 0xFFFF) == last_m and sq - last_m * 192 <= 64 else "F"
                        for e in tiles]
                for i in range(len(tiles) - 1):
                    periods.setdefault(kind[i], []).append(tiles[i + 1][0][0] - tiles[i][0][0])
                for i, e in enumerate(tiles):
                    if kind[i] == "T":
                        for w in range(WGS):
                            own[w].append(e[w][2] - e[w][1])
                if tiles:  # this CTA's WG 0: first start to last return
                    busy.append(tiles[-1][0][2] - tiles[0][0][0])
            line = [f"Sk={sk:5d} Sq={sq:5d} B={b:2d} rotate_rounds={rotate:2d}"]
            for key in sorted(periods):
                p = periods[key]
                line.append(f"period {key} n={len(p):4d} median {statistics.median(p):7.0f} cyc")
            if own[0]:
                line.append("T tile call per WG: " + " / ".join(
                    f"{statistics.median(own[w]):6.0f}" for w in range(WGS)))
            line.append(f"CTA busy min / median / max {min(busy)} / {statistics.median(busy):.0f}"
                        f" / {max(busy)} cyc")
            print("  ".join(line), flush=True)
    set_tuning()


def square_run(fn, s, d, causal=False):
    """BENCHMARKS.md's shape at S and head dim D (b = 16384 / S, 2048 / D heads, bf16; non-causal
    unless `causal`): (b, a call of the flash3 forward on fresh random tensors)."""
    b, h = 16384 // s, 2048 // d
    q = torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn_like(q)
    v = torch.randn_like(q)
    out = torch.empty_like(q)
    lse = torch.empty(b, h, s, device="cuda", dtype=torch.float32)
    return b, make_flash3(fn, q, k, v, out, lse, causal)


def lsq_line(pts):
    """(c, f) of the least-squares line y = f + c x through pts [(x, y)], or None when the x
    values are all equal."""
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx == 0:
        return None
    c = sum((x - mx) * (y - my) for x, y in pts) / sxx
    return c, my - c * mx


def trace_fit(fn, set_tuning, lib, sms, buf, d, seqs, extra, causal=False):
    """D = 64 / 128 as timed (session 58; the overlapped consumer, whose stamps are kernel.cuh's
    words 0 = tile start and 3 = m block | K/V blocks << 16): per S (non-causal, b = 16384 / S,
    2048 / D heads, split tail off) the median period of warpgroup 0 (its start of tile k to its
    start of tile k + 1) and its K/V block count; then the least-squares line period = F + n x c
    over the S given: c = cycles a K/V block in the steady state, F = the per-tile fixed cost.
    causal (session 66): per S the tiles' block counts differ, so the line is fitted over the
    (blocks, period) pairs of that one call, with the median period per block count."""
    torch.manual_seed(0)
    pts = []
    for s in seqs:
        b, run = square_run(fn, s, d, causal)
        set_tuning(tail=0, **extra)
        t = traced_call(run, lib, buf, sms)
        periods, blocks, ntiles, first, spans = [], [], [], [], []
        for c in range(sms):
            tiles = [t[c][kk] for kk in range(KTILES) if t[c][kk][0][0] != 0]
            ntiles.append(len(tiles))
            if tiles and t[c][47][0][2] != 0:  # kernel.cuh: slot 47 word 2 = the CTA's start
                first.append(tiles[0][0][0] - t[c][47][0][2])
                spans.append(tiles[-1][0][0] - t[c][47][0][2])  # (to its last tile's start)
            for i in range(len(tiles) - 1):
                periods.append(tiles[i + 1][0][0] - tiles[i][0][0])
                blocks.append(tiles[i][0][3] >> 16)
        if not periods:
            print(f"D={d} S={s:5d}: no two tiles traced in any CTA (a shim built without "
                  "F3_TRACE=1, or one tile a CTA)", flush=True)
            continue
        if causal:
            trace_fit_causal(d, s, b, extra, periods, blocks, ntiles, first, spans)
            continue
        p, n = statistics.median(periods), statistics.median(blocks)
        pts.append((n, p))
        print(f"D={d} S={s:5d} B={b:2d} nc {extra or ''}: tiles per CTA {min(ntiles)}-"
              f"{max(ntiles)}, K/V blocks a tile {n:.0f}, period {p:8.0f} cyc "
              f"({p / n:6.0f} a block), CTA start to first tile "
              f"{statistics.median(first) if first else float('nan'):6.0f} cyc", flush=True)
    if len({x for x, _ in pts}) >= 2:  # (a line needs two different block counts)
        c, f = lsq_line(pts)
        print(f"D={d} fit over S {seqs}: {c:6.0f} cyc a K/V block, {f:7.0f} cyc a tile fixed "
              "(" + ", ".join(f"S {s}: {f / y * 100:4.1f} % of the period"
                              for s, (_, y) in zip(seqs, pts)) + ")", flush=True)
    set_tuning()


def trace_fit_causal(d, s, b, extra, periods, blocks, ntiles, first, spans):
    """trace_fit's causal report for one S: the period (warpgroup 0's start of a tile to its start
    of the next, cycles) per K/V block count of the first tile, the line period = F + n x c over
    every pair, and the spread of spans (each CTA's start to its last tile's start)."""
    by_n = {}
    for n, p in zip(blocks, periods):
        by_n.setdefault(n, []).append(p)
    print(f"D={d} S={s:5d} B={b:2d} causal {extra or ''}: tiles per CTA {min(ntiles)}-"
          f"{max(ntiles)}, CTA start to first tile "
          f"{statistics.median(first) if first else float('nan'):6.0f} cyc", flush=True)
    for n in sorted(by_n):
        p = by_n[n]
        print(f"  {n:3d} blocks: {len(p):5d} tiles, period median {statistics.median(p):8.0f} cyc "
              f"({statistics.median(p) / n:6.0f} a block)", flush=True)
    line = lsq_line(list(zip(blocks, periods)))
    if line is not None:
        c, f = line
        print(f"  fit over {len(periods)} tiles: {c:6.0f} cyc a K/V block, {f:7.0f} cyc a tile "
              "fixed", flush=True)
    if spans:
        print(f"  CTA start to last tile start: min / median / max {min(spans)} / "
              f"{statistics.median(spans):.0f} / {max(spans)} cyc", flush=True)


# trace_phases' parts: (name, from word, to word) of one tile of one warpgroup (kernel.cuh words 0
# / 1 / 2 = the tile starts / after the flush turn / the call returns; Consumer::stamp's 4 = turn
# 0's token, 5 = S ready, 6 = softmax done, 7 = the pending P V done, 8 = the previous tile's
# epilogue done, 9 = turn 1 done, 10 = the last turn done)
PHASES = (("flush", 0, 1), ("q+k+tok", 1, 4), ("S", 4, 5), ("soft", 5, 6), ("pv", 6, 7),
          ("epi", 7, 8), ("turn1", 8, 9), ("turns2+", 9, 10), ("end", 10, 2))


def trace_phases(fn, set_tuning, lib, sms, buf, d, s, causal, extra):
    """D = 64 / 128 as timed (session 67; a trace build with Consumer::stamp): per warpgroup and
    per K/V block count, the median cycles of each part of PHASES, the gap from the call's return
    to the next tile's start, and the period (the tiles column counts the tiles with a next
    one); a part whose stamps are missing (a one-block tile has no turn 1) is left out of that
    tile; a warpgroup's idle tiles (no rows: no word 4) are left out of its rows."""
    torch.manual_seed(0)
    b, run = square_run(fn, s, d, causal)
    set_tuning(tail=0, **extra)
    t = traced_call(run, lib, buf, sms)
    wgs = 3 if any(t[c][kk][2][0] for c in range(sms) for kk in range(KTILES)) else 2
    names = [n for n, _, _ in PHASES] + ["gap", "period"]
    print(f"D={d} S={s} B={b} {'causal' if causal else 'nc'} {extra or ''}: {wgs} consumer "
          "warpgroups; median cycles per part (warpgroup / K/V blocks / tiles)", flush=True)
    print("  wg  n  tiles " + " ".join(f"{n:>8}" for n in names), flush=True)
    for w in range(wgs):
        by_n = {}
        for c in range(sms):
            tiles = [t[c][kk][w] for kk in range(KTILES) if t[c][kk][w][0] != 0]
            for i, e in enumerate(tiles):
                if e[4] == 0:  # (idle_tile: this warpgroup has no rows in the tile)
                    continue
                n = e[3] >> 16  # (kernel.cuh: each warpgroup's word 3 = m | n << 16)
                row = by_n.setdefault(n, {k: [] for k in names})
                for name, lo, hi in PHASES:
                    if e[lo] != 0 and e[hi] != 0 and e[hi] >= e[lo]:
                        row[name].append(e[hi] - e[lo])
                if i + 1 < len(tiles):
                    row["gap"].append(tiles[i + 1][0] - e[2])
                    row["period"].append(tiles[i + 1][0] - e[0])
        for n in sorted(by_n):
            row = by_n[n]
            cells = [f"{statistics.median(v):8.0f}" if v else f"{'-':>8}"
                     for v in (row[k] for k in names)]
            print(f"  {w:2d} {n:2d} {len(row['period']):6d} " + " ".join(cells), flush=True)
    set_tuning()


def trace_256(fn, set_tuning, lib, sms, buf, seqs, as_timed, extra, causal=False):
    """D = 256 (consume_tile_simple): Q wait, mainloop, epilogue, gap and period per warpgroup;
    then the boundary (Q wait + epilogue + gap, every tile) as a share of the CTAs' busy time
    (warpgroup 0's first start to last return), the median over CTAs. causal (session 63): the
    per-turn parts are left out (the stamps carry no block count, and a causal tile's varies)."""
    d = 256
    torch.manual_seed(0)
    for s in seqs:
        b, run = square_run(fn, s, d, causal)
        turns = s // 64 - 1  # mainloop turns 1 .. n-1 of a non-causal tile
        # Session 14: Q prefetch off, 8-byte O stores, ping-pong auto, the ordered softmax at auto
        # (on) / off; --as-timed: every auto, the split tail off, and --tuning's knobs
        kw = {"qpf": -1, "epi": -1, "pingpong": -1, "tail": 0} if as_timed else \
            {"qpf": 0, "epi": 1, "pingpong": -1}
        if as_timed:
            kw.update(extra)
        qpf, epi_wide, pp = kw["qpf"], kw["epi"], kw["pingpong"]
        for ordered in (-1,) if as_timed else (-1, 0):
            set_tuning(ordered=ordered, **kw)
            t = traced_call(run, lib, buf, sms)
            parts = {name: {w: [] for w in range(2)} for name in
                     ("qwait0", "qwait", "main", "epi", "gap", "period", "turn", "wait_k",
                      "wait_v", "wait_s", "wait_pv", "issue", "soft", "post", "rest")}
            busy, ntiles, bshare, eshare = [], [], [], []
            for c in range(sms):
                tiles = [t[c][kk] for kk in range(KTILES) if t[c][kk][0][0] != 0]
                ntiles.append(len(tiles))
                for i, e in enumerate(tiles):
                    for w in range(2):
                        st, ql, ret, epi, wk, wv, ws, wpv, wis, wso, wpo = e[w][:11]
                        if not causal:
                            turn = (epi - ql) / (turns + 1)
                            parts["turn"][w].append(turn)
                            for name, x in (("wait_k", wk), ("wait_v", wv), ("wait_s", ws),
                                            ("wait_pv", wpv), ("issue", wis), ("soft", wso),
                                            ("post", wpo)):
                                parts[name][w].append(x / turns)
                            parts["rest"][w].append(
                                turn - (wk + wv + ws + wpv + wis + wso + wpo) / turns)
                        parts["qwait0" if i == 0 else "qwait"][w].append(ql - st)
                        parts["main"][w].append(epi - ql)
                        parts["epi"][w].append(ret - epi)
                        if i + 1 < len(tiles):
                            parts["gap"][w].append(tiles[i + 1][w][0] - ret)
                            parts["period"][w].append(tiles[i + 1][w][0] - st)
                if tiles:
                    busy.append(tiles[-1][0][2] - tiles[0][0][0])
                    if busy[-1] > 0:  # warpgroup 0: busy = its mainloops + the boundary
                        mains = sum(e[0][3] - e[0][1] for e in tiles)
                        bshare.append(1 - mains / busy[-1])
                        eshare.append(sum(e[0][2] - e[0][3] for e in tiles) / busy[-1])
            # (session 59: the launch slot and --tuning's other knobs, e.g. tc:0 runs slot 29)
            slot = set_tuning.last_slot() if getattr(set_tuning, "last_slot", None) else -1
            more = ",".join(f"{k}:{v}" for k, v in kw.items()
                            if k not in ("qpf", "epi", "pingpong", "tail"))
            mode = "causal" if causal else "nc"
            line = [f"D=256 S={s:5d} B={b:2d} {mode} qpf={qpf} epi_wide={epi_wide} pingpong={pp} "
                    f"ordered={ordered}{' ' + more if more else ''} slot {slot}:"]
            for name, per_wg in parts.items():
                if per_wg[0]:
                    line.append(f"{name} " + " / ".join(
                        f"{statistics.median(per_wg[w]):6.0f}" for w in range(2)))
            line.append(f"tiles per CTA {min(ntiles)}-{max(ntiles)}, busy min / median / max "
                        f"{min(busy)} / {statistics.median(busy):.0f} / {max(busy)} cyc")
            if bshare:
                line.append("WG 0 boundary (Q waits + epilogues + gaps) "
                            f"{statistics.median(bshare) * 100:4.1f} % of busy, epilogues "
                            f"{statistics.median(eshare) * 100:4.1f} %")
            print("  ".join(line), flush=True)
    set_tuning()


if __name__ == "__main__":
    main()
