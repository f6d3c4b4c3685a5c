#!/usr/bin/env python3
"""attnkit's GPU backends against PyTorch's attention kernels, in ONE process (BENCHMARKS.md).

Implementations: attnkit:<backend> for each --backends entry (called through libattnkit_c.so via
ctypes on torch tensors, on torch's current stream; "<backend>+det" sets Options::deterministic), torch:flash / torch:cudnn / torch:efficient
(SDPA forced with torch.nn.attention.sdpa_kernel) and torch:flex (FlexAttention under
torch.compile). Shapes: 16384 tokens, hidden 2048: B = 16384 / S, H = 2048 / D, bf16.

Method: CUDA events around each call; warm-up first (module load, compile, autotune, plans stay
out); median of >= 100 timed runs (fewer only for implementations slower than 50 ms a call —
the cuda_math reference — down to 10, or 3 above 500 ms; the count is recorded in every row);
inputs rotated over >= 3 x L2 (at least two input sets, so no two consecutive calls see the same
data; outputs written to one reused buffer per implementation, which is what torch's caching
allocator gives the peers; the timed attnkit forward asks for no lse, like torch's inference
call); random normal inputs; a pause (--pause, 1 s) between implementations. --preheat S adds S
seconds of back-to-back calls before each timed block, so every implementation is timed at the
clock the board holds under sustained load (the H200 drops from 1980 MHz to 1500-1750 MHz at its
700 W cap within ~0.1 s); --clocks records each row's SM clock, power and power-cap share from
nvidia-smi (bench/smi_clocks.py). With --rounds R every implementation is timed R times per shape in
alternating order (ABBA...) and the row reports the median of the R medians: use it when two
implementations are expected to be equal (attnkit:cudnn vs torch:cudnn), since the lent machines
drift by about +-5% between minutes. FLOPs: forward 4 B H S^2 D (halved when causal), backward
2.5 x forward.

Correctness: before timing, every attnkit backend's output (and gradients for bwd) on the timed
shape is compared with torch's (flash, else efficient/cudnn) in the same process; the max abs
error and the relative error are printed and stored, and a backend over tolerance is reported as
WRONG, never with a speed.

Each attnkit backend is first run once in a child process (--no-preflight skips this): one that
crashes there (segfault, abort) is recorded as "crashed" and left out, so it cannot take the
whole measurement down with it.

Also measures the two ceilings once: bf16 GEMM 8192^3 (torch.matmul) and device copy bandwidth.

  python3 bench/peers.py --lib build-gpu/libattnkit_c.so --backends flash,flash3,cudnn,cuda_math \
      [--shapes 1k,4k,16k] [--d 64,128] [--causal both|yes|no] [--passes fwd,bwd]
      [--peers flash,cudnn,efficient,flex] [--quick] [--json FILE]
  python3 bench/peers.py --summarize FILE.json
"""
import argparse
import atexit
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

TOKENS, HIDDEN = 16384, 2048
ALL_S = [512, 1024, 2048, 4096, 8192, 16384]
ALL_D = [64, 128, 256]
PEERS = ["flash", "cudnn", "efficient", "flex"]
REL_TOL = 2e-2  # bf16 outputs vs torch's bf16 kernels: both ~4e-3 from exact


def log(msg):
    print(msg, flush=True)


def record_commit(explicit=""):
    """The commit a JSON header records: `explicit` (--commit), else env ATTNKIT_COMMIT (on the
    device machine the copy's .git names the session's first commit, not the tree that was sent;
    session 71's table read c0d973a for 8571cf7), else git rev-parse, else "unknown"."""
    commit = explicit or os.environ.get("ATTNKIT_COMMIT", "")
    try:
        commit = commit or subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
            cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    except OSError:
        pass
    return commit or "unknown"


def run_doc(torch, lib, method):
    """The JSON header of a one-process benchmark (date, device, torch, ceilings, method, commit:
    record_commit), its line logged."""
    dev = torch.cuda.get_device_name()
    ceil = ceilings(torch)
    log(f"{dev}; torch {torch.__version__}; attnkit {lib.version()}; ceilings {ceil}")
    commit = record_commit()
    return {"date": datetime.date.today().isoformat(), "device": dev, "torch": torch.__version__,
            "ceilings": ceil, "method": method, "commit": commit, "rows": []}


