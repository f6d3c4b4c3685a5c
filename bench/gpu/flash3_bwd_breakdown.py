#!/usr/bin/env python3
"""Per-kernel GPU time of one backward call: attnkit:flash3 against torch SDPA's cuDNN backward
(SDPBackend.CUDNN_ATTENTION, backward only: torch.autograd.grad on a retained graph), same
process, same inputs (issue #5: where does the S = 1k gap sit: main kernel, pre / post kernels,
memsets, or the gaps between launches?).

  python3 bench/gpu/flash3_bwd_breakdown.py --lib build_cm/libattnkit_c.so
  python3 bench/gpu/flash3_bwd_breakdown.py --build build_cm [--cases 128:1024:0,64:4096:1]
      [--calls 10] [--impls flash3,cudnn] [--variant '128:coupled+atomic+dqf+v4+pfl;64:...']
      [--json FILE]

Cases are D:S:CAUSAL at BENCHMARKS.md's sizes (16384 tokens, hidden 2048, bf16, BSHD storage;
flash3 causal = bottom_right = top_left here, Sq = Sk); default D 64 / 128 x S 1k / 4k x causal
0 / 1. Per case and implementation:
  * `wall`: median of --calls CUDA-event pairs around single calls issued back to back (the way
    bench/peers.py times; includes the gaps inside a call, not the host time between calls
    unless the host is the bottleneck),
  * one row per device activity of a call (kernels, memsets, memcpys; from torch.profiler over
    --calls back-to-back calls): launches per call, mean / min GPU us, share of the call,
  * `busy` (sum of the activities), `gaps` (first start to last end of a call minus busy: launch
    latency and idle GPU between the call's kernels; negative = overlap), `between` (last end of
    a call to the first start of the next: host-bound when large),
  * one call's timeline (start offset of each activity from the call's first start).
--variant runs flash3 once more in a child process with env ATTNKIT_FLASH3_BWD_VARIANT set to
its value (the library reads it once per process), labelled flash3[VARIANT].
Expected time on an H100: ~20-30 s for the 8 default cases (torch import, cuDNN plan builds).
--selftest checks the grouping arithmetic on synthetic events (no GPU, no torch needed).
"""
import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/

DEFAULT_CASES = ",".join(f"{d}:{s}:{c}" for d in (64, 128) for s in (1024, 4096) for c in (0, 1))


def parse_cases(text):
    out = []
    for tok in text.split(","):
        tok = tok.strip()
        if not tok:
            continue
        parts = tok.split(":")
        if len(parts) != 3:
            raise ValueError(f"case {tok!r}: expected D:S:CAUSAL")
        d, s, c = parts
        s = int(float(s[:-1]) * 1024) if s.lower().endswith("k") else int(s)
        if int(d) not in (64, 128, 256) or s <= 0 or 16384 % s or c not in ("0", "1"):
            raise ValueError(f"case {tok!r}: D in 64/128/256, S dividing 16384, CAUSAL 0/1")
        out.append((int(d), s, c == "1"))
    return out


def short_name(name, width=72):
    """Kernel name without 'void ', namespaces and the parameter list; long names cut."""
    n = re.sub(r"^void ", "", name)
    depth, cut = 0, len(n)
    for i, ch in enumerate(n):  # drop the trailing (args) of a demangled name
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = i
            break
    n = n[:cut]
    n = re.sub(r"\b(?:[A-Za-z_]\w*::)+", "", n)
    return n if len(n) <= width else n[: width - 3] + "..."


def group_calls(acts, calls):
    """acts: [(name, start_us, dur_us)] of `calls` back-to-back calls. Returns (per_call, note):
    per_call = list of calls, each a list of (name, offset_us, dur_us) in start order, when the
    activities split evenly into calls (same count per call); else ([], reason)."""
    acts = sorted(acts, key=lambda a: a[1])
    if calls <= 0 or not acts or len(acts) % calls:
        return [], f"{len(acts)} activities do not split into {calls} calls"
    k = len(acts) // calls
    per_call = []
    for c in range(calls):
        chunk = acts[c * k:(c + 1) * k]
        t0 = chunk[0][1]
        per_call.append([(n, s - t0, d, s) for n, s, d in chunk])
    # The same sequence of names in every call, or the split is not trustworthy.
    names0 = [a[0] for a in per_call[0]]
    for pc in per_call[1:]:
        if [a[0] for a in pc] != names0:
            return [], "activity names differ between calls (launch order not fixed)"
    return per_call, ""


