#!/usr/bin/env python3
"""Masked forward: attnkit's flash3, cudnn and flash against PyTorch's SDPA memory-efficient
kernel (the one SDPA runs for an arbitrary attn_mask), in one process (BENCHMARKS.md's method:
CUDA events, warm-up, median, 2 rotated input sets, a pause between implementations).

Masks (--masks), on B = 16384 / S, H = 2048 / D, bf16, Sq = Sk = S, non-causal:
  pad  : bool keep mask [B, 1, 1, S], batch row b keeping its first S - b S / (2 B) keys (key
         padding, as text encoders' masks reach diffusion models);
  bool : bool keep mask [1, 1, S, S], each key kept with probability 0.9 (seeded);
  bias : additive bf16 mask [1, 1, S, S], N(0, 1) (a shared relative-position bias).
FLOPs: 4 B H D S^2 for every mask (the dense call's count: none of these kernels skips masked
blocks, so this is the work done, not the visible pairs).

Correctness: before timing, every output is compared with an fp32 torch reference of a slice
(batch 0, heads 0-1, the last 256 query rows against every key); a relative error above 2e-2
marks the row WRONG and it is not timed.

--pass bwd (session 26): the backward instead (FLOPs 2.5 x the forward's), each implementation
from its own forward's out and lse (attnkit: lse [B, H, S]; SDPA efficient: autograd.grad of its
own output, retain_graph, as bench/peers.py times torch's backward); dq, dk and dv compared with
SDPA efficient's (relative error, the largest of the three, above 2e-2 = WRONG). Impls without
sdpa_eff have no reference and are not timed.

--softcap X (session 39): every attnkit impl with softcap X as well (s -> X tanh(s / X) before the
mask). SDPA has no softcap, so sdpa_eff is left out; the forward's fp32 slice applies it, and the
backward's reference is the first impl of --impls (put `flash` first: attnkit's sm80 kernel,
checked against the math oracle by its own tests; before session 39 `auto` sent a masked,
softcapped backward there, as cuDNN declines the combination).

  python3 bench/gpu/mask_vs_peers.py --lib build/libattnkit_c.so --d 64,128 --s 1k,4k \
      --masks pad,bool,bias [--impls flash3,cudnn,flash,sdpa_eff] [--runs 30] [--json out.json]
      [--pass bwd] [--softcap 30] [--dropout 0.1]

--dropout P (session 39): every attnkit impl with dropout P (seed 0x5EED, offset 7). attnkit's
backends draw the same keep mask (core/philox.hpp) and SDPA does not, so sdpa_eff is left out and
the first impl of --impls is the reference in both passes (forward: its whole out).
"""
import argparse
import ctypes
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import torch  # noqa: E402
from attnkit_c import AttnkitC, tensor_of  # noqa: E402
from peers import TOKENS, HIDDEN, Timer, log, parse_sizes, run_doc  # noqa: E402
from peers import finish_row, sdpa_backward_fn, timed_entry  # noqa: E402
from peers import attnkit_bwd_from_own_forward  # noqa: E402
from peers import rel_err as rel  # noqa: E402

REL_TOL = 2e-2
REF_ROWS = 256