def rel_err(a, b):
    """Relative error ||a - b|| / ||b|| of two torch tensors, in fp32."""
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30)).item()


def timed_entry(timer, fn, flops, pause):
    """A bench/gpu script's timed implementation: `pause` seconds of rest, then timer(fn)'s
    median; {ms, runs, tflops} for its JSON entry (flops per call)."""
    time.sleep(pause)
    ms, runs, _, _ = timer(fn)
    return {"ms": round(ms, 4), "runs": runs, "tflops": round(flops / (ms * 1e-3) / 1e12, 1)}


def finish_row(doc, res, head, parts, peers, json_path):
    """A bench/gpu script's row done: appended to doc, logged as `head | parts || flash3's ratio
    to each of peers` (those timed), and doc rewritten to json_path (if any), so that a run cut
    short keeps its rows."""
    doc["rows"].append(res)
    f3 = res["impls"].get("flash3", {}).get("tflops")
    ratios = [f"/{p} {f3 / res['impls'][p]['tflops']:.2f}"
              for p in peers if f3 and res["impls"].get(p, {}).get("tflops")]
    log(f"{head} | " + " | ".join(parts) + " || " + " ".join(ratios))
    if json_path:
        with open(json_path, "w") as f:
            json.dump(doc, f, indent=1)


def parse_sizes(text):
    out = []
    for tok in text.split(","):
        tok = tok.strip().lower()
        if tok:
            out.append(int(float(tok[:-1]) * 1024) if tok.endswith("k") else int(tok))
    return out


def flops(b, h, s, d, causal, pas):
    f = 4.0 * b * h * s * s * d
    if causal:
        f /= 2
    return f * (2.5 if pas == "bwd" else 1.0)


# ---------------------------------------------------------------------------------------------
class Timer:
    """Median over CUDA-event-timed calls of fn(i) (i = run index, used to rotate inputs)."""

    def __init__(self, torch, warmup, runs, slow_ms=50.0, slow_budget_s=5.0):
        self.torch, self.warmup, self.runs = torch, warmup, runs
        self.slow_ms, self.slow_budget_s = slow_ms, slow_budget_s

    def __call__(self, fn):
        torch = self.torch
        fn(0)  # first call: module load, torch.compile, plan building
        torch.cuda.synchronize()
        # Probe one call to size warm-up and run count for very slow implementations (cuda_math).
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn(1)
        e.record()
        torch.cuda.synchronize()
        probe = s.elapsed_time(e)
        runs, warmup = self.runs, self.warmup
        if probe > self.slow_ms:
            warmup = 1
            runs = max(3 if probe > 500 else 10, min(runs, int(self.slow_budget_s * 1000 / probe)))
        for i in range(warmup):
            fn(i)
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
        for i in range(runs):
            starts[i].record()
            fn(i)
            ends[i].record()
        torch.cuda.synchronize()
        times = [a.elapsed_time(b) for a, b in zip(starts, ends)]
        return statistics.median(times), runs, min(times), max(times)


# ---------------------------------------------------------------------------------------------
def preheat(torch, fn, seconds):
    """Calls fn back to back for about `seconds` (batches of 8, then a sync), so the timed block
    after it runs at the clock the board holds under sustained load (--preheat)."""
    t0, i = time.time(), 0
    while time.time() - t0 < seconds:
        for _ in range(8):
            fn(i)
            i += 1
        torch.cuda.synchronize()


def ceilings(torch):
    """bf16 GEMM 8192^3 TFLOP/s and device copy bandwidth TB/s (read + write bytes)."""
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    t = Timer(torch, 5, 30)
    ms, _, _, _ = t(lambda i: torch.matmul(a, b))
    gemm = 2.0 * n ** 3 / (ms * 1e-3) / 1e12
    del a, b
    src = torch.randn(256 * 1024 * 1024, device="cuda", dtype=torch.float32)  # 1 GiB
    dst = torch.empty_like(src)
    ms, _, _, _ = t(lambda i: dst.copy_(src))
    copy = 2.0 * src.numel() * 4 / (ms * 1e-3) / 1e12
    del src, dst
    torch.cuda.empty_cache()
    return {"gemm_bf16_8192_tflops": round(gemm, 1), "copy_tb_per_s": round(copy, 3)}


