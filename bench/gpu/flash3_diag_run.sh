#!/bin/bash
# Session 21: flash3's diagonal half (mainloop.cuh kVarDiagHalf) on the GPU in one call: the
# standalone build and tests of flash3_gpu_run.sh (filtered to the diagonal-half cases, the
# causal ones and a subset; the sanitizer subset plus diag cases), the turn-loop size of the
# diag builds against the plain ones, then the interleaved A/B (diag on / off, two copies each)
# at D 64 / 128 causal.
# Usage: OUT=... bash bench/gpu/flash3_diag_run.sh; DIAG_D (default 64,128), DIAG_S, DIAG_CAUSAL
# (default 1), DIAG_VARIANTS (knob_ab --variant list), DIAG_AB (more knob_ab arguments),
# F3_TEST_FILTER ('*': every forward test).
set -u
OUT=${OUT:-/tmp/flash3_out}
mkdir -p "$OUT"
C='Cases/Flash3Forward.MatchesReference/'
F3_TEST_SHARDS=${F3_TEST_SHARDS:-8} F3_BENCH=0 F3_SASS_DUMP=0 F3_SAN_TIMEOUT=${F3_SAN_TIMEOUT:-200} \
  F3_TEST_FILTER="${F3_TEST_FILTER:-*diag*:*Diag*:*_tl*:*_br*:*long*:*square*:*gqa2*:*padded*}" \
  F3_SAN_EXTRA="${C}diag_on_b2_sq300_sk960_h4x2_d128_bf16_nc:${C}diag_on_b2_sq700_sk200_h8x4_d64_bf16_br:${C}diag_on_b2_sq700_sk200_h8x4_d128_bf16_br:${C}diag_on_b1_sq200_sk2200_h4x4_d128_f16_nc" \
  bash bench/gpu/flash3_gpu_run.sh
echo "== SASS: turn loops (plain / diag: D 128 784 / 2832, 785 / 2833; D 64 272 / 2320)"
cuobjdump -sass build_f3/fwd_d128_bf16.o | c++filt > $OUT/sass_d128.txt
cuobjdump -sass build_f3/fwd_d64_bf16.o | c++filt > $OUT/sass_d64.txt
for v in "784, 1, 0>" "2832, 1, 0>" "785, 1, 0>" "2833, 1, 0>"; do
  python3 bench/gpu/sass_turn_loop.py "$v" < $OUT/sass_d128.txt 2>/dev/null | head -2 | tr '\n' ' '; echo
done
for v in "272, 1, 0>" "2320, 1, 0>"; do
  python3 bench/gpu/sass_turn_loop.py "$v" < $OUT/sass_d64.txt 2>/dev/null | head -2 | tr '\n' ' '; echo
done
rm -f $OUT/sass_d128.txt $OUT/sass_d64.txt
echo "== A/B: diagonal half at D ${DIAG_D:-64,128} causal ${DIAG_CAUSAL:-1}"
timeout ${DIAG_AB_TIMEOUT:-260} python3 bench/gpu/flash3_knob_ab.py --lib build_f3/libflash3_shim.so \
  --d ${DIAG_D:-64,128} --s ${DIAG_S:-1024,2048,4096,8192,16384} --causal ${DIAG_CAUSAL:-1} \
  ${DIAG_VARIANTS:---variant first=diag:0 --variant off=diag:0 --variant on=diag:1 --variant offB=diag:0 --variant onB=diag:1} \
  --reps 30 --rounds 2 --json $OUT/diag_ab.json ${DIAG_AB:-} 2>&1 | tee $OUT/diag_ab.log | grep -v "^$"
