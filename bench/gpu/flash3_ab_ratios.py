#!/usr/bin/env python3
"""Ratios of a flash3_knob_ab.py / flash3_defs_ab.sh JSON (ab.json): per row (D, S, causal, round)
the base variant over cuDNN, then every other variant over the base in percent, by time and per
GHz of its own median SM clock, and the variants whose first output differs bitwise from the
first variant's (--bitwise runs). Round 0 tends to favour the first variant: read rounds 1 / 2.
usage: flash3_ab_ratios.py ab.json [BASE (default: the first variant)]"""
import json
import sys


def main():
    res = json.load(open(sys.argv[1]))
    rows = res["rows"]
    names = list(rows[0]["tflops"])
    base = sys.argv[2] if len(sys.argv) > 2 else names[0]
    others = [n for n in names if n != base]
    print(f"  D     S c r | {base}/cuDNN | " + " ".join(f"{n:>8}" for n in others) +
          " | per GHz: " + " ".join(f"{n:>8}" for n in others) + " | out bits differing")
    for r in rows:
        t, clock = r["tflops"], r.get("clock") or {}
        mhz = {n: (clock.get(n) or {}).get("sm_mhz") for n in names}
        pct = " ".join(f"{(t[n] / t[base] - 1) * 100:+8.1f}" for n in others)
        if all(mhz.values()):
            per = " ".join(f"{(t[n] / mhz[n] / (t[base] / mhz[base]) - 1) * 100:+8.1f}"
                           for n in others)
        else:
            per = " ".join(f"{'-':>8}" for _ in others)
        bits = r.get("bitwise") or {}
        diff = " ".join(f"{n}:{v['out_bits']}" for n, v in bits.items() if v.get("out_bits"))
        print(f"{r['d']:3d} {r['s']:5d} {int(r['causal'])} {r['round']} | "
              f"{t[base] / r['cudnn']:.3f}{'':>{len(base) + 1}} | {pct} | per GHz: {per} | {diff}")


if __name__ == "__main__":
    main()
