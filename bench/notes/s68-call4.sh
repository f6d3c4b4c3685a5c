# Session 68 call 4 (cold, <= 580 s): the README's main command as written, on the GPU machine
# (tools/run_main.sh: install_deps (offline: a no-op but for the optional DLPack header), cmake
# --preset default with every head dim, `attnkit info`, `attnkit check --quick`, two quick
# `attnkit bench` rows), then, with the time left, the unfiltered test_flash3 of that tree in 14
# shards (session 66 ran it on the same kernels: 3,455 passed / 0 failed / 454 skipped).
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
timeout 420 tools/run_main.sh > $OUT/run_main.log 2>&1
echo "run_main rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^\[deps\]|^-- attnkit|passed|FAILED|error" $OUT/run_main.log | head -20
tail -30 $OUT/run_main.log
el=$(( $(date +%s) - t0 ))
T=build/default/tests
if [ $el -lt 450 ] && [ -x $T/test_flash3 ]; then
  for i in $(seq 0 13); do
    GTEST_TOTAL_SHARDS=14 GTEST_SHARD_INDEX=$i timeout $(( 575 - el )) $T/test_flash3 --gtest_brief=1 > /tmp/tf_$i.log 2>&1 &
  done
  wait
  for f in /tmp/tf_*.log; do echo "== $f"; cat $f; done > $OUT/test_flash3.log
  cnt() { grep -h "PASSED" $1 | grep -oE '[0-9]+ test' | awk '{s+=$1} END {print s+0}'; }
  echo "test_flash3: $(cnt $OUT/test_flash3.log) passed, $(grep -c '^\[  FAILED  \] .*\.' $OUT/test_flash3.log) failed, $(grep -h 'SKIPPED \]' $OUT/test_flash3.log | grep -oE '[0-9]+ test' | awk '{s+=$1} END {print s+0}') skipped"
  grep -hE "^\[  FAILED  \]" $OUT/test_flash3.log | head -5
fi
echo "total $(( $(date +%s) - t0 )) s"