def floor_ms(ceil, shp, pas):
    """BENCHMARKS.md's floor: max(FLOPs / measured GEMM rate, bytes / measured copy bandwidth).
    Bytes: each input read once, each output written once (fwd q,k,v,out; bwd q,k,v,out,dout,
    dq,dk,dv), bf16."""
    f = flops(shp.b, shp.h, shp.s, shp.d, shp.causal, pas)
    nbytes = (4 if pas == "fwd" else 8) * shp.b * shp.s * shp.h * shp.d * 2
    t_math = f / (ceil["gemm_bf16_8192_tflops"] * 1e12)
    t_mem = nbytes / (ceil["copy_tb_per_s"] * 1e12)
    return round(1e3 * max(t_math, t_mem), 4)


# ---------------------------------------------------------------------------------------------
class Shape:
    def __init__(self, s, d, causal):
        self.s, self.d, self.causal = s, d, causal
        self.b, self.h = TOKENS // s, HIDDEN // d

    def __str__(self):
        return f"B={self.b} H={self.h} S={self.s} D={self.d} causal={int(self.causal)}"


def make_sets(torch, shp, nsets, need_grad):
    """nsets input sets, each BSHD storage [B, S, H, D] bf16 (q, k, v, dout)."""
    sets = []
    for _ in range(nsets):
        x = {n: torch.randn(shp.b, shp.s, shp.h, shp.d, device="cuda", dtype=torch.bfloat16)
             for n in ("q", "k", "v", "dout")}
        sets.append(x)
    return sets


