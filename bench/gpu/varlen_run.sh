#!/bin/bash
# Session 24: flash3's varlen forward (launch.cuh launch_forward_score_mod<D, BF16, true>) on the
# GPU machine, in one call, through scoremod_run.sh's steps: CMake build (math, cuda_math, flash,
# flash3, cudnn; D 64/128/256; sm_90a) in $SM_BUILD (default build_vl), test_flash3 in 8 shards
# (SM_TEST_FILTER narrows it), compute-sanitizer memcheck + racecheck on two varlen cases of
# flash3_varlen_test.cu and the hostile harness's small varlen cases, and
# bench/gpu/varlen_vs_peers.py "$@" (flash3 / cudnn / flash varlen against torch's FA-2 varlen).
#   OUT=... bash bench/gpu/varlen_run.sh [--d 64,128,256 --work eq1k,mix1k,mix4k ...]
P='Fwd/Flash3Varlen.MatchesCudaMath'
F="$P/bf16_bshd_varlen_q600x33x384_k700x33x200_h4x1_d256_causalTL_win127_0_softcap50_alibiBH_fwd"
F="$F:$P/bf16_bhsd_strided_varlen_q300x129x1_k517x128x2_h8x2_d64_causalBR_fwd"
F="$F:Bf16/Flash3Hostile.MatchesOracle/*varlen*fwd"
export SM_BUILD=${SM_BUILD:-build_vl}
export SM_BACKENDS=${SM_BACKENDS:-math;cuda_math;flash;flash3;cudnn}
export SM_BENCH_PY=bench/gpu/varlen_vs_peers.py
export SM_SAN_FILTER=${SM_SAN_FILTER:-$F}
exec bash "$(dirname "$0")/scoremod_run.sh" "$@"
