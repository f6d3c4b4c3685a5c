#!/usr/bin/env python3
"""Summarises an ncu source-page CSV (SASS, warp-stall sampling) of one kernel: the top
instructions by stall samples with their dominant reasons, and the samples per opcode. A report
of several kernels (one "Kernel Name" row and its own column header per kernel; cuDNN's backward
launches several) is split per kernel and the kernel with the most samples is summarised (session
8: reading every kernel's rows with the first kernel's header mislabelled the stall columns).
usage: ncu --import r.ncu-rep --page source --csv --print-source sass ... | ncu_stall_summary.py"""
import collections
import csv
import io
import sys

text = sys.stdin.read()
lines = text.splitlines()
start = next((i for i, l in enumerate(lines)
              if l.startswith('"#') or l.startswith('"Kernel Name"') or '"Address"' in l or '"Source"' in l), None)
if start is None:
    print("no CSV header found; first lines:\n" + "\n".join(lines[:5]))
    sys.exit(0)
sections = []  # [name, header, rows] per kernel
for row in csv.reader(io.StringIO("\n".join(lines[start:]))):
    if not row:
        continue
    if row[0] == "Kernel Name":
        sections.append([row[1] if len(row) > 1 else "?", None, []])
    elif row[0] in ("#", "Address") or "Source" in row[:3]:
        if not sections or sections[-1][1] is not None:
            sections.append(["(unnamed)", None, []])
        sections[-1][1] = row
    elif sections and sections[-1][1] is not None:
        sections[-1][2].append(row)


def num(x):
    try:
        return float(x.replace(",", ""))
    except ValueError:
        return 0.0


def samples(sec):
    h = sec[1]
    c = next((i for i, x in enumerate(h) if "Stall Sampling (All" in x), None)
    return 0.0 if c is None else sum(num(r[c]) for r in sec[2] if len(r) > c)


sections = [sec for sec in sections if sec[1] is not None]
if not sections:
    print("no kernel section with a column header; first lines:\n" + "\n".join(lines[:5]))
    sys.exit(0)
if len(sections) > 1:
    for sec in sections:
        print(f"kernel {samples(sec):9.0f} samples  {sec[0][:100]}")
name, hdr, rows = max(sections, key=samples)
print("summarised:", name[:160])
print("columns:", "|".join(hdr[:40]))
src = next((i for i, h in enumerate(hdr) if h.strip() == "Source"), None)
allc = next((i for i, h in enumerate(hdr) if "Stall Sampling (All" in h), None)
reason = [(i, h) for i, h in enumerate(hdr) if h.startswith("stall_") or "Stall Reason" in h]
if src is None or allc is None:
    print("missing Source / Warp Stall Sampling columns")
    sys.exit(0)
data = [r for r in rows if len(r) > allc]
tot = sum(num(r[allc]) for r in data) or 1.0
by_op = collections.Counter()
for r in data:
    op = r[src].strip().split()
    op = [t for t in op if not t.startswith("@")]
    by_op[op[0] if op else "?"] += num(r[allc])
print(f"total samples {tot:.0f}")
print("by opcode: " + ", ".join(f"{k} {100 * v / tot:.1f}%" for k, v in by_op.most_common(14)))
for r in sorted(data, key=lambda r: -num(r[allc]))[:28]:
    rs = sorted(((num(r[i]) if i < len(r) else 0.0, h) for i, h in reason), reverse=True)[:3]
    rtxt = " ".join(f"{h.replace('stall_', '')}={v:.0f}" for v, h in rs if v > 0)
    print(f"{100 * num(r[allc]) / tot:5.1f}%  {r[0][:8]:>8}  {r[src].strip()[:70]:70s} {rtxt}")
# Session 5 (helper f3fwd10): stall reasons summed per opcode (the question for MUFU.EX2: pipe
# throttle (mio / math pipe throttle) vs waiting on its input (wait / short scoreboard)).
by_op_reason = collections.defaultdict(collections.Counter)
for r in data:
    op = [t for t in r[src].strip().split() if not t.startswith("@")]
    key = op[0] if op else "?"
    for i, h in reason:  # (some rows are shorter than the header: f3fwd10 run 1 crashed here)
        by_op_reason[key][h.replace("stall_", "")] += num(r[i]) if i < len(r) else 0.0
for key, _ in by_op.most_common(8):
    c = by_op_reason[key]
    s = sum(c.values()) or 1.0
    print(f"reasons {key}: " + ", ".join(f"{h} {100 * v / s:.0f}%" for h, v in c.most_common(5) if v > 0))
