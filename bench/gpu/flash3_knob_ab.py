#!/usr/bin/env python3
"""Same-process A/B of flash3 forward knobs, the variants called in turn (A B C A B C ...).

Each --variant is NAME=KW:VAL,KW:VAL (keywords of flash3_vs_peers.load's set_tuning, e.g.
qpf:0 or qpf:4,kvpf:1; NAME= alone keeps the defaults); cuDNN (torch SDPA CUDNN_ATTENTION) is
timed in the same loop. Shapes as BENCHMARKS.md (B = 16384 / S, H = 2048 / D, bf16), S_q = S_k.
Prints per shape each variant's TFLOP/s (median of --reps calls), its ratio to the first variant
and to cuDNN, and the launch slot each variant ran (a knob that fell back to another kernel shows
there); --rounds repeats the whole loop (drift check); --json writes every number. Each variant's
first output is compared with cuDNN's (max abs difference, printed; MISMATCH past --max-err).
--shim NAME=PATH[@KW:VAL,...] (repeatable, session 15; knobs session 16) adds another shim's
defaults (or those knobs in it) as a variant in the same loop: a build switch against the
default build, in one process (shims built with flash3_shim_only.sh F3_DEFS=..., whose
-fno-gnu-unique keeps their statics apart; flash3_defs_ab.sh does both in one call).

Session 41, --blocks SEC: each variant (and cuDNN) runs back to back for SEC seconds after a
0.3 s preheat, in turn (A B C, then reversed in odd rounds), instead of call by call, with
nvidia-smi sampling the SM clock and board power (bench/smi_clocks.py): each variant's row then
also says its clock, power, TFLOP/s per GHz (work per cycle) and GFLOP per joule. Why: under ncu's
locked clock the row-sum kernels took fewer cycles at S 1k than the kernels without them, while
the interleaved timing read them 1-2.5 % slower: at the 700 W cap, a kernel's power sets its
clock, and the interleaved calls cannot say whose power it was.

Session 47: --batch / --heads replace BENCHMARKS.md's B and H (e.g. --batch 1 --heads 32, a
prefill's few rounds of tiles); since session 48 the slot column also gives the lpt
model's predicted gain where the launch asked it ("(model +N%)").

Session 48, --bitwise: every variant's first out and lse are also compared bit for bit with the
first variant's (out and lse poisoned with NaN before each): per variant the elements whose bits
differ and, of those, the ones whose values differ (+0 against -0 is a bit difference only).
For knobs and build switches meant to be bitwise (session 48: skip:0 against the default's
skipped masked turn at D 256 causal; two shims of flash3_defs_ab.sh in one process).

Session 57: mctail:1 (Tuning::multicast_tail) runs the multicast twin with the split tail; its
slot column then reads e.g. 77+tail68 (the twin of slot 37, kMulticastSlotBase + 37, and the
tiles launch 2 ran), so a variant that fell back to the twin alone (77) or to slot 37 with the
tail (37+tail68) shows. Not bitwise against the twin alone: the tail splits its tiles' keys
into pieces and merges them (tail.cuh), another order of the sums.

Session 58 helper: edgenc:0 (Tuning::edge_nc_twin = 0) runs D 64 non-causal on slot 14 itself
instead of its twin with every part of the tile-boundary diet (mainloop.cuh kVarEdgeNc); the
slot column reads 134 for the twin (kEdgeNcSlotBase + 14) and 14 for slot 14 (causal rows: 14 in
both variants, the same kernel). Bitwise.

usage: flash3_knob_ab.py --lib build_f3/libflash3_shim.so --d 256 --s 1024,4096 --causal 0,1 \
           --variant base=qpf:0 --variant pf4=qpf:4 [--reps 30] [--rounds 2] [--json out.json]
           [--blocks 1.0]
"""
import argparse
import atexit
import datetime
import json
import os
import statistics
import sys
import time

import torch
from torch.nn.attention import SDPBackend

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from flash3_tail_probe import time_interleaved  # noqa: E402
from flash3_vs_peers import load, make_flash3, make_sdpa  # noqa: E402
from peers import preheat  # noqa: E402  (bench/peers.py)


def parse_variant(text):
    name, _, kws = text.partition("=")
    kw = {}
    for item in filter(None, kws.split(",")):
        key, _, val = item.partition(":")
        kw[key] = int(val)
    return name, kw