def summarize_calls(per_call):
    """{'rows': [(slot name, mean us, min us)], 'busy', 'span', 'gaps', 'between'} (means, us)."""
    k = len(per_call[0])
    rows = []
    for j in range(k):
        durs = [pc[j][2] for pc in per_call]
        rows.append((per_call[0][j][0], statistics.mean(durs), min(durs)))
    busy = [sum(a[2] for a in pc) for pc in per_call]
    span = [max(a[1] + a[2] for a in pc) for pc in per_call]
    between = [per_call[c + 1][0][3] - (per_call[c][0][3] + span[c])
               for c in range(len(per_call) - 1)]
    return {"rows": rows, "busy": statistics.mean(busy), "span": statistics.mean(span),
            "gaps": statistics.mean(s - b for s, b in zip(span, busy)),
            "between": statistics.median(between) if between else 0.0}


def device_activities(torch, fn, calls):
    """[(name, start_us, dur_us)] of every device activity over `calls` back-to-back calls."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(calls):
            fn(i)
        torch.cuda.synchronize()
    acts = []
    for ev in prof.events():
        if ev.device_type.name != "CUDA":
            continue
        tr = ev.time_range
        acts.append((ev.name, float(tr.start), float(tr.end - tr.start)))
    return acts


def event_wall(torch, fn, calls):
    """Median ms of single calls between CUDA events, issued back to back (peers.Timer's way)."""
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    torch.cuda.synchronize()
    for i in range(calls):
        starts[i].record()
        fn(i)
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in zip(starts, ends))


