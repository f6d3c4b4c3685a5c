#!/usr/bin/env python3
"""Instructions ISSUED on one path through a kernel's SASS (session 57, helper 51; the D 256
tile-boundary count of bench/notes/fwd-d256-edge-s56.md).

Walks the control flow from START until it reaches STOP (an address), taking each conditional
branch as the rules say (default: not taken; BRA.DIV not taken = the warp is converged), and
counts every instruction on the way (predicated ones too: they issue). CALL.REL / RET are
followed with a stack. A rule "ADDR=T" takes the branch at ADDR, "ADDR=N" falls through,
"ADDR=T3" takes it 3 times then falls through (a loop).

usage: cuobjdump -sass k.o | c++filt > k.sass
       python3 bench/gpu/sass_path.py k.sass START STOP [ADDR=T|N|Tk ...] [--log] [--dump] [--ops]
  --log: every conditional branch met (addr, taken?, text); --dump: the whole path; --ops: op counts
  --tidx=4,9,..: take the n-th conditional branch met on the path (1-based; the same control
  structure keeps the same indices across builds: check with --log)
  Prints: path length (issued instructions), then per region markers if --marks A,B,... given
  (the count between consecutive marks).
"""
import re, sys, collections

def load(path):
    ins = []
    for line in open(path):
        m = re.search(r"/\*([0-9a-f]{4,})\*/\s+([^;]+);", line)
        if m: ins.append((int(m.group(1), 16), " ".join(m.group(2).split())))
    return ins

def walk(ins, start, stop, rules, limit=20000):
    at = {a: i for i, (a, _) in enumerate(ins)}
    i = at[start]; path = []; log = []; stack = []; used = collections.Counter()
    while True:
        a, t = ins[i]
        if a == stop and path: break
        path.append((a, t))
        if len(path) > limit:
            for b, take, u in log[:60]: print("  %x %s %s" % (b, "T" if take else "N", u))
            raise SystemExit("path too long: loop? last %x" % a)
        op = re.sub(r"^@!?U?P\w+\s+", "", t)
        pred = t.startswith("@")
        m = re.search(r"0x([0-9a-f]+)", op)
        if op.startswith("EXIT") and not pred: break
        if op.startswith("BRA.DIV"):
            i += 1; continue
        if op.startswith("BRA") and m:
            tgt = int(m.group(1), 16)
            if not pred:
                i = at[tgt]; continue
            r = rules.get(a, "N"); used[a] += 1
            if len(log) + 1 in rules.get("idx", ()): r = "T"
            take = r == "T" or (r.startswith("T") and r[1:].isdigit() and used[a] <= int(r[1:]))
            log.append((a, take, t))
            i = at[tgt] if take else i + 1; continue
        if op.startswith("CALL.REL") and m:
            stack.append(i + 1); i = at[int(m.group(1), 16)]; continue
        if op.startswith("RET") and not pred and stack:
            i = stack.pop(); continue
        i += 1
    return path, log

if __name__ == "__main__":
    args = [x for x in sys.argv[1:] if not x.startswith("--")]
    flags = [x for x in sys.argv[1:] if x.startswith("--")]
    ins = load(args[0]); start = int(args[1], 16); stop = int(args[2], 16)
    rules = {}
    for r in args[3:]:
        k, v = r.split("="); rules[int(k, 16)] = v
    for f in flags:  # --tidx=4,9,...: the n-th conditional branch met (1-based) is taken
        if f.startswith("--tidx="): rules["idx"] = {int(x) for x in f[7:].split(",")}
    path, log = walk(ins, start, stop, rules)
    print("issued", len(path))
    marks = [int(x, 16) for f in flags if f.startswith("--marks=") for x in f[8:].split(",")]
    if marks:
        idx = [0] + [next((j for j, (a, _) in enumerate(path) if a == mk), None) for mk in marks] + [len(path)]
        names = ["start"] + ["%x" % mk for mk in marks]
        for n, j0, j1 in zip(names, idx, idx[1:]):
            if j0 is None or j1 is None: print("  mark %s not on path" % n); continue
            print("  from %s: %d" % (n, j1 - j0))
    if "--log" in flags:
        for a, take, t in log: print("  %x %s %s" % (a, "T" if take else "N", t))
    if "--ops" in flags:
        ops = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", t).split()[0] for _, t in path)
        print(" ".join("%s %d" % kv for kv in sorted(ops.items(), key=lambda kv: -kv[1])))
    if "--dump" in flags:
        for a, t in path: print("  %05x %s" % (a, t))
