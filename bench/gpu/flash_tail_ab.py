#!/usr/bin/env python3
"""The flash forward's split tail (src/backends/flash/fwd_tail.cuh) on and off, against FA-2.

In one process, interleaved call by call (bench/gpu/flash3_tail_probe.py time_interleaved):
a sacrificial first copy, attnkit:flash with the split tail forced on ("tail", env
ATTNKIT_FLASH_FWD_TAIL=1, read at every launch) and off ("off", =0), a second copy of "tail"
("tailB": what the call order alone moves), the auto rule ("auto", env unset), any --variant,
and torch SDPA FLASH_ATTENTION (FA-2). BENCHMARKS.md
shapes (B = 16384 / S, H = 2048 / D, bf16, BSHD), no lse asked (like peers.py). Each variant's
output is checked against FA-2's first.

usage: flash_tail_ab.py --lib build/libattnkit_c.so [--d 256] [--s 512,1024,2048,4096,16384]
                        [--causal 0] [--reps 30] [--rounds 2] [--json out.json]
"""
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attnkit_c import AttnkitC, tensor_of  # noqa: E402
from flash3_tail_probe import time_interleaved  # noqa: E402

ENV = "ATTNKIT_FLASH_FWD_TAIL"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--d", default="256")
    ap.add_argument("--s", default="512,1024,2048,4096,16384")
    ap.add_argument("--causal", default="0")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", default=None)
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=ENV: one more variant of ours with ATTNKIT_FLASH_FWD_TAIL=ENV "
                         "(e.g. single=1:0:s)")
    args = ap.parse_args()
    extra = [v.split("=", 1) for v in args.variant]
    ak = AttnkitC(args.lib)
    torch.manual_seed(0)
    rows = []
    names = ["first", "tail", "off", "tailB", "auto"] + [n for n, _ in extra] + ["fa2"]
    for d in (int(x) for x in args.d.split(",")):
        for s in (int(x) for x in args.s.split(",")):
            for causal in (bool(int(x)) for x in args.causal.split(",")):
                b, h = max(1, 16384 // s), 2048 // d
                q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16)
                           for _ in range(3))
                out = torch.empty_like(q)
                ts = [tensor_of(t) for t in (q, k, v, out)]
                tq, tk, tv = (t.transpose(1, 2) for t in (q, k, v))
                opts = ak.options("flash", causal="bottom_right" if causal else None,
                                  stream=torch.cuda.current_stream().cuda_stream)

                def ours(env):
                    def run():
                        if env is None:
                            os.environ.pop(ENV, None)
                        else:
                            os.environ[ENV] = env
                        ak.forward(ts[0], ts[1], ts[2], ts[3], None, opts)
                    return run

                def fa2():
                    with sdpa_kernel(SDPBackend.FLASH_ATTENTION), torch.no_grad():
                        return F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)

                runs = {"first": ours(None), "tail": ours("1"), "off": ours("0"),
                        "tailB": ours("1"), "auto": ours(None), "fa2": fa2}
                runs.update({n: ours(e) for n, e in extra})
                ref = fa2().transpose(1, 2).float()
                errs = {}
                for n in ["tail", "off"] + [n for n, _ in extra]:
                    out.fill_(float("nan"))
                    runs[n]()
                    torch.cuda.synchronize()
                    errs[n] = ((out.float() - ref).norm() / ref.norm()).item()
                    if not errs[n] < 2e-2:
                        raise SystemExit(f"D {d} S {s} causal {causal} {n}: rel err {errs[n]}")
                os.environ.pop(ENV, None)
                flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
                nothing = lambda: None  # noqa: E731
                for r in range(args.rounds):
                    ms = time_interleaved([(nothing, runs[n]) for n in names], args.reps)
                    tf = {n: flops / m / 1e9 for n, m in zip(names, ms)}
                    row = {"d": d, "s": s, "causal": causal, "round": r, "b": b, "h": h,
                           "ms": dict(zip(names, ms)), "tflops": tf, "rel_err": errs,
                           "tail_over_off": tf["tail"] / tf["off"],
                           "auto_over_off": tf["auto"] / tf["off"],
                           "auto_over_fa2": tf["auto"] / tf["fa2"],
                           "tailB_over_tail": tf["tailB"] / tf["tail"],
                           "tail_over_fa2": tf["tail"] / tf["fa2"],
                           "off_over_fa2": tf["off"] / tf["fa2"]}
                    rows.append(row)
                    print(f"D {d} S {s:5d} {'causal' if causal else 'nc'} r{r}: "
                          + " ".join(f"{n} {tf[n]:6.1f}" for n in names)
                          + f" | tail/off {row['tail_over_off']:.3f} tailB/tail "
                          f"{row['tailB_over_tail']:.3f} tail/FA-2 {row['tail_over_fa2']:.3f} "
                          f"off/FA-2 {row['off_over_fa2']:.3f} auto/off "
                          f"{row['auto_over_off']:.3f} auto/FA-2 {row['auto_over_fa2']:.3f}"
                          + "".join(f" {n}/off {tf[n] / tf['off']:.3f}" for n, _ in extra),
                          flush=True)
                os.environ.pop(ENV, None)
                del q, k, v, out, tq, tk, tv, ref
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
