# Session 70 call 1 (prepared in session 69, ran as written; cold, ~260 s): the split last tile's v2
# (Ran on main 571a33c; the patches no longer apply to later trees: bench/patches/README.md.)
# (bench/patches/f3-split-last-v2-s69.patch on top of f3-split-last-s69.patch): each own block's
# P V issued right after its softmax instead of deferred to the next own Q K^T, so a private V
# stage (single-buffered) reloads while its owner runs the next Q K^T and softmax, not after the
# round (the static reading of calls 3-4's loss: bench/notes/fwd-d64-split-tail-s69.md, "v2").
# Static: slot 135 at 128 registers, 68 B spill stores / 48 B loads (v1: 72 / 52), split loop
# 422 instructions (v1 431), steady ring loop 802 (slot 134: 818). Then the same measurements as
# session 69 call 4 plus the S 16384 row (slot 135's whole tiles: -1 % in session 69 call 5):
# s69-call4.sh with SPLIT_S.
# Predictions to write first (bench/notes/session70.md): probe X at S_q 1024 0.40-0.55 (v1:
# 0.84-0.95 probe, ~0.65 in blocks); split / def at 1k +1.5..+3.5 % (the split tile's saving less
# the whole tiles' ~0.9 %), 4k -0.5..+0.5 %, 16k -0.5..-1.5 %. An auto (kSplitLastAuto plus a
# bound on S_q) only at >= +3 % at 1k in both rounds; below +1 %: drop the split for good.
set -u
# (every call copies the tree afresh: apply unless already applied)
if git apply --check bench/patches/f3-split-last-s69.patch 2>/dev/null; then
  git apply bench/patches/f3-split-last-s69.patch && git apply bench/patches/f3-split-last-v2-s69.patch
fi
# Session 69 call 4's build, tests, sanitizers, A/B and probe, with the S 16384 row added.
SPLIT_S=1024,4096,16384 bash bench/notes/s69-call4.sh
