#!/usr/bin/env python3
"""The flash3 forward's steady turn as it executes, per kernel (session 54, helpers 42-44).

bench/gpu/sass_turn_loop.py counts the static loop; in the D 64 / 128 / 256 turns that loop holds
the mask block (mask_tile: ISETP + FSEL -INF per element, 91-170 instructions) behind a branch
that unmasked turns take, so the issued turn is shorter (slot 14 at D 64: 626 static, 456 issued).
This prints, for every function whose name contains KEY: the static turn (the smallest loop with
NHGMMA HGMMA: 12 at D 64, 16 at D 128, 24 at D 256), its mask block, the executed path, and where
its MUFU.EX2 sit against the P V wait (WARPGROUP.DEPBAR.LE gsb0, 0x0; the S wait is 0x1).
Session 54 found 62 of 66 (D 128 slots 37 / 77) and 31 of 34 (D 256 slots 39 / 119) after it.

Two-turn loops (the K / V ring unrolled: ATTNKIT_FLASH3_FWD_D64_RING, _D128_RING, _D256_RING;
NHGMMA = 2 x the turn's): the loop is also cut at its odd-entry point (the target of the forward conditional branch
before the loop's first HGMMA that lands past half of its HGMMAs) and each half reported alone
("half 0" = the K stage 0 turn with the loop top, "half 1" = the K stage 1 turn with the back edge);
a half's lazy-rescale block is the one inside it (the whole loop's count also takes the odd-entry
branch's skip for one: D 128's slot 37 at _D128_RING=1, no lazy rescale, shows 394 there; read
the halves).

usage: cuobjdump -sass fwd_d128_bf16.o > f.sass; python3 bench/gpu/sass_turn_exec.py f.sass "66321, 1, 0>" 16 [dump]
(c++filt the dump first for template-argument keys; cuobjdump on the 2-core machine: the Triton
wheel's, .../triton/backends/nvidia/bin/cuobjdump)
"""
import re, sys, collections
src = open(sys.argv[1]).read(); key = sys.argv[2]
nh = int(sys.argv[3]) if len(sys.argv) > 3 else 24
dump = len(sys.argv) > 4
for fn in re.split(r"\n\s+Function : ", src)[1:]:
    name = fn.split("\n", 1)[0]
    if key not in name: continue
    ins = []
    for line in fn.split("\n"):
        m = re.search(r"/\*([0-9a-f]{4,})\*/\s+([^;]+);", line)
        if m: ins.append((int(m.group(1), 16), m.group(2).strip()))
    at = {a: i for i, (a, _) in enumerate(ins)}
    best = None
    for i, (a, t) in enumerate(ins):
        m = re.search(r"0x([0-9a-f]+)", t) if "BRA" in t else None
        if m and int(m.group(1), 16) < a and int(m.group(1), 16) in at:
            body = ins[at[int(m.group(1), 16)]:i + 1]
            if sum("HGMMA" in x for _, x in body) == nh and (best is None or len(body) < len(best)):
                best = body
    body = best
    skip = set()
    for j, (a, t) in enumerate(body):
        m = re.search(r"BRA 0x([0-9a-f]+)", t)
        if m and t.startswith("@") and int(m.group(1), 16) > a and int(m.group(1), 16) <= body[-1][0]:
            tgt = int(m.group(1), 16)
            rng = [x for x in body if a < x[0] < tgt]
            if sum("FSEL" in x and "-INF" in x for _, x in rng) >= 16:
                skip |= {x[0] for x in rng}
    def report(label, body, path):
        resc = set()  # lazy rescale block: forward predicated BRA skipping >= 64 FMUL
        for j, (a, t) in enumerate(path):
            m = re.search(r"BRA 0x([0-9a-f]+)", t)
            if m and t.startswith("@") and a < int(m.group(1), 16) <= body[-1][0]:
                rng = [x for x in path if a < x[0] < int(m.group(1), 16)]
                if sum(x.startswith("FMUL") for _, x in rng) >= 64: resc |= {x[0] for x in rng}
        waits = [i for i, (a, t) in enumerate(path) if "DEPBAR" in t and "gsb0, 0x0" in t]
        w = waits[0] if waits else None
        mb = sum("MUFU.EX2" in t for _, t in path[:w]); ma = sum("MUFU.EX2" in t for _, t in path[w:])
        ops = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", t).split()[0] for _, t in path)
        opa = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", t).split()[0] for _, t in path[w:])
        print("  %s %x-%x: %d static, mask block %d, executed %d; P V waits (gsb0 0x0) on path %d at idx %s; MUFU.EX2 before/after %d / %d; after-wait instrs %d"
              % (label, body[0][0], body[-1][0], len(body), len(skip & {a for a, _ in body}), len(path), len(waits), waits, mb, ma, len(path) - w))
        print("  lazy-rescale block %d (a turn without a moved max issues %d)" % (len(resc), len(path) - len(resc)))
        print("  path ops:", " ".join("%s %d" % kv for kv in sorted(ops.items(), key=lambda kv: -kv[1])))
        print("  after-wait ops:", " ".join("%s %d" % kv for kv in sorted(opa.items(), key=lambda kv: -kv[1])))
    path = [x for x in body if x[0] not in skip]
    print(name.strip()[:90])
    report("loop", body, path)
    hg = [i for i, (_, t) in enumerate(body) if "HGMMA" in t]
    cut = None  # the odd-entry point of a two-turn loop
    for a, t in body[:hg[0]]:
        m = re.search(r"BRA 0x([0-9a-f]+)", t)
        if m and t.startswith("@") and a < int(m.group(1), 16) <= body[-1][0]:
            k = [i for i, (b, _) in enumerate(body) if b == int(m.group(1), 16)]
            if k and sum("HGMMA" in x for _, x in body[:k[0]]) == nh // 2: cut = k[0]
    if cut is not None:
        for h, part in enumerate((body[:cut], body[cut:])):
            report("half %d" % h, part, [x for x in part if x[0] not in skip])
    if dump:
        for a, t in body: print("%s%05x %s" % ("  M " if a in skip else "    ", a, t))
