#!/usr/bin/env python3
"""Size of the flash3 forward's turn loop(s) in SASS, per kernel (session 17).

Reads `cuobjdump -sass` output (c++filt-ed or not) on stdin; for every function whose name
contains argv[1] (e.g. "785, 1, 0>" for the D 128 slot-31 kernel), lists each loop (a backward
branch) holding >= 8 HGMMA: its address range, instruction count, HGMMA and MUFU counts. The
steady mainloop turn is the smallest one with 16 HGMMA at D 128 (674 instructions on main at
f4916e1 for kVar 785, 669 for 784). A change that only adds cold code can still grow it (session
17: the split tail's merge made ptxas move the Q K^T descriptors' uniform registers every turn).

usage: cuobjdump -sass fwd_d128_bf16.o | c++filt | python3 bench/gpu/sass_turn_loop.py "785, 1, 0>"
"""
import re
import sys


def main():
    key = sys.argv[1] if len(sys.argv) > 1 else "fwd_kernel"
    for fn in re.split(r"\n\s+Function : ", sys.stdin.read())[1:]:
        name = fn.split("\n", 1)[0]
        if key not in name:
            continue
        ins = []
        for line in fn.split("\n"):
            m = re.search(r"/\*([0-9a-f]{4,})\*/\s+([^;]+);", line)
            if m:
                ins.append((int(m.group(1), 16), m.group(2).strip()))
        at = {a: i for i, (a, _) in enumerate(ins)}
        loops = set()
        for i, (a, text) in enumerate(ins):
            m = re.search(r"0x([0-9a-f]+)", text) if "BRA" in text else None
            if m and int(m.group(1), 16) < a and int(m.group(1), 16) in at:
                body = ins[at[int(m.group(1), 16)]:i + 1]
                hgmma = sum("HGMMA" in x for _, x in body)
                if hgmma >= 8:
                    loops.add((body[0][0], a, len(body), hgmma, sum("MUFU" in x for _, x in body)))
        print(name.strip()[:100])
        for lp in sorted(loops, key=lambda x: x[2]):
            print("  loop %x-%x instrs %d HGMMA %d MUFU %d" % lp)


if __name__ == "__main__":
    main()
