# Session 64 call 3 (warm after call 2; wip/tma = main + the D 256 causal TMA epilogue, default 1):
# the forward table in session 63 call 3's two forms (--runs 100 --rounds 5, then --runs 30 --rounds 3)
# and the backward table (--runs 20 --rounds 3) if time is left.
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
bash src/backends/cudnn/get_frontend.sh > /dev/null 2>&1 || true
SM_BACKENDS="math;flash3;cudnn;cuda_math" SM_DIMS="64;128;256" SM_BENCH=0 SM_TESTS=0 SM_SANITIZE=0 \
  OUT=$OUT/t timeout 300 bash bench/gpu/scoremod_run.sh > $OUT/build.txt 2>&1
tail -2 $OUT/build.txt; rm -rf $OUT/t
echo "build: $(( $(date +%s) - t0 )) s"
timeout 240 python3 bench/peers.py --lib build_sm/libattnkit_c.so --backends flash3,cudnn --peers '' \
  --d 64,128,256 --shapes 1k,4k,16k --causal both --runs 100 --rounds 5 --preheat 0.5 --pause 0 \
  --clocks --passes fwd --json $OUT/fwd100.json > $OUT/fwd100.txt 2>&1
grep -E "^fwd .*\|  " $OUT/fwd100.txt | grep -v "\*" | head -18
echo "t: $(( $(date +%s) - t0 )) s"
timeout 110 python3 bench/peers.py --lib build_sm/libattnkit_c.so --backends flash3,cudnn --peers '' \
  --d 64,128,256 --shapes 1k,4k,16k --causal both --runs 30 --rounds 3 --preheat 0.5 --pause 0 \
  --clocks --passes fwd --json $OUT/fwd30.json > $OUT/fwd30.txt 2>&1
grep -E "^fwd .*\|  " $OUT/fwd30.txt | grep -v "\*" | head -18
el=$(( $(date +%s) - t0 )); echo "t: $el s"
if [ $el -lt 440 ]; then
  timeout $(( 560 - el )) python3 bench/peers.py --lib build_sm/libattnkit_c.so --backends flash3,cudnn \
    --peers '' --d 64,128,256 --shapes 1k,4k,16k --causal both --runs 20 --rounds 3 --preheat 0.5 \
    --pause 0 --clocks --passes bwd --json $OUT/bwd1.json > $OUT/bwd1.txt 2>&1
  grep -E "^bwd " $OUT/bwd1.txt | grep -v "\*" | head -18
fi
echo "total: $(( $(date +%s) - t0 )) s"; ls $OUT
