#!/usr/bin/env python3
"""Per flash3 forward kernel in a `cuobjdump -sass` listing: does the softmax (MUFU.EX2) run
before the P V wait (WARPGROUP.DEPBAR.LE gsb0, 0x0)? bench/notes/flash3.md ("SASS finding")
explains why this matters: ptxas hoists the wait above the exps unless Tuning::ordered_softmax.

usage: cuobjdump -sass fwd_d128_bf16.o | python3 bench/gpu/sass_softmax_order.py
Prints, per kernel, its template arguments and the count of loop bodies in each order:
  (BN=0: the default tile width)
  overlapped = HGMMA.. -> DEPBAR 0x1 -> MUFU.EX2.. -> DEPBAR 0x0  (softmax under the own P V)
  serial     = HGMMA.. -> DEPBAR 0x1 -> DEPBAR 0x0 -> MUFU.EX2..  (P V waited for first)
"""
import re
import sys


def main():
    text = sys.stdin.read()
    for body in re.split(r"\n\s*Function : ", text)[1:]:
        name = body.split("\n", 1)[0].strip()
        m = re.search(r"fwd_kernelILi(\d+)ELb(\d)ELi(\d+)ELi(\d)ELb(\d)", name)
        if not m:
            continue
        seq = []
        for line in body.split("\n"):
            if "HGMMA" in line:
                tok = "H"
            elif "WARPGROUP.DEPBAR.LE gsb0, 0x0" in line:
                tok = "0"
            elif "WARPGROUP.DEPBAR.LE gsb0, 0x1" in line:
                tok = "1"
            elif "MUFU.EX2" in line:
                tok = "E"
            else:
                continue
            if seq and seq[-1] == tok and tok in "HE":
                continue
            seq.append(tok)
        s = "".join(seq)
        d, bf16, bn, wgs, ordered = m.groups()
        print(f"D={d} {'bf16' if bf16 == '1' else 'f16'} BN={bn} WGs={wgs} "
              f"ordered_softmax={ordered}: overlapped {s.count('H1E0')}, serial {s.count('H10E')}")


if __name__ == "__main__":
    main()