def time_blocks(setups, seconds, round_no, windows):
    """Median ms per call of each (setup, run) in setups, each run back to back for `seconds`
    after a 0.3 s preheat, in list order (reversed for odd round_no); appends each block's
    (start, end) datetimes to windows[i]."""
    ms = [0.0] * len(setups)
    order = list(range(len(setups)))
    for i in order if round_no % 2 == 0 else order[::-1]:
        setup, run = setups[i]
        setup()
        preheat(torch, lambda _i, run=run: run(), 0.3)  # the clock the board holds under this load
        times = []
        t0 = datetime.datetime.now()
        t_end = time.perf_counter() + seconds
        while time.perf_counter() < t_end:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(8):
                run()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / 8)
        windows[i].append((t0, datetime.datetime.now()))
        ms[i] = statistics.median(times)
    return ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--d", default="256")
    ap.add_argument("--s", default="1024,4096,16384")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--variant", action="append", required=True)
    ap.add_argument("--shim", action="append", default=[],
                    help="NAME=PATH[@KW:VAL,...]: another shim (its defaults, or those knobs) "
                         "timed as variant NAME")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json", default=None)
    ap.add_argument("--blocks", type=float, default=0.0,
                    help="SEC > 0: time each variant in a block of SEC seconds (after a 0.3 s "
                         "preheat) with its SM clock and board power from nvidia-smi")
    ap.add_argument("--batch", type=int, default=0,
                    help="batch size (0: BENCHMARKS.md's 16384 // S tokens rule)")
    ap.add_argument("--heads", type=int, default=0,
                    help="query heads = K/V heads (0: BENCHMARKS.md's 2048 // D)")
    ap.add_argument("--bitwise", action="store_true",
                    help="compare each variant's first out / lse bit for bit with the first's")
    ap.add_argument("--max-err", type=float, default=0.05,
                    help="flag a variant whose first output differs from cuDNN's by more")
    ap.add_argument("--stream", choices=("default", "created"), default="default",
                    help="created: every call (ours, the shims', cuDNN's) on one created stream "
                         "instead of torch's default (the legacy stream, where a programmatic "
                         "dependent launch does not overlap its primary: session 54's probe)")
    args = ap.parse_args()
    if args.stream == "created":
        torch.cuda.set_stream(torch.cuda.Stream())
    fn, set_tuning = load(args.lib)
    variants = [parse_variant(v) for v in args.variant]
    shims = []  # (name, fn, its knob setup, last_slot) of the other builds
    libs = {}  # path -> (fn, set_tuning): one load per shim file
    for text in args.shim:
        name, _, rest = text.partition("=")
        path, _, kws = rest.partition("@")
        if path not in libs:
            libs[path] = load(path)
        fn_x, set_x = libs[path]
        kw = parse_variant("=" + kws)[1]
        shims.append((name, fn_x, lambda set_x=set_x, kw=kw: set_x(**kw), set_x.last_slot))
    names = [n for n, _ in variants] + [n for n, _, _, _ in shims]
    rows = []
    sampler = None
    if args.blocks > 0:
        from smi_clocks import ClockSampler
        sampler = ClockSampler()
        atexit.register(sampler.close)  # (an exception must not leave nvidia-smi running)
    torch.manual_seed(0)
    for d in map(int, args.d.split(",")):
        for s in map(int, args.s.split(",")):
            for causal in (c == "1" for c in args.causal.split(",")):
                b = args.batch if args.batch > 0 else max(1, 16384 // s)
                h = args.heads if args.heads > 0 else 2048 // d
                q = torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16)
                k = torch.randn_like(q)
                v = torch.randn_like(q)
                out = torch.empty_like(q)
                lse = torch.empty(b, h, s, device="cuda", dtype=torch.float32)
                flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
                run = make_flash3(fn, q, k, v, out, lse, causal)
                # (session 16) each variant's first output against cuDNN's, out poisoned with
                # NaN before it: a variant that is fast because it is wrong shows here.
                ref = make_sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, causal)().transpose(1, 2)
                slots, errs, bits = {}, {}, {}
                first_out = []  # (out, lse) of the first variant (--bitwise)

                def first_run(name, go, slot_of, tail_of=None, lpt_of=None, gain_of=None):
                    out.fill_(float("nan"))
                    if args.bitwise:
                        lse.fill_(float("nan"))
                    go()
                    torch.cuda.synchronize()
                    if args.bitwise:
                        if not first_out:
                            first_out.append((out.clone(), lse.clone()))
                        else:
                            o0, l0 = first_out[0]
                            ob = o0.view(torch.int16) != out.view(torch.int16)
                            lb = l0.view(torch.int32) != lse.view(torch.int32)
                            bits[name] = {
                                "out_bits": int(ob.sum()),
                                "out_values": int((ob & (o0 != out)).sum()),
                                "lse_bits": int(lb.sum()),
                                "lse_values": int((lb & (l0 != lse)).sum())}
                    slots[name] = slot_of() if slot_of else -1
                    if tail_of is not None and tail_of() > 0:  # session 19: split tail tiles
                        slots[name] = f"{slots[name]}+tail{tail_of()}"
                    if lpt_of is not None and lpt_of() > 0:  # session 46: the table's rounds
                        slots[name] = f"{slots[name]}+lpt{lpt_of()}"
                    gain = gain_of() if gain_of is not None else float("nan")
                    if gain == gain:  # (session 48: the model's predicted gain, where asked)
                        slots[name] = f"{slots[name]}(model {100 * gain:+.1f}%)"
                    errs[name] = (out.float() - ref.float()).abs().max().item()  # NaN stays NaN
                for name, kw in variants:
                    set_tuning(**kw)
                    first_run(name, run, set_tuning.last_slot, set_tuning.last_tail,
                              getattr(set_tuning, "last_lpt", None),
                              getattr(set_tuning, "last_lpt_gain", None))
                setups = [((lambda kw=kw: set_tuning(**kw)), run) for _, kw in variants]
                for name, fn_x, set_x, slot_x in shims:
                    set_x()
                    setups.append((set_x, make_flash3(fn_x, q, k, v, out, lse, causal)))
                    first_run(name, setups[-1][1], slot_x)
                bad = [n for n, e in errs.items() if not e <= args.max_err]
                print(f"D={d:3d} S={s:5d} causal={int(causal)} max|out - cuDNN|: " +
                      ", ".join(f"{n} {e:.2e}" for n, e in errs.items()) +
                      (f"  MISMATCH: {' '.join(bad)}" if bad else ""), flush=True)
                if args.bitwise:  # (equal bits never count, NaN ones included)
                    print(f"D={d:3d} S={s:5d} causal={int(causal)} bits differing from "
                          f"{names[0]} (out / of them by value, lse / by value): " +
                          ", ".join(f"{n} {x['out_bits']} / {x['out_values']}, {x['lse_bits']} / "
                                    f"{x['lse_values']}" for n, x in bits.items()), flush=True)
                setups.append((set_tuning, make_sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, causal)))
                for r in range(args.rounds):
                    windows = [[] for _ in setups]
                    if args.blocks > 0:
                        ms = time_blocks(setups, args.blocks, r, windows)
                    else:
                        ms = time_interleaved(setups, args.reps)
                    tf = [flops / t / 1e9 for t in ms]
                    cudnn = tf[-1]
                    line = [f"D={d:3d} S={s:5d} {'causal' if causal else 'nc    '} r{r}"]
                    for name, x in zip(names, tf):
                        line.append(f"{name} {x:6.1f} ({x / tf[0]:.3f}, cuDNN {x / cudnn:.3f}, "
                                    f"slot {slots[name]})")
                    line.append(f"cuDNN {cudnn:6.1f}")
                    print("  ".join(line), flush=True)
                    rows.append({"d": d, "s": s, "b": b, "h": h, "causal": causal, "round": r,
                                 "tflops": dict(zip(names, tf)),
                                 "cudnn": cudnn, "slots": slots, "max_err": errs,
                                 "bitwise": bits})
                    if args.blocks > 0:
                        rows[-1]["windows"] = dict(zip(names + ["cuDNN"], windows))
                set_tuning()
    if sampler is not None and sampler.available:
        # The clocks from the complete file, read once nvidia-smi stopped (it may hold samples
        # back until then; peers.py does the same).
        sampler.stop()
        from smi_clocks import row_clock
        samples = sampler.samples()
        print("blocks: SM clock (median, min), board power, power-cap share; TFLOP/s per GHz of "
              "SM clock and GFLOP per joule of board power")
        for row in rows:
            row["clock"] = {}
            for name, wins in row.pop("windows").items():
                c = row_clock(samples, wins)
                row["clock"][name] = c
                x = row["cudnn"] if name == "cuDNN" else row["tflops"][name]
                head = f"D={row['d']:3d} S={row['s']:5d} {'causal' if row['causal'] else 'nc    '} " \
                       f"r{row['round']} {name:8s} {x:6.1f} TFLOP/s"
                if c is None:
                    print(head + ": no sample", flush=True)
                    continue
                print(head + f" at {c['sm_mhz']} MHz (min {c['sm_mhz_min']}), "
                      f"{c['power_w']:.0f} W, cap {c['power_capped']:.2f}: "
                      f"{x / (c['sm_mhz'] / 1000):6.1f} TFLOP/s per GHz, "
                      f"{x / c['power_w'] * 1000:5.0f} GFLOP/J", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"variants": [{"name": n, "knobs": kw} for n, kw in variants] +
                       [{"name": n, "shim": t.partition("=")[2]}
                        for (n, _, _, _), t in zip(shims, args.shim)],
                       "reps": args.reps, "blocks_s": args.blocks, "rows": rows}, f, indent=1,
                      default=str)
    if sampler is not None:
        sampler.close()


if __name__ == "__main__":
    main()
