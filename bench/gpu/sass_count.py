#!/usr/bin/env python3
"""Per-kernel SASS instruction counts (total, HGMMA, R2UR, MUFU.EX2) from cuobjdump -sass on stdin;
only forward kernels whose mangled name contains the optional argv[1] substring."""
import re
import sys

sub = sys.argv[1] if len(sys.argv) > 1 else "fwd_kernel"
for f in re.split(r"\n\s*Function : ", sys.stdin.read())[1:]:
    name = f.split("\n", 1)[0].strip()
    if sub not in name:
        continue
    ins = re.findall(r"/\*[0-9a-f]{4,}\*/\s+([^;]+);", f)
    cnt = lambda k: sum(k in x for x in ins)
    print(f"{name[name.find('fwd_kernel') + 10:][:48]:48s} instrs {len(ins):6d} HGMMA {cnt('HGMMA'):4d} "
          f"R2UR {cnt('R2UR'):4d} MUFU.EX2 {cnt('MUFU.EX2'):4d}")
