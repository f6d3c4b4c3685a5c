# Session 71 call 3 (cold, ~400 s): the table on main with Tuning::multicast_tail's auto (call 2:
# +1.1 / +1.2 % at D 128 nc 8k, +0.4..+0.6 at 12k, +1.3..+1.7 at 16k). s70-call4.sh's build (all
# dims, CLI, Python module), GPU pytest and test_core at once, the forward table in BENCHMARKS.md's
# form (100 runs x 5 rounds, every row), `attnkit check --quick`.
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
PYTHONPATH=python timeout 240 python3 -m pytest tests/python -q -rs > $OUT/pytest.log 2>&1 &
timeout 200 build_sm/tests/test_core --gtest_brief=1 > $OUT/test_core.log 2>&1 &
wait
tail -3 $OUT/pytest.log; tail -2 $OUT/test_core.log
echo "tests $(( $(date +%s) - t0 )) s"
timeout 240 python3 bench/peers.py --lib build_sm/libattnkit_c.so --backends flash3,cudnn --peers '' \
  --d 64,128,256 --shapes 1k,4k,16k --causal both --runs 100 --rounds 5 --preheat 0.5 --pause 0 \
  --clocks --passes fwd --json $OUT/fwd100.json > $OUT/fwd100.txt 2>&1
grep -E "^fwd .*\|  " $OUT/fwd100.txt | grep -v "\*" | head -18
echo "t: $(( $(date +%s) - t0 )) s"
{ timeout 90 build_sm/tools/cli/attnkit check --quick; echo "check rc=$?"; } > $OUT/cli.log 2>&1
tail -4 $OUT/cli.log
echo "total $(( $(date +%s) - t0 )) s"; ls $OUT
