# Session 62 call 3 (cold; main): the standing on one tree. All-dims build with cudnn (no tests:
# main's suites ran in session 61 and in CI), the forward table twice and the backward table once;
# a D 64-only shim builds alongside for a runtime-knob sweep at D 64 nc / causal 1k.
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
bash src/backends/cudnn/get_frontend.sh > /dev/null 2>&1 || true
F3_DIMS="64" B=build_ab_def bash bench/gpu/flash3_shim_only.sh > $OUT/build_def.txt 2>&1 &
p1=$!
SM_BACKENDS="math;flash3;cudnn;cuda_math" SM_DIMS="64;128;256" SM_BENCH=0 SM_TESTS=0 SM_SANITIZE=0 \
  OUT=$OUT/t timeout 300 bash bench/gpu/scoremod_run.sh > $OUT/build.txt 2>&1
wait $p1
tail -2 $OUT/build.txt; tail -1 $OUT/build_def.txt; rm -rf $OUT/t
echo "builds: $(( $(date +%s) - t0 )) s"
for r in 1 2; do
  timeout 110 python3 bench/peers.py --lib build_sm/libattnkit_c.so --backends flash3,cudnn --peers '' \
    --d 64,128,256 --shapes 1k,4k,16k --causal both --runs 30 --rounds 3 --preheat 0.5 --pause 0 \
    --clocks --passes fwd --json $OUT/fwd$r.json > $OUT/fwd$r.txt 2>&1
  grep -E "^fwd .*\|  " $OUT/fwd$r.txt | grep -v "\*" | head -18
  echo "t: $(( $(date +%s) - t0 )) s"
done
timeout 150 python3 bench/peers.py --lib build_sm/libattnkit_c.so --backends flash3,cudnn --peers '' \
  --d 64,128,256 --shapes 1k,4k,16k --causal both --runs 20 --rounds 3 --preheat 0.5 --pause 0 \
  --clocks --passes bwd --json $OUT/bwd1.json > $OUT/bwd1.txt 2>&1
grep -E "^bwd " $OUT/bwd1.txt | grep -v "\*" | head -18
echo "t: $(( $(date +%s) - t0 )) s"
timeout 120 python3 bench/gpu/flash3_knob_ab.py --lib build_ab_def/libflash3_shim.so --d 64 --s 1024 \
  --causal 0,1 --rounds 3 --blocks 1.0 --bitwise --variant def= --variant def2= --variant wgs2=wgs:2 \
  --variant wgs3=wgs:3 --variant tmae1=tmaepi:1 --variant ov0=overlap:0 --variant g128=grid:128 \
  --variant rot1=rotate:1 --variant sk0=skip:0 --variant sk1=skip:1 --json $OUT/ab.json > $OUT/ab.txt 2>&1
tail -2 $OUT/ab.txt
cat $OUT/fwd1.txt $OUT/fwd2.txt > $OUT/fwd.txt; rm -f $OUT/fwd1.txt $OUT/fwd2.txt $OUT/build_def.txt
echo "total: $(( $(date +%s) - t0 )) s"; ls $OUT
