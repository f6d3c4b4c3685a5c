#!/usr/bin/env python3
"""Attention dropout: attnkit's flash3 against attnkit's flash (what `auto` ran for dropout on
Hopper before session 39: cuDNN declines attnkit's Philox mask) and PyTorch SDPA's
FlashAttention-2 with dropout_p, in one process (BENCHMARKS.md's method: CUDA events, warm-up,
median, 2 rotated input sets, a pause between implementations).

Rows: B = 16384 / S, H = 2048 / D, bf16, Sq = Sk = S, dropout --p (default 0.1), non-causal and
causal (--causal). FLOPs: 4 B H D S^2 (causal: / 2); backward 2.5 x.

Correctness: attnkit's backends draw the same keep mask (core/philox.hpp), so flash3's out
(backward: dq, dk, dv from its own forward) is compared with flash's; a relative error above
2e-2 marks the row WRONG and it is not timed. torch's FlashAttention-2 draws its own mask: it is
timed, not compared ("unchecked" in the JSON). --impls may also name flash3_nodrop: flash3 on the
same call without dropout (what dropout costs).

  python3 bench/gpu/dropout_vs_peers.py --lib build/libattnkit_c.so --d 64,128 --s 1k,4k \
      [--p 0.1] [--causal no,yes] [--impls flash,flash3,flash3_nodrop,sdpa_fa2] [--pass bwd]
      [--runs 20] [--json out.json]
"""
import argparse
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
SEED, OFFSET = 0x5EED, 7


def attnkit_opts(lib, backend, p, causal):
    # (bottom-right causal; Sq = Sk: both alignments agree)
    o = lib.options(backend, causal="bottom_right" if causal else None,
                    stream=torch.cuda.current_stream().cuda_stream)
    o.dropout_p = p
    o.seed, o.offset = SEED, OFFSET
    return o


def attnkit_fwd_fn(lib, backend, sets, p, causal):
    o = attnkit_opts(lib, backend, p, causal)
    out = torch.empty_like(sets[0]["q"])
    to = tensor_of(out)
    ts = [{k: tensor_of(v) for k, v in x.items()} for x in sets]

    def fn(i):
        t = ts[i % len(ts)]
        lib.forward(t["q"], t["k"], t["v"], to, None, o)
    fn.keep = o
    fn(0)
    torch.cuda.synchronize()
    return fn, [out.clone()], lib.last_backend()


def attnkit_bwd_fn(lib, backend, sets, p, causal):
    o = attnkit_opts(lib, backend, p, causal)
    b, s, h, _ = sets[0]["q"].shape
    return attnkit_bwd_from_own_forward(torch, lib, o, sets, (b, h, s))


def sdpa_fa2_fn(sets, p, causal, bwd):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    f = torch.nn.functional.scaled_dot_product_attention
    if not bwd:
        views = [{k: v.transpose(1, 2) for k, v in x.items()} for x in sets]

        def fn(i):
            x = views[i % len(views)]
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION), torch.no_grad():
                f(x["q"], x["k"], x["v"], dropout_p=p, is_causal=causal)
        fn(0)
        torch.cuda.synchronize()
        return fn, None, "torch SDPA flash (FA-2)"
    fn, _ = sdpa_backward_fn(torch, sets, SDPBackend.FLASH_ATTENTION, dropout_p=p,
                             is_causal=causal)
    return fn, None, "torch SDPA flash (FA-2)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--d", default="64,128")
    ap.add_argument("--s", default="1k,4k")
    ap.add_argument("--p", type=float, default=0.1)
    ap.add_argument("--causal", default="no,yes")
    ap.add_argument("--impls", default="flash,flash3,flash3_nodrop,sdpa_fa2")
    ap.add_argument("--pass", dest="pas", choices=("fwd", "bwd"), default="fwd")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--pause", type=float, default=0.2)
    ap.add_argument("--json")
    args = ap.parse_args()
    bwd = args.pas == "bwd"
    lib = AttnkitC(args.lib)
    timer = Timer(torch, args.warmup, args.runs)
    doc = run_doc(torch, lib, "CUDA events, median, 2 rotated input sets")
    doc.update({"dropout_p": args.p, "seed": SEED, "offset": OFFSET})
    impls = args.impls.split(",")
    for causal in (c == "yes" for c in args.causal.split(",")):
        for d in (int(x) for x in args.d.split(",")):
            for s in parse_sizes(args.s):
                b, h = TOKENS // s, HIDDEN // d
                names = ("q", "k", "v", "do") if bwd else ("q", "k", "v")
                sets = [{n: torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16)
                         for n in names} for _ in range(2)]
                flops = 4.0 * b * h * d * s * s * (0.5 if causal else 1.0) * (2.5 if bwd else 1)
                res = {"d": d, "s": s, "b": b, "h": h, "causal": causal, "pass": args.pas,
                       "impls": {}}
                ref, parts = None, []
                for name in impls:
                    try:
                        if name == "sdpa_fa2":
                            fn, first, ran = sdpa_fa2_fn(sets, args.p, causal, bwd)
                        else:
                            backend = "flash3" if name == "flash3_nodrop" else name
                            p = 0.0 if name == "flash3_nodrop" else args.p
                            mk = attnkit_bwd_fn if bwd else attnkit_fwd_fn
                            fn, first, ran = mk(lib, backend, sets, p, causal)
                    except Exception as e:  # noqa: BLE001 - a peer that cannot run is reported
                        res["impls"][name] = {"error": str(e)[:300]}
                        parts.append(f"{name} -")
                        log(f"  D={d} S={s} {name}: cannot run: {str(e)[:160]}")
                        continue
                    entry = {"ran": ran}
                    if name == "flash":
                        ref = first
                    elif name == "flash3" and ref is not None:
                        e = max(rel(g, w) for g, w in zip(first, ref))
                        entry["rel_vs_flash"] = round(e, 6)
                        if e > REL_TOL:
                            entry["wrong"] = True
                    else:
                        entry["unchecked"] = True
                    if entry.get("wrong"):
                        parts.append(f"{name} WRONG")
                    else:
                        entry.update(timed_entry(timer, fn, flops, args.pause))
                        parts.append(f"{name} {entry['tflops']}")
                    res["impls"][name] = entry
                    del fn
                finish_row(doc, res,
                           f"{args.pas} p={args.p} {'c ' if causal else 'nc'} D={d:3d} S={s:5d}",
                           parts, ("flash", "sdpa_fa2", "flash3_nodrop"), args.json)
                del sets
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
