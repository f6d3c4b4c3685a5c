#!/usr/bin/env python3
"""Which shapes make the flash3 forward hang? (session 13: D = 256 at B 1, S_q 1, S_k 20,
H_q 40000, H_kv 8 never finished; D 64 / 128 did.) Each shape runs in its own process with a
timeout: ok (and the max abs difference to torch's math SDPA on a few heads), error, or HANG.

usage: flash3_hang_probe.py --lib build_f3/libflash3_shim.so [--timeout 20]
"""
import argparse
import os
import subprocess
import sys

CHILD = r"""
import sys, torch
sys.path.insert(0, {here!r})
from flash3_vs_peers import load, make_flash3
fn, set_tuning = load({lib!r})
d, b, sq, sk, hq, hkv, rot = {shape!r}
set_tuning(rotate=rot)
torch.manual_seed(0)
q = torch.randn(b, sq, hq, d, device="cuda", dtype=torch.bfloat16)
k = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
v = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
out = torch.full_like(q, float("nan"))
lse = torch.empty(b, hq, sq, device="cuda", dtype=torch.float32)
make_flash3(fn, q, k, v, out, lse, False)()
torch.cuda.synchronize()
g = hq // hkv
n = min(hq, 64)
ref = torch.nn.functional.scaled_dot_product_attention(
    q[:, :, :n].transpose(1, 2).float(), k.repeat_interleave(g, 2)[:, :, :n].transpose(1, 2).float(),
    v.repeat_interleave(g, 2)[:, :, :n].transpose(1, 2).float()).transpose(1, 2)
print("ok max_abs_err(first heads) %.3g nan %d" % ((out[:, :, :n].float() - ref).abs().max().item(),
                                                    int(torch.isnan(out).sum().item())))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--timeout", type=float, default=20)
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    shapes = [  # (D, B, S_q, S_k, H_q, H_kv, rotate_rounds)
        (256, 1, 1, 20, 40000, 8, 0), (256, 1, 1, 20, 4000, 8, 0), (256, 1, 1, 20, 1000, 8, 0),
        (256, 1, 1, 20, 40000, 40000, 0), (256, 1, 1, 200, 40000, 8, 0),
        (256, 1, 64, 20, 40000, 8, 0), (256, 100, 1, 20, 400, 8, 0), (128, 1, 1, 20, 40000, 8, 0),
    ]
    for shape in shapes:
        code = CHILD.format(here=here, lib=os.path.abspath(a.lib), shape=shape)
        try:
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               timeout=a.timeout)
            res = r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() \
                else "error: " + (r.stderr.strip().splitlines() or ["?"])[-1][:160]
        except subprocess.TimeoutExpired:
            res = f"HANG (> {a.timeout:.0f} s)"
        print(f"D={shape[0]} B={shape[1]} Sq={shape[2]} Sk={shape[3]} Hq={shape[4]} "
              f"Hkv={shape[5]} rotate={shape[6]}: {res}", flush=True)


if __name__ == "__main__":
    main()
