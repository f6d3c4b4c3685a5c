#!/usr/bin/env python3
"""attnkit `cpu_flash` vs torch.nn.functional.scaled_dot_product_attention on the CPU.

One process, one machine, one thread count for both (BENCHMARKS.md "CPU shapes and peer"):
B = 2, H = 16, S in {512, 1k, 2k, 4k}, D in {64, 128}, f32 and bf16, causal (top-left, as SDPA's
is_causal) and not, forward and backward. attnkit is called through its C ABI (libattnkit_c.so)
via ctypes on the torch tensors' data_ptr/strides, so both read and write the same memory layout
([B, H, S, D] contiguous, torch's native one; attnkit takes it as the BHSD stride pattern).

Timing: per shape, both implementations are warmed up, then measured alternately (ours, torch,
ours, torch, ...) `--reps` times each; the minimum is reported (`ms`; the median is in the JSON
as `median_ms`): on a shared machine other processes only ever add time. The backward of torch
is timed as `out.backward(dout)` alone (its forward runs untimed before each rep); ours is
attnkit_backward given the forward's out and lse. FLOPs: forward 4*B*H*S*S*D (halved when causal), backward 2.5x.

Usage:
  python bench/cpu/bench_cpu_flash.py --lib build-cpu/libattnkit_c.so            # full sweep
  python bench/cpu/bench_cpu_flash.py --shapes 1024x64,2048x128 --dtypes bf16 --passes fwd
  ... --out bench/results/2026-11-21-cpu-cpu_flash    (writes .json and .md)
  ... --pause 0.05   sleep before each timed call, so that neither side runs beside the other's
                     still-spinning threads (torch's libgomp workers busy-wait for several ms after
                     each call; without a pause, ours is always timed right after torch's).
Prints one line per measurement (progress) and the table at the end; with --out, the .json and
.md are rewritten after every shape, so a long run that is cut short keeps what it measured.
Also prints the relative difference of our result to torch's (a cross-check; the tests compare
with attnkit's own fp64 oracle). Needs torch (CPU is enough) and a Release build of attnkit_c.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

DTYPES = {"f32": (torch.float32, 0), "bf16": (torch.bfloat16, 2), "f16": (torch.float16, 1)}


sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/
from attnkit_c import AttnkitC, tensor_of  # noqa: E402

BSHD_OF_BHSD = (0, 2, 1, 3)  # a torch [B, H, S, D] tensor viewed as attnkit's logical [B, S, H, D]


class Attnkit:
    """attnkit through the shared C ABI binding; checks that the named backend actually ran."""

    def __init__(self, path, backend):
        self.c = AttnkitC(path)
        self.backend = backend

    def check_ran(self):
        ran = self.c.last_backend()
        if ran != self.backend:
            raise RuntimeError(f"attnkit ran {ran}, expected {self.backend}")

    def forward(self, q, k, v, out, lse, code, causal):
        views = [tensor_of(t, BSHD_OF_BHSD) for t in (q, k, v, out)]
        self.c.forward(*views, tensor_of(lse), self.c.options(self.backend, causal=causal))
        self.check_ran()

    def backward(self, dout, q, k, v, out, lse, dq, dk, dv, code, causal):
        views = [tensor_of(t, BSHD_OF_BHSD) for t in (dout, q, k, v, out)]
        grads = [tensor_of(t, BSHD_OF_BHSD) for t in (dq, dk, dv)]
        self.c.backward(*views, tensor_of(lse), *grads, self.c.options(self.backend, causal=causal))
        self.check_ran()


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def flops(b, h, s, d, causal, pss):
    f = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
    return f * (2.5 if pss == "bwd" else 1.0)


def run_shape(ak, b, h, s, d, dname, causal, pss, reps, log, pause=0.0):
    dt, code = DTYPES[dname]
    g = torch.Generator().manual_seed(0)
    q, k, v, dout = (torch.randn(b, h, s, d, generator=g).to(dt) for _ in range(4))
    out = torch.empty_like(q)
    lse = torch.empty(b, h, s, dtype=torch.float32)
    if pss == "fwd":
        def ours():
            ak.forward(q, k, v, out, lse, code, causal)

        def theirs():
            with torch.no_grad():
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        run_ours, run_theirs = ours, theirs
        prep_theirs = None
    else:
        ak.forward(q, k, v, out, lse, code, causal)
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        qg, kg, vg = (x.detach().clone().requires_grad_(True) for x in (q, k, v))
        state = {}

        def run_ours():
            ak.backward(dout, q, k, v, out, lse, dq, dk, dv, code, causal)

        def prep_theirs():
            qg.grad = kg.grad = vg.grad = None
            state["o"] = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)

        def run_theirs():
            state["o"].backward(dout)

    # correctness cross-check (extra; the real tests compare with our oracle)
    if pss == "fwd":
        ours_out = (run_ours(), out.float().clone())[1]
        with torch.no_grad():
            ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal).float()
        err = ((ours_out - ref).norm() / ref.norm()).item()
    else:
        prep_theirs()
        run_theirs()
        run_ours()
        err = max(((a.float() - r.grad.float()).norm() / r.grad.float().norm()).item()
                  for a, r in ((dq, qg), (dk, kg), (dv, vg)))
    t_ours, t_theirs = [], []
    # warm-up done above (one call each); measure alternately
    for _ in range(reps):
        # --pause: each timed call starts after the other implementation's threads went idle.
        # torch's OpenMP workers (libgomp) busy-wait for several ms after each parallel region
        # (GOMP_SPINCOUNT), i.e. on one of the two cores right when our call starts; our pool's
        # workers sleep at once, so without a pause only our side runs beside a spinning thread.
        time.sleep(pause)
        t_ours.append(timed(run_ours))
        if prep_theirs:
            prep_theirs()
        time.sleep(pause)
        t_theirs.append(timed(run_theirs))
    # The best of the alternating reps: on a shared machine, load from other processes only ever
    # adds time, so the minimum is the least disturbed estimate for both (medians in the JSON).
    mo, mt = min(t_ours), min(t_theirs)
    med_o, med_t = statistics.median(t_ours), statistics.median(t_theirs)
    fl = flops(b, h, s, d, causal, pss)
    log(f"  {pss} {dname} S={s} D={d} causal={int(causal)}: ours {mo*1e3:9.1f} ms "
        f"({fl/mo/1e9:6.1f} GFLOP/s)  torch {mt*1e3:9.1f} ms ({fl/mt/1e9:6.1f} GFLOP/s)  "
        f"ours/torch speed {mt/mo:5.2f}x  rel.diff {err:.1e}")
    common = {"pass": pss, "dtype": dname, "b": b, "h": h, "s": s, "d": d, "causal": causal}
    return [dict(impl="attnkit:" + ak.backend, ms=mo * 1e3, gflops=fl / mo / 1e9,
                 median_ms=med_o * 1e3, **common),
            dict(impl="torch:cpu", ms=mt * 1e3, gflops=fl / mt / 1e9, median_ms=med_t * 1e3,
                 **common)], mt / mo, err


def expected_rows(a):
    return (len(a.passes.split(",")) * len(a.dtypes.split(",")) * len(a.causal.split(",")) *
            len([x for x in a.shapes.split(",") if x]))


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--lib", default="build-cpu/libattnkit_c.so")
    ap.add_argument("--backend", default="cpu_flash")
    ap.add_argument("--shapes", default="512x64,512x128,1024x64,1024x128,2048x64,2048x128,"
                    "4096x64,4096x128", help="comma list of SxD")
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--passes", default="fwd,bwd")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default="", help="path prefix for .json and .md results")
    ap.add_argument("--pause", type=float, default=0.0,
                    help="seconds of sleep before each timed call (lets the other side's "
                    "threads go idle; see run_shape)")
    a = ap.parse_args()
    a.load_start = os.getloadavg()

    torch.set_num_threads(a.threads)
    ak = Attnkit(a.lib, a.backend)
    ak.c.set_num_threads(a.threads)
    log = lambda m: print(m, file=sys.stderr, flush=True)
    log(f"cpu: {cpu_name()}, threads {a.threads}, torch {torch.__version__} "
        f"({torch.backends.cpu.get_cpu_capability()})")
    rows, table = [], []
    shapes = [tuple(int(x) for x in sd.split("x")) for sd in a.shapes.split(",") if sd]
    for pss in a.passes.split(","):
        for dname in a.dtypes.split(","):
            for causal in [c == "1" for c in a.causal.split(",")]:
                for s, d in shapes:
                    r, ratio, err = run_shape(ak, a.batch, a.heads, s, d, dname, causal, pss,
                                              a.reps, log, a.pause)
                    rows += r
                    table.append((pss, dname, causal, s, d, r[0]["ms"], r[1]["ms"], ratio, err))
                    write_results(a, rows, table)  # after every shape: long runs keep progress


def fmt_load(t):
    return "/".join(f"{x:.2f}" for x in t)


def write_results(a, rows, table):
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = ""
    load_now = os.getloadavg()
    meta = {"cpu": cpu_name(), "threads": a.threads, "date": str(datetime.date.today()),
            "commit": commit, "torch": torch.__version__, "pause_s": a.pause,
            "loadavg_start": a.load_start, "loadavg_now": load_now, "rows": rows}
    md = ["| pass | dtype | causal | S | D | ours ms | torch ms | ours/torch speed |",
          "|---|---|---|---|---|---|---|---|"]
    for pss, dname, causal, s, d, mo, mt, ratio, err in table:
        md.append(f"| {pss} | {dname} | {'yes' if causal else 'no'} | {s} | {d} | {mo:.1f} | "
                  f"{mt:.1f} | {ratio:.2f} |")
    if len(table) == expected_rows(a):
        print("\n".join(md))
    if a.out:
        with open(a.out + ".json", "w") as f:
            json.dump(meta, f, indent=1)
        with open(a.out + ".md", "w") as f:
            f.write(f"# attnkit:{a.backend} vs torch:cpu ({meta['cpu']}, {a.threads} threads, "
                    f"{meta['date']}, commit {commit}, torch {torch.__version__})\n\n"
                    f"B = {a.batch}, H = {a.heads}; best of {a.reps} alternating runs each"
                    f"{f', {a.pause} s pause before each timed call' if a.pause else ''}; "
                    f"ours/torch speed > 1 means attnkit is faster. Load average (1/5/15 min) "
                    f"at start {fmt_load(a.load_start)}, at the last row {fmt_load(load_now)}."
                    f"\n\n"
                    f"Command: `python {' '.join(sys.argv)}`\n\n")
            if len(table) != expected_rows(a):
                f.write(f"Partial run: {len(table)} of {expected_rows(a)} rows.\n\n")
            f.write("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
