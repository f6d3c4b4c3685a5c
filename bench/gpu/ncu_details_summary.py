#!/usr/bin/env python3
"""Summarises an ncu details page (CSV: `ncu -i r.ncu-rep --page details --csv`): per profiled
launch one line of the headline figures (duration, SM clock, throughputs, issue and warp-state
figures), the extra metrics asked for with --metrics (names containing gmma, pipe, red, atom,
lts__, l1tex__data), and the 8 largest warp-stall figures. Moved out of flash3_prof_run.sh
(session 27) so the backward profile (flash3_bwd_ncu.sh) prints the same lines.
usage: flash3_prof_run.sh / flash3_bwd_ncu.sh; or ncu_details_summary.py details.csv"""
import collections
import csv
import sys

WANT = ["Duration", "SM Frequency", "Compute (SM) Throughput", "Memory Throughput", "L2 Hit Rate",
        "L1/TEX Hit Rate", "Issue Slots Busy", "Issued Warp Per Scheduler", "No Eligible",
        "Eligible Warps Per Scheduler", "Active Warps Per Scheduler",
        "Warp Cycles Per Issued Instruction", "Registers Per Thread", "Executed Ipc Active",
        "DRAM Throughput", "L2 Cache Throughput", "Shared Memory Throughput"]
EXTRA = ("gmma", "pipe_", "_red", "_atom", "lts__", "l1tex__data", "sector_hit", "bank_conflicts")


def main(path):
    rows = list(csv.reader(open(path)))
    if not rows or "Kernel Name" not in rows[0]:
        print("\n".join(",".join(r) for r in rows[:5]))
        return
    h = rows[0]
    ki, ni, mi, ui, vi = (h.index(x) for x in ("ID", "Kernel Name", "Metric Name", "Metric Unit",
                                                "Metric Value"))
    per = collections.OrderedDict()
    for r in rows[1:]:
        per.setdefault((r[ki], r[ni][:70]), {})[r[mi]] = (r[vi], r[ui])
    for (k, n), m in per.items():
        print(f"-- launch {k}: {n}")
        print("   " + "; ".join(f"{w} {m[w][0]} {m[w][1]}" for w in WANT if w in m))
        ex = [f"{x} {m[x][0]}" for x in m if any(e in x for e in EXTRA)]
        if ex:
            print("   " + "; ".join(ex))

        def val(v):
            try:
                return float(v[0].replace(",", ""))
            except ValueError:
                return None
        st = sorted(((val(v), x) for x, v in m.items()
                     if "stall" in x.lower() and val(v) is not None), reverse=True)[:8]
        if st:
            print("   stalls: " + "; ".join(f"{x} {v:.2f}" for v, x in st))


if __name__ == "__main__":
    main(sys.argv[1])
