#!/usr/bin/env python3
"""Instructions ISSUED on the common path of one flash3 forward tile boundary (session 56, helper-50).

From the exit of the steady ring loop of tile i (the fall-through of its back edge: n - 2 = 6 ring
turns at 1k, 30 at 4k, both even) through tile() 's tail, the kernel loop's next-tile fetch
(kernel.cuh: static_tile, decode_tile_of, num_n_blocks, the flush test), tile i+1's prologue
(mask_from, Q wait), turn 0 (its Q K^T, the pending P V, finish_pending = tile i's epilogue),
the peeled turn 1, the masked-prefix loop's skip, up to the ring loop's first instruction.
The common path is non-causal without a masked block (1k / 4k nc, a full 128-row tile).

Input: nvdisasm -gi (line info with the inline stack) of a one-kernel cubin built with -lineinfo
(-lineinfo leaves the SASS identical: tools/sass_identical.sh). The walk follows unconditional
branches; at a conditional one: backward branches (the TMA store's BRA.U.ANY waterfall) and
BRA.DIV are not taken; an mbarrier try_wait's retry (after TRYWAIT, or into a YIELD block)
succeeds; a side with FSEL -INF (the mask) or LDG.E.CONSTANT (the lpt table) is avoided; an
if-body whose condition holds (finish_pending's `pending`, the STG epilogue's rows) is entered;
then the AVOID / AVOID_LEAF / PREFER source texts below decide (looked up in the inline stacks of
each side's first instructions: texts, not line numbers, so that edits elsewhere keep the
rules; the source files are read from the paths in the line info, so disassemble a tree whose
sources are still those of the build). Anything else is not taken and counted as unresolved:
check those with -v (on slots 37 / 77 / 14 the remaining ones are kernel.cuh's `t < 0 ? 0 :
num_n_blocks` (not taken = computed) and the `it < n_blocks` ring entry (not taken = entered)).
-text prints the count per outermost mainloop.cuh / kernel.cuh statement (diff two builds with
it), -dump the path, -rotate walks tile_of_round's rotation (FwdArgs::rotate) instead of its skip.

usage:
  tools/flash3_one_kernel.sh "128, true, 0, 2, 2, 66321, 1, 0" k.o -- -lineinfo
  cuobjdump -xelf all k.o; nvdisasm -gi -c tmp.*.cubin > k.dis
  python3 bench/gpu/sass_tile_edge.py k.dis NHGMMA [-v] [-text] [-dump]   (NHGMMA: the two-turn
  ring loop's, 32 at D 128, 24 at D 64)
Prints the count, the count per source region (the outermost mainloop.cuh / kernel.cuh line) and
the opcode histogram.
"""
import re, sys, collections, os

# Side rules: at a forward conditional branch, the first instructions of each side (the
# fall-through and the target) are looked up by the source text of their frames (every frame of
# the inline stack); a side that hits an AVOID text is not taken, one that hits a PREFER text is.
# Texts, not line numbers, so that edits elsewhere in the files keep the rules.
AVOID = [
    "empty_tile(b, h, row0);",          # tile(): n_blocks <= 0
    "idle_tile(n_blocks, qb, qi.phase(nq));",  # tile(): rows past seqlen_q
    "consumer.flush_turn();",           # kernel.cuh: no flush between overlapped tiles
    "mask_tile<kBN>(s, nb * kBN",       # nc: no masked block
    "mask_tile<kBN>(s,",
    "slot.get(k)",                      # static schedule
    "__ldg(a.sched_table",              # nc: no lpt table
    "c = x - g * fast_div(x, a.g_div_mul",  # a.rotate = 0 (D 128; D 64 192-row tiles: see -rotate)
    "BPT.TRAP",                         # softmax_before_wait's unreachable trap
    "consumer.drain();",                # the loop's exit (t < 0)
    "if (cwg == 0) turn.wait_turn();",  # (after the loop)
    "finish_tail_piece<",
]
PREFER = [
    "release_kv<Tr>(&sm.empty_v[p",  # finish_pending: pending (pipe.vs(-1) / pend_vs())
    "if (pending) ptx::mbar_wait(&sm.full_v[",
    "tma_store_4d(&a.tma_o",            # lane 0 issues the TMA store
    "l0[8 * r * a.lse_ss] = lse[r];",  # lse rows < seqlen_q (lanes 0 mod 4)
    "float* const l0 = a.lse",
    "ring_turns(it, n_blocks, n_end",
    "mainloop_turn<Tr, BF16, kVar, kMaskFrom>(a, sm, pipe, turn, 1, n_end",
    "named_bar_sync(1 + me",            # ping-pong on (D 128 below 2k, D 64)
    "named_bar_arrive(",
    "t_ahead = static_tile<kLptTable>(args, k + 1)",
    "bulk_wait_read<0>()",              # release_staged: lane 0
    "mbar_arrive(&sm.empty_q[sq])",
    "attnkit::cuda::sm90::mbar_arrive(bar);",  # release_kv's elected arrival
]
# matched on every frame (the innermost too): leaf statements of paths not taken
AVOID_LEAF = [
    "int last_row = (m_block + 1) * Tr::kBlockM;",  # num_n_blocks: non-causal returns total
]
NSIDE = 3  # instructions sampled on each side of a branch
ROTATE = "-rotate" in sys.argv
if ROTATE:
    AVOID.remove("c = x - g * fast_div(x, a.g_div_mul")
    PREFER.append("c = x - g * fast_div(x, a.g_div_mul")


