# Session 69 call 2 (cold, ~400 s): the whole GPU test surface of main 66e1667 + this session's
# probe commit (no kernel change since session 66's suites; session 68's backward tidy in
# bwd_kernel.cuh is SASS-identical but had not run on a GPU), in the form of
# bench/notes/s62-call4.sh: the all-dims tree with the CLI and the Python module, then at once
# test_flash3 in 14 shards, test_core / math / cudnn / cuda_math, GPU pytest, compute-sanitizer
# memcheck + racecheck on the bf16 D 64 / 128 backward cases of sq300 / sk517 (the translation
# units of the tidy), and the CLI's `attnkit info` + `attnkit check --quick`.
set -u
export PATH=$PATH:/usr/local/cuda/bin
. bench/gpu/sm_common.sh
t0=$(date +%s)
bash src/backends/cudnn/get_frontend.sh > /dev/null 2>&1 || true
cmake_tree build_sm "math;flash3;cudnn;cuda_math" "64;128;256" "" -DATTNKIT_BUILD_PYTHON=ON \
  -DATTNKIT_BUILD_CLI=ON -DPython_EXECUTABLE=$(command -v python3) > $OUT/build.log 2>&1
ninja -C build_sm -j16 > /tmp/ninja.log 2>&1 || { tail -30 /tmp/ninja.log >> $OUT/build.log; echo BUILD FAILED; grep -E "error" /tmp/ninja.log | head; }
tail -3 /tmp/ninja.log >> $OUT/build.log
echo "build $(( $(date +%s) - t0 )) s"
T=build_sm/tests
for i in $(seq 0 13); do
  GTEST_TOTAL_SHARDS=14 GTEST_SHARD_INDEX=$i timeout 300 $T/test_flash3 --gtest_brief=1 > /tmp/tf_$i.log 2>&1 &
done
for b in core math cudnn cuda_math; do timeout 200 $T/test_$b --gtest_brief=1 > /tmp/t_$b.log 2>&1 & done
PYTHONPATH=python timeout 300 python3 -m pytest tests/python -q -rs > $OUT/pytest.log 2>&1 &
SF='Cases/Flash3Backward.*/bf16*sq300_sk517_h4x2_d64*:Cases/Flash3Backward.*/bf16*sq300_sk517_h4x2_d128*'
for tool in memcheck racecheck; do
  timeout 280 compute-sanitizer --tool $tool --error-exitcode 9 $T/test_flash3 --gtest_brief=1 \
    --gtest_filter="$SF" > /tmp/san_$tool.log 2>&1; echo "$tool rc=$?" >> /tmp/san_$tool.log &
done
wait
for tool in memcheck racecheck; do echo "== $tool"; tail -6 /tmp/san_$tool.log; done > $OUT/sanitizer.log
for f in /tmp/tf_*.log; do echo "== $f"; cat $f; done > $OUT/test_flash3.log
for b in core math cudnn cuda_math; do echo "== test_$b"; cat /tmp/t_$b.log; done > $OUT/test_others.log
cnt() { grep -h "PASSED" $1 | grep -oE '[0-9]+ test' | awk '{s+=$1} END {print s+0}'; }
echo "test_flash3: $(cnt $OUT/test_flash3.log) passed, $(grep -c '^\[  FAILED  \] .*\.' $OUT/test_flash3.log) failed, $(grep -h 'SKIPPED \]' $OUT/test_flash3.log | grep -oE '[0-9]+ test' | awk '{s+=$1} END {print s+0}') skipped"
for b in core math cudnn cuda_math; do echo "test_$b: $(cnt /tmp/t_$b.log) passed, $(grep -c '^\[  FAILED  \] .*\.' /tmp/t_$b.log) failed"; done
grep -hE "^\[  FAILED  \]|Failure" $OUT/test_flash3.log $OUT/test_others.log | head -10
tail -3 $OUT/pytest.log
grep -hE "rc=|ERROR SUMMARY|RACECHECK SUMMARY|PASSED|tests ran" $OUT/sanitizer.log
echo "tests $(( $(date +%s) - t0 )) s"
{ build_sm/tools/cli/attnkit info; echo; timeout 120 build_sm/tools/cli/attnkit check --quick; echo "check rc=$?"; } > $OUT/cli.log 2>&1
tail -15 $OUT/cli.log
echo "total $(( $(date +%s) - t0 )) s"; ls $OUT
