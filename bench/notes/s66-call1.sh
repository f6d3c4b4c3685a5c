# Session 66 call 1 (prepared in session 65; cold, ~350 s): slot 79's loss in the staged D 256
# build, split by helper-72's two A/B-only switches. Run on a branch with the patch applied:
#   git checkout -b s79 main && git am -3 bench/patches/f3slot79-66.patch
# Six D 256 shims build at once (def; v2 = every plain 64-key kernel staged; v2ab = v2 with the
# staging after the mbarriers; defpad = the default's code in v2's placement; v2pad800 = v2 with
# the producer moved on by 800 instructions; defab = the default with the staging after the
# barriers, which moves only the causal staged kernels 109 / 119), then one same-process A/B,
# bitwise against def. Predictions and their reading: bench/notes/fwd-d256-slot79-staged-s65.md.
set -u
export PATH=$PATH:/usr/local/cuda/bin
T2="-DATTNKIT_FLASH3_FWD_D256_TMA_EPI=2"
AB="-DATTNKIT_FLASH3_FWD_D256_EPI_AFTER_BARS=1"
PAD="-DATTNKIT_FLASH3_FWD_D256_PAD_PROD"
OUT=$OUT F3_DIMS="256" \
  AB_ARGS="--d 256 --s 1024,4096,16384 --causal 0,1 --rounds 3 --blocks 1.0 --bitwise" \
  AB_EXTRA="--variant def2=" timeout 560 bash bench/gpu/flash3_defs_ab.sh v2="$T2" v2ab="$T2 $AB" \
  defpad="$PAD=400" v2pad800="$T2 $PAD=800" defab="$AB" > $OUT/run.txt 2>&1
tail -3 $OUT/run.txt
grep -i "bits differing" $OUT/ab.txt | cut -c1-240
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab.json def 2>&1 | tail -20
ls $OUT
