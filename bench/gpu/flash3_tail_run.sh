#!/bin/bash
# Session 19: flash3's split tail (src/backends/flash3/tail.cuh) on the GPU in one call: the
# standalone build and tests of flash3_gpu_run.sh (filtered to the tail cases + a subset; the
# sanitizer subset plus two tail cases), the turn-loop size of launch 1's kernels and of the tail
# kernel, then the interleaved A/B of the tail (forced on / off) at D 128 (TAIL_D: other head
# dims, e.g. "256" or "128,256"; session 20) non-causal.
# Usage: OUT=... bash bench/gpu/flash3_tail_run.sh; TAIL_D, TAIL_S, TAIL_VARIANTS (knob_ab --variant
# list; default the tail forced on / off, two copies each), TAIL_AB (more knob_ab arguments),
# F3_TEST_FILTER ('*': every forward test).
set -u
OUT=${OUT:-/tmp/flash3_out}
mkdir -p "$OUT"
T='Cases/Flash3Forward.MatchesReference/tail'
F3_TEST_SHARDS=${F3_TEST_SHARDS:-8} F3_BENCH=0 F3_SASS_DUMP=0 F3_SAN_TIMEOUT=${F3_SAN_TIMEOUT:-200} \
  F3_TEST_FILTER="${F3_TEST_FILTER:-*tail*:*Tail*:*long*:*square*:*gqa2*:*padded*:*tmaepi*}" \
  F3_SAN_EXTRA="${T}_b1_sq640_sk1000_h4x2_d128_bf16_nc_g7:${T}_b1_sq640_sk1000_h4x2_d256_bf16_nc_g7:${T}_b2_sq256_sk5000_h16x4_d256_bf16_nc_g11:${T}_b2_sq300_sk384_h8x8_d128_f16_nc_g13:${T}_b1_sq512_sk100_h3x3_d128_bf16_nc_g5:Flash3SplitTail.BitIdenticalRunToRun" \
  bash bench/gpu/flash3_gpu_run.sh
echo "== SASS: turn loops (launch 1: kVar 785 / 784, main 674 / 669; tail kernel 1296)"
cuobjdump -sass build_f3/fwd_d128_bf16.o | c++filt > $OUT/sass_d128.txt
for v in "785, 1, 0>" "784, 1, 0>" "1296, 1, 0>"; do
  python3 bench/gpu/sass_turn_loop.py "$v" < $OUT/sass_d128.txt 2>/dev/null | head -2 | tr '\n' ' '; echo
done
rm -f $OUT/sass_d128.txt
echo "== A/B: split tail at D ${TAIL_D:-128} non-causal"
timeout ${TAIL_AB_TIMEOUT:-240} python3 bench/gpu/flash3_knob_ab.py --lib build_f3/libflash3_shim.so \
  --d ${TAIL_D:-128} --s ${TAIL_S:-1024,2048,4096,8192,16384} --causal 0 \
  ${TAIL_VARIANTS:---variant first=tail:0 --variant off=tail:0 --variant tail=tail:1 --variant offB=tail:0 --variant tailB=tail:1} \
  --reps 30 --rounds 2 --json $OUT/tail_ab.json ${TAIL_AB:-} 2>&1 | tee $OUT/tail_ab.log | grep -v "^$"
