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
PY=${PYTHON:-python3}
python_module=OFF
"$PY" -c "import nanobind, pytest, numpy" 2>/dev/null && python_module=ON

echo "== [1/3] ${preset}: configure, build, ctest"
cmake --preset "$preset" -DATTNKIT_BUILD_PYTHON=$python_module -DPython_EXECUTABLE="$(command -v "$PY")"
cmake --build --preset "$preset" -j "$jobs"
ctest --preset "$preset" -j "$jobs"

echo "== [2/3] debug-asan: configure, build, ctest"
cmake --preset debug-asan
cmake --build --preset debug-asan -j "$jobs"
ctest --preset debug-asan -j "$jobs"

echo "== [3/3] python: pytest against the module built in step 1"
if [[ $python_module == ON ]]; then
  PYTHONPATH="$PWD/python" "$PY" -m pytest tests/python -q
else
  echo "python tests skipped: nanobind/pytest/numpy not importable by $PY"
fi
