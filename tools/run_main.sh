#!/usr/bin/env bash
# The main job on whatever hardware is present: build, `attnkit info`, a quick check of every
# available backend against the oracle, and a quick bench. With a GPU: the full build (every
# head dim, CUDA backends) and a GPU bench; without one: the CPU build (CUDA kernels that cannot
# run here are not compiled) and a CPU bench.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install_deps.sh
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  preset=default
else
  preset=cpu
  echo "[main] no GPU found: building the CPU backends (preset cpu)"
fi
cmake --preset "$preset"
cmake --build --preset "$preset" -j "$(nproc)"
bin=build/$preset/tools/cli/attnkit
"$bin" info
echo
"$bin" check --quick
echo
if [[ $preset == default ]]; then
  for causal in none top_left; do
    "$bin" bench --device cuda --dtype bf16 --b 4 --s 4096 --h 16 --d 128 --causal $causal \
      --passes fwd,bwd --reps 20
  done
else
  "$bin" bench --device cpu --dtype f32 --b 2 --s 1024 --h 16 --d 64 --passes fwd,bwd --reps 5
fi
