#!/usr/bin/env python3
"""attnkit:cudnn vs torch SDPA forced to CUDNN_ATTENTION, forward and backward, in ONE process
(BENCHMARKS.md), attnkit called through libattnkit_c.so (ctypes) on the same torch tensors.

Shapes: 16384 tokens, hidden 2048: B = 16384/S, H = 2048/D, bf16, BSHD memory (torch sees the
[B, H, S, D] transposed view of the same storage), causal (top-left, torch's is_causal) and not.
Method: CUDA events around every call, the host enqueuing ahead (no sync between calls), warm-up
first (plan building and autotuning stay out), median of --reps calls, 3 input sets rotated
(> 3 x L2), ~1 s pause between implementations. Forward: inference on both sides (no lse / no
grad). Backward: attnkit_backward vs torch.autograd.grad of the cuDNN SDPA output.
Also checks ours vs torch's output and grads (relative Frobenius error) at every shape, and
measures host time per call on a tiny shape (plan-cache hits).

usage: cudnn_vs_torch.py --lib build/libattnkit_c.so --json out.json [--s 512,1024] [--d 64,128]
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

if os.environ.get("ATTNKIT_PRELOAD"):  # load libattnkit_c (and its libcudnn) before torch's
    ctypes.CDLL(os.path.abspath(os.environ["ATTNKIT_PRELOAD"]), mode=ctypes.RTLD_GLOBAL)
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/
from attnkit_c import AttnkitC, tensor_of  # noqa: E402


def flops(b, h, s, d, causal, pas):
    f = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
    return f * (2.5 if pas == "bwd" else 1.0)


def timed(fn, reps, warmup=5):
    for i in range(warmup):
        fn(i)
    torch.cuda.synchronize()
    evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
           for _ in range(reps)]
    for r, (a, b) in enumerate(evs):
        a.record()
        fn(r)
        b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in evs)


def rel(x, y):
    return ((x.float() - y.float()).norm() / y.float().norm().clamp_min(1e-30)).item()


def run_shape(ak, s, d, causal, reps, nsets=3):
    b, h = 16384 // s, 2048 // d
    dt = torch.bfloat16
    g = torch.Generator(device="cuda").manual_seed(s * 1000 + d)
    sets = []
    for _ in range(nsets):
        q, k, v, do = (torch.randn(b, s, h, d, device="cuda", dtype=dt, generator=g)
                       for _ in range(4))
        sets.append(dict(q=q, k=k, v=v, do=do))
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    ck = "top_left" if causal else None
    opts = ak.options("cudnn", causal=ck, stream=stream)
    rows = []

    # ---- attnkit views and buffers
    for st in sets:
        st["out"] = torch.empty_like(st["q"])
        st["lse"] = torch.empty(b, h, s, device="cuda", dtype=torch.float32)
        st["dq"], st["dk"], st["dv"] = (torch.empty_like(st["q"]) for _ in range(3))
        st["t"] = {n: tensor_of(st[n]) for n in ("q", "k", "v", "do", "out", "lse", "dq", "dk", "dv")}

    def ak_fwd(i):
        t = sets[i % nsets]["t"]
        ak.forward(t["q"], t["k"], t["v"], t["out"], None, opts)

    def ak_fwd_lse(i):
        t = sets[i % nsets]["t"]
        ak.forward(t["q"], t["k"], t["v"], t["out"], t["lse"], opts)

    def ak_bwd(i):
        t = sets[i % nsets]["t"]
        ak.backward(t["do"], t["q"], t["k"], t["v"], t["out"], t["lse"], t["dq"], t["dk"], t["dv"],
                    opts)

    # ---- torch views ([B, H, S, D] over the same storage)
    def bhsd(x):
        return x.transpose(1, 2)

    def th_fwd(i):
        st = sets[i % nsets]
        with torch.no_grad():
            return F.scaled_dot_product_attention(bhsd(st["q"]), bhsd(st["k"]), bhsd(st["v"]),
                                                  is_causal=causal)

    graphs = []
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        for st in sets:
            q, k, v = (bhsd(st[n]).detach().requires_grad_() for n in ("q", "k", "v"))
            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            graphs.append((q, k, v, o))

        def th_bwd(i):
            q, k, v, o = graphs[i % nsets]
            return torch.autograd.grad(o, (q, k, v), bhsd(sets[i % nsets]["do"]),
                                       retain_graph=True)

        # correctness spot-check (set 0)
        ak_fwd_lse(0)
        ak_bwd(0)
        torch.cuda.synchronize()
        ref_o = graphs[0][3]
        ref_g = th_bwd(0)
        st = sets[0]
        err = dict(out=rel(bhsd(st["out"]), ref_o), dq=rel(bhsd(st["dq"]), ref_g[0]),
                   dk=rel(bhsd(st["dk"]), ref_g[1]), dv=rel(bhsd(st["dv"]), ref_g[2]))
        for i in range(nsets):  # lse/out for every set's backward
            ak_fwd_lse(i)

        ms = {}
        ms[("attnkit:cudnn", "fwd")] = timed(ak_fwd, reps)
        time.sleep(0.7)
        ms[("torch:cudnn", "fwd")] = timed(th_fwd, reps)
        time.sleep(0.7)
        ms[("attnkit:cudnn", "bwd")] = timed(ak_bwd, reps)
        time.sleep(0.7)
        ms[("torch:cudnn", "bwd")] = timed(th_bwd, reps)
        time.sleep(0.7)
    for (impl, pas), t in ms.items():
        rows.append(dict(impl=impl, **{"pass": pas}, dtype="bf16", b=b, h=h, s=s, d=d,
                         causal=causal, ms=round(t, 4),
                         tflops=round(flops(b, h, s, d, causal, pas) / (t * 1e-3) / 1e12, 1)))
    ratio = {p: ms[("torch:cudnn", p)] / ms[("attnkit:cudnn", p)] for p in ("fwd", "bwd")}
    return rows, ratio, err


def host_overhead(ak, calls=200):
    """Host microseconds per attnkit forward call on a tiny shape with the plan cached: wall time
    of `calls` enqueues without synchronizing (GPU work per call is a few microseconds, so the
    host is the bottleneck), and the same for torch's cuDNN SDPA for scale."""
    print("host overhead: tiny shape", flush=True)
    q, k, v = (torch.randn(1, 64, 1, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    out = torch.empty_like(q)
    t = {n: tensor_of(x) for n, x in (("q", q), ("k", k), ("v", v), ("out", out))}
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    opts = ak.options("cudnn", stream=stream)
    res = {}
    for name, fn in (
            ("attnkit:cudnn", lambda: ak.forward(t["q"], t["k"], t["v"], t["out"], None, opts)),
            ("torch:cudnn", lambda: F.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)))):
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]), torch.no_grad():
            for _ in range(20):
                fn()
            torch.cuda.synchronize()
            best = None
            for _ in range(5):
                t0 = time.perf_counter()
                for _ in range(calls):
                    fn()
                t1 = time.perf_counter()
                torch.cuda.synchronize()
                us = (t1 - t0) / calls * 1e6
                best = us if best is None else min(best, us)
        res[name] = round(best, 2)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--s", default="512,1024,2048,4096,8192,16384")
    ap.add_argument("--d", default="64,128,256")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--reps", type=int, default=100)
    a = ap.parse_args()
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name()}", flush=True)
    ak = AttnkitC(a.lib)
    print("attnkit", ak.version(), flush=True)
    with open("/proc/self/maps") as f:  # which libcudnn the process really uses (one soname)
        libs = sorted({ln.split()[-1] for ln in f if "libcudnn" in ln})
    print("loaded:", *libs, sep="\n  ", flush=True)
    doc = dict(gpu=torch.cuda.get_device_name(), date=time.strftime("%Y-%m-%d", time.gmtime()),
               commit=os.popen("git rev-parse --short HEAD 2>/dev/null").read().strip(),
               torch=torch.__version__, cudnn=torch.backends.cudnn.version(), rows=[],
               ratios=[], host_us_per_call=None)
    doc["host_us_per_call"] = host_overhead(ak)
    print("host us/call (tiny shape, plan cached):", doc["host_us_per_call"], flush=True)
    for d in (int(x) for x in a.d.split(",")):
        for s in (int(x) for x in a.s.split(",")):
            for c in (bool(int(x)) for x in a.causal.split(",")):
                try:
                    rows, ratio, err = run_shape(ak, s, d, c, a.reps)
                except Exception as e:  # report and go on: one failing shape must not hide the rest
                    print(f"d={d} s={s} causal={c}: FAILED {e}", flush=True)
                    doc["ratios"].append(dict(s=s, d=d, causal=c, error=str(e)[:300]))
                    continue
                doc["rows"] += rows
                doc["ratios"].append(dict(s=s, d=d, causal=c, fwd=round(ratio["fwd"], 3),
                                          bwd=round(ratio["bwd"], 3),
                                          err={k: float(f"{v:.2e}") for k, v in err.items()}))
                tf = {(r["impl"], r["pass"]): r["tflops"] for r in rows}
                print(f"d={d:3d} s={s:5d} causal={int(c)}  fwd {tf[('attnkit:cudnn', 'fwd')]:6.1f}"
                      f" vs {tf[('torch:cudnn', 'fwd')]:6.1f} (x{ratio['fwd']:.3f})  bwd "
                      f"{tf[('attnkit:cudnn', 'bwd')]:6.1f} vs {tf[('torch:cudnn', 'bwd')]:6.1f} "
                      f"(x{ratio['bwd']:.3f})  err {err}", flush=True)
                with open(a.json, "w") as f:
                    json.dump(doc, f, indent=1)
    with open(a.json, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
