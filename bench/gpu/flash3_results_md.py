#!/usr/bin/env python3
"""Turns a flash3_vs_peers.py JSON into the BENCHMARKS.md table (TFLOP/s + ratios to each peer).
usage: flash3_results_md.py in.json commit > out.md"""
import json
import sys

res = json.load(open(sys.argv[1]))
commit = sys.argv[2] if len(sys.argv) > 2 else res.get("commit", "?")
by = {}
for r in res["rows"]:
    by.setdefault((r["d"], r["s"], r["causal"]), {})[r["impl"]] = r["tflops"]
print(f"# flash3 forward vs torch SDPA peers — {res['gpu']}, {res['date']}, commit {commit}\n")
print(f"torch {res['torch']}, cuDNN {res['cudnn']}; same process, same run. bf16, 16384 tokens, "
      f"hidden 2048. Ceilings this run: GEMM {res.get('gemm_tflops_8192')} TFLOP/s.\n")
print("| D | S | causal | attnkit:flash3 | torch:cudnn | torch:flash (FA2) | f3/cuDNN | f3/FA2 |")
print("|---|---|---|---|---|---|---|---|")
for (d, s, c), v in sorted(by.items()):
    f3, cd, fa = v.get("attnkit:flash3"), v.get("torch:cudnn"), v.get("torch:flash")
    r1 = f"{f3 / cd:.2f}" if f3 and cd else "-"
    r2 = f"{f3 / fa:.2f}" if f3 and fa else "-"
    print(f"| {d} | {s} | {'yes' if c else 'no'} | {f3} | {cd} | {fa} | {r1} | {r2} |")
