#!/usr/bin/env python3
"""Per flash3 forward kernel in a `cuobjdump -sass` listing: does the softmax (MUFU.EX2) run
before the warpgroup's own P V wait (WARPGROUP.DEPBAR.LE gsb0, 0x0)? bench/notes/flash3.md
("SASS finding") and flash3-fwd-s3.md (session 16) explain why this matters: ptxas hoists the
wait above the exps unless the kernel has kVarOrdered (Tuning::ordered_softmax).

usage: cuobjdump -sass fwd_d128_bf16.o | python3 bench/gpu/sass_softmax_order.py [--seq]
Prints, per kernel, its template arguments (fwd_kernel<D, BF16, BN, WGs, VS, kVar, CL, RS>) and
the count of loop bodies in each order:
  overlapped = HGMMA.. -> DEPBAR 0x1 -> MUFU.EX2.. -> DEPBAR 0x0  (softmax under the own P V)
  serial     = HGMMA.. -> DEPBAR 0x1 -> DEPBAR 0x0 -> MUFU.EX2..  (P V waited for first)
--seq also prints the run-length sequence (H = HGMMA, 0 / 1 = DEPBAR, E = MUFU.EX2, s = STL/LDL).
"""
import re
import sys

NAME = re.compile(r"fwd_kernelILi(\d+)ELb(\d)ELi(\d+)ELi(\d)ELi(\d)ELi(\d+)ELi(\d)ELi(\d+)E")


def tokens(body):
    for line in body.split("\n"):
        if "HGMMA" in line:
            yield "H"
        elif "DEPBAR.LE gsb0, 0x0" in line:
            yield "0"
        elif "DEPBAR.LE gsb0, 0x1" in line:
            yield "1"
        elif "MUFU.EX2" in line:
            yield "E"
        elif re.search(r"\b(STL|LDL)", line):
            yield "s"


def main():
    show_seq = "--seq" in sys.argv[1:]
    text = sys.stdin.read()
    for body in re.split(r"\n\s*Function : ", text)[1:]:
        m = NAME.search(body.split("\n", 1)[0])
        if not m:
            continue
        runs = []  # [token, count]
        for t in tokens(body):
            if runs and runs[-1][0] == t:
                runs[-1][1] += 1
            else:
                runs.append([t, 1])
        s = "".join(t for t, _ in runs if t != "s")
        d, bf16, bn, wgs, vs, var, cl, rs = m.groups()
        print(f"D={d} {'bf16' if bf16 == '1' else 'f16'} BN={bn} WGs={wgs} VS={vs} kVar={var} "
              f"CL={cl} RS={rs}: overlapped {s.count('H1E0')}, serial {s.count('H10E')}")
        if show_seq:
            print("   " + " ".join(f"{t}{n}" for t, n in runs))


if __name__ == "__main__":
    main()
