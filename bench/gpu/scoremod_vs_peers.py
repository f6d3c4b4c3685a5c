#!/usr/bin/env python3
"""Softcap and sliding-window forward: attnkit's flash3 and flash against FlexAttention, in one
process (BENCHMARKS.md's method: CUDA events, warm-up, median, inputs rotated over >= 3 x L2,
a pause between implementations).

Why these peers: cuDNN (ours and torch's) has no softcap, and torch's SDPA has neither softcap
nor windows, so for a Gemma-2-style call (softcap 50, local layers with a 4096-key window) the
choices are FlexAttention (torch.compile with a score_mod / block mask) and attnkit's `flash`,
which auto picks for softcap on Hopper when flash3 cannot run the call (before session 23).

Rows: --mods, each "cap" (softcap 50), "win" (window (W - 1, 0), bottom-right: W keys up to
the diagonal), "capwin" (both), each optionally with "/causal" (plain causal; Sq = Sk so both
alignments agree); shapes B = 16384 / S, H = 2048 / D, bf16, Sq = Sk = S.
FLOPs: 4 B H D x (visible (i, j) pairs); plain causal uses BENCHMARKS.md's S^2 / 2.

Correctness: before timing, every implementation's output (backward: dq) on the timed inputs is
compared with an fp32 torch reference of a slice (batch 0, heads 0-1, the last 512 query rows
against every key: the rows a window cuts; rows are independent, so the slice's dq is exact); a
relative error above 2e-2 marks the row WRONG, and it is not timed. --passes bwd times the
backward (FLOPs 2.5 x the forward's): attnkit's from its own forward's out and lse, flex's
through autograd. (Session 23's first run compared flex with attnkit's flash instead and found compiled flex
on transposed [B, H, S, D] views of BSHD storage 1.41 off; flex now gets contiguous [B, H, S, D]
copies, as its users give it.)

  python3 bench/gpu/scoremod_vs_peers.py --lib build/libattnkit_c.so --d 128,256 \
      --s 1k,4k,16k --mods cap,cap/causal,win,capwin [--window 4096] [--flex-max-rows 8]
      [--json out.json]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import torch  # noqa: E402
from attnkit_c import AttnkitC, tensor_of  # noqa: E402
from peers import TOKENS, HIDDEN, Timer, ceilings, parse_sizes  # noqa: E402
from peers import attnkit_bwd_from_own_forward  # noqa: E402

CAP = 50.0
REL_TOL = 2e-2


def log(msg):
    print(msg, flush=True)


class Row:
    def __init__(self, mod, s, d, window):
        self.mod, self.s, self.d = mod, s, d
        base = mod.split("/")[0]
        self.causal = mod.endswith("/causal")
        self.cap = CAP if base in ("cap", "capwin") else 0.0
        self.wl = window - 1 if base in ("win", "capwin") else -1
        self.wr = 0 if self.wl >= 0 else -1
        self.b, self.h = TOKENS // s, HIDDEN // d

    def pairs(self):
        s = self.s
        if self.wl >= 0:  # row i sees keys max(0, i - w) .. i: sum over i of min(i, w) + 1
            w = min(self.wl, s - 1)
            return w * (w + 1) / 2 + (s - w) * (w + 1)
        return s * s / 2 if self.causal else s * s

    def flops(self):
        return 4.0 * self.b * self.h * self.d * self.pairs()

    def name(self):
        return f"{self.mod} S={self.s} D={self.d}"


def make_sets(shp, nsets, bwd=False):
    names = ("q", "k", "v", "dout") if bwd else ("q", "k", "v")
    return [{n: torch.randn(shp.b, shp.s, shp.h, shp.d, device="cuda", dtype=torch.bfloat16)
             for n in names} for _ in range(nsets)]


def attnkit_opts(lib, backend, r):
    stream = torch.cuda.current_stream().cuda_stream
    o = lib.options(backend, causal="bottom_right" if r.causal else None, stream=stream)
    o.softcap = r.cap
    o.window_left, o.window_right = r.wl, r.wr
    return o


def attnkit_bwd_fn(lib, backend, r, sets):
    """Backward of `backend` from its own forward's out and lse (one per set); dq/dk/dv reused.
    Returns (fn, dq of set 0, backend that ran)."""
    o = attnkit_opts(lib, backend, r)
    fn, grads, ran = attnkit_bwd_from_own_forward(torch, lib, o, sets, (r.b, r.h, r.s),
                                                  dout="dout")
    return fn, grads[0], ran


def attnkit_fn(lib, backend, r, sets):
    o = attnkit_opts(lib, backend, r)
    out = torch.empty_like(sets[0]["q"])
    ts = [{k: tensor_of(v) for k, v in x.items()} for x in sets]
    to = tensor_of(out)

    def fn(i):
        t = ts[i % len(ts)]
        lib.forward(t["q"], t["k"], t["v"], to, None, o)
    fn(0)
    torch.cuda.synchronize()
    ran = lib.last_backend()
    first = out.clone()
    return fn, first, ran


def slice_reference(r, x, rows=512, bwd=False):
    """fp32 reference out[0, S - rows:, 0:2, :] ([rows, 2, D]) of row r on input set x (bwd:
    dq of those rows for the upstream gradient x["dout"])."""
    s, d = r.s, r.d
    i0 = max(0, s - rows)
    q = x["q"][0, i0:, :2].float().transpose(0, 1)  # [2, rows, D]
    q.requires_grad_(bwd)
    k = x["k"][0, :, :2].float().transpose(0, 1)  # [2, S, D]
    v = x["v"][0, :, :2].float().transpose(0, 1)
    sc = (q @ k.transpose(1, 2)) / d ** 0.5  # [2, rows, S]
    if r.cap > 0:
        sc = r.cap * torch.tanh(sc / r.cap)
    i = torch.arange(i0, s, device="cuda")[:, None]
    j = torch.arange(s, device="cuda")[None, :]
    keep = torch.ones_like(sc[0], dtype=torch.bool)
    if r.causal or r.wl >= 0:
        keep &= j <= i
    if r.wl >= 0:
        keep &= j >= i - r.wl
    sc = sc.masked_fill(~keep, float("-inf"))
    out = (torch.softmax(sc, dim=-1) @ v).transpose(0, 1)  # [rows, 2, D]
    if not bwd:
        return out
    (dq,) = torch.autograd.grad(out, q, x["dout"][0, i0:, :2].float())
    return dq.transpose(0, 1)


def flex_fn(r, sets, bwd=False):
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    torch._dynamo.config.cache_size_limit = 64  # one compile per shape and score_mod
    if hasattr(torch._dynamo.config, "recompile_limit"):
        torch._dynamo.config.recompile_limit = 64
    compiled = torch.compile(flex_attention, dynamic=False)
    wl = r.wl

    def mask_mod(b, h, q, kv):
        ok = q >= kv
        return ok & (q - kv <= wl) if wl >= 0 else ok
    bm = None
    if r.causal or wl >= 0:
        bm = create_block_mask(mask_mod, None, None, r.s, r.s, device="cuda")
    cap = r.cap

    def softcap(score, b, h, q, kv):
        return cap * torch.tanh(score / cap)
    sm = softcap if cap > 0 else None
    ins = [tuple(x[t].transpose(1, 2).contiguous().requires_grad_(bwd) for t in ("q", "k", "v"))
           for x in sets]
    if bwd:
        graphs = [(compiled(*qkv, score_mod=sm, block_mask=bm), qkv,
                   x["dout"].transpose(1, 2).contiguous()) for qkv, x in zip(ins, sets)]

        def fn(i):
            out, qkv, dout = graphs[i % len(graphs)]
            torch.autograd.grad(out, qkv, dout, retain_graph=True)
        out, qkv, dout = graphs[0]
        dq = torch.autograd.grad(out, qkv, dout, retain_graph=True)[0]
        torch.cuda.synchronize()
        return fn, dq.transpose(1, 2).contiguous(), "flex"

    def fn(i):
        compiled(*ins[i % len(ins)], score_mod=sm, block_mask=bm)
    with torch.no_grad():
        first = compiled(*ins[0], score_mod=sm, block_mask=bm).transpose(1, 2).contiguous()
    torch.cuda.synchronize()
    return fn, first, "flex"


def rel(a, b):
    a, b = a.float(), b.float()
    if not bool(torch.isfinite(a).all()):
        return float("inf")
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def run_row(args, libs, timer, r, pas, rows_out, with_flex):
    """Times every implementation on row r, pass pas; True when flex was compiled for it."""
    bwd = pas == "bwd"
    s, d, mod = r.s, r.d, r.mod
    sets = make_sets(r, 2, bwd)  # 2 x 201 MB (q, k, v): well over 3 x L2
    impls = {}
    for be in args.backends.split(","):
        for tag, lib in libs:
            try:
                make = attnkit_bwd_fn if bwd else attnkit_fn
                impls["attnkit:" + be + tag] = make(lib, be, r, sets)
            except Exception as e:  # noqa: BLE001 - reported in the row
                log(f"{r.name()} {pas} attnkit:{be}{tag}: {str(e)[:200]}")
    flexed = False
    if with_flex and not args.no_flex:
        try:
            impls["torch:flex"] = flex_fn(r, sets, bwd)
            flexed = True
        except Exception as e:  # noqa: BLE001
            log(f"{r.name()} {pas} torch:flex: {str(e)[:200]}")
    ref = slice_reference(r, sets[0], bwd=bwd)
    i0 = max(0, s - ref.shape[0])
    line = f"{pas} {r.name():28s}"
    mine = []
    for name, (fn, first, ran) in impls.items():
        err = rel(first[0, i0:, :2], ref)
        row = {"impl": name, "ran": ran, "pass": pas, "dtype": "bf16", "b": r.b, "h": r.h, "s": s,
               "d": d, "causal": r.causal or r.wl >= 0, "softcap": r.cap, "window_left": r.wl,
               "window_right": r.wr, "mod": mod, "rel_err_vs_fp32_slice": err}
        if err > REL_TOL:
            row["status"] = "WRONG"
            line += f"  {name} WRONG ({err:.2e})"
        else:
            time.sleep(args.pause)
            ms, runs, lo, hi = timer(fn)
            f = r.flops() * (2.5 if bwd else 1.0)
            row.update(ms=round(ms, 4), runs=runs, tflops=round(f / (ms * 1e-3) / 1e12, 1))
            line += f"  {name} {row['tflops']:6.1f}"
        rows_out.append(row)
        mine.append(row)
    tf = {x["impl"]: x.get("tflops") for x in mine}
    f3 = tf.get("attnkit:flash3")
    for peer in ["attnkit:flash" + tag for tag, _ in libs] + ["torch:flex"]:
        if f3 and tf.get(peer):
            line += f"  f3/{peer.split(':')[1]} {f3 / tf[peer]:.2f}"
    log(line)
    del sets, impls
    torch.cuda.empty_cache()
    return flexed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--d", default="128,256")
    ap.add_argument("--s", default="1k,4k,16k")
    ap.add_argument("--mods", default="cap,cap/causal,win,capwin")
    ap.add_argument("--window", type=int, default=4096, help="W: the window holds W keys")
    ap.add_argument("--backends", default="flash3,flash")
    ap.add_argument("--passes", default="fwd", help="fwd, bwd or fwd,bwd")
    ap.add_argument("--no-flex", action="store_true")
    ap.add_argument("--lib2", action="append", default=[],
                    help="TAG=PATH: another build's libattnkit_c.so, its backends timed in the same "
                         "loop as attnkit:<backend>TAG (A/B of a build switch; the C library "
                         "exports only attnkit_*, so two copies do not share state)")
    ap.add_argument("--flex-max-rows", type=int, default=8,
                    help="time flex (one torch.compile per row) on at most this many rows")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--pause", type=float, default=0.3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    libs = [("", AttnkitC(args.lib))]
    for item in args.lib2:
        tag, _, path = item.partition("=")
        libs.append((tag, AttnkitC(path)))
    timer = Timer(torch, args.warmup, args.runs)
    ceil = ceilings(torch)
    log(f"ceilings: {ceil}")
    rows_out = []
    flex_left = args.flex_max_rows
    for pas in args.passes.split(","):
        for mod in args.mods.split(","):
            for d in [int(x) for x in args.d.split(",")]:
                for s in parse_sizes(args.s):
                    r = Row(mod, s, d, args.window)
                    if r.wl >= 0 and s <= args.window:
                        continue  # the window hides nothing: plain causal
                    if run_row(args, libs, timer, r, pas, rows_out, flex_left > 0):
                        flex_left -= 1
    if args.json:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=HERE).stdout.strip()
        doc = {"gpu": torch.cuda.get_device_name(), "date": str(datetime.date.today()),
               "commit": commit, "torch": torch.__version__,
               "cudnn": torch.backends.cudnn.version(), "ceilings": ceil,
               "what": f"{args.passes} with softcap / sliding window", "argv": sys.argv[1:],
               "rows": rows_out}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
