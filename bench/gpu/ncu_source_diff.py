#!/usr/bin/env python3
"""Compares the ncu source pages (SASS with per-instruction counters) of one kernel in two builds
(session 66: slot 79 in the default build against the ATTNKIT_FLASH3_FWD_D256_TMA_EPI = 2 build).

Input: `ncu -i r.ncu-rep --page source --csv --print-source sass > a.csv` (plain or .gz) for each
build, one launch each. Prints
  - the launch's warps (executions of the first instruction: CTAs x warps per CTA), to check that
    both launches ran the same grid;
  - instructions executed and stall samples per opcode, A against B (executed counts that differ
    say the builds ran different work; the sample shares say where the warps waited);
  - the instructions whose share of the stall samples moved most, after aligning the two SASS
    listings by opcode (difflib), with their sample shares in A and B.
Sample shares, not counts: ncu's warp sampling interval can differ between two runs.
usage: ncu_source_diff.py A.csv[.gz] B.csv[.gz] [--top N]
"""
import argparse
import collections
import csv
import difflib
import gzip
import io


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if '"Address"' in line)
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    head = rows[0]
    ia, isrc = head.index("Address"), head.index("Source")
    iexe = head.index("Instructions Executed")
    isamp = head.index("Warp Stall Sampling (All Samples)")
    out = []
    for r in rows[1:]:
        try:
            addr = int(r[ia], 16)
        except (ValueError, IndexError):
            continue  # (a second kernel's header, or a trailing line)
        src = r[isrc].strip()
        words = src.split()
        op = words[1] if words and words[0].startswith("@") and len(words) > 1 else words[0]
        out.append((addr, op, src, float(r[iexe] or 0), float(r[isamp] or 0)))
    base = out[0][0]
    return [(a - base, op, src, e, s) for a, op, src, e, s in out]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--top", type=int, default=20)
    args = ap.parse_args()
    A, B = load(args.a), load(args.b)
    ta, tb = sum(x[4] for x in A), sum(x[4] for x in B)
    print(f"warps launched: A {A[0][3]:.0f}  B {B[0][3]:.0f}")
    print(f"instructions: A {len(A)}  B {len(B)};  executed: A {sum(x[3] for x in A):.0f}  "
          f"B {sum(x[3] for x in B):.0f};  samples: A {ta:.0f}  B {tb:.0f}")
    ea, eb = collections.Counter(), collections.Counter()
    sa, sb = collections.Counter(), collections.Counter()
    for _, op, _, e, s in A:
        ea[op] += e
        sa[op] += s
    for _, op, _, e, s in B:
        eb[op] += e
        sb[op] += s
    print("\nper opcode: executed A, B, B/A - 1 | sample share A, B, B - A (percentage points)")
    ops = sorted(set(ea) | set(eb), key=lambda o: -abs(sb[o] / tb - sa[o] / ta))
    for op in ops[: args.top]:
        rel = f"{eb[op] / ea[op] - 1:+.3f}" if ea[op] else "   new"
        print(f"  {op:34s} {ea[op]:13.0f} {eb[op]:13.0f} {rel} | {100 * sa[op] / ta:6.2f} "
              f"{100 * sb[op] / tb:6.2f} {100 * (sb[op] / tb - sa[op] / ta):+6.2f}")
    sm = difflib.SequenceMatcher(a=[x[1] for x in A], b=[x[1] for x in B], autojunk=False)
    moved = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                a, b = A[i1 + k], B[j1 + k]
                moved.append((100 * a[4] / ta, 100 * b[4] / tb, f"{a[0]:#07x} {b[0]:#07x}", a[2]))
        else:  # (an unaligned stretch: its samples together)
            moved.append((100 * sum(x[4] for x in A[i1:i2]) / ta,
                          100 * sum(x[4] for x in B[j1:j2]) / tb,
                          f"A {i2 - i1} / B {j2 - j1} unaligned", A[i1][2] if i2 > i1 else B[j1][2]))
    moved.sort(key=lambda m: -abs(m[1] - m[0]))
    print("\ninstructions whose sample share moved most (A %, B %, B - A, offsets A / B, A's text)")
    for a, b, where, src in moved[: args.top]:
        print(f"  {a:5.2f} {b:5.2f} {b - a:+5.2f}  {where:24s} {src[:70]}")


if __name__ == "__main__":
    main()
