#!/usr/bin/env bash
# Builds and runs every test: the Release build (CUDA compiled where a toolchain exists; GPU tests
# skip visibly without a GPU), the Debug ASan+UBSan build, and the Python package's pytest suite.
#   tools/run_tests.sh          all head dims (preset "default")
#   tools/run_tests.sh --ci     reduced CUDA instantiation set and -Werror (preset "ci"); also
#                               chosen when CI=true (the CI machine has 2 cores and no GPU)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install_deps.sh
preset=default
[[ "${1:-}" == "--ci" || "${CI:-}" == "true" ]] && preset=ci
jobs=$(nproc)

echo "== [1/3] ${preset}: configure, build, ctest"
cmake --preset "$preset"
cmake --build --preset "$preset" -j "$jobs"
ctest --preset "$preset" -j "$jobs"

echo "== [2/3] debug-asan: configure, build, ctest"
cmake --preset debug-asan
cmake --build --preset debug-asan -j "$jobs"
ctest --preset debug-asan -j "$jobs"

echo "== [3/3] python: build the module, pytest"
if [[ -x tools/run_python_tests.sh ]]; then
  tools/run_python_tests.sh
else
  echo "python package not present: skipped"
fi
