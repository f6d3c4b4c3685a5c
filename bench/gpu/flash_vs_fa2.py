#!/usr/bin/env python3
"""attnkit:flash (forward + backward) vs torch SDPA FLASH_ATTENTION (FlashAttention-2) in ONE
process (BENCHMARKS.md), through libattnkit_c.so (ctypes) on torch tensors.

Shapes: 16384 tokens, hidden 2048: B = 16384/S, H = 2048/D, bf16, BSHD contiguous.
Method: CUDA events per call, warm-up first, median of --reps calls, 3 input sets rotated (> 3 x L2
at these sizes), ~0.3 s pause between implementations. Also checks ours vs FA2's output and grads
(relative Frobenius error) at every shape.

usage: flash_vs_fa2.py --lib build/libattnkit_c.so --json out.json [--s 1024,4096] [--d 64,128]
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/
from attnkit_c import AttnkitC, tensor_of  # noqa: E402


def timed(fn, reps):
    for _ in range(3):
        fn(0)
    torch.cuda.synchronize()
    ts = []
    for r in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(r)
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    time.sleep(0.3)
    return statistics.median(ts)


def rel(x, y):
    return ((x.float() - y.float()).norm() / y.float().norm()).item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--s", default="1024,4096,16384")
    ap.add_argument("--d", default="64,128,256")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--no-bwd", action="store_true")
    a = ap.parse_args()
    ak = AttnkitC(a.lib)
    rows = []
    dev = torch.cuda.get_device_name()
    for d in [int(x) for x in a.d.split(",")]:
        for s in [int(x) for x in a.s.split(",")]:
            for causal in [bool(int(x)) for x in a.causal.split(",")]:
                b, h = 16384 // s, 2048 // d
                sets = []
                for _ in range(3):
                    q, k, v, do = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16)
                                   for _ in range(4))
                    sets.append((q, k, v, do))
                opts = ak.options("flash", causal="bottom_right" if causal else None,
                                  stream=torch.cuda.current_stream().cuda_stream)
                ours = []
                for q, k, v, do in sets:
                    out = torch.empty_like(q)
                    lse = torch.empty(b, h, s, device="cuda", dtype=torch.float32)
                    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
                    vs = [tensor_of(t) for t in (q, k, v, out, lse, do, dq, dk, dv)]
                    ours.append((out, lse, dq, dk, dv, vs))

                def fwd_ours(r):
                    vs = ours[r % 3][5]
                    ak.forward(*vs[:5], opts)

                def bwd_ours(r):
                    vs = ours[r % 3][5]
                    ak.backward(vs[5], vs[0], vs[1], vs[2], vs[3], vs[4], vs[6], vs[7], vs[8], opts)

                tq = [(q.transpose(1, 2).detach().requires_grad_(),
                       k.transpose(1, 2).detach().requires_grad_(),
                       v.transpose(1, 2).detach().requires_grad_(), do.transpose(1, 2))
                      for q, k, v, do in sets]

                def fwd_fa2(r):
                    q, k, v, _ = tq[r % 3]
                    with sdpa_kernel(SDPBackend.FLASH_ATTENTION), torch.no_grad():
                        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

                fa2_out = []
                for i in range(3):
                    q, k, v, _ = tq[i]
                    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                        fa2_out.append(F.scaled_dot_product_attention(q, k, v, is_causal=causal))

                def bwd_fa2(r):
                    q, k, v, do = tq[r % 3]
                    torch.autograd.grad(fa2_out[r % 3], (q, k, v), do, retain_graph=True)

                flops = 4 * b * h * s * s * d / (2 if causal else 1)
                res = {}
                res["fwd_ours"] = timed(fwd_ours, a.reps)
                res["fwd_fa2"] = timed(fwd_fa2, a.reps)
                if not a.no_bwd:
                    res["bwd_ours"] = timed(bwd_ours, a.reps)
                    res["bwd_fa2"] = timed(bwd_fa2, a.reps)
                # accuracy cross-check on set 0
                fwd_ours(0)
                torch.cuda.synchronize()
                e_out = rel(ours[0][0], fa2_out[0].transpose(1, 2))
                e_g = float("nan")
                if not a.no_bwd:
                    bwd_ours(0)
                    q, k, v, do = tq[0]
                    g = torch.autograd.grad(fa2_out[0], (q, k, v), do, retain_graph=True)
                    torch.cuda.synchronize()
                    e_g = max(rel(ours[0][2 + i], g[i].transpose(1, 2)) for i in range(3))
                line = f"d={d} s={s} causal={int(causal)}"
                for ps, mul in (("fwd", 1.0), ("bwd", 2.5)):
                    if f"{ps}_ours" not in res:
                        continue
                    to = flops * mul / res[f"{ps}_ours"] / 1e9
                    tf = flops * mul / res[f"{ps}_fa2"] / 1e9
                    line += f" | {ps} ours {to:6.1f} fa2 {tf:6.1f} TF/s ratio {to / tf:5.2f}"
                    for impl, t, tfl in (("attnkit:flash", res[f"{ps}_ours"], to),
                                         ("torch:flash", res[f"{ps}_fa2"], tf)):
                        rows.append({"impl": impl, "pass": ps, "dtype": "bf16", "b": b, "h": h,
                                     "s": s, "d": d, "causal": causal, "ms": t, "tflops": tfl})
                line += f" | err out {e_out:.2e} grads {e_g:.2e}"
                print(line, flush=True)
                del sets, ours, tq, fa2_out
                torch.cuda.empty_cache()
    with open(a.json, "w") as f:
        json.dump({"gpu": dev, "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
