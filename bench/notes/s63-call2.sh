# Session 63 call 2 (cold; wip/w3 + probe 2): three A/B shims (D 128 with WGS3, D 256 default,
# D 256 probe 2) build at once; then the D 128 w3 A/B (the suites passed in call 1) and the D 256
# probe 2 A/B.
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
F3_DIMS="128" F3_DEFS="-DATTNKIT_FLASH3_FWD_D128_WGS3=1" B=build_ab_w3 \
  bash bench/gpu/flash3_shim_only.sh > $OUT/build_w3.txt 2>&1 &
p1=$!
F3_DIMS="256" B=build_ab_def256 bash bench/gpu/flash3_shim_only.sh > $OUT/build_def256.txt 2>&1 &
p2=$!
F3_DIMS="256" F3_DEFS="-DATTNKIT_FLASH3_FWD_D256_EPI_PROBE=2" B=build_ab_probe2 \
  bash bench/gpu/flash3_shim_only.sh > $OUT/build_probe2.txt 2>&1 &
p3=$!
wait $p2; wait $p3
echo "d256 builds done: $(( $(date +%s) - t0 )) s"
python3 bench/gpu/flash3_knob_ab.py --lib build_ab_def256/libflash3_shim.so --d 256 \
  --s 1024,4096,16384 --causal 0 --rounds 3 --blocks 1.0 --variant def= \
  --shim probe2=build_ab_probe2/libflash3_shim.so --variant def2= \
  --json $OUT/ab256.json > $OUT/ab256.txt 2>&1
tail -2 $OUT/ab256.txt
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab256.json def 2>&1 | tail -10
wait $p1
cat $OUT/build_w3.txt $OUT/build_def256.txt $OUT/build_probe2.txt > $OUT/builds.txt
rm -f $OUT/build_w3.txt $OUT/build_def256.txt $OUT/build_probe2.txt
tail -3 $OUT/builds.txt
echo "builds done: $(( $(date +%s) - t0 )) s"
python3 bench/gpu/flash3_knob_ab.py --lib build_ab_w3/libflash3_shim.so --d 128 \
  --s 1024,4096,16384 --causal 0,1 --rounds 3 --blocks 1.0 --variant def= --variant def2= \
  --variant w3=wgs:3 --variant w3pp0=wgs:3,pingpong:0 --json $OUT/ab128.json > $OUT/ab128.txt 2>&1
tail -2 $OUT/ab128.txt
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab128.json def 2>&1 | tail -20
echo "total: $(( $(date +%s) - t0 )) s"; ls $OUT