def torch_runner(torch, shp, peer, sets, pas):
    """Returns (fn(i), outputs_of_set0) for a torch peer; raises when the peer cannot run."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def bhsd(t):
        return t.transpose(1, 2)  # [B, H, S, D] view of BSHD storage: no copy

    if peer == "flex":
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        compiled = torch.compile(flex_attention, dynamic=False)
        bm = None
        if shp.causal:
            bm = create_block_mask(lambda b, h, q, kv: q >= kv, None, None, shp.s, shp.s,
                                   device="cuda")

        def attn(q, k, v):
            return compiled(q, k, v, block_mask=bm)
    else:
        backend = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                   "efficient": SDPBackend.EFFICIENT_ATTENTION}[peer]

        def attn(q, k, v):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, is_causal=shp.causal)

    n = len(sets)
    if pas == "fwd":
        ins = [(bhsd(x["q"]), bhsd(x["k"]), bhsd(x["v"])) for x in sets]

        def fn(i):
            attn(*ins[i % n])
        with torch.no_grad():
            ref = attn(*ins[0]).transpose(1, 2)
        return fn, {"out": ref}
    grads = []
    for x in sets:
        q, k, v = (bhsd(x[t]).detach().requires_grad_(True) for t in ("q", "k", "v"))
        out = attn(q, k, v)
        grads.append((out, (q, k, v), bhsd(x["dout"])))

    def fn(i):
        out, inputs, dout = grads[i % n]
        torch.autograd.grad(out, inputs, dout, retain_graph=True)
    out, inputs, dout = grads[0]
    dq, dk, dv = torch.autograd.grad(out, inputs, dout, retain_graph=True)
    return fn, {"out": out.detach().transpose(1, 2), "dq": dq.transpose(1, 2),
                "dk": dk.transpose(1, 2), "dv": dv.transpose(1, 2)}


def attnkit_bwd_from_own_forward(torch, lib, opts, sets, lse_shape, dout="do", view=None):
    """An attnkit backward timed from its own forward's out and lse, one forward per input set at
    set-up; one dq / dk / dv set reused by every call (the bench/gpu scripts' backward rows).
    sets: dicts of q, k, v and `dout`; lse_shape: the lse tensor's shape; view(t): the layout the
    library sees (varlen_vs_peers' dense rows view packed tensors as [B, S, H, D]). Returns
    (fn(i), [dq, dk, dv] of set 0 (copies), the backend that ran); fn.keep holds what the library
    points at."""
    from attnkit_c import tensor_of
    view = view or (lambda t: t)
    q0 = sets[0]["q"]
    grads = [torch.empty_like(sets[0][n]) for n in ("q", "k", "v")]
    tg = [tensor_of(view(g)) for g in grads]
    keep, ts = [], []
    for x in sets:
        out = torch.empty_like(x["q"])
        lse = torch.empty(*lse_shape, device=q0.device, dtype=torch.float32)
        t = {k: tensor_of(view(v)) for k, v in x.items()}
        t["out"], t["lse"] = tensor_of(view(out)), tensor_of(lse)
        lib.forward(t["q"], t["k"], t["v"], t["out"], t["lse"], opts)
        keep += [out, lse]
        ts.append(t)

    def fn(i):
        t = ts[i % len(ts)]
        lib.backward(t[dout], t["q"], t["k"], t["v"], t["out"], t["lse"], *tg, opts)
    fn.keep = (opts, keep)
    fn(0)
    if q0.is_cuda:
        torch.cuda.synchronize()
    return fn, [g.clone() for g in grads], lib.last_backend()


def sdpa_backward_fn(torch, sets, sdp_backend, **sdpa_kwargs):
    """torch SDPA's backward under sdp_backend (SDPBackend.*), timed as autograd.grad of its own
    forward (retain_graph), one forward per input set at set-up; sets: dicts of [B, S, H, D] q, k,
    v, do. Returns (fn(i), [dq, dk, dv] of set 0 as [B, S, H, D] copies); fn.keep holds the
    graphs."""
    from torch.nn.attention import sdpa_kernel
    f = torch.nn.functional.scaled_dot_product_attention
    saved = []
    for x in sets:
        ins = [x[n].detach().transpose(1, 2).requires_grad_() for n in ("q", "k", "v")]
        with sdpa_kernel(sdp_backend):
            out = f(*ins, **sdpa_kwargs)
        saved.append((out, ins, x["do"].transpose(1, 2)))

    def fn(i):
        out, ins, do = saved[i % len(saved)]
        torch.autograd.grad(out, ins, do, retain_graph=True)
    out, ins, do = saved[0]
    first = [g.transpose(1, 2).contiguous()
             for g in torch.autograd.grad(out, ins, do, retain_graph=True)]
    fn.keep = saved
    if sets[0]["q"].is_cuda:
        torch.cuda.synchronize()
    return fn, first


def attnkit_runner(torch, lib, shp, backend, sets, pas, outputs_per_set=False):
    """Returns (fn(i), outputs_of_set0) for an attnkit backend.

    Outputs are treated as the torch peers' are: torch allocates its output (and gradients) on
    every call from the caching allocator, which hands back the block freed by the previous
    call, so every call writes the same addresses. Here one output buffer (one dq/dk/dv set) is
    likewise reused across the rotated input sets (outputs_per_set=True gives each set its own,
    the method before 2026-11-21's second H100 run). The timed forward asks for no lse, as
    torch's inference call computes none; the backward's inputs (out, lse) come from one
    forward per set at set-up. A backend named "<name>+det" is <name> with Options::deterministic
    (a separate column: e.g. --backends flash3,flash3+det)."""
    from attnkit_c import tensor_of
    stream = torch.cuda.current_stream().cuda_stream
    det = backend.endswith("+det")
    opts = lib.options(backend[:-4] if det else backend,
                       causal="bottom_right" if shp.causal else None, stream=stream,
                       deterministic=det)
    n = len(sets)
    bufs = []
    shared = None
    for x in sets:
        t = {k: tensor_of(v) for k, v in x.items()}
        if outputs_per_set or shared is None:
            keep = {"out": torch.empty_like(x["q"])}
            if pas == "bwd":
                for g in ("dq", "dk", "dv"):
                    keep[g] = torch.empty_like(x["q"])
            shared = keep
        keep = dict(shared)
        if pas == "bwd":  # the backward reads this set's own forward output and lse
            keep["out"] = torch.empty_like(x["q"])
            keep["lse"] = torch.empty(shp.b, shp.h, shp.s, device="cuda", dtype=torch.float32)
            t["lse"] = tensor_of(keep["lse"])
        else:
            t["lse"] = None
        for k in keep:
            t[k] = tensor_of(keep[k])
        if pas == "bwd":
            lib.forward(t["q"], t["k"], t["v"], t["out"], t["lse"], opts)
        bufs.append((t, keep))

    if pas == "fwd":
        def fn(i):
            t, _ = bufs[i % n]
            lib.forward(t["q"], t["k"], t["v"], t["out"], t["lse"], opts)
    else:
        def fn(i):
            t, _ = bufs[i % n]
            lib.backward(t["dout"], t["q"], t["k"], t["v"], t["out"], t["lse"], t["dq"], t["dk"],
                         t["dv"], opts)
    fn(0)
    torch.cuda.synchronize()
    return fn, bufs[0][1]


def compare(torch, mine, ref):
    """{name: (max_abs, rel)} over the tensors both have."""
    res = {}
    for k in ("out", "dq", "dk", "dv"):
        if k in mine and k in ref:
            a, b = mine[k].float(), ref[k].float()
            diff = (a - b)
            finite = bool(torch.isfinite(a).all())
            rel = float(diff.norm() / b.norm().clamp_min(1e-30)) if finite else float("inf")
            res[k] = (float(diff.abs().max()) if finite else float("inf"), rel)
    return res


# ---------------------------------------------------------------------------------------------
def preflight_one(torch, args, backend, s_list, d_list, causals, passes):
    """Child process: run `backend` once per (pass, D, causal) at the smallest S. A crash (signal)
    ends this process, which the parent sees; errors such as "unsupported" are the main run's."""
    from attnkit_c import AttnkitC
    lib = AttnkitC(args.lib)
    for pas in passes:
        for d in d_list:
            for causal in causals:
                shp = Shape(min(s_list), d, causal)
                sets = make_sets(torch, shp, 1, pas == "bwd")
                try:
                    attnkit_runner(torch, lib, shp, backend, sets, pas)
                    log(f"[preflight] attnkit:{backend} {pas} {shp}: ran")
                except Exception as e:  # noqa: BLE001 - reported by the main run
                    log(f"[preflight] attnkit:{backend} {pas} {shp}: {str(e)[:160]}")
    torch.cuda.synchronize()
    return 0


def preflight(args, backends):
    """Runs each attnkit backend in a child process first; a backend whose child crashes
    (segfault, abort) is left out of the one-process measurement instead of killing it."""
    ok, crashed = [], {}
    for b in backends:
        cmd = [sys.executable, os.path.abspath(__file__), "--preflight-one", b, "--lib", args.lib,
               "--causal", args.causal, "--passes", args.passes]
        if args.shapes:
            cmd += ["--shapes", args.shapes]
        if args.d:
            cmd += ["--d", args.d]
        if args.quick:
            cmd += ["--quick"]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            rc, text = r.returncode, (r.stdout + r.stderr).strip()
        except subprocess.TimeoutExpired:
            rc, text = "timeout", ""
        if rc == 0:
            ok.append(b)
            log(f"[preflight] attnkit:{b}: ok")
        else:
            last = text.splitlines()[-1] if text else ""
            crashed[b] = f"preflight child exited with {rc}: {last[:200]}"
            log(f"[preflight] attnkit:{b}: CRASHED ({crashed[b]}); left out of the measurement")
    return ok, crashed


# ---------------------------------------------------------------------------------------------
def summarize(doc, out=print):
    rows = [r for r in doc["rows"] if r.get("tflops")]
    impls = sorted({r["impl"] for r in rows}, key=lambda x: (not x.startswith("attnkit"), x))
    ours = [i for i in impls if i.startswith("attnkit")]
    peers = [i for i in impls if i.startswith("torch")]
    out(f"GPU {doc.get('gpu')}  torch {doc.get('torch')}  cudnn {doc.get('cudnn')}  "
        f"commit {doc.get('commit')}  ceilings {doc.get('ceilings')}")
    keyf = lambda r: (r["pass"], r["d"], r["causal"], r["s"])
    keys = sorted({keyf(r) for r in rows})
    short = [i.split(":")[1] for i in impls]
    hdr = f"{'pass':4} {'D':>3} {'c':1} {'S':>5} | " + " ".join(f"{x:>9}" for x in short)
    # Ratio columns: ours / every peer when that stays narrow, else ours / best peer and / cuDNN.
    if len(ours) * len(peers) <= 8:
        pairs = [(o, [p]) for o in ours for p in peers]
    else:
        pairs = [(o, peers) for o in ours] + [(o, ["torch:cudnn"]) for o in ours if "torch:cudnn" in peers]
    def pname(o, ps):
        return f"{o.split(':')[1]}/{ps[0].split(':')[1] if len(ps) == 1 else 'best'}"
    ratio_hdr = [pname(o, ps) for o, ps in pairs]
    out("TFLOP/s (bf16); ratios ours/peer")
    out(hdr + (" | " + " ".join(f"{x:>15}" for x in ratio_hdr) if ratio_hdr else ""))
    for k in keys:
        cell = {r["impl"]: r["tflops"] for r in rows if keyf(r) == k}
        line = f"{k[0]:4} {k[1]:>3} {int(k[2]):1} {k[3]:>5} | " + " ".join(
            f"{cell[i]:9.1f}" if i in cell else f"{'-':>9}" for i in impls)
        rs = []
        for o, ps in pairs:
            best = max((cell[p] for p in ps if p in cell), default=None)
            rs.append(f"{cell[o] / best:15.2f}" if o in cell and best else f"{'-':>15}")
        out(line + (" | " + " ".join(rs) if rs else ""))
    clocked = [r for r in rows if r.get("clock")]
    if clocked:
        out("SM clock, MHz (median of the nvidia-smi samples in the row's timed blocks; "
            "* = the SW power cap was active in at least half of them; ^ = no sample fell in "
            "the timed blocks, so the preheat's samples too)")
        out(hdr)
        for k in keys:
            cell = {r["impl"]: r["clock"] for r in clocked if keyf(r) == k}
            out(f"{k[0]:4} {k[1]:>3} {int(k[2]):1} {k[3]:>5} | " + " ".join(
                f"{cell[i]['sm_mhz']:7d}{'*' if cell[i]['power_capped'] >= 0.5 else ' '}"
                f"{'^' if cell[i].get('window') == 'preheat+timed' else ' '}"
                if i in cell else f"{'-':>9}" for i in impls))
    bad = [r for r in doc["rows"] if r.get("status") not in (None, "ok")]
    for r in bad:
        where = (f"{r['pass']} D={r['d']} S={r['s']} causal={int(r['causal'])}"
                 if "pass" in r else "all shapes")
        out(f"  {r['impl']} {where}: {r['status']} {r.get('error', '')[:160]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default="build-gpu/libattnkit_c.so")
    ap.add_argument("--backends", default="flash,flash3,cudnn,cuda_math")
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--shapes", default=None, help="S list, e.g. 512,1k,16k")
    ap.add_argument("--d", default=None, help="head dims, e.g. 64,128")
    ap.add_argument("--causal", default="both", choices=["both", "yes", "no"])
    ap.add_argument("--passes", default="fwd,bwd")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--outputs-per-set", action="store_true",
                    help="attnkit backends write each input set's own output buffers (the method "
                         "before 2026-11-21 run 2); default: one output buffer reused, as torch's "
                         "caching allocator does for the peers")
    ap.add_argument("--rounds", type=int, default=1,
                    help="time every implementation this many times per shape, alternating the "
                         "order (ABBA...); rows report the median of the rounds' medians")
    ap.add_argument("--pause", type=float, default=1.0, help="seconds between implementations")
    ap.add_argument("--preheat", type=float, default=0.0,
                    help="seconds of back-to-back calls of an implementation right before each of "
                         "its timed blocks, so the block sees the clock the board holds under "
                         "sustained load (H200: the 700 W cap) instead of the boost after --pause")
    ap.add_argument("--clocks", action="store_true",
                    help="sample SM clock / power / throttle reasons with nvidia-smi during the run "
                         "and record them per row (bench/smi_clocks.py; JSON \"clock\")")
    ap.add_argument("--quick", action="store_true", help="S 1k,4k,16k; D 128; fewer peers' flex")
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None, help="also write the summary table (markdown) here")
    ap.add_argument("--commit", default="",
                    help="commit id to record (default: env ATTNKIT_COMMIT, else git rev-parse)")
    ap.add_argument("--summarize", default=None, help="print the table of an existing JSON")
    ap.add_argument("--no-preflight", action="store_true",
                    help="skip running each attnkit backend once in a child process first")
    ap.add_argument("--preflight-one", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.summarize:
        with open(args.summarize) as f:
            summarize(json.load(f))
        return 0

    import torch
    if not torch.cuda.is_available():
        log("no CUDA device: nothing to benchmark")
        return 1
    from attnkit_c import AttnkitC

    s_list = parse_sizes(args.shapes) if args.shapes else ([1024, 4096, 16384] if args.quick else ALL_S)
    d_list = parse_sizes(args.d) if args.d else ([128] if args.quick else ALL_D)
    causals = {"both": [False, True], "yes": [True], "no": [False]}[args.causal]
    passes = [p for p in args.passes.split(",") if p]
    backends = [b for b in args.backends.split(",") if b]
    peers = [p for p in args.peers.split(",") if p]

    if args.preflight_one:
        return preflight_one(torch, args, args.preflight_one, s_list, d_list, causals, passes)
    crashed = {}
    if backends and not args.no_preflight:
        backends, crashed = preflight(args, backends)

    lib = None
    if backends:
        try:
            lib = AttnkitC(args.lib)
        except OSError as e:
            log(f"[warn] cannot load {args.lib}: {e}; attnkit backends skipped")
            backends = []

    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 << 20)
    commit = record_commit(args.commit)
    doc = {"gpu": torch.cuda.get_device_name(0), "date": datetime.date.today().isoformat(),
           "commit": commit, "torch": torch.__version__.split("+")[0],
           "cudnn": torch.backends.cudnn.version(), "l2_bytes": l2,
           "method": {"runs": args.runs, "warmup": args.warmup, "pause_s": args.pause,
                      "preheat_s": args.preheat, "clocks": bool(args.clocks),
                      "rotation": ">= 3 x L2, >= 2 sets", "stat": "median"},
           "ceilings": None, "rows": []}

    def save():
        if args.json:
            with open(args.json, "w") as f:
                json.dump(doc, f, indent=1)
        if args.md:
            lines = []
            summarize(doc, lines.append)
            with open(args.md, "w") as f:
                f.write(f"# attnkit GPU peers, {doc['gpu']}, {doc['date']}\n\n")
                f.write("Command: `python3 bench/peers.py " + " ".join(sys.argv[1:]) + "`\n\n```\n")
                f.write("\n".join(lines) + "\n```\n")

    for b, why in crashed.items():
        doc["rows"].append({"impl": f"attnkit:{b}", "status": "crashed", "error": why})
    log(f"[info] {doc['gpu']} torch {doc['torch']} cudnn {doc['cudnn']} L2 {l2 >> 20} MiB "
        f"attnkit {lib.version() if lib else '-'} commit {doc['commit']}")
    doc["ceilings"] = ceilings(torch)
    log(f"[ceiling] {doc['ceilings']}")
    save()

    timer = Timer(torch, args.warmup, args.runs)
    timed_rows = []  # (row, [(start, end) datetimes of its timed blocks])
    sampler = None
    if args.clocks:
        from smi_clocks import ClockSampler
        sampler = ClockSampler()
        atexit.register(sampler.close)  # (an exception must not leave nvidia-smi running)
        if not sampler.available:
            log("[warn] --clocks: nvidia-smi not found; rows carry no clock")
    impls = [("attnkit", b) for b in backends] + [("torch", p) for p in peers]
    for pas in passes:
        for d in d_list:
            for causal in causals:
                for s in s_list:
                    shp = Shape(s, d, causal)
                    set_bytes = 4 * shp.b * shp.s * shp.h * shp.d * 2
                    nsets = max(2, math.ceil(3 * l2 / set_bytes))
                    torch.manual_seed(s * 1000 + d + causal)
                    sets = make_sets(torch, shp, nsets, pas == "bwd")
                    ref, ref_name = None, None
                    for peer in ("flash", "efficient", "cudnn"):
                        try:
                            _, ref = torch_runner(torch, shp, peer, sets[:1], pas)
                            ref_name = peer
                            break
                        except Exception:  # noqa: BLE001 - try the next reference
                            continue
                    # Set-up (and the spot-check) of every implementation first, then the timing
                    # in rounds: round r times the implementations in order (r even) or reversed
                    # (r odd), so slow drifts of clock and power hit every implementation alike;
                    # the row reports the median over the rounds' medians (--rounds, default 1).
                    ready = []
                    for kind, name in impls:
                        impl = f"{kind}:{name}"
                        row = {"impl": impl, "pass": pas, "dtype": "bf16", "b": shp.b, "h": shp.h,
                               "s": s, "d": d, "causal": causal}
                        try:
                            if kind == "torch":
                                fn, _ = torch_runner(torch, shp, name, sets, pas)
                            else:
                                fn, mine = attnkit_runner(torch, lib, shp, name, sets, pas,
                                                          args.outputs_per_set)
                                if ref is None:
                                    raise RuntimeError("no torch reference for the spot-check")
                                errs = compare(torch, mine, ref)
                                row["check_vs"] = f"torch:{ref_name}"
                                row["max_abs_err"] = {k: v[0] for k, v in errs.items()}
                                row["rel_err"] = {k: v[1] for k, v in errs.items()}
                                worst = max(v[1] for v in errs.values())
                                log(f"[check] {impl} {pas} {shp}: vs torch:{ref_name} " + ", ".join(
                                    f"{k} max|err| {v[0]:.3g} rel {v[1]:.2e}" for k, v in errs.items()))
                                if not worst <= REL_TOL:
                                    row["status"] = "WRONG"
                                    row["error"] = f"rel err {worst:.3g} > {REL_TOL}"
                                    doc["rows"].append(row)
                                    log(f"[WRONG] {impl} {pas} {shp}: not timed")
                                    continue
                            ready.append((row, fn))
                        except Exception as e:  # noqa: BLE001 - unsupported shapes are rows too
                            row["status"] = "unsupported" if "nsupported" in str(e) or "not built" in str(e) else "error"
                            row["error"] = str(e).splitlines()[0][:300] if str(e) else type(e).__name__
                            log(f"[skip] {impl} {pas} {shp}: {row['error'][:200]}")
                            doc["rows"].append(row)
                    results = {id(row): [] for row, _ in ready}
                    windows = {id(row): [] for row, _ in ready}  # (start, end) of timed blocks
                    for r in range(args.rounds):
                        order = ready if r % 2 == 0 else ready[::-1]
                        for row, fn in order:
                            try:
                                tp = datetime.datetime.now()
                                if args.preheat > 0:
                                    preheat(torch, fn, args.preheat)
                                t0 = datetime.datetime.now()
                                results[id(row)].append(timer(fn))
                                windows[id(row)].append((t0, datetime.datetime.now(), tp))
                            except Exception as e:  # noqa: BLE001 - a failure while timing
                                row["status"] = "error"
                                row["error"] = str(e).splitlines()[0][:300] if str(e) else type(e).__name__
                                log(f"[skip] {row['impl']} {pas} {shp}: {row['error'][:200]}")
                            torch.cuda.synchronize()
                            time.sleep(args.pause)
                    for row, _ in ready:
                        got = results[id(row)]
                        if row.get("status") == "error" or not got:
                            doc["rows"].append(row)
                            continue
                        ms = statistics.median(g[0] for g in got)
                        runs = sum(g[1] for g in got)
                        mn, mx = min(g[2] for g in got), max(g[3] for g in got)
                        row["floor_ms"] = floor_ms(doc["ceilings"], shp, pas)
                        row.update({"ms": round(ms, 4), "tflops": round(
                            flops(shp.b, shp.h, s, d, causal, pas) / (ms * 1e-3) / 1e12, 1),
                            "runs": runs, "min_ms": round(mn, 4), "max_ms": round(mx, 4),
                            "status": "ok"})
                        if args.rounds > 1:
                            row["rounds"] = args.rounds
                            row["round_ms"] = [round(g[0], 4) for g in got]
                        row["timed_at"] = [[a.isoformat(timespec="milliseconds"),
                                            b.isoformat(timespec="milliseconds")]
                                           for a, b, _ in windows[id(row)]]
                        timed_rows.append((row, windows[id(row)]))
                        log(f"[time] {row['impl']:18} {pas} {shp}: {ms:8.3f} ms {row['tflops']:7.1f} "
                            f"TFLOP/s (median of {runs}" + (f", {args.rounds} rounds: " + " ".join(
                                f"{g[0]:.3f}" for g in got) if args.rounds > 1 else "") + ")")
                        doc["rows"].append(row)
                    save()
                    del sets, ref
                    torch.cuda.empty_cache()
    if sampler is not None and sampler.available:
        # Each row's clock from the complete file, read once (nvidia-smi may hold samples back
        # until it stops, so a row's clock is only known here; the summary prints them).
        sampler.stop()
        from smi_clocks import row_clock
        all_s = sampler.samples()
        for row, wins in timed_rows:
            row["clock"] = row_clock(all_s, [(a, b) for a, b, _ in wins],
                                     [(p, b) for a, b, p in wins] if args.preheat > 0 else ())
    save()
    if sampler is not None:
        sampler.close()
    log("")
    summarize(doc, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
