#!/usr/bin/env bash
# sass_identical.sh OLD.o NEW.o
# Compare the static SASS of two CUDA object files (or cubins) function by function, for
# machine-code-identical refactors. Per function (cuobjdump -sass ".text.<name>" section):
# instruction text with the address comments (/*0a30*/) and encoding words (/* 0x... */)
# stripped and absolute branch targets (BRA 0x1a30) replaced by the target's instruction index.
# Function names are compared as mangled; a renamed function therefore shows as missing on
# one side and new on the other: pass --rename OLD=NEW (repeatable) to pair them.
# Prints "identical: N functions" and exits 0, or lists the differing / unmatched functions and
# exits 1. Needs cuobjdump and nvdisasm on PATH (pip: nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm;
# .../site-packages/nvidia/cu13/bin). Usage example (flash3, two build trees):
#   tools/sass_identical.sh old/.../fwd_d128_bf16.cu.o new/.../fwd_d128_bf16.cu.o
set -eu
renames=()
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rename) renames+=("$2"); shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
[ ${#args[@]} -eq 2 ] || { echo "usage: $0 [--rename OLD=NEW]... OLD.o NEW.o" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cuobjdump -sass "${args[0]}" > "$tmp/old.sass"
cuobjdump -sass "${args[1]}" > "$tmp/new.sass"
python3 - "$tmp/old.sass" "$tmp/new.sass" "${renames[@]+"${renames[@]}"}" <<'PY'
import re, sys
def funcs(path):
    # Branch targets (BRA/CALL/... 0x1a30) are absolute: rewritten as the index of the target
    # instruction in its function (@i12), so an identical function at another address matches.
    raw, name = {}, None
    for line in open(path):
        m = re.match(r'\s*Function : (\S+)', line)
        if m:
            name = m.group(1); raw[name] = []; continue
        if name is None: continue
        a = re.search(r'/\*([0-9a-f]{4,})\*/', line)
        line = re.sub(r'/\*[0-9a-f]{4,}\*/', '', line)        # address
        line = re.sub(r'/\* 0x[0-9a-f]{16} \*/', '', line)    # encoding
        line = ' '.join(line.split())
        if line: raw[name].append((int(a.group(1), 16) if a else None, line))
    out = {}
    for name, ins in raw.items():
        idx = {addr: i for i, (addr, _) in enumerate(ins) if addr is not None}
        def tgt(m):
            v = int(m.group(2), 16)
            return m.group(1) + ('@i%d' % idx[v] if v in idx else m.group(2))
        out[name] = [re.sub(r'(\b(?:BRA|BRX|CALL\.REL(?:\.NOINC)?|BSSY(?:\.[A-Z]+)?|SSY|PBK|WARPSYNC|JMP)\b[^;]*?)(0x[0-9a-f]+)', tgt, l)
                     for _, l in ins]
    return out
old, new = funcs(sys.argv[1]), funcs(sys.argv[2])
for r in sys.argv[3:]:
    a, b = r.split('=', 1)
    if a in old: old[b] = old.pop(a)
bad = 0
for n in sorted(set(old) | set(new)):
    if n not in old or n not in new:
        print('unmatched:', n, '(old only)' if n in old else '(new only)'); bad += 1
    elif old[n] != new[n]:
        d = next(i for i, (x, y) in enumerate(zip(old[n] + [''], new[n] + [''])) if x != y)
        print('differs: %s (%d vs %d lines; first at line %d)' % (n, len(old[n]), len(new[n]), d))
        print('   old:', (old[n] + [''])[d]); print('   new:', (new[n] + [''])[d]); bad += 1
if bad: sys.exit(1)
print('identical: %d functions' % len(old))
PY
