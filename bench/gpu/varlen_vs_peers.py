#!/usr/bin/env python3
"""Varlen (packed sequences) forward: attnkit's flash3, cudnn and flash against PyTorch's
FlashAttention-2 varlen kernel (torch.ops.aten._flash_attention_forward with cum_seq_q/k, the
kernel behind flash_attn_varlen_func), in one process (BENCHMARKS.md's method: CUDA events,
warm-up, median, inputs rotated, a pause between implementations).

Workloads (BENCHMARKS.md's token budget: 16,384 packed tokens, hidden 2048, H = 2048 / D, bf16):
  eqS    : 16384 / S sequences of exactly S tokens; the dense [B, S, H, D] call on the same
           tensors is timed too (flash3's tuned dense kernels, cudnn dense), so the row shows
           what the varlen path costs against the dense one;
  mixS   : lengths drawn uniformly from [S / 4, 7 S / 4] (seeded), the last one cut so that the
           total is 16384; S in 1k, 4k.
Causal rows use bottom-right alignment (FA-2 varlen's); Sq = Sk per sequence.
FLOPs: 4 H D x sum over sequences of (S_i^2, halved when causal), as BENCHMARKS.md counts them.

Correctness: before timing, every implementation's output is compared with torch FA-2 varlen's
on the same inputs (relative error above 2e-2 marks the row WRONG and it is not timed), and
flash3's with an fp32 reference of one sequence (its heads 0-1).

--pass bwd (session 25): the backward instead (FLOPs 2.5 x the forward's), each implementation
from its own forward's out and lse (attnkit: lse [Hq, total_q]; FA-2 varlen:
torch.ops.aten._flash_attention_backward); dq, dk and dv compared with FA-2's (the largest of the
three relative errors), no dense rows.

  python3 bench/gpu/varlen_vs_peers.py --lib build/libattnkit_c.so --d 64,128,256 \
      --work eq1k,mix1k,mix4k [--causal 0,1] [--impls flash3,flash3_static,cudnn,flash,fa2]
      [--pass fwd|bwd] [--runs 50] [--json out.json]
flash3_static: flash3 with ATTNKIT_FLASH3_VARLEN_STATIC=1 (the static schedule), for the A/B;
flash3_mod (--pass bwd): ATTNKIT_FLASH3_BWD_VARLEN_MOD=1 (the varlen backward on the score-mod
kernel instead of the tuned structures). Equal-length rows also time flash3 / cudnn dense.
"""
import argparse
import ctypes
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import torch  # noqa: E402
from attnkit_c import AttnkitC, tensor_of  # noqa: E402
from peers import TOKENS, HIDDEN, Timer, log, parse_sizes, run_doc  # noqa: E402
from peers import rel_err as rel  # noqa: E402
from peers import attnkit_bwd_from_own_forward  # noqa: E402

REL_TOL = 2e-2


