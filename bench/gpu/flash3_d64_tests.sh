#!/bin/bash
# Session 21: the D 64 flash3 forward tests on a D 64-only standalone build (the quickest GPU check of a
# D 64 change: ~1-2 min build instead of the full ~2.5). Usage: OUT=... bash bench/gpu/flash3_d64_tests.sh
B=b64; rm -rf $B; mkdir -p $B; ARCH="-gencode=arch=compute_90a,code=sm_90a"
NV="nvcc -std=c++20 -O3 $ARCH -I include -I src -DATTNKIT_FLASH3_D64=1 -DATTNKIT_WITH_CUDA=1 -Xcompiler -fPIC"
t0=$(date +%s)
( for f in src/backends/flash3/instantiations/fwd_d64_*.cu src/backends/flash3/instantiations/bwd_d64_*.cu; do echo "$NV -c $f -o $B/$(basename $f .cu).o"; done
  echo "$NV -x cu -c src/backends/flash3/backend.cpp -o $B/backend.o"
  echo "$NV -x cu -c src/cuda/workspace.cpp -o $B/workspace.o"
  echo "$NV -c tests/backends/flash3/flash3_forward_test.cu -o $B/test.o" ) | xargs -P 8 -I{} bash -c "{}" > ${OUT:-/tmp}/build.log 2>&1
nvcc $ARCH -o $B/t $B/*.o -lgtest -lgtest_main -lpthread >> ${OUT:-/tmp}/build.log 2>&1 || { echo LINK FAILED; grep -m5 error ${OUT:-/tmp}/build.log; }
echo "build $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3 4 5 6 7; do GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 90 $B/t --gtest_brief=1 --gtest_filter='*_d64_*:*FastDiv*' > ${OUT:-/tmp}/t$i.log 2>&1 & done; wait
cat ${OUT:-/tmp}/t?.log | grep -E "PASSED|FAILED|Failure" | sort | uniq -c | head
echo "skipped tests (e.g. no sm_90 GPU): $(cat ${OUT:-/tmp}/t?.log | grep -c ': Skipped$')"
echo "total $(( $(date +%s) - t0 )) s"
