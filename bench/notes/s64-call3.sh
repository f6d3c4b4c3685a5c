# Session 64 call 3 (warm after call 2; wip/tma = main + the D 256 causal TMA epilogue, default 1):
# session 63 call 3's commands unchanged (the all-dims tree, the forward table as --runs 100
# --rounds 5 and as --runs 30 --rounds 3, the backward table as --runs 20 --rounds 3), so this
# runs that script rather than a copy of it.
exec bash bench/notes/s63-call3.sh