def lengths_of(work):
    kind = "eq" if work.startswith("eq") else "mix"
    s = parse_sizes(work[len(kind):])[0]
    if kind == "eq":
        return [s] * (TOKENS // s)
    rng = random.Random(1234 + s)
    out, total = [], 0
    while total < TOKENS:
        x = min(rng.randint(s // 4, 7 * s // 4), TOKENS - total)
        out.append(x)
        total += x
    return out


class Row:
    def __init__(self, work, d, causal):
        self.work, self.d, self.causal = work, d, causal
        self.h = HIDDEN // d
        self.lens = lengths_of(work)
        self.total = sum(self.lens)
        self.max = max(self.lens)

    def flops(self):
        pairs = sum(x * x / 2 if self.causal else x * x for x in self.lens)
        return 4.0 * self.h * self.d * pairs

    def name(self):
        return f"{self.work} D={self.d} {'causal' if self.causal else 'nc'}"


def cu_of(lens):
    c = [0]
    for x in lens:
        c.append(c[-1] + x)
    return torch.tensor(c, device="cuda", dtype=torch.int32)


def attnkit_varlen_fn(lib, backend, r, sets, cu):
    """attnkit forward on packed [total, H, D] tensors; out reused across sets."""
    stream = torch.cuda.current_stream().cuda_stream
    o = lib.options(backend, causal="bottom_right" if r.causal else None, stream=stream)
    tcu = tensor_of(cu)
    o.cu_seqlens_q = o.cu_seqlens_k = ctypes.pointer(tcu)
    o.max_seqlen_q = o.max_seqlen_k = r.max
    out = torch.empty_like(sets[0]["q"])
    to = tensor_of(out)
    ts = [{k: tensor_of(v) for k, v in x.items()} for x in sets]

    def fn(i):
        t = ts[i % len(ts)]
        lib.forward(t["q"], t["k"], t["v"], to, None, o)
    fn.keep = (tcu, o)  # (the options point at tcu: both live as long as fn)
    fn(0)
    torch.cuda.synchronize()
    return fn, out.clone(), lib.last_backend()


def attnkit_dense_fn(lib, backend, r, sets):
    """The same tensors as [B, S, H, D] (eq workloads only)."""
    stream = torch.cuda.current_stream().cuda_stream
    o = lib.options(backend, causal="bottom_right" if r.causal else None, stream=stream)
    b, s = len(r.lens), r.lens[0]
    view = lambda t: t.view(b, s, r.h, r.d)  # noqa: E731
    out = torch.empty_like(sets[0]["q"])
    to = tensor_of(view(out))
    ts = [{k: tensor_of(view(v)) for k, v in x.items()} for x in sets]

    def fn(i):
        t = ts[i % len(ts)]
        lib.forward(t["q"], t["k"], t["v"], to, None, o)
    fn(0)
    torch.cuda.synchronize()
    return fn, out.clone(), lib.last_backend()


def attnkit_varlen_bwd_fn(lib, backend, r, sets, cu, dense=False):
    """attnkit backward on packed tensors from its own forward's out / lse (one per set);
    dense: the same tensors as [B, S, H, D] (eq workloads), lse [B, H, S]."""
    stream = torch.cuda.current_stream().cuda_stream
    o = lib.options(backend, causal="bottom_right" if r.causal else None, stream=stream)
    tcu = tensor_of(cu)
    b, s = len(r.lens), r.lens[0]
    view = (lambda t: t.view(b, s, r.h, r.d)) if dense else None  # noqa: E731
    if not dense:
        o.cu_seqlens_q = o.cu_seqlens_k = ctypes.pointer(tcu)
        o.max_seqlen_q = o.max_seqlen_k = r.max
    fn, grads, ran = attnkit_bwd_from_own_forward(
        torch, lib, o, sets, (b, r.h, s) if dense else (r.h, r.total), view=view)
    fn.keep = (fn.keep, tcu)
    return fn, grads, ran


def fa2_varlen_bwd_fn(r, sets, cu):
    fwd = torch.ops.aten._flash_attention_forward
    bwd = torch.ops.aten._flash_attention_backward
    scale = r.d ** -0.5
    saved = []
    with torch.no_grad():
        for x in sets:
            out, lse, rng, unused, _ = fwd(x["q"], x["k"], x["v"], cu, cu, r.max, r.max, 0.0,
                                           r.causal, False, scale=scale)
            saved.append((out, lse, rng, unused))

    def call(i):
        x, (out, lse, rng, unused) = sets[i % len(sets)], saved[i % len(saved)]
        return bwd(x["do"], x["q"], x["k"], x["v"], out, lse, cu, cu, r.max, r.max, 0.0,
                   r.causal, rng, unused, scale=scale)

    def fn(i):
        call(i)
    with torch.no_grad():
        first = [g.clone() for g in call(0)[:3]]
    torch.cuda.synchronize()
    return fn, first, "torch FA-2 varlen"


def fa2_varlen_fn(r, sets, cu):
    op = torch.ops.aten._flash_attention_forward
    scale = r.d ** -0.5

    def call(x):
        return op(x["q"], x["k"], x["v"], cu, cu, r.max, r.max, 0.0, r.causal, False,
                  scale=scale)[0]

    def fn(i):
        call(sets[i % len(sets)])
    with torch.no_grad():
        first = call(sets[0]).clone()
    torch.cuda.synchronize()
    return fn, first, "torch FA-2 varlen"


class env_set:
    """An environment switch flash3's launch reads per call, set inside the block."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        if self.name:
            os.environ[self.name] = "1"

    def __exit__(self, *exc):
        if self.name:
            os.environ.pop(self.name, None)


# A/B impls: flash3 with a switch (flash3_static: the forward's static schedule; flash3_mod:
# the varlen backward on the score-mod kernel).
SWITCHED = {"flash3_static": "ATTNKIT_FLASH3_VARLEN_STATIC",
            "flash3_mod": "ATTNKIT_FLASH3_BWD_VARLEN_MOD"}


def fp32_reference(r, x, seq):
    """fp32 out of sequence `seq`, heads 0-1: [L, 2, D]."""
    c0 = sum(r.lens[:seq])
    n = r.lens[seq]
    q = x["q"][c0:c0 + n, :2].float().transpose(0, 1)
    k = x["k"][c0:c0 + n, :2].float().transpose(0, 1)
    v = x["v"][c0:c0 + n, :2].float().transpose(0, 1)
    s = q @ k.transpose(1, 2) * r.d ** -0.5
    if r.causal:
        s = s.masked_fill(torch.ones(n, n, device="cuda", dtype=torch.bool).triu(1), float("-inf"))
    return (s.softmax(-1) @ v).transpose(0, 1), c0, n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--d", default="64,128,256")
    ap.add_argument("--work", default="eq1k,mix1k,mix4k")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--impls", default="flash3,cudnn,flash,fa2")
    ap.add_argument("--pass", dest="pas", choices=("fwd", "bwd"), default="fwd")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--pause", type=float, default=1.0)
    ap.add_argument("--json")
    args = ap.parse_args()
    lib = AttnkitC(args.lib)
    timer = Timer(torch, args.warmup, args.runs)
    impls = args.impls.split(",")
    doc = run_doc(torch, lib, "CUDA events, median, 2 rotated input sets, 1 s pause")
    doc["pass"] = args.pas
    rows = [Row(w, int(d), c == "1") for w in args.work.split(",") for d in args.d.split(",")
            for c in args.causal.split(",")]
    for r in rows:
        bwd = args.pas == "bwd"
        sets = [{n: torch.randn(r.total, r.h, r.d, device="cuda", dtype=torch.bfloat16)
                 for n in (("q", "k", "v", "do") if bwd else ("q", "k", "v"))} for _ in range(2)]
        cu = cu_of(r.lens)
        flops = r.flops() * (2.5 if bwd else 1.0)
        res = {"row": r.name(), "work": r.work, "d": r.d, "causal": r.causal, "h": r.h,
               "seqs": len(r.lens), "max_len": r.max, "gflop": round(flops / 1e9, 1),
               "impls": {}}
        fns = {}
        dense = r.work.startswith("eq")
        for name in impls + (["flash3_dense", "cudnn_dense"] if dense else []):
            try:
                if bwd and name == "fa2":
                    fns[name] = fa2_varlen_bwd_fn(r, sets, cu)
                elif bwd:
                    with env_set(SWITCHED.get(name)):
                        fns[name] = attnkit_varlen_bwd_fn(
                            lib, name.split("_")[0], r, sets, cu, dense=name.endswith("_dense"))
                elif name in SWITCHED:  # the A/B switch, set around its calls
                    with env_set(SWITCHED[name]):
                        fns[name] = attnkit_varlen_fn(lib, "flash3", r, sets, cu)
                elif name == "fa2":
                    fns[name] = fa2_varlen_fn(r, sets, cu)
                elif name.endswith("_dense"):
                    fns[name] = attnkit_dense_fn(lib, name[:-6], r, sets)
                else:
                    fns[name] = attnkit_varlen_fn(lib, name, r, sets, cu)
            except Exception as e:  # noqa: BLE001 - a peer that cannot run is reported
                res["impls"][name] = {"error": str(e)[:300]}
                log(f"  {r.name()} {name}: cannot run: {str(e)[:200]}")
        ref = fns.get("fa2", (None, None, None))[1]
        if "flash3" in fns and not bwd:  # fp32 slice check of flash3 on the longest sequence
            seq = max(range(len(r.lens)), key=lambda i: r.lens[i])
            want, c0, n = fp32_reference(r, sets[0], seq)
            res["flash3_fp32_rel"] = rel(fns["flash3"][1][c0:c0 + n, :2], want)
        for name, (fn, first, ran) in fns.items():
            if ref is None or name == "fa2":
                e = 0.0
            elif bwd:  # the worst of dq, dk, dv
                e = max(rel(a, b) for a, b in zip(first, ref))
            else:
                e = rel(first, ref)
            entry = {"ran": ran, "rel_vs_fa2": round(e, 6)}
            if e > REL_TOL:
                entry["wrong"] = True
                log(f"  {r.name()} {name}: WRONG (rel {e:.3g} vs FA-2 varlen)")
            else:
                time.sleep(args.pause)
                with env_set(SWITCHED.get(name)):
                    ms, runs, lo, hi = timer(fn)
                entry.update({"ms": round(ms, 4), "runs": runs,
                              "tflops": round(flops / (ms * 1e-3) / 1e12, 1)})
            res["impls"][name] = entry
        doc["rows"].append(res)
        parts = []
        for name in res["impls"]:
            t = res["impls"][name].get("tflops")
            parts.append(f"{name} {t if t is not None else '-'}")
        f3 = res["impls"].get("flash3", {}).get("tflops")
        ratios = []
        for peer in ("cudnn", "fa2", "flash3_dense", "flash3_static", "flash3_mod"):
            p = res["impls"].get(peer, {}).get("tflops")
            if f3 and p:
                ratios.append(f"/{peer} {f3 / p:.2f}")
        log(f"{args.pas} {r.name():24s} seqs {len(r.lens):3d} max {r.max:5d} | " + " | ".join(parts) +
            " || " + " ".join(ratios) +
            f" | f3 fp32 rel {res.get('flash3_fp32_rel', float('nan')):.2e}")
        del sets, fns
        torch.cuda.empty_cache()
        if args.json:
            with open(args.json, "w") as f:
                json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