def report(label, wall_ms, acts, calls, out):
    per_call, note = group_calls(acts, calls)
    res = {"impl": label, "wall_us": round(wall_ms * 1e3, 1)}
    out(f"  {label}: wall {wall_ms * 1e3:8.1f} us per call (events, median of {calls})")
    if not per_call:
        out(f"    (no per-call split: {note}); totals per call:")
        agg = collections.defaultdict(lambda: [0, 0.0])
        for n, _, d in acts:
            agg[n][0] += 1
            agg[n][1] += d
        for n, (cnt, us) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
            out(f"    {cnt / calls:4.1f} x {us / max(cnt, 1):8.1f} us  {short_name(n)}")
        res["kernels"] = [{"name": n, "per_call": cnt / calls, "us": us / max(cnt, 1)}
                          for n, (cnt, us) in agg.items()]
        return res
    sm = summarize_calls(per_call)
    for n, mean, mn in sm["rows"]:
        out(f"    {mean:8.1f} us (min {mn:8.1f}) {100 * mean / sm['span']:5.1f} %  {short_name(n)}")
    out(f"    busy {sm['busy']:8.1f}  gaps {sm['gaps']:6.1f}  span {sm['span']:8.1f}  "
        f"between calls {sm['between']:6.1f}  (us; main = largest {max(r[1] for r in sm['rows']):.1f}, "
        f"rest {sm['busy'] - max(r[1] for r in sm['rows']):.1f})")
    mid = per_call[len(per_call) // 2]
    out("    timeline: " + " | ".join(f"+{o:.1f} {short_name(n, 28)} {d:.1f}" for n, o, d, _ in mid))
    res.update({"kernels": [{"name": n, "us": round(m, 2), "min_us": round(x, 2)}
                            for n, m, x in sm["rows"]],
                "busy_us": round(sm["busy"], 1), "gaps_us": round(sm["gaps"], 1),
                "span_us": round(sm["span"], 1), "between_us": round(sm["between"], 1)})
    return res


def run(args):
    import torch
    import peers
    from attnkit_c import AttnkitC
    lib = AttnkitC(args.lib)
    out = lambda s: print(s, flush=True)  # noqa: E731
    if not args.child:
        out(f"GPU {torch.cuda.get_device_name()}  torch {torch.__version__}  cudnn "
            f"{torch.backends.cudnn.version()}  lib {args.lib}  ATTNKIT_FLASH3_BWD_VARIANT="
            f"{os.environ.get('ATTNKIT_FLASH3_BWD_VARIANT', '')!r}")
    results = []
    impls = [x for x in args.impls.split(",") if x]
    for d, s, causal in parse_cases(args.cases):
        shp = peers.Shape(s, d, causal)
        sets = peers.make_sets(torch, shp, 2, True)
        out(f"== bwd {shp}" + (f"  [{args.label}]" if args.child else ""))
        for impl in impls:
            if impl == "flash3":
                fn, _ = peers.attnkit_runner(torch, lib, shp, "flash3", sets, "bwd")
                label = args.label or "flash3"
            elif impl == "cudnn":
                fn, _ = peers.torch_runner(torch, shp, "cudnn", sets, "bwd")
                label = "torch:cudnn"
            else:
                raise ValueError(f"impl {impl!r}: flash3 or cudnn")
            for i in range(3):  # warm: plans, module loads, workspace growth
                fn(i)
            wall = event_wall(torch, fn, args.calls)
            acts = device_activities(torch, fn, args.calls)
            r = report(label, wall, acts, args.calls, out)
            r.update({"d": d, "s": s, "causal": causal})
            results.append(r)
            del fn
        del sets
        torch.cuda.empty_cache()
    return results


def selftest():
    # Two calls of three kernels each; call 1 has a 2 us gap before its main kernel.
    acts = [("void a::prep<1>(P)", 0, 10), ("main", 11, 100), ("conv", 112, 8),
            ("void a::prep<1>(P)", 130, 10), ("main", 142, 100), ("conv", 243, 8)]
    pc, note = group_calls(acts, 2)
    assert pc and not note, note
    sm = summarize_calls(pc)
    assert abs(sm["busy"] - 118) < 1e-9 and abs(sm["span"] - 120.5) < 1e-9, sm
    assert abs(sm["gaps"] - 2.5) < 1e-9 and abs(sm["between"] - 10) < 1e-9, sm
    assert group_calls(acts[:5], 2)[0] == []
    assert short_name("void attnkit::flash3::bwd::bwd_kernel<128, true, false, 64, true, 3, "
                      "false, false>(attnkit::flash3::bwd::BwdArgs)") == \
        "bwd_kernel<128, true, false, 64, true, 3, false, false>"
    assert parse_cases("64:1k:0,128:4096:1") == [(64, 1024, False), (128, 4096, True)]
    lines = []
    report("x", 0.12, acts, 2, lines.append)
    assert any("busy" in s for s in lines), lines
    print("selftest ok")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", help="libattnkit_c.so (default: BUILD/libattnkit_c.so)")
    ap.add_argument("--build", default="build_cm", help="build dir holding libattnkit_c.so")
    ap.add_argument("--cases", default=DEFAULT_CASES, help="D:S:CAUSAL,... (S may be 1k)")
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--impls", default="flash3,cudnn")
    ap.add_argument("--variant", default="",
                    help="also run flash3 with ATTNKIT_FLASH3_BWD_VARIANT=this (child process)")
    ap.add_argument("--json", default="")
    ap.add_argument("--label", default="", help=argparse.SUPPRESS)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--selftest", action="store_true")
    args = ap.parse_args()
    if args.selftest:
        return selftest()
    parse_cases(args.cases)  # fail early on a bad list
    args.lib = args.lib or os.path.join(args.build, "libattnkit_c.so")
    if not os.path.isfile(args.lib):
        print(f"no library at {args.lib} (--lib FILE or --build DIR)", file=sys.stderr)
        return 2
    results = run(args)
    if args.variant and not args.child:
        env = dict(os.environ, ATTNKIT_FLASH3_BWD_VARIANT=args.variant)
        cmd = [sys.executable, os.path.abspath(__file__), "--lib", args.lib, "--cases", args.cases,
               "--calls", str(args.calls), "--impls", "flash3", "--child",
               "--label", f"flash3[{args.variant}]"]
        if args.json:
            cmd += ["--json", args.json + ".variant"]
        rc = subprocess.call(cmd, env=env)
        if rc:
            print(f"variant child rc={rc}", flush=True)
        elif args.json and os.path.isfile(args.json + ".variant"):
            with open(args.json + ".variant") as f:
                results += json.load(f)
            os.remove(args.json + ".variant")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