def make_mask(kind, b, s, h):
    g = torch.Generator(device="cuda").manual_seed(7)
    if kind == "pad":
        keep = torch.zeros(b, 1, 1, s, device="cuda", dtype=torch.bool)
        for i in range(b):
            keep[i, :, :, : s - i * s // (2 * b)] = True
        return keep
    if kind == "bool":
        return torch.rand(1, 1, s, s, device="cuda", generator=g) < 0.9
    if kind == "bias":
        return torch.randn(1, 1, s, s, device="cuda", generator=g).to(torch.bfloat16)
    raise ValueError(f"mask {kind}: expected pad, bool or bias")


def reference_slice(x, mask, d, softcap=0.0):
    """fp32 out of batch 0, heads 0-1, the last REF_ROWS rows: [REF_ROWS, 2, D]."""
    q = x["q"][0, -REF_ROWS:, :2].float().transpose(0, 1)
    k = x["k"][0, :, :2].float().transpose(0, 1)
    v = x["v"][0, :, :2].float().transpose(0, 1)
    sc = q @ k.transpose(1, 2) * d ** -0.5
    if softcap > 0:
        sc = softcap * torch.tanh(sc / softcap)
    m = mask[0, 0, -REF_ROWS:] if mask.shape[2] > 1 else mask[0, 0]
    if mask.dtype == torch.bool:
        sc = sc.masked_fill(~m, float("-inf"))
    else:
        sc = sc + m.float()
    return (sc.softmax(-1) @ v).transpose(0, 1)


def attnkit_fn(lib, backend, sets, mask, softcap=0.0, dropout=0.0):
    stream = torch.cuda.current_stream().cuda_stream
    o = lib.options(backend, stream=stream)
    o.softcap = softcap
    o.dropout_p, o.seed, o.offset = dropout, 0x5EED, 7
    tm = tensor_of(mask)
    o.mask = ctypes.pointer(tm)
    out = torch.empty_like(sets[0]["q"])
    to = tensor_of(out)
    ts = [{k: tensor_of(v) for k, v in x.items()} for x in sets]

    def fn(i):
        t = ts[i % len(ts)]
        lib.forward(t["q"], t["k"], t["v"], to, None, o)
    fn.keep = (tm, o)  # (the options point at tm)
    fn(0)
    torch.cuda.synchronize()
    return fn, out.clone(), lib.last_backend()


def attnkit_bwd_fn(lib, backend, sets, mask, softcap=0.0, dropout=0.0):
    """attnkit backward from its own forward's out / lse (one per input set)."""
    stream = torch.cuda.current_stream().cuda_stream
    o = lib.options(backend, stream=stream)
    o.softcap = softcap
    o.dropout_p, o.seed, o.offset = dropout, 0x5EED, 7
    tm = tensor_of(mask)
    o.mask = ctypes.pointer(tm)
    b, s, h, _ = sets[0]["q"].shape
    fn, grads, ran = attnkit_bwd_from_own_forward(torch, lib, o, sets, (b, h, s))
    fn.keep = (fn.keep, tm)
    return fn, grads, ran


def sdpa_eff_bwd_fn(sets, mask):
    from torch.nn.attention import SDPBackend
    fn, first = sdpa_backward_fn(torch, sets, SDPBackend.EFFICIENT_ATTENTION, attn_mask=mask)
    return fn, first, "torch SDPA efficient"


def sdpa_eff_fn(sets, mask):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    f = torch.nn.functional.scaled_dot_product_attention
    views = [{k: v.transpose(1, 2) for k, v in x.items()} for x in sets]  # [B, H, S, D] views

    def call(i):
        x = views[i % len(views)]
        with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
            return f(x["q"], x["k"], x["v"], attn_mask=mask)

    def fn(i):
        call(i)
    with torch.no_grad():
        first = call(0).transpose(1, 2).contiguous()
    torch.cuda.synchronize()
    return fn, first, "torch SDPA efficient"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--d", default="64,128")
    ap.add_argument("--s", default="1k,4k")
    ap.add_argument("--masks", default="pad,bool,bias")
    ap.add_argument("--impls", default="flash3,cudnn,flash,sdpa_eff")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--pause", type=float, default=0.5)
    ap.add_argument("--json")
    ap.add_argument("--pass", dest="pas", choices=("fwd", "bwd"), default="fwd")
    ap.add_argument("--softcap", type=float, default=0.0,
                    help="softcap for every attnkit impl (sdpa_eff left out)")
    ap.add_argument("--dropout", type=float, default=0.0,
                    help="dropout p for every attnkit impl (sdpa_eff left out)")
    args = ap.parse_args()
    cap, drop = args.softcap, args.dropout
    doc_extra = {k: v for k, v in (("softcap", cap), ("dropout_p", drop)) if v > 0}
    bwd = args.pas == "bwd"
    lib = AttnkitC(args.lib)
    timer = Timer(torch, args.warmup, args.runs)
    doc = run_doc(torch, lib, "CUDA events, median, 2 rotated input sets")
    doc.update(doc_extra)
    for kind in args.masks.split(","):
        for d in (int(x) for x in args.d.split(",")):
            for s in parse_sizes(args.s):
                b, h = TOKENS // s, HIDDEN // d
                names = ("q", "k", "v", "do") if bwd else ("q", "k", "v")
                sets = [{n: torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16)
                         for n in names} for _ in range(2)]
                mask = make_mask(kind, b, s, h)
                flops = 4.0 * b * h * d * s * s * (2.5 if bwd else 1.0)
                want = None if bwd or drop > 0 else reference_slice(sets[0], mask, d, cap)
                res = {"mask": kind, "d": d, "s": s, "b": b, "h": h, "pass": args.pas,
                       "mask_shape": list(mask.shape), "mask_dtype": str(mask.dtype), "impls": {}}
                parts = []
                impls = args.impls.split(",")
                if cap > 0 or drop > 0:  # (SDPA: no softcap, its own dropout; reference impls[0])
                    impls = [n for n in impls if n != "sdpa_eff"]
                ref_name = impls[0] if (bwd and cap > 0) or drop > 0 else "sdpa_eff"
                if bwd and "sdpa_eff" in impls:  # (the reference first)
                    impls = ["sdpa_eff"] + [n for n in impls if n != "sdpa_eff"]
                for name in impls:
                    try:
                        if bwd:
                            fn, first, ran = (sdpa_eff_bwd_fn(sets, mask) if name == "sdpa_eff"
                                              else attnkit_bwd_fn(lib, name, sets, mask, cap,
                                                                  drop))
                        else:
                            fn, first, ran = (sdpa_eff_fn(sets, mask) if name == "sdpa_eff" else
                                              attnkit_fn(lib, name, sets, mask, cap, drop))
                    except Exception as e:  # noqa: BLE001 - a peer that cannot run is reported
                        res["impls"][name] = {"error": str(e)[:300]}
                        parts.append(f"{name} -")
                        log(f"  {kind} D={d} S={s} {name}: cannot run: {str(e)[:160]}")
                        continue
                    if bwd:
                        if name == ref_name:
                            want, e = first, 0.0
                        elif want is None:
                            e = float("inf")  # (no reference: not timed)
                        else:
                            e = max(rel(g, w) for g, w in zip(first, want))
                        entry = {"ran": ran, f"rel_vs_{ref_name}_grads": round(e, 6)}
                    elif drop > 0:  # (the whole out against impls[0]'s)
                        if name == ref_name:
                            want, e = first, 0.0
                        else:
                            e = float("inf") if want is None else rel(first, want)
                        entry = {"ran": ran, f"rel_vs_{ref_name}_out": round(e, 6)}
                    else:
                        e = rel(first[0, -REF_ROWS:, :2], want)
                        entry = {"ran": ran, "rel_vs_fp32_slice": round(e, 6)}
                    if e > REL_TOL:
                        entry["wrong"] = True
                        parts.append(f"{name} WRONG")
                    else:
                        entry.update(timed_entry(timer, fn, flops, args.pause))
                        parts.append(f"{name} {entry['tflops']}")
                    res["impls"][name] = entry
                    del fn
                tag = (" cap" if cap > 0 else "") + (f" drop{drop}" if drop > 0 else "")
                finish_row(doc, res, f"{args.pas} {kind:4s}{tag} D={d:3d} S={s:5d}", parts,
                           ("cudnn", "flash", "sdpa_eff"), args.json)
                del sets
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
