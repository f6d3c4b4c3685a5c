#!/usr/bin/env bash
# The main job on whatever hardware is present: build, `attnkit info`, a quick check of every
# available backend against the oracle, and a quick bench (GPU sweep subset if a GPU is present,
# else a CPU shape).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install_deps.sh
cmake --preset default
cmake --build --preset default -j "$(nproc)"
bin=build/default/tools/cli/attnkit
"$bin" info
echo
"$bin" check --quick
echo
if "$bin" info | grep -q "cuda:0"; then
  "$bin" bench --device cuda --dtype bf16 --b 4 --s 4096 --h 16 --d 128 --passes fwd,bwd --reps 20
  "$bin" bench --device cuda --dtype bf16 --b 4 --s 4096 --h 16 --d 128 --causal top_left --passes fwd,bwd --reps 20
else
  "$bin" bench --device cpu --dtype f32 --b 2 --s 1024 --h 16 --d 64 --passes fwd,bwd --reps 5
fi
