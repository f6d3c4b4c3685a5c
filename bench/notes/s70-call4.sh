# Session 70 call 4 (cold, ~480 s): landing Tuning::round_table (call 3: the auto +1.8 / +2.0 % at
# D 64 nc 1k, +1.4 / +1.6 at 2k, +1.0 / +1.0 at 4k; D 64 forward suite 494 passed). The all-dims
# tree with the CLI and the Python module (s69-call2.sh's build), then GPU pytest and test_core
# (the host schedule tests) at once, then the forward table in BENCHMARKS.md's form (s63-call3.sh:
# 100 runs x 5 rounds, every row) and D 64 once more in the 30 x 3 form, then `attnkit check --quick`.
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
timeout 60 python3 bench/peers.py --lib build_sm/libattnkit_c.so --backends flash3,cudnn --peers '' \
  --d 64 --shapes 1k,4k,16k --causal both --runs 30 --rounds 3 --preheat 0.5 --pause 0 \
  --clocks --passes fwd --json $OUT/fwd30.json > $OUT/fwd30.txt 2>&1
grep -E "^fwd .*\|  " $OUT/fwd30.txt | grep -v "\*" | head -6
{ timeout 90 build_sm/tools/cli/attnkit check --quick; echo "check rc=$?"; } > $OUT/cli.log 2>&1
tail -4 $OUT/cli.log
echo "total $(( $(date +%s) - t0 )) s"; ls $OUT