def parse(path):
    ins, labels, stack = [], {}, []
    src_cache = {}

    def src(f, l):
        if f not in src_cache:
            try:
                src_cache[f] = open(f).read().split("\n")
            except OSError:
                src_cache[f] = []
        s = src_cache[f]
        return s[l - 1].strip() if 0 < l <= len(s) else ""

    pending_stack = []
    for line in open(path):
        m = re.match(r'\s*//## File "([^"]+)", line (\d+)(?: inlined at "([^"]+)", line (\d+))?', line)
        if m:
            pending_stack.append((m.group(1), int(m.group(2))))
            continue
        m = re.match(r"^(\.L_x_\d+):", line.strip())
        if m:
            labels[m.group(1)] = len(ins)
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+([^;]+);", line)
        if m:
            if pending_stack:
                stack = [(f, l, src(f, l)) for f, l in pending_stack]
                pending_stack = []
            ins.append((int(m.group(1), 16), m.group(2).strip(), stack))
    return ins, labels


def main():
    path, nh = sys.argv[1], int(sys.argv[2])
    verbose = "-v" in sys.argv
    ins, labels = parse(path)

    def target(t):
        m = re.search(r"`\((\.L_x_\d+)\)", t)
        return labels[m.group(1)] if m else None

    # the ring loop: the smallest backward-branch loop with nh HGMMA
    best = None
    for i, (a, t, _) in enumerate(ins):
        if "BRA" in t:
            j = target(t)
            if j is not None and j < i:
                n = sum("HGMMA" in x[1] for x in ins[j:i + 1])
                if n == nh and (best is None or i - j < best[1] - best[0]):
                    best = (j, i)
    if best is None:
        sys.exit("no loop with %d HGMMA" % nh)
    top, back = best
    i, path, seen, unk = back + 1, [], collections.Counter(), []
    while i != top:
        a, t, st = ins[i]
        path.append(i)
        seen[i] += 1
        if seen[i] > 4 or len(path) > 20000:
            sys.exit("loop at %x" % a)
        op = re.sub(r"^@!?U?P\w+\s+", "", t).split()[0]
        pred = t.startswith("@")
        if op.startswith("BRA") or op == "EXIT":
            if op == "EXIT" and not pred:
                sys.exit("reached EXIT at %x" % a)
            j = target(t)
            if not pred and op in ("BRA", "BRA.U") and j is not None:
                i = j
                continue
            take = False
            why = "backward" if (j is not None and j <= i) else "?"
            if op == "BRA.DIV":
                why = "div"
            elif j is not None and j > i:
                def first(k, n):
                    return [ins[q][1] for q in range(k, min(k + 3 * n, len(ins)))
                            if not re.match(r"(@!?U?P\w+\s+)?(BSYNC|BSSY|NOP|WARPSYNC)", ins[q][1])][:n]
                own = [x[2] for x in st if x[0].endswith(("mainloop.cuh", "epilogue.cuh"))]
                # (a branch over an if-body whose condition holds on the common path: ptxas puts
                # the body on the fall-through; finish_pending's pending, the STG epilogue's rows)
                if own and own[0] in ("if (pending) {", "if (i >= a.seqlen_q) continue;"):
                    why = "body: " + own[0]
                elif i > 0 and "TRYWAIT" in ins[i - 1][1] or first(j, 1)[0].startswith("YIELD"):
                    why = "mbar try_wait succeeds"
                elif any("-INF" in x and "FSEL" in x for x in first(i + 1, 24)) != any(
                        "-INF" in x and "FSEL" in x for x in first(j, 24)):
                    take = any("-INF" in x and "FSEL" in x for x in first(i + 1, 24))
                    why = "no mask (FSEL -INF side)"
                elif any("LDG.E.CONSTANT" in x for x in first(i + 1, 12)) != any(
                        "LDG.E.CONSTANT" in x for x in first(j, 12)):
                    take = any("LDG.E.CONSTANT" in x for x in first(i + 1, 12))
                    why = "no lpt table (the __ldg side)"
                else:
                    def side(k, callers):  # (AVOID: the frames that call into the side's code)
                        return " | ".join(ins[q][1] + " | " + " | ".join(
                            x[2] for x in ins[q][2][1 if callers else 0:])
                            for q in [q for q in range(k, min(k + 4 * NSIDE, len(ins)))
                                      if not re.match(r"(@!?U?P\w+\s+)?(BSYNC|BSSY|NOP|WARPSYNC|BRA)", ins[q][1])][:NSIDE])
                    for keys, callers, sense, tag in ((AVOID_LEAF, False, True, "avoid "),
                                                      (AVOID, True, True, "avoid "),
                                                      (PREFER, False, False, "prefer ")):
                        fall, tgt = side(i + 1, callers), side(j, callers)
                        hit = [(key, key in fall) for key in keys if (key in fall) != (key in tgt)]
                        if hit:
                            # avoid: take the branch iff the key is on the fall-through side
                            take = hit[0][1] if sense else not hit[0][1]
                            why = tag + hit[0][0]
                            break
            if why == "?":
                unk.append(a)
            if verbose:
                print("  %x %-40s -> %s (%s)  %s" % (a, t[:40], "T" if take else "N", why,
                      " < ".join("%s:%d" % (os.path.basename(f), l) for f, l, _ in st[:4])))
            if take:
                i = j
                continue
        i += 1
    n = len(path)
    print("loop %x-%x (%d HGMMA); boundary path %d issued instructions, %d unresolved forward branches %s"
          % (ins[top][0], ins[back][0], nh, n, len(unk), " ".join("%x" % a for a in unk)))
    reg = collections.Counter()
    for k in path:
        st = ins[k][2]
        outer = [(f, l) for f, l, _ in st if f.endswith(("mainloop.cuh", "kernel.cuh"))]
        reg["%s:%d" % (os.path.basename(outer[0][0]), outer[0][1]) if outer else "?"] += 1
    if "-text" in sys.argv:  # per outermost mainloop.cuh / kernel.cuh statement, by its text
        rt = collections.Counter()
        for k in path:
            st = ins[k][2]
            outer = [x for x in st if x[0].endswith(("mainloop.cuh", "kernel.cuh"))]
            rt[outer[0][2][:70] if outer else "?"] += 1
        for k, c in sorted(rt.items(), key=lambda kv: -kv[1]):
            print("   %4d  %s" % (c, k))
    if verbose:
        for k, c in sorted(reg.items(), key=lambda kv: (kv[0].split(":")[0], int(kv[0].split(":")[1]) if ":" in kv[0] else 0)):
            print("   %-22s %d" % (k, c))
    ops = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", ins[k][1]).split()[0] for k in path)
    print("  ops:", " ".join("%s %d" % kv for kv in sorted(ops.items(), key=lambda kv: -kv[1])))
    if "-dump" in sys.argv:
        for k in path:
            a, t, st = ins[k]
            print("%x %-60s %s" % (a, t[:60], " < ".join("%s:%d" % (os.path.basename(f), l) for f, l, _ in st[:3])))


main()
